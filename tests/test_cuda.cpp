// The CUDA variants on a GPU, against the same double-precision reference and
// on the same edge shapes as the CPU variants (edge_shapes.h), in both
// reserve_space_2 conventions; and the CUDA API around them: device tensors
// used in place, the caller's context and stream, the zero-element case,
// repeatable bits. Without a usable CUDA device these are skipped, with the
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
};

const std::vector<CudaRow> &cuda_rows() {
    static const std::vector<CudaRow> rows = [] {
        std::vector<CudaRow> r;
#define FBNGRAD_VARIANT(name, dtype, layout, training, isa, device) \
    if (device == FBNGRAD_CUDA) r.push_back({#name, dtype, layout, training != 0});
#include "fbngrad_variants.inc"
#undef FBNGRAD_VARIANT
        return r;
    }();
    return rows;
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

class CudaVariantTest : public CudaTest, public testing::WithParamInterface<Case> {};

TEST_P(CudaVariantTest, MatchesReference) {
    const CudaRow &v = cuda_rows()[GetParam().variant];
    const fbngrad_variant_info *sel = fbngrad_selected_variant(v.dtype, v.layout, v.training, FBNGRAD_CUDA);
    ASSERT_NE(sel, nullptr);
    ASSERT_STREQ(sel->name, v.name) << "CUDA tensors must select this variant";

    const auto shape = in_layout(kEdgeShapes[GetParam().shape], v.layout);
    TestProblem tp(v.dtype, v.layout, shape, v.training, GetParam().inverse_std, 7 + uint32_t(GetParam().shape));
    DeviceProblem d(tp);
    ASSERT_TRUE(d.allocated());
    fbngrad_status st;
    ASSERT_EQ(d.run(&st), FBNGRAD_OK) << st.message;
    d.download_outputs();
    ref::Comparison r = tp.check();
    EXPECT_TRUE(r.ok()) << tp.describe() << ": " << r.mismatches << " mismatches, first " << r.first_mismatch;
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
        ++cuda_variants;
        EXPECT_STREQ(v->isa, "cuda") << v->name;
        EXPECT_EQ(v->supported != 0, available) << v->name;
        const fbngrad_variant_info *sel = fbngrad_selected_variant(v->dtype, v->layout, v->is_training, FBNGRAD_CUDA);
        EXPECT_EQ(sel, available ? v : nullptr) << v->name;
    }
    EXPECT_EQ(cuda_variants, int(cuda_rows().size()));
    EXPECT_EQ(cuda_variants, 12) << "3 dtypes x 2 layouts x 2 modes";
    std::printf("CUDA %s%s\n", available ? "available" : "not available: ", fbngrad_cuda_unavailable_reason());
}

TEST(CudaDetection, CudaTensorsWithoutADeviceGetTheDocumentedError) {
    if (fbngrad_cuda_available()) GTEST_SKIP() << "a CUDA device is available";
    TestProblem tp(FBNGRAD_FLOAT32, FBNGRAD_NCHW, {2, 3, 4, 5}, true);
    const auto xb_before = tp.xb;
    auto on_device = [](fbngrad_tensor t) {
        t.device = FBNGRAD_CUDA;
        return t;
    };
    // Host pointers labelled CUDA: they must never be dereferenced.
    fbngrad_tensor dy = on_device(tp.tensor(tp.dy.data())), x = on_device(tp.tensor(tp.x.data())),
                   xb = on_device(tp.tensor(tp.xb.data()));
    fbngrad_tensor sc = on_device(tp.vec(tp.scale.data())), m = on_device(tp.vec(tp.mean.data())),
                   v = on_device(tp.vec(tp.rs2.data())), sb = on_device(tp.vec(tp.sb.data())),
                   ob = on_device(tp.vec(tp.ob.data()));
    fbngrad_status st;
    EXPECT_EQ(fbngrad_fused_batch_norm_grad_v2(&dy, &x, &sc, &m, &v, &tp.attrs, &xb, &sb, &ob, &st),
              FBNGRAD_UNAVAILABLE);
    EXPECT_STREQ(st.message, "no CUDA device available");
    EXPECT_EQ(tp.xb, xb_before);
    EXPECT_EQ(tp.sb, std::vector<float>(tp.sb.size(), -777.0f));
    // Also for zero elements: TensorFlow's early return comes after the device check.
    tp.p.shape[0] = 0;
    dy = on_device(tp.tensor(tp.dy.data()));
    x = on_device(tp.tensor(tp.x.data()));
    xb = on_device(tp.tensor(tp.xb.data()));
    EXPECT_EQ(fbngrad_fused_batch_norm_grad_v2(&dy, &x, &sc, &m, &v, &tp.attrs, &xb, &sb, &ob, &st),
              FBNGRAD_UNAVAILABLE);
    EXPECT_EQ(tp.sb, std::vector<float>(tp.sb.size(), -777.0f));
}

}  // namespace
