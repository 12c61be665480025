// The 32-bit boundary (validate.h: kMaxElements, kMaxPlanes). Halide indexes
// buffers with 32-bit ints, and every variant checks (its .stmt:
// "halide_error_buffer_allocation_too_large", "buffer_extents_too_large") that
// each dimension's extent * stride, and the total extent, are at most 2^31-1
// ELEMENTS (not bytes); the API's 3-D views (api.cpp Tensor3) never exceed
// the element count there. But split loops count their trips as
// (extent + factor - 1) / factor in int32, which wraps near 2^31: at exactly
// 2^31-1 elements x_backprop came back unwritten, without an error. So the
// limit is 2^31 - 2^16 = 2147418112 elements; and Halide's scratch buffers
// (float32 partial sums per channel, or per (n, c) in NCHW) must stay under
// 2^31 bytes, which caps C (NHWC) or N*C (NCHW) at 520093696.
//
// Here the kernels really run at exactly the limit, with it along each
// kernel dimension that can reach it: the s extent (NHWC, C = 1; NCHW) and,
// in float32 with C = 64, an 8 GiB tensor (more than 2^31 bytes); and NCHW
// with N = 4. The tensors are PeriodicMapping ranges: one
// 2 MiB block mapped over and over, so that a run needs a few MiB of RAM;
// the data repeat with the block's period, and so do the outputs (each
// x_backprop element depends on its own inputs and its channel only), which
// makes the aliased writes agree. The expected values are computed in double
// from one period and the number of times each of its elements occurs, with
// the reference's error bounds (src/reference/reference.h). Validation at and
// past the boundary is checked without memory (NULL data).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "fbngrad/fbngrad.h"
#include "periodic_mapping.h"
#include "problem.h"  // FBNGRAD_SKIP_UNLESS_BUILT: the rows a selective build has
#include "reference.h"

using namespace fbngrad;
using fbngrad::test::PeriodicMapping;

namespace {

constexpr int64_t kLimit = 2147418112;  // 2^31 - 2^16: validate.h kMaxElements
constexpr int64_t kPlanes = 520093696;  // validate.h kMaxPlanes
constexpr size_t kPeriod = size_t(2) << 20;
constexpr double kU = 1.0 / 16777216.0;  // float32's unit roundoff

struct Large {
    const char *name;
    fbngrad_dtype dtype;
    fbngrad_layout layout;
    int64_t shape[4];
    bool training;
};

int64_t elements(const Large &c) { return c.shape[0] * c.shape[1] * c.shape[2] * c.shape[3]; }
int64_t channels(const Large &c) { return c.shape[c.layout == FBNGRAD_NHWC ? 3 : 1]; }

// Per-channel inputs, and the block patterns (small multiples of 1/16: exact in every dtype).
float mean_of(int64_t c) { return 0.125f * float(c % 5); }
float var_of(int64_t c) { return 0.5f + 0.25f * float(c % 3); }
float scale_of(int64_t c) { return 1.0f + 0.125f * float(c % 4); }
float dy_at(int64_t j) { return float(int((j * 37) % 29) - 14) / 16.0f; }
float x_at(int64_t j, int64_t c) { return float(int((j * 53) % 31) - 15) / 16.0f + 0.25f * float(c % 3); }

class LargeTensors : public testing::TestWithParam<Large> {};

struct Outputs {
    PeriodicMapping xb;
    std::vector<float> sb, ob;
    Outputs(size_t bytes, int64_t C) : xb(bytes, kPeriod), sb(C, -777.0f), ob(C, -777.0f) {}
};

TEST_P(LargeTensors, RunAtTheBoundary) {
    const Large &L = GetParam();
    FBNGRAD_SKIP_UNLESS_BUILT(L.dtype, L.layout, L.training);
    const int64_t E = elements(L), C = channels(L), M = E / C;
    const int es = ref::dtype_size(L.dtype);
    const int64_t Q = int64_t(kPeriod) / es;  // elements per period
    ASSERT_TRUE(L.layout == FBNGRAD_NHWC ? Q % C == 0 : C == 1) << "the outputs must repeat with the block";
    const size_t bytes = size_t(E) * size_t(es);

    PeriodicMapping dy(bytes, kPeriod), x(bytes, kPeriod);
    ASSERT_TRUE(dy.ok()) << dy.error();
    ASSERT_TRUE(x.ok()) << x.error();
    for (int64_t j = 0; j < Q; ++j) {
        ref::store(L.dtype, dy.block(), j, dy_at(j));
        ref::store(L.dtype, x.block(), j, x_at(j, j % C));
    }
    std::vector<float> scale(C), mean(C), var(C);
    for (int64_t c = 0; c < C; ++c) scale[c] = scale_of(c), mean[c] = mean_of(c), var[c] = var_of(c);
    fbngrad_attrs attrs;
    fbngrad_attrs_init(&attrs);
    attrs.epsilon = 1e-3f;
    attrs.is_training = L.training;

    auto tensor = [&](void *data) { return fbngrad_make_tensor(data, L.dtype, 4, L.shape, L.layout); };
    auto vec = [&](float *data) { return fbngrad_make_tensor(data, FBNGRAD_FLOAT32, 1, &C, FBNGRAD_NHWC); };
    fbngrad_tensor tdy = tensor(dy.data()), tx = tensor(x.data());
    fbngrad_tensor tsc = vec(scale.data()), tm = vec(mean.data()), tv = vec(var.data());

    Outputs out(bytes, C);
    ASSERT_TRUE(out.xb.ok()) << out.xb.error();
    fbngrad_tensor txb = tensor(out.xb.data()), tsb = vec(out.sb.data()), tob = vec(out.ob.data());
    fbngrad_status st;
    ASSERT_EQ(fbngrad_fused_batch_norm_grad_v2(&tdy, &tx, &tsc, &tm, &tv, &attrs, &txb, &tsb, &tob, &st), FBNGRAD_OK)
        << st.message;

    // Expected, in double: sums over the tensor = sums over one period, each
    // element counted as often as it occurs in the E elements.
    std::vector<double> sum_dy(C, 0), sum_dyxc(C, 0), abs_dy(C, 0), abs_dyxc(C, 0), inv(C);
    for (int64_t j = 0; j < Q; ++j) {
        const int64_t c = j % C;
        const double occ = double(E / Q + (j < E % Q ? 1 : 0));
        const double d = ref::load(L.dtype, dy.block(), j), xc = ref::load(L.dtype, x.block(), j) - mean[c];
        sum_dy[c] += occ * d, sum_dyxc[c] += occ * d * xc;
        abs_dy[c] += occ * std::fabs(d), abs_dyxc[c] += occ * std::fabs(d * xc);
    }
    const double k_sum = (16.0 + 2.0 * std::sqrt(double(M))) * kU;
    for (int64_t c = 0; c < C; ++c) {
        inv[c] = 1.0 / std::sqrt(double(var[c]) + double(attrs.epsilon));
        const double want_sb = sum_dyxc[c] * inv[c];
        EXPECT_NEAR(out.ob[c], sum_dy[c], k_sum * abs_dy[c]) << "offset_backprop[" << c << "]";
        EXPECT_NEAR(out.sb[c], want_sb, k_sum * abs_dyxc[c] * inv[c] + 8 * kU * std::fabs(want_sb))
            << "scale_backprop[" << c << "]";
    }
    const double uT = L.dtype == FBNGRAD_FLOAT32 ? kU : L.dtype == FBNGRAD_FLOAT16 ? 1.0 / 2048 : 1.0 / 256;
    int64_t bad = 0;
    std::string first;
    for (int64_t j = 0; j < Q; ++j) {
        const int64_t c = j % C;
        const double d = ref::load(L.dtype, dy.block(), j), xc = ref::load(L.dtype, x.block(), j) - mean[c];
        const double a = scale[c] * inv[c], dy_mean = sum_dy[c] / double(M);
        const double k2 = inv[c] * inv[c] * sum_dyxc[c] / double(M);
        double want, err;
        if (L.training) {
            want = a * (d - dy_mean - xc * k2);
            err = std::fabs(a) * (8 * kU * (std::fabs(d) + std::fabs(dy_mean) + std::fabs(xc * k2)) +
                                  k_sum * abs_dy[c] / double(M) + std::fabs(xc) * inv[c] * inv[c] * k_sum * abs_dyxc[c] / double(M));
        } else {
            want = d * a;
            err = 8 * kU * std::fabs(want);
        }
        const double tol = (1 + uT) * err + uT * std::fabs(want) + 1e-7;
        const double got = ref::load(L.dtype, out.xb.block(), j);
        if (!(std::fabs(got - want) <= tol) && bad++ == 0)
            first = "x_backprop[" + std::to_string(j) + " + k*" + std::to_string(Q) + "]: got " + std::to_string(got) +
                    ", expected " + std::to_string(want);
    }
    EXPECT_EQ(bad, 0) << first;

    // The split-phase pair at the boundary too: the fused op's bits.
    if (L.dtype == FBNGRAD_FLOAT32) {
        std::vector<float> s1(C, -1.0f), s2(C, -1.0f);
        fbngrad_tensor t1 = vec(s1.data()), t2 = vec(s2.data());
        int64_t count = 0;
        ASSERT_EQ(fbngrad_split_phase_reduce(&tdy, &tx, &tm, &t1, &t2, &count, &st), FBNGRAD_OK) << st.message;
        EXPECT_EQ(count, M);
        Outputs out2(bytes, C);
        ASSERT_TRUE(out2.xb.ok()) << out2.xb.error();
        fbngrad_tensor txb2 = tensor(out2.xb.data()), tsb2 = vec(out2.sb.data()), tob2 = vec(out2.ob.data());
        ASSERT_EQ(fbngrad_split_phase_apply(&tdy, &tx, &tsc, &tm, &tv, &t1, &t2, count, &attrs, &txb2, &tsb2, &tob2, &st),
                  FBNGRAD_OK)
            << st.message;
        EXPECT_EQ(std::memcmp(out2.xb.block(), out.xb.block(), kPeriod), 0);
        EXPECT_EQ(out2.sb, out.sb);
        EXPECT_EQ(out2.ob, out.ob);
    }
}

// One case per kernel dimension that can reach 2^31-1, and an 8 GiB float32 tensor.
INSTANTIATE_TEST_SUITE_P(
    Boundary, LargeTensors,
    testing::Values(Large{"bf16_nhwc_s_at_limit_train", FBNGRAD_BFLOAT16, FBNGRAD_NHWC, {kLimit, 1, 1, 1}, true},
                    Large{"bf16_nchw_s_at_limit_train", FBNGRAD_BFLOAT16, FBNGRAD_NCHW, {1, 1, kLimit, 1}, true},
                    Large{"f16_nchw_n4_at_limit_infer", FBNGRAD_FLOAT16, FBNGRAD_NCHW, {4, 1, kLimit / 4, 1}, false},
                    Large{"f32_nhwc_c64_at_limit_train", FBNGRAD_FLOAT32, FBNGRAD_NHWC, {1, kLimit / 64, 1, 64}, true}),
    [](const testing::TestParamInfo<Large> &i) { return std::string(i.param.name); });

// Validation alone: no memory (every data pointer NULL).
fbngrad_code validate_only(std::vector<int64_t> shape, fbngrad_layout layout, fbngrad_status *st) {
    const int64_t C = shape[layout == FBNGRAD_NHWC ? 3 : 1];
    fbngrad_tensor t = fbngrad_make_tensor(nullptr, FBNGRAD_FLOAT32, 4, shape.data(), layout);
    fbngrad_tensor v = fbngrad_make_tensor(nullptr, FBNGRAD_FLOAT32, 1, &C, FBNGRAD_NHWC);
    fbngrad_tensor dy = t, x = t, xb = t, sc = v, m = v, var = v, sb = v, ob = v;
    return fbngrad_fused_batch_norm_grad_v2(&dy, &x, &sc, &m, &var, nullptr, &xb, &sb, &ob, st);
}

void expect_rejected(std::vector<int64_t> shape, fbngrad_layout layout, const std::string &why) {
    fbngrad_status st;
    EXPECT_EQ(validate_only(shape, layout, &st), FBNGRAD_UNIMPLEMENTED) << st.message;
    EXPECT_NE(std::string(st.message).find(why), std::string::npos) << st.message;
}

TEST(LargeTensorValidation, ExactlyTheLimitsAreAccepted) {
    fbngrad_status st;
    // Past every size check: the first failure is the missing data.
    const std::pair<std::vector<int64_t>, fbngrad_layout> at_limit[] = {
        {{kLimit, 1, 1, 1}, FBNGRAD_NHWC},  {{1, 1, kLimit, 1}, FBNGRAD_NCHW}, {{4, 1, 1, kPlanes}, FBNGRAD_NHWC},
        {{kPlanes, 1, 4, 1}, FBNGRAD_NCHW}, {{1, kPlanes, 4, 1}, FBNGRAD_NCHW}};
    for (const auto &[shape, layout] : at_limit) {
        EXPECT_EQ(validate_only(shape, layout, &st), FBNGRAD_INVALID_ARGUMENT);
        EXPECT_STREQ(st.message, "y_backprop has no data (NULL pointer)");
    }
    // Empty, with a dimension at the limit: valid, and nothing to read but scale [1].
    EXPECT_EQ(validate_only({0, kLimit, 1, 1}, FBNGRAD_NHWC, &st), FBNGRAD_INVALID_ARGUMENT);
    EXPECT_STREQ(st.message, "scale has no data (NULL pointer)");
}

TEST(LargeTensorValidation, OneMoreIsRejected) {
    const std::string too_many = "tensors of more than 2147418112 elements are not supported";
    for (auto shape : {std::vector<int64_t>{kLimit + 1, 1, 1, 1}, {2147483647, 1, 1, 1}, {int64_t(1) << 31, 1, 1, 1},
                       {46341, 46341, 1, 1}, {int64_t(1) << 40, int64_t(1) << 40, 1, 4}})
        expect_rejected(shape, FBNGRAD_NHWC, too_many);
    expect_rejected({1, 1, kLimit + 1, 1}, FBNGRAD_NCHW, too_many);
    // The kernels' per-channel / per-(n, c) float32 scratch.
    expect_rejected({1, 1, 1, kPlanes + 1}, FBNGRAD_NHWC, "more than 520093696 channels are not supported");
    expect_rejected({kPlanes + 1, 1, 1, 1}, FBNGRAD_NCHW, "NCHW tensors with N*C over 520093696 are not supported");
    expect_rejected({2, (kPlanes + 2) / 2, 1, 1}, FBNGRAD_NCHW, "NCHW tensors with N*C over 520093696");
    // Empty, but its other dimensions multiply past the limit: the merged
    // extents would not fit 32 bits (and their int64 product could overflow).
    for (auto shape : {std::vector<int64_t>{0, kLimit + 1, 1, 1}, {int64_t(1) << 62, 4, 0, 1}})
        expect_rejected(shape, FBNGRAD_NHWC, "exceeds 2147418112 are not supported, even in an empty tensor");
}

}  // namespace
