// The CUDA schedule (generators/schedule_cuda.cpp), compiled for OpenCL and
// executed on the CPU by PoCL: its grids, shared-memory stages, barriers and
// tree reductions against the double-precision reference on the edge shapes
// (edge_shapes.h), in both reserve_space_2 conventions; and the split phase
// (reduce, then apply with this worker's count) against the fused library,
// bit for bit. The kernels are called directly (the dispatcher knows only the
// shipped variants) with host buffers; Halide copies them to the OpenCL
// device and the outputs back.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "HalideRuntime.h"
#include "edge_shapes.h"
#include "fbngrad_pocl_variant_headers.h"
#include "problem.h"

using namespace fbngrad;
using namespace fbngrad::test;

namespace {

using KernelFn = int (*)(void const *, halide_buffer_t *, halide_buffer_t *, halide_buffer_t *, halide_buffer_t *,
                         halide_buffer_t *, float, bool, halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);

struct PoclRow {
    const char *name;
    fbngrad_dtype dtype;
    fbngrad_layout layout;
    bool training;
    KernelFn fn;
};

using ReduceFn = int (*)(void const *, halide_buffer_t *, halide_buffer_t *, halide_buffer_t *, halide_buffer_t *,
                        halide_buffer_t *);
using ApplyFn = int (*)(void const *, halide_buffer_t *, halide_buffer_t *, halide_buffer_t *, halide_buffer_t *,
                       halide_buffer_t *, float, bool, halide_buffer_t *, halide_buffer_t *, int64_t,
                       halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);

struct SplitRow {
    const char *fused;  // the fused library whose bits reduce + apply must give
    ReduceFn reduce;
    ApplyFn apply;
};

const std::vector<SplitRow> &split_rows() {
    static const std::vector<SplitRow> r = {
#define FBNGRAD_POCL_SPLIT(fused, reduce, apply) {#fused, reduce, apply},
#include "fbngrad_pocl_split.inc"
#undef FBNGRAD_POCL_SPLIT
    };
    return r;
}

const std::vector<PoclRow> &rows() {
    static const std::vector<PoclRow> r = {
#define FBNGRAD_POCL_VARIANT(name, dtype, layout, training) {#name, dtype, layout, training != 0, name},
#include "fbngrad_pocl_variants.inc"
#undef FBNGRAD_POCL_VARIANT
    };
    return r;
}

// "" when an OpenCL platform is installed (PoCL: pocl-opencl-icd), else why not.
std::string opencl_missing() {
    void *lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return "no OpenCL ICD loader (libOpenCL.so.1)";
    using GetPlatforms = int (*)(unsigned, void **, unsigned *);
    auto get = reinterpret_cast<GetPlatforms>(dlsym(lib, "clGetPlatformIDs"));
    unsigned n = 0;
    if (!get || get(0, nullptr, &n) != 0 || n == 0) return "no OpenCL platform installed (PoCL: pocl-opencl-icd)";
    return "";
}

// Halide's errors, for the failure message (the default handler would abort).
thread_local std::string g_error;
void on_error(void *, const char *msg) { g_error += msg ? msg : "?"; }

struct View {
    halide_dimension_t dim[3] = {};
    halide_buffer_t buf = {};
    // The kernels' 3-D view (generators/algorithm.h): NHWC (c, s*n, 1), NCHW (s, c, n).
    View(void *data, halide_type_t type, fbngrad_layout layout, int32_t N, int32_t S, int32_t C, bool input) {
        if (layout == FBNGRAD_NHWC) {
            dim[0] = {0, C, 1};
            dim[1] = {0, S * N, C};
            dim[2] = {0, 1, S * N * C};
        } else {
            dim[0] = {0, S, 1};
            dim[1] = {0, C, S};
            dim[2] = {0, N, S * C};
        }
        init(data, type, 3, input);
    }
    View(float *data, int32_t C, bool input) {
        dim[0] = {0, C, 1};
        init(data, halide_type_t(halide_type_float, 32), 1, input);
    }
    void init(void *data, halide_type_t type, int dims, bool input) {
        buf.host = static_cast<uint8_t *>(data);
        buf.type = type;
        buf.dimensions = dims;
        buf.dim = dim;
        buf.set_host_dirty(input);  // inputs: copy to the device
    }
    ~View() { halide_device_free(nullptr, &buf); }
    View(const View &) = delete;
};

halide_type_t tensor_type(fbngrad_dtype d) {
    if (d == FBNGRAD_FLOAT16) return halide_type_t(halide_type_float, 16);
    if (d == FBNGRAD_BFLOAT16) return halide_type_t(halide_type_uint, 16);
    return halide_type_t(halide_type_float, 32);
}

struct Case {
    size_t variant, shape;
    bool inverse_std;
};

class PoclScheduleTest : public testing::TestWithParam<Case> {
protected:
    void SetUp() override {
        static const std::string missing = opencl_missing();
        if (!missing.empty()) GTEST_SKIP() << missing;
        halide_set_error_handler(on_error);
    }
};

// N, S, C of an edge shape (logical N, spatial..., C).
struct Extents {
    int32_t N, S, C;
    explicit Extents(const std::vector<int64_t> &nsc) : N(int32_t(nsc.front())), S(1), C(int32_t(nsc.back())) {
        for (size_t d = 1; d + 1 < nsc.size(); ++d) S *= int32_t(nsc[d]);
    }
};

// The fused library `fn` on tp's tensors, outputs into tp.
void run_fused(const PoclRow &v, KernelFn fn, TestProblem &tp, const Extents &e, bool inverse_std) {
    const halide_type_t T = tensor_type(v.dtype);
    View dy(tp.dy.data(), T, v.layout, e.N, e.S, e.C, true), x(tp.x.data(), T, v.layout, e.N, e.S, e.C, true),
        xb(tp.xb.data(), T, v.layout, e.N, e.S, e.C, false);
    View sc(tp.scale.data(), e.C, true), m(tp.mean.data(), e.C, true), rs2(tp.rs2.data(), e.C, true),
        sb(tp.sb.data(), e.C, false), ob(tp.ob.data(), e.C, false);
    g_error.clear();
    int rc = fn(nullptr, &dy.buf, &x.buf, &sc.buf, &m.buf, &rs2.buf, tp.attrs.epsilon, inverse_std, &xb.buf, &sb.buf,
                &ob.buf);
    ASSERT_EQ(rc, 0) << v.name << ": " << g_error;
    for (View *out : {&xb, &sb, &ob}) ASSERT_EQ(halide_copy_to_host(nullptr, &out->buf), 0) << g_error;
}

TEST_P(PoclScheduleTest, MatchesReference) {
    const PoclRow &v = rows()[GetParam().variant];
    const std::vector<int64_t> &nsc = kEdgeShapes[GetParam().shape];
    TestProblem tp(v.dtype, v.layout, in_layout(nsc, v.layout), v.training, GetParam().inverse_std,
                   7 + uint32_t(GetParam().shape));
    run_fused(v, v.fn, tp, Extents(nsc), GetParam().inverse_std);
    if (HasFatalFailure()) return;
    ref::Comparison r = tp.check();
    EXPECT_TRUE(r.ok()) << tp.describe() << ": " << r.mismatches << " mismatches, first " << r.first_mismatch;
}

// The split phase on one worker: reduce over the whole batch, then apply with
// count = N*S, has the fused library's bits (and so matches the reference).
class SplitPoclTest : public PoclScheduleTest {};

TEST_P(SplitPoclTest, OneWorkerIsTheFusedBits) {
    const SplitRow &sr = split_rows()[GetParam().variant];
    const PoclRow *fused = nullptr;
    for (const PoclRow &r : rows())
        if (std::string(r.name) == sr.fused) fused = &r;
    ASSERT_NE(fused, nullptr) << sr.fused;
    const PoclRow &v = *fused;
    const std::vector<int64_t> &nsc = kEdgeShapes[GetParam().shape];
    const Extents e(nsc);
    const bool inv = GetParam().inverse_std;
    const uint32_t seed = 7 + uint32_t(GetParam().shape);
    TestProblem want(v.dtype, v.layout, in_layout(nsc, v.layout), v.training, inv, seed);
    run_fused(v, v.fn, want, e, inv);
    if (HasFatalFailure()) return;

    TestProblem tp(v.dtype, v.layout, in_layout(nsc, v.layout), v.training, inv, seed);
    std::vector<float> sum_dy(e.C, -1.0f), sum_dyxc(e.C, -1.0f);
    const halide_type_t T = tensor_type(v.dtype);
    {
        View dy(tp.dy.data(), T, v.layout, e.N, e.S, e.C, true), x(tp.x.data(), T, v.layout, e.N, e.S, e.C, true);
        View m(tp.mean.data(), e.C, true), sd(sum_dy.data(), e.C, false), sdx(sum_dyxc.data(), e.C, false);
        g_error.clear();
        ASSERT_EQ(sr.reduce(nullptr, &dy.buf, &x.buf, &m.buf, &sd.buf, &sdx.buf), 0) << g_error;
        for (View *out : {&sd, &sdx}) ASSERT_EQ(halide_copy_to_host(nullptr, &out->buf), 0) << g_error;
    }
    {
        View dy(tp.dy.data(), T, v.layout, e.N, e.S, e.C, true), x(tp.x.data(), T, v.layout, e.N, e.S, e.C, true),
            xb(tp.xb.data(), T, v.layout, e.N, e.S, e.C, false);
        View sc(tp.scale.data(), e.C, true), m(tp.mean.data(), e.C, true), rs2(tp.rs2.data(), e.C, true),
            sd(sum_dy.data(), e.C, true), sdx(sum_dyxc.data(), e.C, true), sb(tp.sb.data(), e.C, false),
            ob(tp.ob.data(), e.C, false);
        g_error.clear();
        ASSERT_EQ(sr.apply(nullptr, &dy.buf, &x.buf, &sc.buf, &m.buf, &rs2.buf, tp.attrs.epsilon, inv, &sd.buf,
                           &sdx.buf, int64_t(e.N) * e.S, &xb.buf, &sb.buf, &ob.buf),
                  0)
            << g_error;
        for (View *out : {&xb, &sb, &ob}) ASSERT_EQ(halide_copy_to_host(nullptr, &out->buf), 0) << g_error;
    }
    EXPECT_TRUE(tp.output_bits() == want.output_bits())
        << tp.describe() << ": reduce + apply differ from the fused library's bits";
    ref::Comparison r = tp.check();
    EXPECT_TRUE(r.ok()) << tp.describe() << ": " << r.mismatches << " mismatches, first " << r.first_mismatch;
}

// Every row (of `count`) x edge shape x reserve_space_2 convention.
std::vector<Case> cases_of(size_t count) {
    std::vector<Case> cs;
    for (size_t v = 0; v < count; ++v)
        for (size_t s = 0; s < kEdgeShapes.size(); ++s)
            for (bool inv : {false, true}) cs.push_back({v, s, inv});
    return cs;
}

std::string case_name(const std::string &row, const Case &c) {
    return row + "_" + shape_name(kEdgeShapes[c.shape]) + (c.inverse_std ? "_invstd" : "_var");
}

INSTANTIATE_TEST_SUITE_P(CudaScheduleOnPocl, PoclScheduleTest, testing::ValuesIn(cases_of(rows().size())),
                         [](const testing::TestParamInfo<Case> &i) {
                             return case_name(rows()[i.param.variant].name, i.param);
                         });
INSTANTIATE_TEST_SUITE_P(SplitPhaseOnPocl, SplitPoclTest, testing::ValuesIn(cases_of(split_rows().size())),
                         [](const testing::TestParamInfo<Case> &i) {
                             return case_name(split_rows()[i.param.variant].fused, i.param);
                         });

}  // namespace
