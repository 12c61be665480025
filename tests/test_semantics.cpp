// The contract's special cases, through the dispatcher's choice: zero-element
// inputs, zeros, NaN/Inf propagation, determinism, larger problems, and the
// C++ API.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "fbngrad/fbngrad.hpp"
#include "problem.h"

using namespace fbngrad;
using namespace fbngrad::test;

namespace {

const fbngrad_dtype kDtypes[] = {FBNGRAD_FLOAT32, FBNGRAD_FLOAT16, FBNGRAD_BFLOAT16};
const fbngrad_layout kLayouts[] = {FBNGRAD_NHWC, FBNGRAD_NCHW};

TEST(ZeroElements, SumsAreZeroAndXBackpropUntouched) {
    for (fbngrad_dtype dt : kDtypes)
        for (fbngrad_layout l : kLayouts)
            for (bool training : {true, false}) {
                // [0,7,11,4] NHWC / [0,4,7,11] NCHW; also H = 0 with N > 0.
                for (auto shape : {std::vector<int64_t>{0, 7, 11, 4}, std::vector<int64_t>{2, 0, 3, 4}}) {
                    if (l == FBNGRAD_NCHW) shape = {shape[0], shape[3], shape[1], shape[2]};
                    TestProblem tp(dt, l, shape, training);
                    fbngrad_status st;
                    ASSERT_EQ(tp.run(&st), FBNGRAD_OK) << tp.describe() << ": " << st.message;
                    for (int c = 0; c < 4; ++c) {
                        EXPECT_EQ(tp.sb[c], 0.0f);
                        EXPECT_EQ(tp.ob[c], 0.0f);
                    }
                }
            }
}

TEST(ZeroElements, NullDataIsFineWhenEmpty) {
    int64_t shape[4] = {0, 2, 2, 3}, c = 3;
    float sc[3] = {1, 1, 1}, m[3] = {0, 0, 0}, v[3] = {1, 1, 1}, sb[3] = {9, 9, 9}, ob[3] = {9, 9, 9};
    fbngrad_tensor dy = fbngrad_make_tensor(nullptr, FBNGRAD_FLOAT32, 4, shape, FBNGRAD_NHWC), x = dy, xb = dy;
    fbngrad_tensor tsc = fbngrad_make_tensor(sc, FBNGRAD_FLOAT32, 1, &c, FBNGRAD_NHWC);
    fbngrad_tensor tm = fbngrad_make_tensor(m, FBNGRAD_FLOAT32, 1, &c, FBNGRAD_NHWC);
    fbngrad_tensor tv = fbngrad_make_tensor(v, FBNGRAD_FLOAT32, 1, &c, FBNGRAD_NHWC);
    fbngrad_tensor tsb = fbngrad_make_tensor(sb, FBNGRAD_FLOAT32, 1, &c, FBNGRAD_NHWC);
    fbngrad_tensor tob = fbngrad_make_tensor(ob, FBNGRAD_FLOAT32, 1, &c, FBNGRAD_NHWC);
    fbngrad_status st;
    ASSERT_EQ(fbngrad_fused_batch_norm_grad_v2(&dy, &x, &tsc, &tm, &tv, nullptr, &xb, &tsb, &tob, &st), FBNGRAD_OK)
        << st.message;
    EXPECT_EQ(sb[2], 0.0f);
    EXPECT_EQ(ob[0], 0.0f);
}

TEST(Values, ZeroGradientGivesZeros) {
    for (fbngrad_dtype dt : kDtypes)
        for (fbngrad_layout l : kLayouts)
            for (bool training : {true, false}) {
                if (!built(dt, l, training)) continue;  // left out of this build
                TestProblem tp(dt, l, {2, 5, 5, 5}, training);
                std::fill(tp.dy.begin(), tp.dy.end(), 0);
                fbngrad_status st;
                ASSERT_EQ(tp.run(&st), FBNGRAD_OK) << st.message;
                for (int64_t i = 0; i < tp.p.elements(); ++i) ASSERT_EQ(ref::load(dt, tp.xb.data(), i), 0.0);
                for (int c = 0; c < 5; ++c) {
                    EXPECT_EQ(tp.sb[c], 0.0f);
                    EXPECT_EQ(tp.ob[c], 0.0f);
                }
            }
}

// NaN and Inf in the data and in the statistics propagate as the formulas say;
// the reference computes where they go and compare() demands exactly that.
TEST(Values, NanAndInfPropagate) {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    for (fbngrad_dtype dt : kDtypes)
        for (fbngrad_layout l : kLayouts)
            for (bool training : {true, false}) {
                if (!built(dt, l, training)) continue;  // left out of this build
                std::vector<int64_t> shape = l == FBNGRAD_NHWC ? std::vector<int64_t>{2, 3, 7, 19}
                                                               : std::vector<int64_t>{2, 19, 3, 7};
                TestProblem tp(dt, l, shape, training);
                const int64_t C = 19, E = tp.p.elements();
                auto elem = [&](int64_t n, int64_t s, int64_t c) {
                    return l == FBNGRAD_NHWC ? (n * 21 + s) * C + c : (n * C + c) * 21 + s;
                };
                ref::store(dt, tp.dy.data(), elem(0, 4, 1), nan);   // channel 1: NaN gradient
                ref::store(dt, tp.x.data(), elem(1, 2, 5), inf);    // channel 5: Inf input
                ref::store(dt, tp.dy.data(), elem(1, 20, 9), -inf); // channel 9: -Inf gradient
                tp.rs2[12] = nan;                                   // channel 12: NaN variance
                tp.mean[15] = inf;                                  // channel 15: Inf mean
                fbngrad_status st;
                ASSERT_EQ(tp.run(&st), FBNGRAD_OK) << st.message;
                ref::Comparison r = tp.check();
                EXPECT_TRUE(r.ok()) << tp.describe() << ": " << r.first_mismatch;
                // Spot-check the obvious: channel 1's sums are NaN, channel 0 is clean.
                EXPECT_TRUE(std::isnan(tp.ob[1]));
                EXPECT_TRUE(std::isfinite(tp.ob[0]) && std::isfinite(tp.sb[0]));
                EXPECT_TRUE(std::isnan(ref::load(dt, tp.xb.data(), elem(0, 4, 1))));
                (void)E;
            }
}

// An infinite float32 factor scale*inv (an infinite scale, or a product past
// float32's largest) makes x_backprop that infinity times the bracket (training)
// or dy (inference). Found by the fuzzer: a constant dy and x == mean give a
// bracket dy - sum(dy)/M that is 0 in exact arithmetic but a rounding residue
// of either sign in float32, so +inf, -inf and NaN are all right there; the
// reference says which elements those are (the rest keep their exact sign).
TEST(Values, InfiniteScaleFactor) {
    const float inf = std::numeric_limits<float>::infinity();
    for (fbngrad_dtype dt : kDtypes)
        for (fbngrad_layout l : kLayouts)
            for (bool training : {true, false}) {
                if (!built(dt, l, training)) continue;  // left out of this build
                // The fuzzer's case: 1 sample of 3x5 per channel, 4 channels.
                const int64_t C = 4, S = 15;
                TestProblem tp(dt, l, l == FBNGRAD_NHWC ? std::vector<int64_t>{1, 3, 5, C}
                                                        : std::vector<int64_t>{1, C, 3, 5}, training);
                auto elem = [&](int64_t s, int64_t c) { return l == FBNGRAD_NHWC ? s * C + c : c * S + s; };
                for (int64_t s = 0; s < S; ++s) {
                    ref::store(dt, tp.dy.data(), elem(s, 0), 122.0f / 31.0f);  // channel 0: constant dy,
                    if (s >= 7 && s < 11) ref::store(dt, tp.x.data(), elem(s, 0), tp.mean[0]);  // some x at the mean
                    if (s % 3 == 0) ref::store(dt, tp.dy.data(), elem(s, 2), 0.0f);  // channel 2: some dy zero
                }
                tp.mean[0] = float(ref::load(dt, tp.x.data(), elem(7, 0)));  // the stored x, exactly
                tp.scale[0] = -inf;   // channel 0: infinite scale, zero brackets
                tp.scale[1] = inf;    // channel 1: infinite scale, ordinary data
                tp.scale[2] = 3e37f;  // channel 2: finite scale, scale*inv past float32's largest
                tp.rs2[2] = tp.p.rs2_is_inverse_std ? 100.0f : 0.0f;  // inv = 100 or 1/sqrt(eps) = 31.6
                fbngrad_status st;
                ASSERT_EQ(tp.run(&st), FBNGRAD_OK) << st.message;
                ref::Comparison r = tp.check();
                EXPECT_TRUE(r.ok()) << tp.describe() << ": " << r.first_mismatch;
                for (int64_t s = 0; s < S; ++s) {
                    EXPECT_FALSE(std::isfinite(ref::load(dt, tp.xb.data(), elem(s, 0)))) << tp.describe() << " s " << s;
                    EXPECT_FALSE(std::isfinite(ref::load(dt, tp.xb.data(), elem(s, 2)))) << tp.describe() << " s " << s;
                    EXPECT_TRUE(std::isfinite(ref::load(dt, tp.xb.data(), elem(s, 3)))) << tp.describe() << " s " << s;
                }
                if (!training)  // dy * inf: NaN exactly where dy is 0
                    EXPECT_TRUE(std::isnan(ref::load(dt, tp.xb.data(), elem(3, 2)))) << tp.describe();
            }
}

// The reference's rule for those elements, on its own: any non-finite result
// passes, a finite one fails, and an ordinary NaN still demands NaN.
TEST(Reference, ZeroBracketTimesInfinityIsAnyNonFinite) {
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    float dy[4] = {2, 2, 2, 2}, x[4] = {1, 1, 1, 1}, scale = inf, mean = 1, rs2 = 1;
    ref::Problem p;
    p.layout = FBNGRAD_NHWC;
    p.shape[0] = 1, p.shape[1] = 1, p.shape[2] = 4, p.shape[3] = 1;
    p.y_backprop = dy, p.x = x, p.scale = &scale, p.mean = &mean, p.reserve_space_2 = &rs2;
    p.is_training = true;
    float sb = 0, ob = 8;  // sum(dy * (x - mean)) * inv, sum(dy)
    const ref::Expected e = ref::compute(p);
    float xb[4] = {inf, -inf, nan, inf};
    EXPECT_TRUE(ref::compare(p, e, xb, &sb, &ob).ok());
    xb[1] = 0.0f;
    EXPECT_EQ(ref::compare(p, e, xb, &sb, &ob).mismatches, 1);
    scale = nan;  // a NaN factor: NaN everywhere, and only NaN
    const ref::Expected e_nan = ref::compute(p);
    float xb_nan[4] = {nan, nan, nan, inf};
    EXPECT_EQ(ref::compare(p, e_nan, xb_nan, &sb, &ob).mismatches, 1);
}

TEST(Values, NanEpsilonPropagates) {
    FBNGRAD_SKIP_UNLESS_BUILT(FBNGRAD_FLOAT32, FBNGRAD_NHWC, true);
    TestProblem tp(FBNGRAD_FLOAT32, FBNGRAD_NHWC, {1, 2, 2, 3}, true);
    tp.attrs.epsilon = tp.p.epsilon = std::numeric_limits<float>::quiet_NaN();
    fbngrad_status st;
    ASSERT_EQ(tp.run(&st), FBNGRAD_OK) << st.message;
    EXPECT_TRUE(std::isnan(tp.sb[0]));
    EXPECT_FALSE(std::isnan(tp.ob[0]));  // offset_backprop = sum(dy) does not involve epsilon
    EXPECT_TRUE(tp.check().ok()) << tp.check().first_mismatch;
}

// The same inputs give the same bits on every run, and with 1 or 2 threads
// (the partial-sum blocks are fixed by the schedule, not by the thread count).
TEST(Determinism, SameBitsAcrossRunsAndThreadCounts) {
    for (fbngrad_layout l : kLayouts) {
        if (!built(FBNGRAD_FLOAT32, l, true)) continue;  // left out of this build
        std::vector<int64_t> shape = l == FBNGRAD_NHWC ? std::vector<int64_t>{4, 31, 33, 24}
                                                       : std::vector<int64_t>{4, 24, 31, 33};
        TestProblem tp(FBNGRAD_FLOAT32, l, shape, true);
        fbngrad_status st;
        ASSERT_EQ(tp.run(&st), FBNGRAD_OK);
        const auto xb0 = tp.xb;
        const auto sb0 = tp.sb, ob0 = tp.ob;
        for (int threads : {1, 2, 0}) {
            fbngrad_set_num_threads(threads);
            for (int rep = 0; rep < 3; ++rep) {
                ASSERT_EQ(tp.run(&st), FBNGRAD_OK);
                EXPECT_EQ(tp.xb, xb0) << "threads " << threads;
                EXPECT_EQ(0, std::memcmp(tp.sb.data(), sb0.data(), sb0.size() * 4)) << "threads " << threads;
                EXPECT_EQ(0, std::memcmp(tp.ob.data(), ob0.data(), ob0.size() * 4)) << "threads " << threads;
            }
        }
        fbngrad_set_num_threads(0);
    }
}

// A ResNet-sized channel count and many rows: the sums' error stays within
// the reference's bound (blocked sums are at least as accurate as sequential).
TEST(Accuracy, ResNetStageShape) {
    for (fbngrad_layout l : kLayouts)
        for (fbngrad_dtype dt : kDtypes) {
            if (!built(dt, l, true)) continue;  // left out of this build
            std::vector<int64_t> shape = l == FBNGRAD_NHWC ? std::vector<int64_t>{8, 28, 28, 128}
                                                           : std::vector<int64_t>{8, 128, 28, 28};
            TestProblem tp(dt, l, shape, true);
            fbngrad_status st;
            ASSERT_EQ(tp.run(&st), FBNGRAD_OK) << st.message;
            ref::Comparison r = tp.check();
            EXPECT_TRUE(r.ok()) << tp.describe() << ": " << r.first_mismatch;
            EXPECT_LT(r.worst_ratio, 1.0);
        }
}

TEST(CppApi, RunsAndReportsErrors) {
    FBNGRAD_SKIP_UNLESS_BUILT(FBNGRAD_FLOAT32, FBNGRAD_NHWC, true);
    std::vector<float> dy(2 * 3 * 3 * 4, 0.5f), x(dy.size(), 1.0f), xb(dy.size());
    std::vector<float> sc(4, 1.0f), m(4, 1.0f), v(4, 1.0f), sb(4), ob(4);
    TensorView tdy(dy.data(), DType::Float32, {2, 3, 3, 4}), tx(x.data(), DType::Float32, {2, 3, 3, 4});
    TensorView txb(xb.data(), DType::Float32, {2, 3, 3, 4});
    TensorView tsc(sc.data(), DType::Float32, {4}), tm(m.data(), DType::Float32, {4});
    TensorView tv(v.data(), DType::Float32, {4}), tsb(sb.data(), DType::Float32, {4});
    TensorView tob(ob.data(), DType::Float32, {4});
    Status s = fused_batch_norm_grad_v2(tdy, tx, tsc, tm, tv, Attrs{}, txb, tsb, tob);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_FLOAT_EQ(ob[0], 9.0f);  // sum of 18 rows of 0.5
    EXPECT_FLOAT_EQ(sb[0], 0.0f);  // x == mean
    EXPECT_FLOAT_EQ(xb[0], 0.0f);  // dy equals its mean, x equals the mean

    TensorView bad(sc.data(), DType::Float32, {3});
    s = fused_batch_norm_grad_v2(tdy, tx, bad, tm, tv, Attrs{}, txb, tsb, tob);
    EXPECT_EQ(s.code(), FBNGRAD_INVALID_ARGUMENT);
    EXPECT_EQ(s.message(), "scale must have the same number of elements as the channels of x, got 3 and 4");
    EXPECT_FALSE(selected_variant(DType::Float32, Layout::NHWC, true).empty());
}

}  // namespace
