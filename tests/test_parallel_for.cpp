// fbngrad_set_parallel_for: the kernels' parallel loops on the caller's runner.
//
// Oracle: the work is split by the shape only (generators/schedule.h, the
// many-core rule), so every runner and every thread count must give the bits
// of fbngrad's own pool with one thread, which are first checked against the
// double-precision reference. Runners: a serial loop, a std::thread pool
// (3 and 16 threads), OpenMP (where the compiler has it), and fbngrad's own
// pool at 1, 2, 3, 16 and 64 threads; on every CPU variant this machine runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "fbngrad/fbngrad.hpp"
#include "problem.h"

using namespace fbngrad;
using namespace fbngrad::test;

namespace {

// ---- runners -------------------------------------------------------------------------------

int serial_runner(void *, int32_t count, fbngrad_task_fn task, void *task_ctx) {
    for (int32_t i = 0; i < count; ++i)
        if (int rc = task(task_ctx, i)) return rc;
    return 0;
}

// A fixed pool: the calling thread and the workers take indices from one
// counter; the first non-zero result is kept, and every task still runs.
class ThreadPool {
public:
    explicit ThreadPool(int threads) {
        for (int t = 1; t < threads; ++t) workers_.emplace_back([this] { work(); });
    }
    ~ThreadPool() {
        {
            std::lock_guard<std::mutex> lock(m_);
            stop_ = true;
        }
        wake_.notify_all();
        for (std::thread &t : workers_) t.join();
    }
    int run(int32_t count, fbngrad_task_fn task, void *task_ctx) {
        std::unique_lock<std::mutex> one(run_mutex_);  // one loop at a time
        Job job{task, task_ctx, count};
        {
            std::lock_guard<std::mutex> lock(m_);
            job_ = &job;
            ++generation_;
        }
        wake_.notify_all();
        help(job);
        std::unique_lock<std::mutex> lock(m_);
        done_.wait(lock, [&] { return job.finished == job.count && job.helpers == 0; });
        job_ = nullptr;
        return job.result;
    }
    static int runner(void *pool, int32_t count, fbngrad_task_fn task, void *task_ctx) {
        return static_cast<ThreadPool *>(pool)->run(count, task, task_ctx);
    }

private:
    struct Job {
        fbngrad_task_fn task;
        void *ctx;
        int32_t count;
        std::atomic<int32_t> next{0};
        int32_t finished = 0;  // guarded by m_
        int helpers = 0;       // workers inside help(); guarded by m_
        int result = 0;        // guarded by m_
    };
    void help(Job &job) {
        for (int32_t i; (i = job.next++) < job.count;) {
            const int rc = job.task(job.ctx, i);
            std::lock_guard<std::mutex> lock(m_);
            if (rc != 0 && job.result == 0) job.result = rc;
            if (++job.finished == job.count) done_.notify_all();
        }
    }
    void work() {
        uint64_t seen = 0;
        for (;;) {
            Job *job;
            {
                std::unique_lock<std::mutex> lock(m_);
                wake_.wait(lock, [&] { return stop_ || (job_ && generation_ != seen); });
                if (stop_) return;
                seen = generation_;
                job = job_;
                ++job->helpers;
            }
            help(*job);
            std::lock_guard<std::mutex> lock(m_);
            if (--job->helpers == 0) done_.notify_all();
        }
    }
    std::vector<std::thread> workers_;
    std::mutex run_mutex_, m_;
    std::condition_variable wake_, done_;
    Job *job_ = nullptr;
    uint64_t generation_ = 0;
    bool stop_ = false;
};

#ifdef _OPENMP
int openmp_runner(void *, int32_t count, fbngrad_task_fn task, void *task_ctx) {
    std::atomic<int> first{0};
#pragma omp parallel for schedule(dynamic, 1) num_threads(4)
    for (int32_t i = 0; i < count; ++i)
        if (int rc = task(task_ctx, i)) {
            int none = 0;
            first.compare_exchange_strong(none, rc);
        }
    return first.load();
}
#endif

// Serial, and records the task count of every loop (every index must come once).
struct Recorder {
    std::vector<int32_t> loops;
    static int runner(void *self, int32_t count, fbngrad_task_fn task, void *task_ctx) {
        static_cast<Recorder *>(self)->loops.push_back(count);
        return serial_runner(nullptr, count, task, task_ctx);
    }
};

// ---- problems ------------------------------------------------------------------------------

struct Shape {
    std::vector<int64_t> dims;  // in the layout's order
    bool inverse_std;
};

// Each below, at and above the NHWC sum strips' width (generators/schedule.h,
// kStripChannels: 512; 1024 and 513 are split into strips on a runner, and
// summed as whole rows on fbngrad's own pool with one thread, whose tasks are
// larger: the same bits either way) and the task size (16384 elements), with
// many tasks (262144 elements: 16 at least), and small enough for the suite
// under qemu (the AArch64 stage). NHWC 1x16x32x1024 is the smallest kind of
// call whose blocks' partials hold 2 x 16384 values (16 blocks of 32 rows):
// the per-channel loop that adds them is a parallel loop on fbngrad's pool of
// 2 and 3 threads too (generators/schedule.cpp, partials_in_parallel).
std::vector<Shape> shapes(fbngrad_layout l) {
    if (l == FBNGRAD_NHWC)
        return {{{2, 8, 16, 1024}, false}, {{8, 28, 28, 32}, true}, {{2, 9, 9, 5}, false},
                {{3, 7, 7, 257}, false},   {{1, 1, 64, 256}, true}, {{1, 4, 32, 513}, false},
                {{1, 2, 32, 512}, true},   {{1, 16, 32, 1024}, false}};
    // NCHW: the last two have channels of more than 16384 elements (N*H*W),
    // fewer than the rule's tasks: the x86 one pass's two-pass route
    // (src/two_pass_route.h) on a runner and on fbngrad's pool of 3 threads
    // or more (33x3x23x25, whose tasks would read runs of one 575-element
    // plane a sample, from 2 threads), the one pass itself below. 16x40x7x7
    // takes the route for its short runs (runtime/task_size.h) from 2
    // threads. 23x25: a plane that no vector width divides. 64x128x2x2 is the
    // smallest kind of call whose planes' partials hold 2 x 8192 values: the
    // sums over samples that add them are a parallel loop on a runner
    // (generators/schedule.cpp, schedule_nchw_sums_over_samples), one task
    // on fbngrad's pool of 1 thread.
    return {{{8, 128, 16, 16}, false}, {{8, 64, 14, 14}, true}, {{4, 3, 56, 56}, false},
            {{16, 40, 7, 7}, false},   {{1, 1, 1, 1}, true},    {{16, 2, 48, 48}, false},
            {{33, 3, 23, 25}, true},   {{64, 128, 2, 2}, false}};
}

std::string run_bits(TestProblem &t) {
    std::fill(t.xb.begin(), t.xb.end(), uint8_t(0xAB));
    fbngrad_status st;
    EXPECT_EQ(t.run(&st), FBNGRAD_OK) << t.describe() << ": " << st.message;
    return t.output_bits();
}

// The task counts of the call's parallel loops, in order, run on a serial runner.
std::vector<int32_t> recorded_loops(TestProblem &t) {
    Recorder r;
    fbngrad_set_parallel_for(Recorder::runner, &r);
    run_bits(t);
    fbngrad_set_parallel_for(nullptr, nullptr);
    return r.loops;
}

int64_t min_tasks(const TestProblem &t) {
    return std::max<int64_t>(1, std::min<int64_t>(256, t.p.elements() / 16384));
}

// Restores fbngrad's defaults after every test, whatever it left.
class ParallelFor : public testing::Test {
protected:
    void TearDown() override {
        fbngrad_set_parallel_for(nullptr, nullptr);
        fbngrad_set_num_threads(0);
        fbngrad_force_variant(nullptr, nullptr);
        fbngrad_force_isa(nullptr, nullptr);
    }
};

// ---- every CPU variant: same bits on every runner and thread count, enough tasks ----------

std::vector<int> cpu_variants() {
    std::vector<int> v;
    for (int32_t i = 0; i < fbngrad_variant_count(); ++i)
        if (fbngrad_variant(i)->device == FBNGRAD_CPU) v.push_back(i);
    return v;
}

class EveryVariant : public ParallelFor, public testing::WithParamInterface<int> {
protected:
    const fbngrad_variant_info &info() const { return *fbngrad_variant(GetParam()); }
    void SetUp() override {
        if (!info().supported) GTEST_SKIP() << "this CPU cannot run " << info().name;
        fbngrad_status st;
        ASSERT_EQ(fbngrad_force_variant(info().name, &st), FBNGRAD_OK) << st.message;
    }
    std::unique_ptr<TestProblem> problem(const Shape &s) const {
        return std::make_unique<TestProblem>(info().dtype, info().layout, s.dims, info().is_training != 0,
                                             s.inverse_std, 7);
    }
};

TEST_P(EveryVariant, SameBitsOnEveryRunnerAndThreadCount) {
    ThreadPool pool3(3), pool16(16);
    for (const Shape &s : shapes(info().layout)) {
        auto t = problem(s);
        fbngrad_set_num_threads(1);
        const std::string want = run_bits(*t);
        ref::Comparison c = t->check();
        ASSERT_TRUE(c.ok()) << t->describe() << ": " << c.first_mismatch;
        for (int threads : {2, 3, 16, 64}) {
            fbngrad_set_num_threads(threads);
            EXPECT_EQ(run_bits(*t), want) << t->describe() << ", fbngrad's pool with " << threads << " threads";
        }
        fbngrad_set_num_threads(0);
        fbngrad_set_parallel_for(serial_runner, nullptr);
        EXPECT_EQ(run_bits(*t), want) << t->describe() << ", serial runner";
        fbngrad_set_parallel_for(ThreadPool::runner, &pool3);
        EXPECT_EQ(run_bits(*t), want) << t->describe() << ", std::thread pool of 3";
        fbngrad_set_parallel_for(ThreadPool::runner, &pool16);
        EXPECT_EQ(run_bits(*t), want) << t->describe() << ", std::thread pool of 16";
#ifdef _OPENMP
        fbngrad_set_parallel_for(openmp_runner, nullptr);
        EXPECT_EQ(run_bits(*t), want) << t->describe() << ", OpenMP";
#endif
        fbngrad_set_parallel_for(nullptr, nullptr);
    }
}

// The many-core rule (generators/schedule.h): every parallel loop over the
// tensors offers at least `want` tasks. A call may have one more loop, the
// combine of partial sums, parallel where their values make a task by the
// rule: NHWC's of the sum blocks' partials (2·blocks·C values), NCHW's sums
// over samples of the planes' partials (2·N·C). The same rule for those
// values. Where Halide puts NHWC's depends on the mode (after the sums in
// training, last in inference): it is the loop with the fewest tasks, if
// that is below `want` and at most one task per 4 channels; NHWC's blocks
// are taken as the most tasks of any other loop (at least the sum blocks: a
// stricter bound).
void expect_enough_tasks(const std::vector<int32_t> &loops, const TestProblem &t, int64_t want,
                         const std::string &what) {
    size_t combine = loops.size();
    int64_t blocks = t.p.layout == FBNGRAD_NCHW ? t.p.shape[0] : 0;  // N
    if (loops.size() >= 2) {
        const size_t fewest = size_t(std::min_element(loops.begin(), loops.end()) - loops.begin());
        if (loops[fewest] < want && loops[fewest] <= (t.p.channels() + 3) / 4) combine = fewest;
        if (t.p.layout == FBNGRAD_NHWC)
            for (size_t i = 0; i < loops.size(); ++i)
                if (i != combine) blocks = std::max<int64_t>(blocks, loops[i]);
    }
    for (size_t i = 0; i < loops.size(); ++i)
        EXPECT_GE(loops[i], i == combine ? std::clamp<int64_t>(2 * blocks * t.p.channels() / 16384, 1, 256) : want)
            << what << ": loop " << i << " of " << testing::PrintToString(loops) << (i == combine ? " (the combine)" : "");
}

// The many-core rule (generators/schedule.h): every parallel loop over the
// tensors offers at least min(256, elements / 16384) tasks. The x86 NCHW one
// pass, whose tasks hold every sample of their channels, meets it through
// its two-pass route (src/two_pass_route.h), which needs the split phase:
// a build without it offers min(that, C) there. NHWC's combine:
// expect_enough_tasks.
TEST_P(EveryVariant, EveryLoopOffersEnoughTasks) {
    for (const Shape &s : shapes(info().layout)) {
        auto t = problem(s);
        const std::vector<int32_t> loops = recorded_loops(*t);
        int64_t want = min_tasks(*t);
        if (info().layout == FBNGRAD_NCHW && !split_phase_built()) want = std::min<int64_t>(want, t->p.channels());
        EXPECT_FALSE(loops.empty() && t->p.elements() > 1) << t->describe() << ": no parallel loop";
        expect_enough_tasks(loops, *t, want, t->describe());
    }
}

// The NHWC combine of the sum blocks' partials runs in parallel where its
// values make a task of the call's size, on a runner the rule's (16384 here):
// 128 blocks of 1024 channels here, a task per 8 channels (and no other loop
// of 128 tasks: the sums and x_backprop have 256).
// Serial, it capped the modelled speed-up on many cores (docs/threads.md).
TEST_P(EveryVariant, NhwcCombineIsParallel) {
    if (info().layout != FBNGRAD_NHWC) GTEST_SKIP() << "NCHW: NchwSumsOverSamplesAreParallel";
    auto t = problem({{16, 16, 16, 1024}, false});
    const std::vector<int32_t> loops = recorded_loops(*t);
    EXPECT_EQ(std::count(loops.begin(), loops.end(), 1024 / 8), 1)
        << t->describe() << ": loops " << testing::PrintToString(loops);
}

// NCHW's sums over samples, which add the planes' partials (2·N·C values),
// run in parallel where those make a task by the rule (16384 on a runner):
// 16 channels a task. Serial, they were the time between the two-pass
// route's loops that capped NCHW 32,7,7,512 on 64 cores in the model
// (docs/threads.md). The fused kernel has the loop where it takes two passes
// (AArch64, and a tuned x86 row), the x86 one pass through its route.
TEST_P(EveryVariant, NchwSumsOverSamplesAreParallel) {
    if (info().layout != FBNGRAD_NCHW) GTEST_SKIP() << "NHWC: NhwcCombineIsParallel";
    auto t = problem({{64, 128, 2, 2}, false});
    const std::vector<int32_t> loops = recorded_loops(*t);
    if (loops.size() == 1u && !split_phase_built())
        GTEST_SKIP() << "the x86 one pass, without the split phase for its two-pass route (an edge build)";
    EXPECT_EQ(std::count(loops.begin(), loops.end(), 128 / 16), 1)
        << t->describe() << ": loops " << testing::PrintToString(loops);
}

// Each NHWC sum task zeroes its own partials: no loop of its own for the
// zeroing (one more for a runner to start and wait for, and on one thread
// most of a small call's time outside its tasks: docs/threads.md). Training:
// the sums, the per-channel loop, x_backprop, and the sums meet the rule.
TEST_P(EveryVariant, NhwcSumTasksZeroTheirOwnPartials) {
    if (info().layout != FBNGRAD_NHWC) GTEST_SKIP() << "NCHW sums no blocks of rows";
    // (Inference's loops are the same, but a tuned row may do it in one pass,
    // the blocks' sums inside x_backprop's loop: generators/schedule_x86.cpp;
    // its tasks zero their blocks too, which tests/check_caller_work.py checks
    // in the loop nest, as no loop count can show a serial memset.)
    if (!info().is_training) GTEST_SKIP() << "training only";
    for (const Shape &s :
         {Shape{{32, 7, 7, 512}, false}, Shape{{8, 14, 14, 1024}, false}, Shape{{4, 9, 9, 3}, false}}) {
        auto t = problem(s);
        const std::vector<int32_t> loops = recorded_loops(*t);
        ASSERT_EQ(loops.size(), 3u) << t->describe() << ": loops " << testing::PrintToString(loops);
        EXPECT_GE(loops[0], min_tasks(*t)) << t->describe();
    }
}

std::string variant_name(const testing::TestParamInfo<int> &p) { return fbngrad_variant(p.param)->name; }

INSTANTIATE_TEST_SUITE_P(CpuVariants, EveryVariant, testing::ValuesIn(cpu_variants()), variant_name);

// ---- the split phase: the same rule and the same bits on a runner -------------------------

TEST_F(ParallelFor, SplitPhaseEveryIsa) {
    FBNGRAD_SKIP_UNLESS_SPLIT_PHASE();
    for (const char *isa : {"avx512", "avx2", "sse41", "arm_fp16", "neon"}) {
        if (fbngrad_force_isa(isa, nullptr) != FBNGRAD_OK) continue;  // not this platform or CPU
        for (fbngrad_layout l : {FBNGRAD_NHWC, FBNGRAD_NCHW})
            for (const Shape &s : shapes(l)) {
                if (!built(FBNGRAD_FLOAT32, l, true)) continue;  // left out of this build (docs/edge-builds.md)
                TestProblem t(FBNGRAD_FLOAT32, l, s.dims, true, s.inverse_std, 3);
                std::vector<float> sdy(t.p.channels()), sdyxc(t.p.channels());
                auto both = [&]() {
                    fbngrad_tensor dy = t.tensor(t.dy.data()), x = t.tensor(t.x.data()), xb = t.tensor(t.xb.data());
                    fbngrad_tensor m = t.vec(t.mean.data()), sc = t.vec(t.scale.data()), v = t.vec(t.rs2.data());
                    fbngrad_tensor a = t.vec(sdy.data()), b = t.vec(sdyxc.data());
                    fbngrad_tensor sb = t.vec(t.sb.data()), ob = t.vec(t.ob.data());
                    int64_t count = 0;
                    fbngrad_status st;
                    EXPECT_EQ(fbngrad_split_phase_reduce(&dy, &x, &m, &a, &b, &count, &st), FBNGRAD_OK) << st.message;
                    EXPECT_EQ(fbngrad_split_phase_apply(&dy, &x, &sc, &m, &v, &a, &b, count, &t.attrs, &xb, &sb, &ob,
                                                        &st),
                              FBNGRAD_OK)
                        << st.message;
                    return t.output_bits();
                };
                fbngrad_set_num_threads(1);
                const std::string want = both();
                fbngrad_set_num_threads(0);
                Recorder r;
                fbngrad_set_parallel_for(Recorder::runner, &r);
                EXPECT_EQ(both(), want) << isa << " " << t.describe();
                fbngrad_set_parallel_for(nullptr, nullptr);
                expect_enough_tasks(r.loops, t, min_tasks(t), isa + (" " + t.describe()));
            }
    }
}

// OpenMP on its own, so that a build without it says so instead of passing quietly.
TEST_F(ParallelFor, OpenMpRunner) {
#ifdef _OPENMP
    FBNGRAD_SKIP_UNLESS_BUILT(FBNGRAD_BFLOAT16, FBNGRAD_NHWC, true);
    TestProblem t(FBNGRAD_BFLOAT16, FBNGRAD_NHWC, {4, 14, 14, 300}, true);
    fbngrad_set_num_threads(1);
    const std::string want = run_bits(t);
    fbngrad_set_parallel_for(openmp_runner, nullptr);
    EXPECT_EQ(run_bits(t), want);
#else
    GTEST_SKIP() << "built without OpenMP (none found, or a ThreadSanitizer build)";
#endif
}

// ---- errors ----------------------------------------------------------------------------------

int failing_runner(void *, int32_t, fbngrad_task_fn, void *) { return 7; }

TEST_F(ParallelFor, RunnerErrorFailsTheCallAndTheNextCallWorks) {
    TestProblem t(FBNGRAD_FLOAT32, FBNGRAD_NHWC, {2, 8, 8, 64}, true);
    fbngrad_set_num_threads(1);
    const std::string want = run_bits(t);
    fbngrad_set_parallel_for(failing_runner, nullptr);
    fbngrad_status st;
    EXPECT_EQ(t.run(&st), FBNGRAD_INTERNAL);
    EXPECT_NE(std::string(st.message).find("runner of fbngrad_set_parallel_for returned 7"), std::string::npos)
        << st.message;
    fbngrad_set_parallel_for(nullptr, nullptr);
    EXPECT_EQ(run_bits(t), want);
}

// The x86 NCHW one pass's two-pass route (src/two_pass_route.h): where a
// channel (N*H*W elements) exceeds a task of the call's size, or a task's run
// in each sample would be shorter than kShortestOnePassRun (runtime/task_size.h)
// in a call of more than one task, the call is the split phase's reduce and
// apply, one loop each; else the one pass, one loop. Its errors name the
// kernel that failed. (Same bits: SameBitsOnEveryRunner...)
TEST_F(ParallelFor, NchwOnePassTakesTwoPassesWhereAChannelExceedsATaskOrItsRunsAreShort) {
    FBNGRAD_SKIP_UNLESS_BUILT(FBNGRAD_FLOAT32, FBNGRAD_NCHW, true);
    FBNGRAD_SKIP_UNLESS_SPLIT_PHASE();
    TestProblem fits(FBNGRAD_FLOAT32, FBNGRAD_NCHW, {8, 4, 64, 32}, true);       // 16384 a channel
    TestProblem exceeds(FBNGRAD_FLOAT32, FBNGRAD_NCHW, {8, 4, 64, 33}, true);    // 16896 a channel
    const std::vector<int32_t> one = recorded_loops(fits);
    if (one.size() != 1u) GTEST_SKIP() << "this CPU's float32 NCHW variant takes two passes anyway (loops "
                                       << testing::PrintToString(one) << ")";
    EXPECT_EQ(one[0], 4) << "one task a channel";
    // Reduce, then apply: two loops of the rule's tasks each, and the right answer.
    auto expect_two_passes = [&](TestProblem &t) {
        const std::vector<int32_t> two = recorded_loops(t);
        ASSERT_EQ(two.size(), 2u) << t.describe() << ": " << testing::PrintToString(two);
        EXPECT_GE(two[0], min_tasks(t)) << t.describe();
        EXPECT_GE(two[1], min_tasks(t)) << t.describe();
        ASSERT_TRUE(t.check().ok()) << t.describe();
    };
    expect_two_passes(exceeds);
    // 32 samples of 7x7: a task of 16384 elements holds 10 channels, runs of
    // 490 elements a sample: two passes. 8 channels of them are one task.
    TestProblem short_runs(FBNGRAD_FLOAT32, FBNGRAD_NCHW, {32, 64, 7, 7}, true);
    TestProblem one_task(FBNGRAD_FLOAT32, FBNGRAD_NCHW, {32, 8, 7, 7}, true);
    expect_two_passes(short_runs);
    const std::vector<int32_t> single = recorded_loops(one_task);
    EXPECT_EQ(single.size(), 1u) << testing::PrintToString(single);
    ASSERT_TRUE(one_task.check().ok());

    fbngrad_set_parallel_for(failing_runner, nullptr);
    fbngrad_status st;
    EXPECT_EQ(exceeds.run(&st), FBNGRAD_INTERNAL);
    EXPECT_NE(std::string(st.message).find("fbng_reduce_f32_nchw_"), std::string::npos) << st.message;
    EXPECT_EQ(fits.run(&st), FBNGRAD_INTERNAL);
    EXPECT_NE(std::string(st.message).find("fbng_f32_nchw_train_"), std::string::npos) << st.message;
    EXPECT_EQ(short_runs.run(&st), FBNGRAD_INTERNAL);
    EXPECT_NE(std::string(st.message).find("fbng_reduce_f32_nchw_"), std::string::npos) << st.message;
}

// A task that fails on a pool: every other task still runs, the pool is not
// stuck, the call fails, and the next call on the same pool succeeds.
struct FailFirstTask {
    ThreadPool *pool;
    struct Wrapped {
        fbngrad_task_fn task;
        void *ctx;
    };
    static int fail_index_0(void *w, int32_t i) {
        auto *x = static_cast<Wrapped *>(w);
        const int rc = x->task(x->ctx, i);
        return i == 0 ? 5 : rc;
    }
    static int runner(void *self, int32_t count, fbngrad_task_fn task, void *task_ctx) {
        Wrapped w{task, task_ctx};
        return static_cast<FailFirstTask *>(self)->pool->run(count, fail_index_0, &w);
    }
};

TEST_F(ParallelFor, FailingTaskOnAPoolNoDeadlock) {
    FBNGRAD_SKIP_UNLESS_BUILT(FBNGRAD_FLOAT32, FBNGRAD_NCHW, true);
    TestProblem t(FBNGRAD_FLOAT32, FBNGRAD_NCHW, {8, 64, 14, 14}, true);
    fbngrad_set_num_threads(1);
    const std::string want = run_bits(t);
    ThreadPool pool(4);
    FailFirstTask f{&pool};
    fbngrad_set_parallel_for(FailFirstTask::runner, &f);
    fbngrad_status st;
    EXPECT_EQ(t.run(&st), FBNGRAD_INTERNAL);
    EXPECT_NE(std::string(st.message).find("returned 5"), std::string::npos) << st.message;
    fbngrad_set_parallel_for(ThreadPool::runner, &pool);
    EXPECT_EQ(run_bits(t), want);
}

// ---- replacing the runner while calls run ---------------------------------------------------

// A runner that knows when it is used after it was replaced.
struct GuardedRunner {
    std::atomic<int> active{0};
    std::atomic<bool> retired{false};
    std::atomic<int> *used_after_retirement;
    static int runner(void *self, int32_t count, fbngrad_task_fn task, void *task_ctx) {
        auto *g = static_cast<GuardedRunner *>(self);
        ++g->active;
        if (g->retired) ++*g->used_after_retirement;
        const int rc = serial_runner(nullptr, count, task, task_ctx);
        --g->active;
        return rc;
    }
};

TEST_F(ParallelFor, ReplacedWhileCallsRun) {
    const std::vector<int64_t> shape{4, 16, 16, 64};
    TestProblem base(FBNGRAD_FLOAT32, FBNGRAD_NHWC, shape, true);
    fbngrad_set_num_threads(1);
    const std::string want = run_bits(base);
    fbngrad_set_num_threads(0);

    std::atomic<int> used_after{0}, wrong{0}, failed{0};
    std::atomic<bool> stop{false};
    std::vector<std::thread> callers;
    for (int w = 0; w < 4; ++w)
        callers.emplace_back([&] {
            TestProblem t(FBNGRAD_FLOAT32, FBNGRAD_NHWC, shape, true);
            while (!stop) {
                std::fill(t.xb.begin(), t.xb.end(), uint8_t(0xAB));
                fbngrad_status st;
                if (t.run(&st) != FBNGRAD_OK)
                    ++failed;
                else if (t.output_bits() != want)
                    ++wrong;
            }
        });
    std::unique_ptr<GuardedRunner> current;
    for (int k = 0; k < 200; ++k) {
        auto next = std::make_unique<GuardedRunner>();
        next->used_after_retirement = &used_after;
        if (k % 3 == 2)
            fbngrad_set_parallel_for(nullptr, nullptr);  // fbngrad's own pool between runners
        else
            fbngrad_set_parallel_for(GuardedRunner::runner, next.get());
        // set_parallel_for has returned: no call may still be inside the old runner.
        if (current) {
            EXPECT_EQ(current->active.load(), 0) << "replacement " << k;
            current->retired = true;
        }
        current = std::move(next);
        std::this_thread::yield();
    }
    fbngrad_set_parallel_for(nullptr, nullptr);
    stop = true;
    for (std::thread &t : callers) t.join();
    EXPECT_EQ(used_after.load(), 0);
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_EQ(failed.load(), 0);
}

// ---- the C++ wrapper -----------------------------------------------------------------------

TEST_F(ParallelFor, CppScopedRunnerAndExceptions) {
    FBNGRAD_SKIP_UNLESS_BUILT(FBNGRAD_FLOAT32, FBNGRAD_NCHW, false);
    TestProblem t(FBNGRAD_FLOAT32, FBNGRAD_NCHW, {4, 32, 8, 8}, false);
    fbngrad_set_num_threads(1);
    const std::string want = run_bits(t);
    int loops = 0;
    auto counting = [&loops](int32_t count, const Task &task) {
        ++loops;
        for (int32_t i = 0; i < count; ++i)
            if (int rc = task(i)) return rc;
        return 0;
    };
    {
        ScopedParallelFor<decltype(counting)> scope(counting);
        EXPECT_EQ(run_bits(t), want);
        EXPECT_GT(loops, 0);
    }
    const int after_scope = loops;
    EXPECT_EQ(run_bits(t), want);
    EXPECT_EQ(loops, after_scope) << "the runner was used after its scope ended";

    auto throwing = [](int32_t, const Task &) -> int { throw std::runtime_error("pool shut down"); };
    set_parallel_for(&throwing);
    fbngrad_status st;
    EXPECT_EQ(t.run(&st), FBNGRAD_INTERNAL);
    reset_parallel_for();
    EXPECT_EQ(run_bits(t), want);
}

}  // namespace
