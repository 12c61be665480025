// The C API called from many threads at once (fbngrad.h: "every function may
// be called from any thread at the same time"), with different dtypes,
// layouts, shapes and modes in flight together, while another thread changes
// the thread count or forces ISAs.
//
// Oracle: the sums use fixed-size blocks, so a result never depends on the
// thread count (schedule_x86.cpp); it may depend on the ISA (vector widths).
// Each problem's bits are first computed alone on this thread, once per ISA,
// and checked against the double reference; every concurrent result must
// then equal one of them bit for bit. Under ISA forcing that also checks that
// a call reads the forced ISA once: a call that mixed two variants' work, or
// ran with half-applied settings, would match neither.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "problem.h"
#include "test_platform.h"

using namespace fbngrad;
using namespace fbngrad::test;

namespace {

constexpr int kWorkers = 8;
constexpr int kCallsPerWorker = 100;

struct Spec {
    fbngrad_dtype dtype;
    fbngrad_layout layout;
    std::vector<int64_t> shape;  // in the layout's order
    bool training, inverse_std;
};

const std::vector<Spec> kAllSpecs = {
    {FBNGRAD_FLOAT32, FBNGRAD_NHWC, {2, 5, 7, 17}, true, false},
    {FBNGRAD_FLOAT16, FBNGRAD_NCHW, {2, 3, 9, 11}, false, true},
    {FBNGRAD_BFLOAT16, FBNGRAD_NHWC, {1, 8, 8, 64}, true, false},
    {FBNGRAD_FLOAT32, FBNGRAD_NCHW, {2, 3, 2, 4, 5}, true, true},
    {FBNGRAD_BFLOAT16, FBNGRAD_NCHW, {3, 16, 4, 4}, false, false},
    {FBNGRAD_FLOAT16, FBNGRAD_NHWC, {1, 1, 257, 8}, true, true},
    {FBNGRAD_FLOAT32, FBNGRAD_NHWC, {2, 16, 16, 8}, false, false},
    {FBNGRAD_BFLOAT16, FBNGRAD_NHWC, {1, 2, 3, 4, 9}, true, false},
};
// Those this build has (a selective build leaves rows out: docs/edge-builds.md).
const std::vector<Spec> kSpecs = [] {
    std::vector<Spec> v;
    for (const Spec &s : kAllSpecs)
        if (built(s.dtype, s.layout, s.training)) v.push_back(s);
    return v;
}();

std::unique_ptr<TestProblem> make(const Spec &s, int seed) {
    return std::make_unique<TestProblem>(s.dtype, s.layout, s.shape, s.training, s.inverse_std, uint32_t(seed));
}

void reset_outputs(TestProblem &t) {
    std::fill(t.xb.begin(), t.xb.end(), uint8_t(0xAB));
    std::fill(t.sb.begin(), t.sb.end(), -777.0f);
    std::fill(t.ob.begin(), t.ob.end(), -777.0f);
}

// The ISAs this CPU can run (forcing each one must succeed).
std::vector<std::string> runnable_isas() {
    std::vector<std::string> isas;
    for (const char *isa : kCpuIsas)
        if (fbngrad_force_isa(isa, nullptr) == FBNGRAD_OK) isas.push_back(isa);
    fbngrad_force_isa(nullptr, nullptr);
    return isas;
}

// Each spec's bits under each ISA, computed on this thread and checked against the reference.
std::vector<std::vector<std::string>> baselines(const std::vector<std::string> &isas) {
    std::vector<std::vector<std::string>> bits(kSpecs.size());
    for (const std::string &isa : isas) {
        EXPECT_EQ(fbngrad_force_isa(isa.c_str(), nullptr), FBNGRAD_OK);
        for (size_t i = 0; i < kSpecs.size(); ++i) {
            auto t = make(kSpecs[i], int(i) + 1);
            fbngrad_status st;
            EXPECT_EQ(t->run(&st), FBNGRAD_OK) << st.message;
            ref::Comparison c = t->check();
            EXPECT_TRUE(c.ok()) << isa << " " << t->describe() << ": " << c.first_mismatch;
            bits[i].push_back(t->output_bits());
        }
    }
    fbngrad_force_isa(nullptr, nullptr);
    return bits;
}

// Holds every worker until all have started, so that their calls overlap.
class StartGate {
public:
    explicit StartGate(int n) : n_(n) {}
    void arrive_and_wait() {
        ++arrived_;
        while (arrived_ < n_) std::this_thread::yield();
    }

private:
    const int n_;
    std::atomic<int> arrived_{0};
};

// What the workers found: counts and the first failure.
struct Findings {
    std::atomic<int> calls{0}, failures{0};
    std::mutex m;
    std::string first;
    void fail(const std::string &what) {
        if (failures++ == 0) {
            std::lock_guard<std::mutex> lock(m);
            first = what;
        }
    }
};

// kWorkers threads, each running kCallsPerWorker calls over every spec in a
// thread-specific order; every result must be one of its spec's baselines.
void run_workers(const std::vector<std::vector<std::string>> &bits, Findings &f) {
    std::vector<std::thread> workers;
    StartGate gate(kWorkers);
    for (int w = 0; w < kWorkers; ++w)
        workers.emplace_back([&, w] {
            std::vector<std::unique_ptr<TestProblem>> mine;
            for (size_t i = 0; i < kSpecs.size(); ++i) mine.push_back(make(kSpecs[i], int(i) + 1));
            gate.arrive_and_wait();
            for (int k = 0; k < kCallsPerWorker; ++k) {
                const size_t i = size_t(w * 3 + k) % kSpecs.size();
                TestProblem &t = *mine[i];
                reset_outputs(t);
                fbngrad_status st;
                const fbngrad_code rc = t.run(&st);
                ++f.calls;
                if (rc != FBNGRAD_OK) {
                    f.fail(t.describe() + ": " + st.message);
                    continue;
                }
                const std::string got = t.output_bits();
                bool known = false;
                for (const std::string &b : bits[i]) known = known || b == got;
                if (!known) f.fail(t.describe() + ": result differs from every ISA's baseline");
            }
        });
    for (std::thread &t : workers) t.join();
}

class Concurrency : public testing::Test {
protected:
    void TearDown() override {
        fbngrad_force_isa(nullptr, nullptr);
        fbngrad_set_num_threads(0);
    }
};

TEST_F(Concurrency, ManyThreadsManyProblems) {
    if (kSpecs.empty()) GTEST_SKIP() << "this build has none of the problems (docs/edge-builds.md)";
    std::vector<std::vector<std::string>> bits = baselines({""});  // automatic dispatch only
    Findings f;
    run_workers(bits, f);
    EXPECT_EQ(f.calls, kWorkers * kCallsPerWorker);
    EXPECT_EQ(f.failures, 0) << f.first;
}

TEST_F(Concurrency, WhileTheThreadCountChanges) {
    if (kSpecs.empty()) GTEST_SKIP() << "this build has none of the problems (docs/edge-builds.md)";
    std::vector<std::vector<std::string>> bits = baselines({""});
    std::atomic<bool> stop{false};
    std::atomic<int> changes{0};
    std::thread changer([&] {
        const int counts[] = {1, 2, 3, 8, 0, 5};
        for (int k = 0; !stop; ++k, ++changes) {
            fbngrad_set_num_threads(counts[k % 6]);
            std::this_thread::yield();
        }
    });
    Findings f;
    run_workers(bits, f);
    stop = true;
    changer.join();
    EXPECT_GT(changes, 0);
    EXPECT_EQ(f.failures, 0) << f.first;
}

// fbngrad.h: "calls already running keep the settings they started with".
// The dispatcher reads the forced ISA once per call (dispatch.cpp, select_variant).
TEST_F(Concurrency, WhileIsasAreForcedAndUnforced) {
    if (kSpecs.empty()) GTEST_SKIP() << "this build has none of the problems (docs/edge-builds.md)";
    const std::vector<std::string> isas = runnable_isas();
    ASSERT_FALSE(isas.empty());
    std::vector<std::vector<std::string>> bits = baselines(isas);
    std::atomic<bool> stop{false};
    std::atomic<int> changes{0};
    std::thread forcer([&] {
        for (size_t k = 0; !stop; ++k, ++changes) {
            const std::string isa = k % (isas.size() + 1) == isas.size() ? "" : isas[k % (isas.size() + 1)];
            if (fbngrad_force_isa(isa.c_str(), nullptr) != FBNGRAD_OK) stop = true;  // cannot happen: all runnable
            std::this_thread::yield();
        }
    });
    Findings f;
    run_workers(bits, f);
    stop = true;
    forcer.join();
    EXPECT_GT(changes, 0);
    EXPECT_EQ(f.failures, 0) << f.first;
}

// Errors from many threads at once: each call gets its own message.
TEST_F(Concurrency, EachCallGetsItsOwnError) {
    Findings f;
    std::vector<std::thread> workers;
    StartGate gate(kWorkers);
    for (int w = 0; w < kWorkers; ++w)
        workers.emplace_back([&, w] {
            TestProblem t(FBNGRAD_FLOAT32, FBNGRAD_NHWC, {1, 2, 2, w + 1}, true);
            gate.arrive_and_wait();
            int64_t bad_shape[4] = {1, 2, 2, w + 2};
            const std::string want = "x and y_backprop must have same shape, but x has shape [1,2,2," +
                                     std::to_string(w + 1) + "] and y_backprop has shape [1,2,2," +
                                     std::to_string(w + 2) + "]";
            for (int k = 0; k < kCallsPerWorker; ++k) {
                fbngrad_tensor dy = fbngrad_make_tensor(t.dy.data(), FBNGRAD_FLOAT32, 4, bad_shape, FBNGRAD_NHWC);
                fbngrad_tensor x = t.tensor(t.x.data()), xb = t.tensor(t.xb.data());
                fbngrad_tensor sc = t.vec(t.scale.data()), m = t.vec(t.mean.data()), v = t.vec(t.rs2.data());
                fbngrad_tensor sb = t.vec(t.sb.data()), ob = t.vec(t.ob.data());
                fbngrad_status st;
                const bool valid = k % 2 == 0;
                const fbngrad_code rc = fbngrad_fused_batch_norm_grad_v2(valid ? &x : &dy, &x, &sc, &m, &v, &t.attrs,
                                                                         &xb, &sb, &ob, &st);
                ++f.calls;
                if (valid && (rc != FBNGRAD_OK || st.message[0] != '\0'))
                    f.fail("valid call failed: " + std::string(st.message));
                if (!valid && (rc != FBNGRAD_INVALID_ARGUMENT || want != st.message))
                    f.fail("thread " + std::to_string(w) + " got \"" + st.message + "\", want \"" + want + "\"");
            }
        });
    for (std::thread &t : workers) t.join();
    EXPECT_EQ(f.calls, kWorkers * kCallsPerWorker);
    EXPECT_EQ(f.failures, 0) << f.first;
}

}  // namespace
