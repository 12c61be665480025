// Every validation error: TensorFlow's order and words (semantics-research.md
// §3), fbngrad's own checks of views and outputs, and that a failed call
// leaves every output exactly as it was.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "problem.h"

using namespace fbngrad;
using namespace fbngrad::test;

namespace {

// A valid NHWC [2,3,4,5] float32 problem whose views a test may spoil.
struct Views {
    TestProblem tp{FBNGRAD_FLOAT32, FBNGRAD_NHWC, {2, 3, 4, 5}, true};
    fbngrad_tensor dy = tp.tensor(tp.dy.data()), x = tp.tensor(tp.x.data()), xb = tp.tensor(tp.xb.data());
    fbngrad_tensor scale = tp.vec(tp.scale.data()), mean = tp.vec(tp.mean.data()), var = tp.vec(tp.rs2.data());
    fbngrad_tensor sb = tp.vec(tp.sb.data()), ob = tp.vec(tp.ob.data());
    fbngrad_attrs attrs = tp.attrs;

    fbngrad_code run(fbngrad_status *st) {
        return fbngrad_fused_batch_norm_grad_v2(&dy, &x, &scale, &mean, &var, &attrs, &xb, &sb, &ob, st);
    }
};

void set_shape(fbngrad_tensor &t, std::vector<int64_t> s) {
    t.rank = int32_t(s.size());
    for (size_t d = 0; d < s.size(); ++d) t.shape[d] = s[d];
}

struct ErrorCase {
    const char *name;
    std::function<void(Views &)> spoil;
    fbngrad_code code;
    std::string message;
};

class ValidationTest : public testing::TestWithParam<ErrorCase> {};

TEST_P(ValidationTest, ReportsTheErrorAndTouchesNothing) {
    // The views hold host memory: labelled CUDA they are valid only where no
    // device would run them (test_cuda.cpp tests CUDA tensors on a GPU).
    if (GetParam().code == FBNGRAD_UNAVAILABLE && fbngrad_cuda_available())
        GTEST_SKIP() << "a CUDA device is available";
    Views v;
    GetParam().spoil(v);
    const auto xb_before = v.tp.xb;
    const auto sb_before = v.tp.sb, ob_before = v.tp.ob;
    fbngrad_status st;
    EXPECT_EQ(v.run(&st), GetParam().code);
    EXPECT_EQ(st.code, GetParam().code);
    EXPECT_EQ(std::string(st.message), GetParam().message);
    EXPECT_EQ(v.tp.xb, xb_before);
    EXPECT_EQ(v.tp.sb, sb_before);
    EXPECT_EQ(v.tp.ob, ob_before);
}

const ErrorCase kCases[] = {
    // TensorFlow's checks, in its order. Two faults at once: the earlier check wins.
    {"dy_rank", [](Views &v) { set_shape(v.dy, {2, 3, 4}); set_shape(v.scale, {5, 1}); },
     FBNGRAD_INVALID_ARGUMENT, "input must be 4 or 5-dimensional[2,3,4]"},
    {"dy_rank6", [](Views &v) { set_shape(v.dy, {1, 2, 3, 4, 5, 6}); },
     FBNGRAD_INVALID_ARGUMENT, "input must be 4 or 5-dimensional[1,2,3,4,5,6]"},
    {"x_rank", [](Views &v) { set_shape(v.x, {2, 3}); set_shape(v.scale, {5, 1}); },
     FBNGRAD_INVALID_ARGUMENT, "input must be 4 or 5-dimensional[2,3]"},
    {"scale_rank", [](Views &v) { set_shape(v.scale, {5, 1}); set_shape(v.mean, {5, 1}); },
     FBNGRAD_INVALID_ARGUMENT, "scale must be 1-dimensional[5,1]"},
    {"mean_rank", [](Views &v) { set_shape(v.mean, {}); set_shape(v.var, {1, 5}); },
     FBNGRAD_INVALID_ARGUMENT, "saved mean must be 1-dimensional[]"},
    {"var_rank", [](Views &v) { set_shape(v.var, {1, 5}); set_shape(v.x, {2, 3, 4, 6}); },
     FBNGRAD_INVALID_ARGUMENT, "saved variance must be 1-dimensional[1,5]"},
    {"shape_mismatch", [](Views &v) { set_shape(v.dy, {2, 3, 4, 6}); },
     FBNGRAD_INVALID_ARGUMENT,
     "x and y_backprop must have same shape, but x has shape [2,3,4,5] and y_backprop has shape [2,3,4,6]"},
    {"rank_mismatch", [](Views &v) { set_shape(v.dy, {2, 3, 4, 1, 5}); },
     FBNGRAD_INVALID_ARGUMENT,
     "x and y_backprop must have same shape, but x has shape [2,3,4,5] and y_backprop has shape [2,3,4,1,5]"},
    {"scale_channels", [](Views &v) { set_shape(v.scale, {3}); set_shape(v.mean, {3}); },
     FBNGRAD_INVALID_ARGUMENT, "scale must have the same number of elements as the channels of x, got 3 and 5"},
    {"mean_channels", [](Views &v) { set_shape(v.mean, {4}); set_shape(v.var, {4}); },
     FBNGRAD_INVALID_ARGUMENT,
     "reserve_space_1 must have the same number of elements as the channels of x, got 4 and 5"},
    {"var_channels", [](Views &v) { set_shape(v.var, {0}); },
     FBNGRAD_INVALID_ARGUMENT,
     "reserve_space_2 must have the same number of elements as the channels of x, got 0 and 5"},
    {"nchw_channels", [](Views &v) { v.dy.layout = v.x.layout = v.xb.layout = FBNGRAD_NCHW; },
     FBNGRAD_INVALID_ARGUMENT, "scale must have the same number of elements as the channels of x, got 5 and 3"},
    // Attribute and dtype checks (TensorFlow makes them before the shapes).
    {"bad_layout", [](Views &v) { v.x.layout = fbngrad_layout(7); set_shape(v.dy, {1}); },
     FBNGRAD_INVALID_ARGUMENT, "Invalid data format"},
    {"bad_dtype", [](Views &v) { v.dy.dtype = fbngrad_dtype(9); },
     FBNGRAD_INVALID_ARGUMENT, "Value for attr 'T' of dtype 9 is not in the list of allowed values: half, bfloat16, float"},
    {"x_dtype", [](Views &v) { v.x.dtype = FBNGRAD_FLOAT16; },
     FBNGRAD_INVALID_ARGUMENT,
     "cannot compute FusedBatchNormGradV2 as input #1(zero-based) was expected to be a float tensor but is a half tensor"},
    {"scale_dtype", [](Views &v) { v.scale.dtype = FBNGRAD_BFLOAT16; },
     FBNGRAD_INVALID_ARGUMENT,
     "cannot compute FusedBatchNormGradV2 as input #2(zero-based) was expected to be a float tensor but is a bfloat16 tensor"},
    {"var_dtype", [](Views &v) { v.var.dtype = FBNGRAD_FLOAT16; },
     FBNGRAD_INVALID_ARGUMENT,
     "cannot compute FusedBatchNormGradV2 as input #4(zero-based) was expected to be a float tensor but is a half tensor"},
    {"bad_rs2_convention", [](Views &v) { v.attrs.reserve_space_2_is = fbngrad_reserve_space_2_is(5); },
     FBNGRAD_INVALID_ARGUMENT, "reserve_space_2_is must be variance or inverse_std"},
    // fbngrad's own: views, outputs, devices, sizes.
    {"layout_mismatch", [](Views &v) { v.dy.layout = FBNGRAD_NCHW; },
     FBNGRAD_INVALID_ARGUMENT, "y_backprop and x must have the same data format, got NCHW and NHWC"},
    {"negative_dim", [](Views &v) { v.x.shape[1] = -3; },
     FBNGRAD_INVALID_ARGUMENT, "x has a negative dimension: [2,-3,4,5]"},
    {"view_rank", [](Views &v) { v.scale.rank = 9; },
     FBNGRAD_INVALID_ARGUMENT, "scale has rank 9; fbngrad tensor views hold 0 to 8 dimensions"},
    {"too_large", [](Views &v) { set_shape(v.x, {1 << 16, 1 << 16, 1, 5}); },
     FBNGRAD_UNIMPLEMENTED,
     "x has shape [65536,65536,1,5]: tensors of more than 2147418112 elements are not supported (the kernels index "
     "with 32-bit integers)"},
    {"int64_overflow", [](Views &v) { set_shape(v.dy, {int64_t(1) << 40, int64_t(1) << 40, 1 << 30, 5}); },
     FBNGRAD_UNIMPLEMENTED,
     "y_backprop has shape [1099511627776,1099511627776,1073741824,5]: tensors of more than 2147418112 elements are "
     "not supported (the kernels index with 32-bit integers)"},
    {"xb_shape", [](Views &v) { set_shape(v.xb, {2, 3, 4, 4}); },
     FBNGRAD_INVALID_ARGUMENT,
     "x_backprop must have the dtype, shape and data format of x (float [2,3,4,5] NHWC), got float [2,3,4,4] NHWC"},
    {"xb_dtype", [](Views &v) { v.xb.dtype = FBNGRAD_FLOAT16; },
     FBNGRAD_INVALID_ARGUMENT,
     "x_backprop must have the dtype, shape and data format of x (float [2,3,4,5] NHWC), got half [2,3,4,5] NHWC"},
    {"sb_shape", [](Views &v) { set_shape(v.sb, {4}); },
     FBNGRAD_INVALID_ARGUMENT, "scale_backprop must be a float tensor of shape [5], got float [4]"},
    {"ob_dtype", [](Views &v) { v.ob.dtype = FBNGRAD_FLOAT16; },
     FBNGRAD_INVALID_ARGUMENT, "offset_backprop must be a float tensor of shape [5], got half [5]"},
    {"null_data", [](Views &v) { v.x.data = nullptr; },
     FBNGRAD_INVALID_ARGUMENT, "x has no data (NULL pointer)"},
    {"null_output_data", [](Views &v) { v.ob.data = nullptr; },
     FBNGRAD_INVALID_ARGUMENT, "offset_backprop has no data (NULL pointer)"},
    {"mixed_devices", [](Views &v) { v.scale.device = FBNGRAD_CUDA; },
     FBNGRAD_INVALID_ARGUMENT, "all tensors must be on the same device, but x and scale are not"},
    {"unknown_device", [](Views &v) { v.mean.device = fbngrad_device(4); },
     FBNGRAD_INVALID_ARGUMENT, "reserve_space_1 has an unknown device"},
    {"cuda", [](Views &v) {
         for (fbngrad_tensor *t : {&v.dy, &v.x, &v.xb, &v.scale, &v.mean, &v.var, &v.sb, &v.ob})
             t->device = FBNGRAD_CUDA;
     },
     FBNGRAD_UNAVAILABLE, "no CUDA device available"},
    // Checked before the device is looked for: the same answer with or without a GPU.
    {"cuda_nchw_channels", [](Views &v) {
         for (fbngrad_tensor *t : {&v.dy, &v.x, &v.xb}) {
             set_shape(*t, {1, 65536, 1, 1});
             t->layout = FBNGRAD_NCHW;
         }
         for (fbngrad_tensor *t : {&v.scale, &v.mean, &v.var, &v.sb, &v.ob}) set_shape(*t, {65536});
         for (fbngrad_tensor *t : {&v.dy, &v.x, &v.xb, &v.scale, &v.mean, &v.var, &v.sb, &v.ob})
             t->device = FBNGRAD_CUDA;
     },
     FBNGRAD_UNIMPLEMENTED,
     "x has shape [1,65536,1,1]: NCHW tensors on CUDA with more than 65535 channels are not supported (the plane "
     "sums' grid holds the channel in its y dimension)"},
};

INSTANTIATE_TEST_SUITE_P(Errors, ValidationTest, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<ErrorCase> &i) { return std::string(i.param.name); });

TEST(Validation, NullTensorPointers) {
    Views v;
    fbngrad_status st;
    EXPECT_EQ(fbngrad_fused_batch_norm_grad_v2(&v.dy, nullptr, &v.scale, &v.mean, &v.var, nullptr, &v.xb, &v.sb,
                                               &v.ob, &st),
              FBNGRAD_INVALID_ARGUMENT);
    EXPECT_STREQ(st.message, "x is NULL");
    EXPECT_EQ(fbngrad_fused_batch_norm_grad_v2(&v.dy, &v.x, &v.scale, &v.mean, &v.var, nullptr, &v.xb, nullptr,
                                               &v.ob, nullptr),
              FBNGRAD_INVALID_ARGUMENT);  // a NULL status is allowed
}

TEST(Validation, InferenceNchwIsComputedNotRejected) {
    // TensorFlow rejects is_training=false with NCHW; fbngrad computes it (a documented difference).
    FBNGRAD_SKIP_UNLESS_BUILT(FBNGRAD_FLOAT32, FBNGRAD_NCHW, false);
    TestProblem tp(FBNGRAD_FLOAT32, FBNGRAD_NCHW, {2, 3, 4, 5}, false);
    fbngrad_status st;
    ASSERT_EQ(tp.run(&st), FBNGRAD_OK) << st.message;
    EXPECT_TRUE(tp.check().ok());
}

}  // namespace
