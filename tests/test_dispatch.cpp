// The dispatch rule: the best variant this CPU supports, a forced ISA when
// asked (function or FBNGRAD_ISA), clear errors for ISAs that cannot run.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>

#include "fbngrad/fbngrad.h"
#include "problem.h"        // built(): the rows a selective build has
#include "test_platform.h"  // this build's ISAs, from the variant table

using fbngrad::test::built;
using fbngrad::test::kCpuIsas;

namespace {

const fbngrad_dtype kDtypes[] = {FBNGRAD_FLOAT32, FBNGRAD_FLOAT16, FBNGRAD_BFLOAT16};
const fbngrad_layout kLayouts[] = {FBNGRAD_NHWC, FBNGRAD_NCHW};

// The expected pick, by the rule itself: the first match in table order that is supported.
const fbngrad_variant_info *first_supported(fbngrad_dtype dt, fbngrad_layout l, int training, const char *isa) {
    for (int i = 0; i < fbngrad_variant_count(); ++i) {
        const fbngrad_variant_info *v = fbngrad_variant(i);
        if (v->dtype == dt && v->layout == l && v->is_training == training && v->device == FBNGRAD_CPU &&
            v->supported && !*v->shape_classes && (!isa || std::string(v->isa) == isa))
            return v;
    }
    return nullptr;
}

// The hand-scheduled variants come first; tuned ones (cmake/tuned_variants.cmake) follow.
int hand_scheduled_count() {
    int n = 0;
    while (n < fbngrad_variant_count() && !*fbngrad_variant(n)->shape_classes) ++n;
    for (int i = n; i < fbngrad_variant_count(); ++i)
        EXPECT_STRNE(fbngrad_variant(i)->shape_classes, "") << "a hand-scheduled variant after a tuned one";
    return n;
}

TEST(Variants, TableCoversEveryDtypeLayoutModeAndIsa) {
    // 3 dtypes x 2 layouts x 2 modes x this platform's ISAs (x86-64: 3, AArch64: 2).
    const int count = fbngrad::test::kVariantCount;
    ASSERT_EQ(hand_scheduled_count(), count);
    for (const char *isa : kCpuIsas)
        for (fbngrad_dtype dt : kDtypes)
            for (fbngrad_layout l : kLayouts)
                for (int t : {0, 1}) {
                    int found = 0;
                    for (int i = 0; i < fbngrad_variant_count(); ++i) {
                        const fbngrad_variant_info *v = fbngrad_variant(i);
                        found += v->dtype == dt && v->layout == l && v->is_training == t &&
                                 std::string(v->isa) == isa && !*v->shape_classes;
                    }
                    EXPECT_EQ(found, built(dt, l, t) ? 1 : 0) << isa << " " << dt << " " << l << " " << t;
                }
    EXPECT_EQ(fbngrad_variant(-1), nullptr);
    EXPECT_EQ(fbngrad_variant(fbngrad_variant_count()), nullptr);
}

TEST(Variants, TableIsInPriorityOrder) {
    // Within each dtype x layout x mode, the ISAs appear best first, as the rule needs.
    for (fbngrad_dtype dt : kDtypes)
        for (fbngrad_layout l : kLayouts)
            for (int t : {0, 1}) {
                size_t next = 0;
                for (int i = 0; i < fbngrad_variant_count(); ++i) {
                    const fbngrad_variant_info *v = fbngrad_variant(i);
                    if (v->dtype != dt || v->layout != l || v->is_training != t || v->device != FBNGRAD_CPU ||
                        *v->shape_classes)
                        continue;
                    ASSERT_LT(next, std::size(kCpuIsas));
                    EXPECT_STREQ(v->isa, kCpuIsas[next++]) << v->name;
                }
            }
}

TEST(Dispatch, PicksTheBestSupportedIsa) {
    if (std::getenv("FBNGRAD_ISA")) GTEST_SKIP() << "FBNGRAD_ISA is set";
    for (fbngrad_dtype dt : kDtypes)
        for (fbngrad_layout l : kLayouts)
            for (int t : {0, 1}) {
                if (!built(dt, l, t)) {  // left out of this build: nothing to pick
                    EXPECT_EQ(fbngrad_selected_variant(dt, l, t, FBNGRAD_CPU), nullptr);
                    continue;
                }
                const fbngrad_variant_info *want = first_supported(dt, l, t, nullptr);
                ASSERT_NE(want, nullptr);
                EXPECT_EQ(fbngrad_selected_variant(dt, l, t, FBNGRAD_CPU), want);
            }
    // The best ISA (avx512, arm_fp16) whenever the CPU features name it.
    std::string features = fbngrad_cpu_features();
    if (features.find(kCpuIsas[0]) != std::string::npos && built(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1))
        EXPECT_STREQ(fbngrad_selected_variant(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, FBNGRAD_CPU)->isa, kCpuIsas[0]);
}

// Run by ctest with FBNGRAD_TEST_EXPECT_BEST = the ISA the CPU model must get
// (tests/CMakeLists.txt: dispatch_on_qemu_<model> runs it under each qemu -cpu):
// every pick has it, and every better ISA is reported unsupported.
TEST(Dispatch, PicksTheExpectedBestIsa) {
    const char *expect = std::getenv("FBNGRAD_TEST_EXPECT_BEST");
    if (!expect) GTEST_SKIP() << "only run by the dispatch_on_qemu_* ctests";
    if (std::getenv("FBNGRAD_ISA")) GTEST_SKIP() << "FBNGRAD_ISA is set";
    bool better = true;  // ISAs before the expected one in priority order
    for (const char *isa : kCpuIsas) {
        if (std::string(isa) == expect) better = false;
        for (int i = 0; i < fbngrad_variant_count(); ++i) {
            const fbngrad_variant_info *v = fbngrad_variant(i);
            if (std::string(v->isa) == isa) EXPECT_EQ(v->supported, better ? 0 : 1) << v->name << " on " << expect;
        }
    }
    ASSERT_FALSE(better) << expect << " is not an ISA of this build";
    for (fbngrad_dtype dt : kDtypes)
        for (fbngrad_layout l : kLayouts)
            for (int t : {0, 1}) {
                if (!built(dt, l, t)) continue;
                const fbngrad_variant_info *v = fbngrad_selected_variant(dt, l, t, FBNGRAD_CPU);
                ASSERT_NE(v, nullptr);
                EXPECT_STREQ(v->isa, expect) << v->name;
            }
    std::printf("cpu features: %s; picks: %s\n", fbngrad_cpu_features(), expect);
}

TEST(Dispatch, CudaVariantsNeedAUsableDevice) {
    // The CUDA rows are picked for CUDA tensors exactly when a device is usable
    // (tests/test_cuda.cpp checks every row), and forcing a CPU ISA does not
    // change that.
    FBNGRAD_SKIP_UNLESS_BUILT(FBNGRAD_FLOAT32, FBNGRAD_NHWC, true);
    const bool gpu = fbngrad_cuda_available() != 0;
    const fbngrad_variant_info *v = fbngrad_selected_variant(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, FBNGRAD_CUDA);
    if (gpu) {
        ASSERT_NE(v, nullptr);
        EXPECT_STREQ(v->isa, "cuda");
        EXPECT_EQ(v->device, FBNGRAD_CUDA);
    } else {
        EXPECT_EQ(v, nullptr) << fbngrad_cuda_unavailable_reason();
    }
    const char *baseline = kCpuIsas[std::size(kCpuIsas) - 1];
    ASSERT_EQ(fbngrad_force_isa(baseline, nullptr), FBNGRAD_OK);
    EXPECT_EQ(fbngrad_selected_variant(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, FBNGRAD_CUDA), v);
    fbngrad_force_isa(nullptr, nullptr);
    // "cuda" is no ISA one can force.
    fbngrad_status st;
    EXPECT_EQ(fbngrad_force_isa("cuda", &st), FBNGRAD_INVALID_ARGUMENT);
}

TEST(Dispatch, ForcingEachSupportedIsa) {
    FBNGRAD_SKIP_UNLESS_BUILT(FBNGRAD_FLOAT32, FBNGRAD_NHWC, true);  // the row that tells what this CPU runs
    for (const char *isa : kCpuIsas) {
        fbngrad_status st;
        if (!first_supported(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, isa)) {
            EXPECT_EQ(fbngrad_force_isa(isa, &st), FBNGRAD_INVALID_ARGUMENT);
            EXPECT_NE(std::string(st.message).find("this CPU cannot run"), std::string::npos) << st.message;
            continue;
        }
        ASSERT_EQ(fbngrad_force_isa(isa, &st), FBNGRAD_OK) << st.message;
        EXPECT_STREQ(fbngrad_forced_isa(), isa);
        for (fbngrad_dtype dt : kDtypes)
            if (built(dt, FBNGRAD_NCHW, 0))
                EXPECT_STREQ(fbngrad_selected_variant(dt, FBNGRAD_NCHW, 0, FBNGRAD_CPU)->isa, isa);
    }
    ASSERT_EQ(fbngrad_force_isa("", nullptr), FBNGRAD_OK);
    EXPECT_STREQ(fbngrad_forced_isa(), "");
}

// The dispatcher keeps its answers (src/dispatch.cpp); forcing an ISA or a
// variant, and taking either back, must be seen by the very next question,
// with a shape class and without.
TEST(Dispatch, KeptAnswersFollowEveryForcing) {
    FBNGRAD_SKIP_UNLESS_BUILT(FBNGRAD_FLOAT32, FBNGRAD_NCHW, false);
    if (std::getenv("FBNGRAD_ISA")) GTEST_SKIP() << "FBNGRAD_ISA is set";
    const int64_t shape[4] = {8, 64, 14, 14};
    auto pick = [&] { return std::string(fbngrad_selected_variant(FBNGRAD_FLOAT32, FBNGRAD_NCHW, 0, FBNGRAD_CPU)->name); };
    auto pick_for_shape = [&] {
        return std::string(
            fbngrad_selected_variant_for_shape(FBNGRAD_FLOAT32, FBNGRAD_NCHW, 0, FBNGRAD_CPU, 4, shape)->name);
    };
    const std::string best = pick(), best_for_shape = pick_for_shape();
    EXPECT_EQ(pick(), best);  // asked twice: the kept answer
    const char *baseline = kCpuIsas[std::size(kCpuIsas) - 1];
    const std::string baseline_variant = std::string("fbng_f32_nchw_infer_") + baseline;
    fbngrad_status st;
    ASSERT_EQ(fbngrad_force_isa(baseline, &st), FBNGRAD_OK) << st.message;
    EXPECT_EQ(pick(), baseline_variant);
    EXPECT_EQ(pick_for_shape(), baseline_variant);
    ASSERT_EQ(fbngrad_force_isa("", &st), FBNGRAD_OK) << st.message;
    EXPECT_EQ(pick(), best);
    EXPECT_EQ(pick_for_shape(), best_for_shape);
    ASSERT_EQ(fbngrad_force_variant(baseline_variant.c_str(), &st), FBNGRAD_OK) << st.message;
    EXPECT_EQ(pick(), baseline_variant);
    EXPECT_EQ(pick_for_shape(), baseline_variant);
    ASSERT_EQ(fbngrad_force_variant(nullptr, &st), FBNGRAD_OK) << st.message;
    EXPECT_EQ(pick(), best);
    EXPECT_EQ(pick_for_shape(), best_for_shape);
}

TEST(Dispatch, UnknownIsaIsRejectedAndChangesNothing) {
    // The weakest ISA (sse41, neon) runs on every CPU of the platform; another
    // platform's ISA (neon on x86-64, avx512 on AArch64) is unknown here.
    const char *baseline = kCpuIsas[std::size(kCpuIsas) - 1];
    const std::string foreign = fbngrad::test::kForeignIsa;
    fbngrad_status st;
    ASSERT_EQ(fbngrad_force_isa(baseline, &st), FBNGRAD_OK) << st.message;
    EXPECT_EQ(fbngrad_force_isa(foreign.c_str(), &st), FBNGRAD_INVALID_ARGUMENT);
    EXPECT_EQ(std::string(st.message),
              "unknown ISA \"" + foreign + "\"; fbngrad knows " + fbngrad::test::kKnownIsaNames);
    EXPECT_STREQ(fbngrad_forced_isa(), baseline);
    EXPECT_EQ(fbngrad_force_isa("avx", &st), FBNGRAD_INVALID_ARGUMENT);  // nor a near miss
    EXPECT_STREQ(fbngrad_forced_isa(), baseline);
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
        // A prefix: the list of known ISAs that follows depends on the platform.
        EXPECT_EQ(std::string(st.message).rfind(e.substr(6), 0), 0u) << st.message;
        return;
    }
    FBNGRAD_SKIP_UNLESS_BUILT(FBNGRAD_FLOAT32, FBNGRAD_NHWC, true);  // the row that tells what this CPU runs
    if (!first_supported(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, expect)) GTEST_SKIP() << "this CPU cannot run " << e;
    EXPECT_STREQ(fbngrad_forced_isa(), expect);
    for (fbngrad_dtype dt : kDtypes)
        for (fbngrad_layout l : kLayouts)
            for (int t : {0, 1}) {
                if (!built(dt, l, t)) continue;
                const fbngrad_variant_info *v = fbngrad_selected_variant(dt, l, t, FBNGRAD_CPU);
                ASSERT_NE(v, nullptr);
                EXPECT_STREQ(v->isa, expect);
            }
}

}  // namespace
