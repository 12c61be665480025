// Shape classes and the dispatch among tuned schedules (src/shape_class.h,
// cmake/tuned_variants.cmake): the class boundaries, that every tuned variant
// is picked exactly for the classes it serves (and the hand-scheduled one for
// the rest), and fbngrad_force_variant.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fbngrad/fbngrad.h"
#include "fbngrad/fbngrad.hpp"
#include "problem.h"  // built(): the rows a selective build has
#include "shape_class.h"

using fbngrad::ShapeClass;
using fbngrad::classify_shape;

namespace {

TEST(ShapeClass, Boundaries) {
    EXPECT_EQ(classify_shape(15, 1 << 20, 4), ShapeClass::SmallC);
    EXPECT_EQ(classify_shape(16, 4095, 4), ShapeClass::SmallRows);
    EXPECT_EQ(classify_shape(1, 1, 2), ShapeClass::SmallC);  // C first
    // 3 tensors x C x rows x bytes = 16 MiB exactly is still cache-resident.
    const int64_t rows = 16 * 1024 * 1024 / (3 * 64 * 4);  // not an integer: one row below and above
    EXPECT_EQ(classify_shape(64, rows, 4), ShapeClass::CacheResident);
    EXPECT_EQ(classify_shape(64, rows + 1, 4), ShapeClass::Dram);
    EXPECT_EQ(classify_shape(64, rows, 2), ShapeClass::CacheResident);
    EXPECT_EQ(classify_shape(64, 2 * rows + 1, 2), ShapeClass::Dram);  // half the bytes, twice the rows
    // Up to 128 MiB is still dram; C = 64: 174762.67 rows of float32.
    const int64_t dram_rows = 128LL * 1024 * 1024 / (3 * 64 * 4);
    EXPECT_EQ(classify_shape(64, dram_rows, 4), ShapeClass::Dram);
    EXPECT_EQ(classify_shape(64, dram_rows + 1, 4), ShapeClass::Huge);
    const int64_t half_dram_rows = 128LL * 1024 * 1024 / (3 * 64 * 2);  // 349525.33 rows of 2 bytes
    EXPECT_EQ(classify_shape(64, half_dram_rows, 2), ShapeClass::Dram);
    EXPECT_EQ(classify_shape(64, half_dram_rows + 1, 2), ShapeClass::Huge);
    // ResNet-50 at N = 32: 56x56x256 is huge in every dtype, 28x28x512 in float32 only.
    EXPECT_EQ(classify_shape(256, 32 * 56 * 56, 2), ShapeClass::Huge);
    EXPECT_EQ(classify_shape(512, 32 * 28 * 28, 4), ShapeClass::Huge);
    EXPECT_EQ(classify_shape(512, 32 * 28 * 28, 2), ShapeClass::Dram);
}

// The CUDA class: NCHW with at most 32*28*28 elements a channel is the
// single pass's (plane); NHWC, and NCHW above it, get the CPU classes.
TEST(ShapeClass, CudaPlaneBoundaries) {
    using fbngrad::classify_cuda_shape;
    const int64_t at = fbngrad::kPlaneMaxElements;
    EXPECT_EQ(at, 32 * 28 * 28);
    for (int bytes : {2, 4}) {
        EXPECT_EQ(classify_cuda_shape(true, 2048, 32 * 7 * 7, bytes), ShapeClass::Plane);
        EXPECT_EQ(classify_cuda_shape(true, 1024, 32 * 14 * 14, bytes), ShapeClass::Plane);
        EXPECT_EQ(classify_cuda_shape(true, 512, at - 1, bytes), ShapeClass::Plane);
        EXPECT_EQ(classify_cuda_shape(true, 512, at, bytes), ShapeClass::Plane);
        EXPECT_EQ(classify_cuda_shape(true, 512, at + 1, bytes), classify_shape(512, at + 1, bytes));
        EXPECT_EQ(classify_cuda_shape(true, 64, 32 * 56 * 56, bytes), classify_shape(64, 32 * 56 * 56, bytes));
        EXPECT_EQ(classify_cuda_shape(false, 2048, 32 * 7 * 7, bytes), classify_shape(2048, 32 * 7 * 7, bytes));
        EXPECT_EQ(classify_cuda_shape(true, 1, 1, bytes), ShapeClass::Plane);  // any C
    }
    // The CPU classifier never answers the CUDA class.
    EXPECT_NE(classify_shape(512, at, 4), ShapeClass::Plane);
}

TEST(ShapeClass, NamesRoundTrip) {
    for (int i = 0; i < fbngrad::kAllShapeClassCount; ++i) {
        ShapeClass k;
        ASSERT_TRUE(fbngrad::parse_shape_class(fbngrad::shape_class_name(ShapeClass(i)), &k));
        EXPECT_EQ(k, ShapeClass(i));
    }
    ShapeClass k;
    EXPECT_FALSE(fbngrad::parse_shape_class("dram ", &k));
}

// A shape (logical N, H, W, C) of each class, for both 2- and 4-byte dtypes.
std::vector<int64_t> shape_of(ShapeClass k) {
    switch (k) {
    case ShapeClass::SmallC: return {2, 8, 8, 3};
    case ShapeClass::SmallRows: return {2, 7, 7, 64};
    case ShapeClass::CacheResident: return {4, 32, 32, 64};
    case ShapeClass::Dram: return {32, 56, 56, 64};
    case ShapeClass::Huge: break;
    }
    return {32, 112, 112, 64};
}

std::vector<int64_t> in_layout(std::vector<int64_t> nhwc, fbngrad_layout l) {
    return l == FBNGRAD_NHWC ? nhwc : std::vector<int64_t>{nhwc[0], nhwc[3], nhwc[1], nhwc[2]};
}

bool lists(const std::string &classes, const char *name) {
    return ("," + classes + ",").find(std::string(",") + name + ",") != std::string::npos;
}

TEST(TunedDispatch, EachClassGetsItsTunedVariantOrTheHandOne) {
    int tuned = 0;
    for (int i = 0; i < fbngrad_variant_count(); ++i) {
        const fbngrad_variant_info *t = fbngrad_variant(i);
        if (!*t->shape_classes || t->device != FBNGRAD_CPU || !t->supported) continue;
        ++tuned;
        fbngrad_status st;
        ASSERT_EQ(fbngrad_force_isa(t->isa, &st), FBNGRAD_OK) << st.message;
        const fbngrad_variant_info *hand = fbngrad_selected_variant(t->dtype, t->layout, t->is_training, FBNGRAD_CPU);
        ASSERT_NE(hand, nullptr);
        EXPECT_STREQ(hand->shape_classes, "") << "fbngrad_selected_variant names the hand-scheduled variant";
        for (int k = 0; k < fbngrad::kShapeClassCount; ++k) {
            const char *kname = fbngrad::shape_class_name(ShapeClass(k));
            const auto shape = in_layout(shape_of(ShapeClass(k)), t->layout);
            const fbngrad_variant_info *v =
                fbngrad_selected_variant_for_shape(t->dtype, t->layout, t->is_training, FBNGRAD_CPU, 4, shape.data());
            ASSERT_NE(v, nullptr);
            EXPECT_STREQ(v->isa, t->isa);
            if (lists(t->shape_classes, kname))
                EXPECT_STREQ(v->name, t->name) << kname;
            else
                EXPECT_STRNE(v->name, t->name) << kname << " is not among " << t->shape_classes;
        }
    }
    fbngrad_force_isa("", nullptr);
    if (tuned == 0) GTEST_SKIP() << "this build has no tuned variant this machine runs (generators/tuned/)";
}

TEST(TunedDispatch, WithoutTunedVariantsEveryShapeGetsTheHandOne) {
    for (fbngrad_layout l : {FBNGRAD_NHWC, FBNGRAD_NCHW})
        for (int k = 0; k < fbngrad::kShapeClassCount; ++k) {
            if (!fbngrad::test::built(FBNGRAD_FLOAT32, l, true)) continue;  // left out of this build
            const auto shape = in_layout(shape_of(ShapeClass(k)), l);
            const fbngrad_variant_info *v =
                fbngrad_selected_variant_for_shape(FBNGRAD_FLOAT32, l, 1, FBNGRAD_CPU, 4, shape.data());
            const fbngrad_variant_info *hand = fbngrad_selected_variant(FBNGRAD_FLOAT32, l, 1, FBNGRAD_CPU);
            ASSERT_NE(v, nullptr);
            EXPECT_STREQ(v->isa, hand->isa);
            bool has_tuned = false;
            for (int i = 0; i < fbngrad_variant_count(); ++i) {
                const fbngrad_variant_info *t = fbngrad_variant(i);
                has_tuned |= *t->shape_classes && t->dtype == FBNGRAD_FLOAT32 && t->layout == l && t->is_training &&
                             std::string(t->isa) == hand->isa &&
                             lists(t->shape_classes, fbngrad::shape_class_name(ShapeClass(k)));
            }
            if (!has_tuned) EXPECT_STREQ(v->name, hand->name);
        }
}

TEST(TunedDispatch, SelectedVariantForShapeRejectsBadShapes) {
    FBNGRAD_SKIP_UNLESS_BUILT(FBNGRAD_FLOAT32, FBNGRAD_NHWC, true);
    const int64_t ok[5] = {2, 3, 4, 5, 6}, neg[4] = {2, -3, 4, 5};
    EXPECT_NE(fbngrad_selected_variant_for_shape(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, FBNGRAD_CPU, 4, ok), nullptr);
    EXPECT_NE(fbngrad_selected_variant_for_shape(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, FBNGRAD_CPU, 5, ok), nullptr);
    EXPECT_EQ(fbngrad_selected_variant_for_shape(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, FBNGRAD_CPU, 3, ok), nullptr);
    EXPECT_EQ(fbngrad_selected_variant_for_shape(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, FBNGRAD_CPU, 4, neg), nullptr);
    EXPECT_EQ(fbngrad_selected_variant_for_shape(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, FBNGRAD_CPU, 4, nullptr), nullptr);
    EXPECT_EQ(fbngrad_selected_variant_for_shape(fbngrad_dtype(77), FBNGRAD_NHWC, 1, FBNGRAD_CPU, 4, ok), nullptr);
}

TEST(ForceVariant, RunsTheNamedVariantForItsRowOnly) {
    FBNGRAD_SKIP_UNLESS_BUILT(FBNGRAD_FLOAT32, FBNGRAD_NHWC, true);
    const fbngrad_variant_info *base = fbngrad_selected_variant(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, FBNGRAD_CPU);
    ASSERT_NE(base, nullptr);
    // The weakest supported f32/nhwc/train variant, so that forcing changes the pick.
    const fbngrad_variant_info *weak = nullptr;
    for (int i = 0; i < fbngrad_variant_count(); ++i) {
        const fbngrad_variant_info *v = fbngrad_variant(i);
        if (v->dtype == FBNGRAD_FLOAT32 && v->layout == FBNGRAD_NHWC && v->is_training && v->device == FBNGRAD_CPU &&
            v->supported && !*v->shape_classes)
            weak = v;
    }
    fbngrad_status st;
    ASSERT_EQ(fbngrad_force_variant(weak->name, &st), FBNGRAD_OK) << st.message;
    const int64_t dram[4] = {32, 56, 56, 64};
    EXPECT_STREQ(fbngrad_selected_variant_for_shape(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, FBNGRAD_CPU, 4, dram)->name,
                 weak->name);
    EXPECT_STREQ(fbngrad_selected_variant(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, FBNGRAD_CPU)->name, weak->name);
    // Another row dispatches as usual (float16 NCHW inference, or the inference row of a build without it).
    const bool f16 = fbngrad::test::built(FBNGRAD_FLOAT16, FBNGRAD_NCHW, false);
    const fbngrad_dtype other_dtype = f16 ? FBNGRAD_FLOAT16 : FBNGRAD_FLOAT32;
    const fbngrad_layout other_layout = f16 ? FBNGRAD_NCHW : FBNGRAD_NHWC;
    if (fbngrad::test::built(other_dtype, other_layout, false)) {
        const fbngrad_variant_info *other = fbngrad_selected_variant(other_dtype, other_layout, 0, FBNGRAD_CPU);
        ASSERT_NE(other, nullptr);
        EXPECT_EQ(other->dtype, other_dtype);
        EXPECT_EQ(other->is_training, 0);
    }

    EXPECT_EQ(fbngrad_force_variant("fbng_nothing_like_this", &st), FBNGRAD_INVALID_ARGUMENT);
    EXPECT_STREQ(st.message, "no compiled variant is named \"fbng_nothing_like_this\"");
    EXPECT_STREQ(fbngrad_selected_variant(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, FBNGRAD_CPU)->name, weak->name)
        << "a failed call changes nothing";
    // A variant this machine cannot run (if the build has one) is refused.
    for (int i = 0; i < fbngrad_variant_count(); ++i)
        if (!fbngrad_variant(i)->supported) {
            EXPECT_EQ(fbngrad_force_variant(fbngrad_variant(i)->name, &st), FBNGRAD_INVALID_ARGUMENT);
            EXPECT_NE(std::string(st.message).find("this machine cannot run"), std::string::npos) << st.message;
            break;
        }
    ASSERT_EQ(fbngrad_force_variant(nullptr, &st), FBNGRAD_OK);
    EXPECT_STREQ(fbngrad_selected_variant(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, FBNGRAD_CPU)->name, base->name);
}

TEST(ForceVariant, CppWrappersSayTheSame) {
    const std::vector<int64_t> dram = {32, 56, 56, 64};
    const fbngrad_variant_info *c =
        fbngrad_selected_variant_for_shape(FBNGRAD_FLOAT32, FBNGRAD_NHWC, 1, FBNGRAD_CPU, 4, dram.data());
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(fbngrad::selected_variant(fbngrad::DType::Float32, fbngrad::Layout::NHWC, true, dram), c->name);
    EXPECT_EQ(fbngrad::selected_variant(fbngrad::DType::Float32, fbngrad::Layout::NHWC, true, {1, 2}), "");
    const std::string hand = fbngrad::selected_variant(fbngrad::DType::Float32, fbngrad::Layout::NHWC, true);
    ASSERT_TRUE(fbngrad::force_variant(hand).ok());
    EXPECT_EQ(fbngrad::selected_variant(fbngrad::DType::Float32, fbngrad::Layout::NHWC, true, dram), hand);
    const fbngrad::Status bad = fbngrad::force_variant("nope");
    EXPECT_EQ(bad.code(), FBNGRAD_INVALID_ARGUMENT);
    EXPECT_TRUE(fbngrad::force_variant("").ok());
}

}  // namespace
