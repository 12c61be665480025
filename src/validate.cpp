#include "validate.h"

#include <cmath>

namespace fbngrad {

bool valid_dtype(int32_t d) { return d == FBNGRAD_FLOAT32 || d == FBNGRAD_FLOAT16 || d == FBNGRAD_BFLOAT16; }
bool valid_layout(int32_t l) { return l == FBNGRAD_NHWC || l == FBNGRAD_NCHW; }

int64_t num_elements(const fbngrad_tensor &t) {
    int64_t e = 1;
    for (int d = 0; d < t.rank; ++d) e *= t.shape[d];  // check_view: cannot overflow
    return e;
}

bool same_shape(const fbngrad_tensor &a, const fbngrad_tensor &b) {
    if (a.rank != b.rank) return false;
    for (int d = 0; d < a.rank; ++d)
        if (a.shape[d] != b.shape[d]) return false;
    return true;
}

fbngrad_code check_view(const fbngrad_tensor &t, const char *name, std::string *msg) {
    if (t.rank < 0 || t.rank > FBNGRAD_MAX_RANK) {
        *msg = std::string(name) + " has rank " + std::to_string(t.rank) +
               "; fbngrad tensor views hold 0 to 8 dimensions";
        return FBNGRAD_INVALID_ARGUMENT;
    }
    // The product of the non-zero dimensions must fit the kernels' 32-bit
    // extents, in an empty tensor too: the merged N, S and C (and N*S) that
    // validate() and the kernel views compute are products of some of them.
    // (An earlier rule multiplied the zeros in, so [2^62,4,0,1] passed and
    // overflowed int64 in num_elements: found by the fuzzer, tests/fuzz.)
    // Saturating, so that nothing here overflows int64 either.
    int64_t e = 1;
    bool empty = false;
    for (int d = 0; d < t.rank; ++d) {
        if (t.shape[d] < 0) {
            *msg = std::string(name) + " has a negative dimension: " + shape_string(t);
            return FBNGRAD_INVALID_ARGUMENT;
        }
        // A multiplication that reports its overflow, not a division: 8 tensors
        // of up to 5 dimensions took 85 ns a call in 64-bit divisions.
        int64_t product;
        if (t.shape[d] == 0) empty = true;
        else if (__builtin_mul_overflow(e, t.shape[d], &product) || product > kMaxElements) e = kMaxElements + 1;
        else e = product;
    }
    if (e > kMaxElements) {
        *msg = std::string(name) + " has shape " + shape_string(t) +
               (empty ? ": dimensions whose product (zeros left out) exceeds " + std::to_string(kMaxElements) +
                            " are not supported, even in an empty tensor (the kernels index with 32-bit integers)"
                      : ": tensors of more than " + std::to_string(kMaxElements) +
                            " elements are not supported (the kernels index with 32-bit integers)");
        return FBNGRAD_UNIMPLEMENTED;
    }
    return FBNGRAD_OK;
}

fbngrad_code check_kernel_limits(const fbngrad_tensor &x, std::string *msg) {
    const bool nhwc = x.layout == FBNGRAD_NHWC;
    const int64_t C = x.shape[nhwc ? x.rank - 1 : 1];
    const int64_t planes = nhwc ? C : C * x.shape[0];  // no overflow: check_view
    if (!nhwc && x.device == FBNGRAD_CUDA && C > kMaxCudaNchwChannels) {
        *msg = "x has shape " + shape_string(x) + ": NCHW tensors on CUDA with more than " +
               std::to_string(kMaxCudaNchwChannels) +
               " channels are not supported (the plane sums' grid holds the channel in its y dimension)";
        return FBNGRAD_UNIMPLEMENTED;
    }
    if (planes <= kMaxPlanes) return FBNGRAD_OK;
    *msg = "x has shape " + shape_string(x) +
           (nhwc ? ": more than " + std::to_string(kMaxPlanes) +
                       " channels are not supported (the kernels keep float32 partial sums per channel, and Halide "
                       "caps a buffer at 2^31-1 bytes)"
                 : ": NCHW tensors with N*C over " + std::to_string(kMaxPlanes) +
                       " are not supported (the kernels keep float32 partial sums per (n, c) plane, and Halide caps "
                       "a buffer at 2^31-1 bytes)");
    return FBNGRAD_UNIMPLEMENTED;
}

namespace {

struct Checker {
    std::string *msg;
    fbngrad_code fail(fbngrad_code code, std::string m) {
        *msg = std::move(m);
        return code;
    }
};

}  // namespace

std::string shape_string(const fbngrad_tensor &t) {
    std::string s = "[";
    for (int d = 0; d < t.rank && d < FBNGRAD_MAX_RANK; ++d) {
        if (d) s += ',';
        s += std::to_string(t.shape[d]);
    }
    return s + "]";
}

const char *dtype_name(fbngrad_dtype d) {
    switch (d) {
    case FBNGRAD_FLOAT32: return "float";
    case FBNGRAD_FLOAT16: return "half";
    case FBNGRAD_BFLOAT16: return "bfloat16";
    }
    return "unknown dtype";
}

const char *layout_name(int32_t l, int rank) {
    if (l == FBNGRAD_NHWC) return rank == 5 ? "NDHWC" : "NHWC";
    if (l == FBNGRAD_NCHW) return rank == 5 ? "NCDHW" : "NCHW";
    return "unknown";
}

fbngrad_code validate(const fbngrad_tensor *y_backprop, const fbngrad_tensor *x, const fbngrad_tensor *scale,
                      const fbngrad_tensor *reserve_space_1, const fbngrad_tensor *reserve_space_2,
                      const fbngrad_attrs &attrs, const fbngrad_tensor *x_backprop,
                      const fbngrad_tensor *scale_backprop, const fbngrad_tensor *offset_backprop,
                      CheckedProblem *out, std::string *msg) {
    Checker ck{msg};
    const fbngrad_tensor *inputs[] = {y_backprop, x, scale, reserve_space_1, reserve_space_2};
    const char *input_names[] = {"y_backprop", "x", "scale", "reserve_space_1", "reserve_space_2"};
    const fbngrad_tensor *outputs[] = {x_backprop, scale_backprop, offset_backprop};
    const char *output_names[] = {"x_backprop", "scale_backprop", "offset_backprop"};

    // What a C caller can get wrong that TensorFlow's typed API cannot: checked first.
    for (int i = 0; i < 5; ++i)
        if (!inputs[i]) return ck.fail(FBNGRAD_INVALID_ARGUMENT, std::string(input_names[i]) + " is NULL");
    for (int i = 0; i < 3; ++i)
        if (!outputs[i]) return ck.fail(FBNGRAD_INVALID_ARGUMENT, std::string(output_names[i]) + " is NULL");
    for (int i = 0; i < 8; ++i) {
        const char *name = i < 5 ? input_names[i] : output_names[i - 5];
        fbngrad_code code = check_view(i < 5 ? *inputs[i] : *outputs[i - 5], name, msg);
        if (code != FBNGRAD_OK) return code;
    }

    // Construction-time checks in TensorFlow: attrs and dtypes. Every epsilon
    // is valid: NaN and Inf propagate, as in TensorFlow.
    if (!valid_layout(enum_bits(x->layout))) return ck.fail(FBNGRAD_INVALID_ARGUMENT, "Invalid data format");
    if (enum_bits(attrs.reserve_space_2_is) != FBNGRAD_RS2_VARIANCE &&
        enum_bits(attrs.reserve_space_2_is) != FBNGRAD_RS2_INVERSE_STD)
        return ck.fail(FBNGRAD_INVALID_ARGUMENT, "reserve_space_2_is must be variance or inverse_std");
    if (!valid_dtype(enum_bits(y_backprop->dtype)))
        return ck.fail(FBNGRAD_INVALID_ARGUMENT,
                       "Value for attr 'T' of dtype " + std::to_string(enum_bits(y_backprop->dtype)) +
                           " is not in the list of allowed values: half, bfloat16, float");
    const fbngrad_dtype T = y_backprop->dtype;
    for (int i = 1; i < 5; ++i) {
        fbngrad_dtype want = i == 1 ? T : FBNGRAD_FLOAT32;
        if (enum_bits(inputs[i]->dtype) != want)
            return ck.fail(FBNGRAD_INVALID_ARGUMENT,
                           "cannot compute FusedBatchNormGradV2 as input #" + std::to_string(i) +
                               "(zero-based) was expected to be a " + dtype_name(want) + " tensor but is a " +
                               (valid_dtype(enum_bits(inputs[i]->dtype)) ? dtype_name(inputs[i]->dtype) : "unknown") +
                               " tensor");
    }
    if (enum_bits(y_backprop->layout) != x->layout)
        return ck.fail(FBNGRAD_INVALID_ARGUMENT, std::string("y_backprop and x must have the same data format, got ") +
                                                     layout_name(enum_bits(y_backprop->layout), y_backprop->rank) + " and " +
                                                     layout_name(x->layout, x->rank));
    const int32_t device = enum_bits(x->device);
    for (int i = 0; i < 8; ++i) {
        const fbngrad_tensor &t = i < 5 ? *inputs[i] : *outputs[i - 5];
        if (enum_bits(t.device) != FBNGRAD_CPU && enum_bits(t.device) != FBNGRAD_CUDA)
            return ck.fail(FBNGRAD_INVALID_ARGUMENT, std::string(i < 5 ? input_names[i] : output_names[i - 5]) +
                                                         " has an unknown device");
        if (enum_bits(t.device) != device)
            return ck.fail(FBNGRAD_INVALID_ARGUMENT, "all tensors must be on the same device, but x and " +
                                                         std::string(i < 5 ? input_names[i] : output_names[i - 5]) +
                                                         " are not");
    }

    // Compute-time checks, in TensorFlow's order and words.
    if (y_backprop->rank != 4 && y_backprop->rank != 5)
        return ck.fail(FBNGRAD_INVALID_ARGUMENT, "input must be 4 or 5-dimensional" + shape_string(*y_backprop));
    if (x->rank != 4 && x->rank != 5)
        return ck.fail(FBNGRAD_INVALID_ARGUMENT, "input must be 4 or 5-dimensional" + shape_string(*x));
    if (scale->rank != 1) return ck.fail(FBNGRAD_INVALID_ARGUMENT, "scale must be 1-dimensional" + shape_string(*scale));
    if (reserve_space_1->rank != 1)
        return ck.fail(FBNGRAD_INVALID_ARGUMENT, "saved mean must be 1-dimensional" + shape_string(*reserve_space_1));
    if (reserve_space_2->rank != 1)
        return ck.fail(FBNGRAD_INVALID_ARGUMENT,
                       "saved variance must be 1-dimensional" + shape_string(*reserve_space_2));
    if (!same_shape(*x, *y_backprop))
        return ck.fail(FBNGRAD_INVALID_ARGUMENT, "x and y_backprop must have same shape, but x has shape " +
                                                     shape_string(*x) + " and y_backprop has shape " +
                                                     shape_string(*y_backprop));
    const int rank = x->rank;
    const int c_dim = x->layout == FBNGRAD_NHWC ? rank - 1 : 1;
    const int64_t C = x->shape[c_dim];
    const char *rs_names[] = {"scale", "reserve_space_1", "reserve_space_2"};
    for (int i = 0; i < 3; ++i) {
        int64_t n = num_elements(*inputs[2 + i]);
        if (n != C)
            return ck.fail(FBNGRAD_INVALID_ARGUMENT, std::string(rs_names[i]) +
                                                         " must have the same number of elements as the channels "
                                                         "of x, got " +
                                                         std::to_string(n) + " and " + std::to_string(C));
    }

    // What the kernels cannot hold (TensorFlow has no such limit).
    if (fbngrad_code code = check_kernel_limits(*x, msg); code != FBNGRAD_OK) return code;

    // The caller-allocated outputs (TensorFlow allocates them itself).
    if (enum_bits(x_backprop->dtype) != T || !same_shape(*x_backprop, *x) || enum_bits(x_backprop->layout) != x->layout)
        return ck.fail(FBNGRAD_INVALID_ARGUMENT,
                       std::string("x_backprop must have the dtype, shape and data format of x (") + dtype_name(T) +
                           " " + shape_string(*x) + " " + layout_name(x->layout, rank) + "), got " +
                           (valid_dtype(enum_bits(x_backprop->dtype)) ? dtype_name(x_backprop->dtype) : "unknown") + " " +
                           shape_string(*x_backprop) + " " + layout_name(enum_bits(x_backprop->layout), x_backprop->rank));
    for (int i = 1; i < 3; ++i) {
        const fbngrad_tensor &t = *outputs[i];
        if (enum_bits(t.dtype) != FBNGRAD_FLOAT32 || t.rank != 1 || t.shape[0] != C)
            return ck.fail(FBNGRAD_INVALID_ARGUMENT, std::string(output_names[i]) +
                                                         " must be a float tensor of shape [" + std::to_string(C) +
                                                         "], got " +
                                                         (valid_dtype(enum_bits(t.dtype)) ? dtype_name(t.dtype) : "unknown") +
                                                         " " + shape_string(t));
    }
    for (int i = 0; i < 5; ++i)
        if (!inputs[i]->data && num_elements(*inputs[i]) > 0)
            return ck.fail(FBNGRAD_INVALID_ARGUMENT, std::string(input_names[i]) + " has no data (NULL pointer)");
    for (int i = 0; i < 3; ++i)
        if (!outputs[i]->data && num_elements(*outputs[i]) > 0)
            return ck.fail(FBNGRAD_INVALID_ARGUMENT, std::string(output_names[i]) + " has no data (NULL pointer)");

    *out = problem_of(*x);
    return FBNGRAD_OK;
}

CheckedProblem problem_of(const fbngrad_tensor &x) {
    const int c_dim = x.layout == FBNGRAD_NHWC ? x.rank - 1 : 1;
    CheckedProblem p;
    p.dtype = x.dtype;
    p.layout = x.layout;
    p.device = x.device;
    p.C = x.shape[c_dim];
    p.N = x.shape[0];
    p.S = 1;
    for (int d = 1; d < x.rank; ++d)
        if (d != c_dim) p.S *= x.shape[d];
    p.elements = num_elements(x);
    return p;
}

}  // namespace fbngrad
