// Every compiled variant (from the variant table) against the double-precision
// reference, on the edge shapes of edge_shapes.h (below, at and above the
// vector widths and the schedules' tiles), in both reserve_space_2
// conventions. A variant whose ISA this CPU lacks is skipped, with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "edge_shapes.h"
#include "problem.h"

using namespace fbngrad;
using namespace fbngrad::test;

namespace {

struct VariantRow {
    const char *name;
    fbngrad_dtype dtype;
    fbngrad_layout layout;
    bool training;
    const char *isa;
    bool tuned;  // a tuned schedule (cmake/tuned_variants.cmake): forced by name, on every shape
};

// The CPU rows of the table, hand-scheduled and tuned; test_cuda.cpp tests the CUDA ones.
const std::vector<VariantRow> &variant_rows() {
    static const std::vector<VariantRow> rows = [] {
        std::vector<VariantRow> r;
#define FBNGRAD_VARIANT(name, dtype, layout, training, isa, device) \
    if (device == FBNGRAD_CPU) r.push_back({#name, dtype, layout, training != 0, #isa, false});
#define FBNGRAD_TUNED_VARIANT(name, dtype, layout, training, isa, device, classes) \
    if (device == FBNGRAD_CPU) r.push_back({#name, dtype, layout, training != 0, #isa, true});
#include "fbngrad_variants.inc"
#undef FBNGRAD_TUNED_VARIANT
#undef FBNGRAD_VARIANT
        return r;
    }();
    return rows;
}

// Forces the row's ISA and the variant itself: a tuned variant must be right on
// every shape, not only on those of the classes it was tuned for, and a
// hand-scheduled one also on the shapes a tuned one takes over.
bool force_row(const VariantRow &v, std::string *why) {
    fbngrad_status st;
    if (fbngrad_force_isa(v.isa, &st) != FBNGRAD_OK ||
        fbngrad_force_variant(v.name, &st) != FBNGRAD_OK) {
        *why = std::string(v.name) + ": " + st.message;
        return false;
    }
    return true;
}

void unforce() {
    fbngrad_force_variant("", nullptr);
    fbngrad_force_isa("", nullptr);
}

struct Case {
    size_t variant;
    size_t shape;
    bool inverse_std;
};

std::string case_name(const testing::TestParamInfo<Case> &info) {
    const VariantRow &v = variant_rows()[info.param.variant];
    std::string s = std::string(v.name) + "_";
    s += shape_name(kEdgeShapes[info.param.shape]);
    return s + (info.param.inverse_std ? "_invstd" : "_var");
}

std::vector<Case> all_cases() {
    std::vector<Case> cs;
    for (size_t v = 0; v < variant_rows().size(); ++v)
        for (size_t s = 0; s < kEdgeShapes.size(); ++s)
            for (bool inv : {false, true}) cs.push_back({v, s, inv});
    return cs;
}

class VariantTest : public testing::TestWithParam<Case> {
protected:
    void SetUp() override {
        std::string why;
        if (!force_row(variant_rows()[GetParam().variant], &why)) GTEST_SKIP() << why;
    }
    void TearDown() override { unforce(); }
};

TEST_P(VariantTest, MatchesReference) {
    const VariantRow &v = variant_rows()[GetParam().variant];
    const auto shape = in_layout(kEdgeShapes[GetParam().shape], v.layout);
    TestProblem tp(v.dtype, v.layout, shape, v.training, GetParam().inverse_std, 7 + uint32_t(GetParam().shape));

    const fbngrad_variant_info *sel = fbngrad_selected_variant_for_shape(
        v.dtype, v.layout, v.training, FBNGRAD_CPU, int32_t(shape.size()), shape.data());
    ASSERT_NE(sel, nullptr);
    ASSERT_STREQ(sel->name, v.name) << "forcing " << v.name << " must select it";

    fbngrad_status st;
    ASSERT_EQ(tp.run(&st), FBNGRAD_OK) << st.message;
    ref::Comparison r = tp.check();
    EXPECT_TRUE(r.ok()) << tp.describe() << ": " << r.mismatches << " mismatches, first " << r.first_mismatch;
}

INSTANTIATE_TEST_SUITE_P(AllVariants, VariantTest, testing::ValuesIn(all_cases()), case_name);

// NaN and infinities propagate through every variant, not only through the one
// the dispatcher picks on this machine: the baseline ISAs (sse41, neon) convert
// float16 with Halide's integer emulation, which once turned NaN into infinity.
class VariantNanTest : public testing::TestWithParam<size_t> {
protected:
    void SetUp() override {
        std::string why;
        if (!force_row(variant_rows()[GetParam()], &why)) GTEST_SKIP() << why;
    }
    void TearDown() override { unforce(); }
};

TEST_P(VariantNanTest, NanAndInfPropagate) {
    const VariantRow &v = variant_rows()[GetParam()];
    const int64_t C = 19, S = 21;  // N = 2, H x W = 3 x 7
    TestProblem tp(v.dtype, v.layout, in_layout({2, 3, 7, C}, v.layout), v.training);
    auto elem = [&](int64_t n, int64_t s, int64_t c) {
        return v.layout == FBNGRAD_NHWC ? (n * S + s) * C + c : (n * C + c) * S + s;
    };
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    ref::store(v.dtype, tp.dy.data(), elem(0, 4, 1), nan);    // channel 1: a NaN gradient
    ref::store(v.dtype, tp.x.data(), elem(1, 2, 5), inf);     // channel 5: an infinite input
    ref::store(v.dtype, tp.dy.data(), elem(1, 20, 9), -inf);  // channel 9: an infinite gradient
    tp.rs2[12] = nan;                                         // channel 12: a NaN variance

    fbngrad_status st;
    ASSERT_EQ(tp.run(&st), FBNGRAD_OK) << st.message;
    ref::Comparison r = tp.check();
    EXPECT_TRUE(r.ok()) << tp.describe() << ": " << r.mismatches << " mismatches, first " << r.first_mismatch;
    EXPECT_TRUE(std::isnan(tp.ob[1]));
    EXPECT_TRUE(std::isnan(ref::load(v.dtype, tp.xb.data(), elem(0, 4, 1))));
    EXPECT_TRUE(std::isnan(ref::load(v.dtype, tp.xb.data(), elem(1, 3, 12))));
    EXPECT_TRUE(std::isfinite(ref::load(v.dtype, tp.xb.data(), elem(1, 3, 0))));
}

INSTANTIATE_TEST_SUITE_P(AllVariants, VariantNanTest, testing::Range(size_t(0), variant_rows().size()),
                         [](const testing::TestParamInfo<size_t> &info) {
                             return std::string(variant_rows()[info.param].name) + "_nan_inf";
                         });

}  // namespace
