// The CUDA variants on a GPU, against the same double-precision reference and
// on the same edge shapes as the CPU variants (edge_shapes.h), in both
// reserve_space_2 conventions; and the CUDA API around them: device tensors
// used in place, the caller's context and stream, the zero-element case,
// repeatable bits; and the split phase (reduce + apply) on device tensors, the
// sums staying on the device. Without a usable CUDA device these are skipped, with the
// reason (ctest reports them as skipped); CudaDetection runs everywhere and
// checks that the library and the dispatcher agree on whether there is one.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cuda_driver.h"
#include "edge_shapes.h"
#include "problem.h"

using namespace fbngrad;
using namespace fbngrad::test;

namespace {

struct CudaRow {
    const char *name;
    fbngrad_dtype dtype;
    fbngrad_layout layout;
    bool training;
    bool plane;  // the NCHW single pass (the `plane` shape class; cmake/variants.cmake): forced by name
};

// The CUDA rows of the table: the hand-scheduled ones, then the single-pass ones.
const std::vector<CudaRow> &cuda_rows() {
    static const std::vector<CudaRow> rows = [] {
        std::vector<CudaRow> r;
#define FBNGRAD_VARIANT(name, dtype, layout, training, isa, device) \
    if (device == FBNGRAD_CUDA) r.push_back({#name, dtype, layout, training != 0, false});
#define FBNGRAD_TUNED_VARIANT(name, dtype, layout, training, isa, device, classes) \
    if (device == FBNGRAD_CUDA) r.push_back({#name, dtype, layout, training != 0, true});
#include "fbngrad_variants.inc"
#undef FBNGRAD_TUNED_VARIANT
#undef FBNGRAD_VARIANT
        return r;
    }();
    return rows;
}

int hand_cuda_rows() {
    int n = 0;
    for (const CudaRow &r : cuda_rows()) n += !r.plane;
    return n;
}

const cuda::Driver &drv() { return *cuda::driver(); }

#define CU_ASSERT(call)                                                          \
    do {                                                                         \
        cuda::CUresult r_ = (call);                                              \
        ASSERT_EQ(r_, 0) << #call << ": " << cuda::error_name(r_);               \
    } while (0)

// Device memory for one tensor; at least 4 bytes, so that even an empty
// tensor has a valid pointer.
struct DeviceMem {
    cuda::CUdeviceptr ptr = 0;
    size_t bytes = 0;
    explicit DeviceMem(size_t n) : bytes(n) {
        if (drv().cuMemAlloc(&ptr, n < 4 ? 4 : n) != 0) ptr = 0;
    }
    ~DeviceMem() {
        if (ptr) drv().cuMemFree(ptr);
    }
    DeviceMem(const DeviceMem &) = delete;
    void *data() const { return reinterpret_cast<void *>(ptr); }
    void upload(const void *src) const {
        if (bytes) EXPECT_EQ(drv().cuMemcpyHtoD(ptr, src, bytes), 0);
    }
    void download(void *dst) const {
        if (bytes) EXPECT_EQ(drv().cuMemcpyDtoH(dst, ptr, bytes), 0);
    }
};

// A TestProblem's tensors on the device: the inputs copied there, the outputs
// initialized with the problem's sentinels.
struct DeviceProblem {
    TestProblem &tp;
    DeviceMem dy, x, xb, scale, mean, rs2, sb, ob;
    explicit DeviceProblem(TestProblem &t)
        : tp(t), dy(t.dy.size()), x(t.x.size()), xb(t.xb.size()), scale(4 * t.scale.size()),
          mean(4 * t.mean.size()), rs2(4 * t.rs2.size()), sb(4 * t.sb.size()), ob(4 * t.ob.size()) {
        dy.upload(t.dy.data());
        x.upload(t.x.data());
        xb.upload(t.xb.data());
        scale.upload(t.scale.data());
        mean.upload(t.mean.data());
        rs2.upload(t.rs2.data());
        sb.upload(t.sb.data());
        ob.upload(t.ob.data());
    }
    bool allocated() const {
        for (const DeviceMem *m : {&dy, &x, &xb, &scale, &mean, &rs2, &sb, &ob})
            if (!m->ptr) return false;
        return true;
    }
    fbngrad_code run(fbngrad_status *st) {
        auto on_device = [](fbngrad_tensor t) {
            t.device = FBNGRAD_CUDA;
            return t;
        };
        fbngrad_tensor tdy = on_device(tp.tensor(dy.data())), tx = on_device(tp.tensor(x.data())),
                       txb = on_device(tp.tensor(xb.data()));
        fbngrad_tensor tsc = on_device(tp.vec(scale.data())), tm = on_device(tp.vec(mean.data())),
                       tv = on_device(tp.vec(rs2.data()));
        fbngrad_tensor tsb = on_device(tp.vec(sb.data())), tob = on_device(tp.vec(ob.data()));
        return fbngrad_fused_batch_norm_grad_v2(&tdy, &tx, &tsc, &tm, &tv, &tp.attrs, &txb, &tsb, &tob, st);
    }
    // The split phase on one worker: reduce into device sums, then apply with
    // its own count (what an allreduce over one worker leaves). The sums stay
    // on the device, in sum_dy / sum_dyxc; *count is the host's.
    fbngrad_code run_split(const DeviceMem &sum_dy, const DeviceMem &sum_dyxc, int64_t *count, fbngrad_status *st) {
        fbngrad_code rc = reduce(sum_dy, sum_dyxc, count, st);
        return rc != FBNGRAD_OK ? rc : apply(sum_dy, sum_dyxc, *count, st);
    }
    fbngrad_code reduce(const DeviceMem &sum_dy, const DeviceMem &sum_dyxc, int64_t *count, fbngrad_status *st) {
        fbngrad_tensor tdy = dev(tp.tensor(dy.data())), tx = dev(tp.tensor(x.data())), tm = dev(tp.vec(mean.data()));
        fbngrad_tensor tsdy = dev(tp.vec(sum_dy.data())), tsdyxc = dev(tp.vec(sum_dyxc.data()));
        return fbngrad_split_phase_reduce(&tdy, &tx, &tm, &tsdy, &tsdyxc, count, st);
    }
    fbngrad_code apply(const DeviceMem &sum_dy, const DeviceMem &sum_dyxc, int64_t count, fbngrad_status *st) {
        fbngrad_tensor tdy = dev(tp.tensor(dy.data())), tx = dev(tp.tensor(x.data())),
                       txb = dev(tp.tensor(xb.data()));
        fbngrad_tensor tsc = dev(tp.vec(scale.data())), tm = dev(tp.vec(mean.data())), tv = dev(tp.vec(rs2.data()));
        fbngrad_tensor tsdy = dev(tp.vec(sum_dy.data())), tsdyxc = dev(tp.vec(sum_dyxc.data()));
        fbngrad_tensor tsb = dev(tp.vec(sb.data())), tob = dev(tp.vec(ob.data()));
        return fbngrad_split_phase_apply(&tdy, &tx, &tsc, &tm, &tv, &tsdy, &tsdyxc, count, &tp.attrs, &txb, &tsb,
                                         &tob, st);
    }
    static fbngrad_tensor dev(fbngrad_tensor t) {
        t.device = FBNGRAD_CUDA;
        return t;
    }
    // Waits for the kernels, then copies the outputs into the TestProblem.
    void download_outputs() {
        EXPECT_EQ(drv().cuCtxSynchronize(), 0);
        xb.download(tp.xb.data());
        sb.download(tp.sb.data());
        ob.download(tp.ob.data());
    }
};

// Skips without a device; otherwise makes device 0's primary context current
// on this thread (as the CUDA runtime API would), where fbngrad finds it.
class CudaTest : public testing::Test {
protected:
    void SetUp() override {
        if (!fbngrad_cuda_available())
            GTEST_SKIP() << "no CUDA device available: " << fbngrad_cuda_unavailable_reason();
        cuda::CUcontext current = nullptr;
        ASSERT_EQ(drv().cuCtxGetCurrent(&current), 0);
        if (!current) {
            cuda::CUdevice dev = 0;
            CU_ASSERT(drv().cuDeviceGet(&dev, 0));
            CU_ASSERT(drv().cuDevicePrimaryCtxRetain(&current, dev));
            CU_ASSERT(drv().cuCtxPushCurrent(current));
        }
        context_ = current;
    }
    void TearDown() override { fbngrad_set_cuda_context(nullptr, nullptr); }
    cuda::CUcontext context_ = nullptr;
};

struct Case {
    size_t variant;
    size_t shape;
    bool inverse_std;
};

std::string case_name(const testing::TestParamInfo<Case> &info) {
    return std::string(cuda_rows()[info.param.variant].name) + "_" + shape_name(kEdgeShapes[info.param.shape]) +
           (info.param.inverse_std ? "_invstd" : "_var");
}

std::vector<Case> all_cases() {
    std::vector<Case> cs;
    for (size_t v = 0; v < cuda_rows().size(); ++v)
        for (size_t s = 0; s < kEdgeShapes.size(); ++s)
            for (bool inv : {false, true}) cs.push_back({v, s, inv});
    return cs;
}

// The fused op on tp's tensors copied to the device, against the reference.
void run_and_check(TestProblem &tp) {
    DeviceProblem d(tp);
    ASSERT_TRUE(d.allocated());
    fbngrad_status st;
    ASSERT_EQ(d.run(&st), FBNGRAD_OK) << st.message;
    d.download_outputs();
    ref::Comparison r = tp.check();
    EXPECT_TRUE(r.ok()) << tp.describe() << ": " << r.mismatches << " mismatches, first " << r.first_mismatch;
}

class CudaVariantTest : public CudaTest, public testing::WithParamInterface<Case> {};

TEST_P(CudaVariantTest, MatchesReference) {
    const CudaRow &v = cuda_rows()[GetParam().variant];
    const fbngrad_variant_info *sel = fbngrad_selected_variant(v.dtype, v.layout, v.training, FBNGRAD_CUDA);
    ASSERT_NE(sel, nullptr);
    fbngrad_status st;
    if (v.plane) {
        // The single pass must be right on every shape, not only on its class's:
        // forced by name (a 32x7x7 plane class shape picks it unforced, below).
        const int64_t small[4] = {32, 8, 7, 7};
        const fbngrad_variant_info *picked =
            fbngrad_selected_variant_for_shape(v.dtype, v.layout, v.training, FBNGRAD_CUDA, 4, small);
        ASSERT_NE(picked, nullptr);
        EXPECT_STREQ(picked->name, v.name) << "NCHW 32x8x7x7 on CUDA must select the single pass";
        ASSERT_EQ(fbngrad_force_variant(v.name, &st), FBNGRAD_OK) << st.message;
    } else {
        ASSERT_STREQ(sel->name, v.name) << "CUDA tensors must select this variant";
    }

    const auto shape = in_layout(kEdgeShapes[GetParam().shape], v.layout);
    TestProblem tp(v.dtype, v.layout, shape, v.training, GetParam().inverse_std, 7 + uint32_t(GetParam().shape));
    run_and_check(tp);
    fbngrad_force_variant("", nullptr);
}

INSTANTIATE_TEST_SUITE_P(AllCudaVariants, CudaVariantTest, testing::ValuesIn(all_cases()), case_name);

using CudaApi = CudaTest;

// Same inputs, same bits: the sums have a fixed order (no atomics).
TEST_F(CudaApi, RepeatsBitForBit) {
    TestProblem tp(FBNGRAD_FLOAT32, FBNGRAD_NHWC, {4, 33, 35, 96}, true);
    DeviceProblem d(tp);
    ASSERT_TRUE(d.allocated());
    fbngrad_status st;
    ASSERT_EQ(d.run(&st), FBNGRAD_OK) << st.message;
    d.download_outputs();
    const auto xb = tp.xb;
    const auto sb = tp.sb, ob = tp.ob;
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(d.run(&st), FBNGRAD_OK) << st.message;
        d.download_outputs();
        EXPECT_EQ(tp.xb, xb);
        EXPECT_EQ(tp.sb, sb);
        EXPECT_EQ(tp.ob, ob);
    }
}

// The caller's context and stream: the kernels run on that stream, so after a
// stream synchronize (and no context-wide one) the results are there.
TEST_F(CudaApi, UsesTheCallersContextAndStream) {
    cuda::CUstream stream = nullptr;
    CU_ASSERT(drv().cuStreamCreate(&stream, 1 /* CU_STREAM_NON_BLOCKING */));
    fbngrad_set_cuda_context(context_, stream);
    TestProblem tp(FBNGRAD_BFLOAT16, FBNGRAD_NCHW, {3, 24, 40, 40}, true);
    {
        DeviceProblem d(tp);
        ASSERT_TRUE(d.allocated());
        fbngrad_status st;
        ASSERT_EQ(d.run(&st), FBNGRAD_OK) << st.message;
        CU_ASSERT(drv().cuStreamSynchronize(stream));
        d.xb.download(tp.xb.data());
        d.sb.download(tp.sb.data());
        d.ob.download(tp.ob.data());
    }
    ref::Comparison r = tp.check();
    EXPECT_TRUE(r.ok()) << tp.describe() << ": " << r.first_mismatch;
    fbngrad_set_cuda_context(nullptr, nullptr);
    CU_ASSERT(drv().cuStreamDestroy(stream));
}

// NCHW's plane sums put the channel on the grid's y dimension: 65535
// channels is the most it takes (validate.h kMaxCudaNchwChannels; one more is
// FBNGRAD_UNIMPLEMENTED, test_validation.cpp's cuda_nchw_channels).
TEST_F(CudaApi, NchwAtTheChannelLimit) {
    TestProblem tp(FBNGRAD_FLOAT32, FBNGRAD_NCHW, {2, 65535, 1, 3}, true);
    run_and_check(tp);
}

// No elements: scale_backprop and offset_backprop become zeros on the device.
TEST_F(CudaApi, ZeroElementsZeroTheChannelOutputs) {
    TestProblem tp(FBNGRAD_FLOAT16, FBNGRAD_NHWC, {0, 4, 4, 37}, true);
    DeviceProblem d(tp);
    ASSERT_TRUE(d.allocated());
    fbngrad_status st;
    ASSERT_EQ(d.run(&st), FBNGRAD_OK) << st.message;
    d.download_outputs();
    EXPECT_EQ(tp.sb, std::vector<float>(37, 0.0f));
    EXPECT_EQ(tp.ob, std::vector<float>(37, 0.0f));
}

using CudaSplitPhase = CudaTest;

// Device memory for C float sums, filled with a sentinel (so that a test sees what was written).
struct DeviceSums {
    DeviceMem dy, dyxc;
    explicit DeviceSums(int64_t C) : dy(4 * size_t(C)), dyxc(4 * size_t(C)) {
        const std::vector<float> sentinel(size_t(C), -555.0f);
        dy.upload(sentinel.data());
        dyxc.upload(sentinel.data());
    }
    std::vector<float> download(const DeviceMem &m) const {
        std::vector<float> v(m.bytes / 4);
        EXPECT_EQ(drv().cuCtxSynchronize(), 0);
        m.download(v.data());
        return v;
    }
};

// One worker: reduce + apply on the device give the fused CUDA call's bits
// (the same schedule, split at the sums), match the reference, and the device
// sums match the CPU split phase's.
TEST_F(CudaSplitPhase, MatchesTheFusedCudaCallAndTheCpu) {
    struct Shape {
        fbngrad_dtype dtype;
        fbngrad_layout layout;
        std::vector<int64_t> shape;
        bool training;
    };
    for (const Shape &sh : {Shape{FBNGRAD_FLOAT32, FBNGRAD_NHWC, {4, 9, 11, 40}, true},
                            Shape{FBNGRAD_BFLOAT16, FBNGRAD_NCHW, {3, 24, 10, 10}, false},
                            Shape{FBNGRAD_FLOAT16, FBNGRAD_NHWC, {2, 33, 35, 7}, true},
                            Shape{FBNGRAD_FLOAT32, FBNGRAD_NCHW, {2, 5, 70, 70}, true}}) {
        TestProblem split(sh.dtype, sh.layout, sh.shape, sh.training);
        TestProblem fused(sh.dtype, sh.layout, sh.shape, sh.training), cpu(sh.dtype, sh.layout, sh.shape, sh.training);
        SCOPED_TRACE(split.describe());
        const int64_t C = split.p.channels();
        fbngrad_status st;
        DeviceSums sums(C);
        int64_t count = -1;
        {
            DeviceProblem d(split);
            ASSERT_TRUE(d.allocated());
            ASSERT_EQ(d.run_split(sums.dy, sums.dyxc, &count, &st), FBNGRAD_OK) << st.message;
            d.download_outputs();
        }
        {
            DeviceProblem d(fused);
            ASSERT_TRUE(d.allocated());
            ASSERT_EQ(d.run(&st), FBNGRAD_OK) << st.message;
            d.download_outputs();
        }
        EXPECT_EQ(count, split.p.elements() / C);
        EXPECT_EQ(split.xb, fused.xb);
        EXPECT_EQ(split.sb, fused.sb);
        EXPECT_EQ(split.ob, fused.ob);
        ref::Comparison r = split.check();
        EXPECT_TRUE(r.ok()) << r.mismatches << " mismatches, first " << r.first_mismatch;

        // The CPU's sums: the same values up to the order of the additions.
        std::vector<float> cdy(static_cast<size_t>(C)), cdyxc(static_cast<size_t>(C));
        fbngrad_tensor tdy = cpu.tensor(cpu.dy.data()), tx = cpu.tensor(cpu.x.data()), tm = cpu.vec(cpu.mean.data());
        fbngrad_tensor tsdy = cpu.vec(cdy.data()), tsdyxc = cpu.vec(cdyxc.data());
        int64_t cpu_count = -1;
        ASSERT_EQ(fbngrad_split_phase_reduce(&tdy, &tx, &tm, &tsdy, &tsdyxc, &cpu_count, &st), FBNGRAD_OK)
            << st.message;
        EXPECT_EQ(cpu_count, count);
        const std::vector<float> gdy = sums.download(sums.dy), gdyxc = sums.download(sums.dyxc);
        for (int64_t c = 0; c < C; ++c) {
            const double tol = 1e-4 * double(count);
            EXPECT_NEAR(gdy[c], cdy[c], tol) << "sum_dy[" << c << "]";
            EXPECT_NEAR(gdyxc[c], cdyxc[c], 4 * tol) << "sum_dyxc[" << c << "]";
        }
    }
}

// An empty shard: reduce writes zero sums on the device and count 0; apply
// with the other workers' sums and count gives their scale/offset backprop,
// bit for bit (it runs on a stand-in row in scratch memory: a zero-block
// launch is an error in CUDA). Both layouts, both modes, 32- and 16-bit.
TEST_F(CudaSplitPhase, EmptyShard) {
    struct Case {
        fbngrad_dtype dtype;
        fbngrad_layout layout;
        bool training;
    };
    for (const Case &k : {Case{FBNGRAD_FLOAT32, FBNGRAD_NHWC, true}, Case{FBNGRAD_BFLOAT16, FBNGRAD_NCHW, true},
                          Case{FBNGRAD_FLOAT16, FBNGRAD_NCHW, false}}) {
        TestProblem full(k.dtype, k.layout, in_layout({3, 4, 4, 37}, k.layout), k.training);
        TestProblem empty(k.dtype, k.layout, in_layout({0, 4, 4, 37}, k.layout), k.training);
        SCOPED_TRACE(full.describe());
        // The empty shard shares the batch statistics of the full one.
        empty.scale = full.scale;
        empty.mean = full.mean;
        empty.rs2 = full.rs2;
        empty.bind();
        fbngrad_status st;
        DeviceSums full_sums(37), empty_sums(37);
        int64_t count = -1, empty_count = -1;
        DeviceProblem df(full), de(empty);
        ASSERT_TRUE(df.allocated() && de.allocated());
        ASSERT_EQ(de.reduce(empty_sums.dy, empty_sums.dyxc, &empty_count, &st), FBNGRAD_OK) << st.message;
        EXPECT_EQ(empty_count, 0);
        EXPECT_EQ(empty_sums.download(empty_sums.dy), std::vector<float>(37, 0.0f));
        EXPECT_EQ(empty_sums.download(empty_sums.dyxc), std::vector<float>(37, 0.0f));

        ASSERT_EQ(df.run_split(full_sums.dy, full_sums.dyxc, &count, &st), FBNGRAD_OK) << st.message;
        ASSERT_EQ(de.apply(full_sums.dy, full_sums.dyxc, count, &st), FBNGRAD_OK) << st.message;
        df.download_outputs();
        de.download_outputs();
        EXPECT_EQ(empty.sb, full.sb);
        EXPECT_EQ(empty.ob, full.ob);

        // No element anywhere: zeros, no kernel.
        ASSERT_EQ(de.apply(empty_sums.dy, empty_sums.dyxc, 0, &st), FBNGRAD_OK) << st.message;
        de.download_outputs();
        EXPECT_EQ(empty.sb, std::vector<float>(37, 0.0f));
        EXPECT_EQ(empty.ob, std::vector<float>(37, 0.0f));
    }
}

// Without a GPU: no CUDA variant is supported or selected, and CUDA tensors
// get the documented error, never Halide's. With one: all of them are.
TEST(CudaDetection, LibraryAndDispatcherAgree) {
    const bool available = fbngrad_cuda_available() != 0;
    EXPECT_EQ(std::string(fbngrad_cuda_unavailable_reason()).empty(), available)
        << fbngrad_cuda_unavailable_reason();
    int cuda_variants = 0;
    for (int i = 0; i < fbngrad_variant_count(); ++i) {
        const fbngrad_variant_info *v = fbngrad_variant(i);
        if (v->device != FBNGRAD_CUDA) continue;
        EXPECT_STREQ(v->isa, "cuda") << v->name;
        EXPECT_EQ(v->supported != 0, available) << v->name;
        if (*v->shape_classes) {  // a single-pass row: NCHW, the plane class only
            EXPECT_STREQ(v->shape_classes, "plane") << v->name;
            EXPECT_EQ(v->layout, FBNGRAD_NCHW) << v->name;
            continue;
        }
        ++cuda_variants;
        const fbngrad_variant_info *sel = fbngrad_selected_variant(v->dtype, v->layout, v->is_training, FBNGRAD_CUDA);
        EXPECT_EQ(sel, available ? v : nullptr) << v->name;
    }
    EXPECT_EQ(cuda_variants, hand_cuda_rows());
    EXPECT_EQ(cuda_variants, 12) << "3 dtypes x 2 layouts x 2 modes";
    EXPECT_EQ(int(cuda_rows().size()) - cuda_variants, 6) << "3 dtypes x NCHW x 2 modes: the single pass";
    std::printf("CUDA %s%s\n", available ? "available" : "not available: ", fbngrad_cuda_unavailable_reason());
}

// A TestProblem's host pointers labelled CUDA, for the tests without a
// device: they must never be dereferenced.
struct MislabelledTensors {
    fbngrad_tensor dy, x, xb, sc, m, v, sb, ob;
    explicit MislabelledTensors(TestProblem &tp)
        : dy(DeviceProblem::dev(tp.tensor(tp.dy.data()))), x(DeviceProblem::dev(tp.tensor(tp.x.data()))),
          xb(DeviceProblem::dev(tp.tensor(tp.xb.data()))), sc(DeviceProblem::dev(tp.vec(tp.scale.data()))),
          m(DeviceProblem::dev(tp.vec(tp.mean.data()))), v(DeviceProblem::dev(tp.vec(tp.rs2.data()))),
          sb(DeviceProblem::dev(tp.vec(tp.sb.data()))), ob(DeviceProblem::dev(tp.vec(tp.ob.data()))) {}
};

TEST(CudaDetection, CudaTensorsWithoutADeviceGetTheDocumentedError) {
    if (fbngrad_cuda_available()) GTEST_SKIP() << "a CUDA device is available";
    TestProblem tp(FBNGRAD_FLOAT32, FBNGRAD_NCHW, {2, 3, 4, 5}, true);
    const auto xb_before = tp.xb;
    MislabelledTensors t(tp);
    fbngrad_status st;
    EXPECT_EQ(fbngrad_fused_batch_norm_grad_v2(&t.dy, &t.x, &t.sc, &t.m, &t.v, &tp.attrs, &t.xb, &t.sb, &t.ob, &st),
              FBNGRAD_UNAVAILABLE);
    EXPECT_STREQ(st.message, "no CUDA device available");
    EXPECT_EQ(tp.xb, xb_before);
    EXPECT_EQ(tp.sb, std::vector<float>(tp.sb.size(), -777.0f));
    // Also for zero elements: TensorFlow's early return comes after the device check.
    tp.p.shape[0] = 0;
    t = MislabelledTensors(tp);
    EXPECT_EQ(fbngrad_fused_batch_norm_grad_v2(&t.dy, &t.x, &t.sc, &t.m, &t.v, &tp.attrs, &t.xb, &t.sb, &t.ob, &st),
              FBNGRAD_UNAVAILABLE);
    EXPECT_EQ(tp.sb, std::vector<float>(tp.sb.size(), -777.0f));
}

// The split phase's CUDA tensors likewise: the error, and nothing written (the
// sums, the count and the outputs), also for an empty shard.
TEST(CudaDetection, SplitPhaseCudaTensorsWithoutADeviceGetTheDocumentedError) {
    if (fbngrad_cuda_available()) GTEST_SKIP() << "a CUDA device is available";
    for (int64_t n : {2, 0}) {
        TestProblem tp(FBNGRAD_FLOAT32, FBNGRAD_NHWC, {n, 3, 4, 5}, true);
        const auto xb_before = tp.xb;
        std::vector<float> sdy(5, -555.0f), sdyxc(5, -555.0f);
        MislabelledTensors t(tp);
        fbngrad_tensor tsdy = DeviceProblem::dev(tp.vec(sdy.data())), tsdyxc = DeviceProblem::dev(tp.vec(sdyxc.data()));
        fbngrad_status st;
        int64_t count = -1;
        EXPECT_EQ(fbngrad_split_phase_reduce(&t.dy, &t.x, &t.m, &tsdy, &tsdyxc, &count, &st), FBNGRAD_UNAVAILABLE);
        EXPECT_STREQ(st.message, "no CUDA device available");
        EXPECT_EQ(count, -1);
        EXPECT_EQ(sdy, std::vector<float>(5, -555.0f));
        EXPECT_EQ(sdyxc, std::vector<float>(5, -555.0f));
        EXPECT_EQ(fbngrad_split_phase_apply(&t.dy, &t.x, &t.sc, &t.m, &t.v, &tsdy, &tsdyxc, 24, &tp.attrs, &t.xb, &t.sb,
                                            &t.ob, &st),
                  FBNGRAD_UNAVAILABLE);
        EXPECT_STREQ(st.message, "no CUDA device available");
        EXPECT_EQ(tp.xb, xb_before);
        EXPECT_EQ(tp.sb, std::vector<float>(5, -777.0f));
        EXPECT_EQ(tp.ob, std::vector<float>(5, -777.0f));
    }
}

}  // namespace
