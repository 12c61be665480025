// The dispatch rule: the best variant this CPU supports, a forced ISA when
// asked (function or FBNGRAD_ISA), clear errors for ISAs that cannot run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "fbngrad/fbngrad.h"

namespace {

const fbngrad_dtype kDtypes[] = {FBNGRAD_FLOAT32, FBNGRAD_FLOAT16, FBNGRAD_BFLOAT16};
const fbngrad_layout kLayouts[] = {FBNGRAD_NHWC, FBNGRAD_NCHW};

// The expected pick, by the rule itself: the first match in table order that is supported.
const fbngrad_variant_info *first_supported(fbngrad_dtype dt, fbngrad_layout l, int training, const char *isa) {
    for (int i = 0; i < fbngrad_variant_count(); ++i) {
        const fbngrad_variant_info *v = fbngrad_variant(i);
        if (v->dtype == dt && v->layout == l && v->is_training == training && v->device == FBNGRAD_CPU &&
            v->supported && (!isa || std::string(v->isa) == isa))
            return v;
    }
    return nullptr;
}

TEST(Variants, TableCoversEveryDtypeLayoutModeAndIsa) {
    // 3 dtypes x 2 layouts x 2 modes x 3 x86 ISAs.
    ASSERT_EQ(fbngrad_variant_count(), 36);
    for (const char *isa : {"sse41", "avx2", "avx512"})
        for (fbngrad_dtype dt : kDtypes)
            for (fbngrad_layout l : kLayouts)
                for (int t : {0, 1}) {
                    int found = 0;
                    for (int i = 0; i < fbngrad_variant_count(); ++i) {
                        const fbngrad_variant_info *v = fbngrad_variant(i);
                        found += v->dtype == dt && v->layout == l && v->is_training == t && std::string(v->isa) == isa;
                    }
                    EXPECT_EQ(found, 1) << isa << " " << dt << " " << l << " " << t;
                }
    EXPECT_EQ(fbngrad_variant(-1), nullptr);
    EXPECT_EQ(fbngrad_variant(36), nullptr);
}

TEST(Dispatch, PicksTheBestSupportedIsa) {
    if (std::getenv("FBNGRAD_ISA")) GTEST_SKIP() << "FBNGRAD_ISA is set";
    for (fbngrad_dtype dt : kDtypes)
        for (fbngrad_layout l : kLayouts)
            for (int t : {0, 1}) {
                const fbngrad_variant_info *want = first_supported(dt, l, t, nullptr);
                ASSERT_NE(want, nullptr);
                EXPECT_EQ(fbngrad_selected_variant(dt, l, t, FBNGRAD_CPU), want);
            }
    std::string features = fbngrad_cpu_features();
    if (features.find("avx512") != std::string::npos)
        EXPECT_STREQ(fbngrad_selected_variant(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, FBNGRAD_CPU)->isa, "avx512");
}

TEST(Dispatch, NoCudaVariantYet) {
    EXPECT_EQ(fbngrad_selected_variant(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, FBNGRAD_CUDA), nullptr);
}

TEST(Dispatch, ForcingEachSupportedIsa) {
    for (const char *isa : {"sse41", "avx2", "avx512"}) {
        fbngrad_status st;
        if (!first_supported(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, isa)) {
            EXPECT_EQ(fbngrad_force_isa(isa, &st), FBNGRAD_INVALID_ARGUMENT);
            EXPECT_NE(std::string(st.message).find("this CPU cannot run"), std::string::npos) << st.message;
            continue;
        }
        ASSERT_EQ(fbngrad_force_isa(isa, &st), FBNGRAD_OK) << st.message;
        EXPECT_STREQ(fbngrad_forced_isa(), isa);
        for (fbngrad_dtype dt : kDtypes)
            EXPECT_STREQ(fbngrad_selected_variant(dt, FBNGRAD_NCHW, 0, FBNGRAD_CPU)->isa, isa);
    }
    ASSERT_EQ(fbngrad_force_isa("", nullptr), FBNGRAD_OK);
    EXPECT_STREQ(fbngrad_forced_isa(), "");
}

TEST(Dispatch, UnknownIsaIsRejectedAndChangesNothing) {
    fbngrad_status st;
    ASSERT_EQ(fbngrad_force_isa("avx2", &st), FBNGRAD_OK);
    EXPECT_EQ(fbngrad_force_isa("neon", &st), FBNGRAD_INVALID_ARGUMENT);
    EXPECT_STREQ(st.message, "unknown ISA \"neon\"; fbngrad knows sse41, avx2, avx512");
    EXPECT_STREQ(fbngrad_forced_isa(), "avx2");
    fbngrad_force_isa(nullptr, nullptr);
}

// Run by ctest with FBNGRAD_ISA set (see tests/CMakeLists.txt) and
// FBNGRAD_TEST_EXPECT = the ISA every pick must have, or "error:<text>".
TEST(EnvironmentForcing, MatchesExpectation) {
    const char *expect = std::getenv("FBNGRAD_TEST_EXPECT");
    if (!expect) GTEST_SKIP() << "only run by the env_isa_* ctests";
    std::string e = expect;
    if (e.rfind("error:", 0) == 0) {
        EXPECT_EQ(fbngrad_selected_variant(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, FBNGRAD_CPU), nullptr);
        float d[4] = {1, 2, 3, 4}, c1[1] = {1}, sb[1], ob[1];
        int64_t shape[4] = {1, 2, 2, 1}, one = 1;
        fbngrad_tensor t = fbngrad_make_tensor(d, FBNGRAD_FLOAT32, 4, shape, FBNGRAD_NHWC);
        fbngrad_tensor xb = fbngrad_make_tensor(d, FBNGRAD_FLOAT32, 4, shape, FBNGRAD_NHWC);
        fbngrad_tensor v = fbngrad_make_tensor(c1, FBNGRAD_FLOAT32, 1, &one, FBNGRAD_NHWC);
        fbngrad_tensor tsb = fbngrad_make_tensor(sb, FBNGRAD_FLOAT32, 1, &one, FBNGRAD_NHWC);
        fbngrad_tensor tob = fbngrad_make_tensor(ob, FBNGRAD_FLOAT32, 1, &one, FBNGRAD_NHWC);
        fbngrad_status st;
        EXPECT_EQ(fbngrad_fused_batch_norm_grad_v2(&t, &t, &v, &v, &v, nullptr, &xb, &tsb, &tob, &st),
                  FBNGRAD_NOT_FOUND);
        EXPECT_EQ(std::string(st.message), e.substr(6));
        return;
    }
    if (!first_supported(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, expect)) GTEST_SKIP() << "this CPU cannot run " << e;
    EXPECT_STREQ(fbngrad_forced_isa(), expect);
    for (fbngrad_dtype dt : kDtypes)
        for (fbngrad_layout l : kLayouts)
            for (int t : {0, 1}) {
                const fbngrad_variant_info *v = fbngrad_selected_variant(dt, l, t, FBNGRAD_CPU);
                ASSERT_NE(v, nullptr);
                EXPECT_STREQ(v->isa, expect);
            }
}

}  // namespace
