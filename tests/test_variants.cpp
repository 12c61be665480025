// Every compiled variant (from the variant table) against the double-precision
// reference, on shapes below, at and above the vector widths (4, 8, 16 float
// lanes) and the schedules' tiles (NHWC: 256-row sum blocks, 64-row tasks),
// in both reserve_space_2 conventions. A variant whose ISA this CPU lacks is
// skipped, with the reason.
#include <gtest/gtest.h>

#include <string>
#include <vector>

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
};

const std::vector<VariantRow> &variant_rows() {
    static const std::vector<VariantRow> rows = {
#define FBNGRAD_VARIANT(name, dtype, layout, training, isa, device) {#name, dtype, layout, training != 0, #isa},
#include "fbngrad_variants.inc"
#undef FBNGRAD_VARIANT
    };
    return rows;
}

// Logical shapes as N, spatial dims..., C; put into the layout's order below.
const std::vector<std::vector<int64_t>> kShapes = {
    {1, 1, 1, 1},     // N*H*W = 1, C = 1
    {1, 1, 1, 17},    // one row, C just above 16 lanes
    {2, 3, 5, 3},     // odd H and W, C below every vector width
    {1, 7, 9, 16},    // C at the AVX-512 width
    {3, 5, 7, 17},    // C above it, M = 105
    {1, 17, 31, 4},   // M = 527 = 2*256 + 15 and 8*64 + 15: tails of both tiles; C at SSE width
    {2, 16, 16, 64},  // M = 512: exactly two sum blocks
    {1, 1, 257, 8},   // M = 257: one past a block; C at AVX2 width
    {2, 2, 3, 2048},  // wide C, few rows
    {2, 3, 4, 5, 6},  // 5-D: N, D, H, W, C
};

std::vector<int64_t> in_layout(const std::vector<int64_t> &nsc, fbngrad_layout layout) {
    if (layout == FBNGRAD_NHWC) return nsc;
    std::vector<int64_t> s = {nsc[0], nsc.back()};
    s.insert(s.end(), nsc.begin() + 1, nsc.end() - 1);
    return s;
}

struct Case {
    size_t variant;
    size_t shape;
    bool inverse_std;
};

std::string case_name(const testing::TestParamInfo<Case> &info) {
    const VariantRow &v = variant_rows()[info.param.variant];
    std::string s = std::string(v.name) + "_";
    for (int64_t d : kShapes[info.param.shape]) s += std::to_string(d) + "x";
    s.pop_back();
    return s + (info.param.inverse_std ? "_invstd" : "_var");
}

std::vector<Case> all_cases() {
    std::vector<Case> cs;
    for (size_t v = 0; v < variant_rows().size(); ++v)
        for (size_t s = 0; s < kShapes.size(); ++s)
            for (bool inv : {false, true}) cs.push_back({v, s, inv});
    return cs;
}

class VariantTest : public testing::TestWithParam<Case> {
protected:
    void SetUp() override {
        const VariantRow &v = variant_rows()[GetParam().variant];
        fbngrad_status st;
        if (fbngrad_force_isa(v.isa, &st) != FBNGRAD_OK) GTEST_SKIP() << v.name << ": " << st.message;
    }
    void TearDown() override { fbngrad_force_isa("", nullptr); }
};

TEST_P(VariantTest, MatchesReference) {
    const VariantRow &v = variant_rows()[GetParam().variant];
    const auto shape = in_layout(kShapes[GetParam().shape], v.layout);
    TestProblem tp(v.dtype, v.layout, shape, v.training, GetParam().inverse_std, 7 + uint32_t(GetParam().shape));

    const fbngrad_variant_info *sel = fbngrad_selected_variant(v.dtype, v.layout, v.training, FBNGRAD_CPU);
    ASSERT_NE(sel, nullptr);
    ASSERT_STREQ(sel->name, v.name) << "forcing " << v.isa << " must select this variant";

    fbngrad_status st;
    ASSERT_EQ(tp.run(&st), FBNGRAD_OK) << st.message;
    ref::Comparison r = tp.check();
    EXPECT_TRUE(r.ok()) << tp.describe() << ": " << r.mismatches << " mismatches, first " << r.first_mismatch;
}

INSTANTIATE_TEST_SUITE_P(AllVariants, VariantTest, testing::ValuesIn(all_cases()), case_name);

}  // namespace
