#include "validate_split_phase.h"

namespace fbngrad {
namespace {

fbngrad_code fail(std::string *msg, fbngrad_code code, std::string m) {
    *msg = std::move(m);
    return code;
}

// d: enum_bits of a dtype field (validate.h).
const char *dtype_or_unknown(int32_t d) { return valid_dtype(d) ? dtype_name(fbngrad_dtype(d)) : "unknown"; }

// sum_dy / sum_dyxc: float32 [C] with data (when C > 0).
fbngrad_code check_sum_vector(const fbngrad_tensor &t, const char *name, int64_t C, std::string *msg) {
    if (enum_bits(t.dtype) != FBNGRAD_FLOAT32 || t.rank != 1 || t.shape[0] != C)
        return fail(msg, FBNGRAD_INVALID_ARGUMENT,
                    std::string(name) + " must be a float tensor of shape [" + std::to_string(C) + "], got " +
                        dtype_or_unknown(enum_bits(t.dtype)) + " " + shape_string(t));
    if (!t.data && C > 0)
        return fail(msg, FBNGRAD_INVALID_ARGUMENT, std::string(name) + " has no data (NULL pointer)");
    return FBNGRAD_OK;
}

}  // namespace

fbngrad_code validate_reduce(const fbngrad_tensor *y_backprop, const fbngrad_tensor *x,
                             const fbngrad_tensor *reserve_space_1, const fbngrad_tensor *sum_dy,
                             const fbngrad_tensor *sum_dyxc, const int64_t *count, CheckedProblem *out,
                             std::string *msg) {
    const fbngrad_tensor *tensors[] = {y_backprop, x, reserve_space_1, sum_dy, sum_dyxc};
    const char *names[] = {"y_backprop", "x", "reserve_space_1", "sum_dy", "sum_dyxc"};
    for (int i = 0; i < 5; ++i)
        if (!tensors[i]) return fail(msg, FBNGRAD_INVALID_ARGUMENT, std::string(names[i]) + " is NULL");
    if (!count) return fail(msg, FBNGRAD_INVALID_ARGUMENT, "count is NULL");
    for (int i = 0; i < 5; ++i) {
        fbngrad_code code = check_view(*tensors[i], names[i], msg);
        if (code != FBNGRAD_OK) return code;
    }

    // The fused op's checks of these three tensors, in its order. Input numbers
    // are the fused op's (x is #1, reserve_space_1 is #3), as in apply's messages.
    if (!valid_layout(enum_bits(x->layout))) return fail(msg, FBNGRAD_INVALID_ARGUMENT, "Invalid data format");
    if (!valid_dtype(enum_bits(y_backprop->dtype)))
        return fail(msg, FBNGRAD_INVALID_ARGUMENT,
                    "Value for attr 'T' of dtype " + std::to_string(enum_bits(y_backprop->dtype)) +
                        " is not in the list of allowed values: half, bfloat16, float");
    const fbngrad_dtype T = y_backprop->dtype;
    const int input_number[] = {0, 1, 3};
    for (int i = 1; i < 3; ++i) {
        fbngrad_dtype want = i == 1 ? T : FBNGRAD_FLOAT32;
        if (enum_bits(tensors[i]->dtype) != want)
            return fail(msg, FBNGRAD_INVALID_ARGUMENT,
                        "cannot compute FusedBatchNormGradV2 (split-phase reduce) as input #" +
                            std::to_string(input_number[i]) + "(zero-based) was expected to be a " +
                            dtype_name(want) + " tensor but is a " + dtype_or_unknown(enum_bits(tensors[i]->dtype)) + " tensor");
    }
    if (enum_bits(y_backprop->layout) != x->layout)
        return fail(msg, FBNGRAD_INVALID_ARGUMENT,
                    std::string("y_backprop and x must have the same data format, got ") +
                        layout_name(enum_bits(y_backprop->layout), y_backprop->rank) + " and " + layout_name(x->layout, x->rank));
    const int32_t device = enum_bits(x->device);
    for (int i = 0; i < 5; ++i) {
        if (enum_bits(tensors[i]->device) != FBNGRAD_CPU && enum_bits(tensors[i]->device) != FBNGRAD_CUDA)
            return fail(msg, FBNGRAD_INVALID_ARGUMENT, std::string(names[i]) + " has an unknown device");
        if (enum_bits(tensors[i]->device) != device)
            return fail(msg, FBNGRAD_INVALID_ARGUMENT,
                        "all tensors must be on the same device, but x and " + std::string(names[i]) + " are not");
    }
    if (y_backprop->rank != 4 && y_backprop->rank != 5)
        return fail(msg, FBNGRAD_INVALID_ARGUMENT, "input must be 4 or 5-dimensional" + shape_string(*y_backprop));
    if (x->rank != 4 && x->rank != 5)
        return fail(msg, FBNGRAD_INVALID_ARGUMENT, "input must be 4 or 5-dimensional" + shape_string(*x));
    if (reserve_space_1->rank != 1)
        return fail(msg, FBNGRAD_INVALID_ARGUMENT, "saved mean must be 1-dimensional" + shape_string(*reserve_space_1));
    if (!same_shape(*x, *y_backprop))
        return fail(msg, FBNGRAD_INVALID_ARGUMENT,
                    "x and y_backprop must have same shape, but x has shape " + shape_string(*x) +
                        " and y_backprop has shape " + shape_string(*y_backprop));
    const int rank = x->rank;
    const int c_dim = x->layout == FBNGRAD_NHWC ? rank - 1 : 1;
    const int64_t C = x->shape[c_dim];
    if (num_elements(*reserve_space_1) != C)
        return fail(msg, FBNGRAD_INVALID_ARGUMENT,
                    "reserve_space_1 must have the same number of elements as the channels of x, got " +
                        std::to_string(num_elements(*reserve_space_1)) + " and " + std::to_string(C));
    if (fbngrad_code code = check_kernel_limits(*x, msg); code != FBNGRAD_OK) return code;

    // The caller-allocated outputs.
    for (int i = 3; i < 5; ++i) {
        fbngrad_code code = check_sum_vector(*tensors[i], names[i], C, msg);
        if (code != FBNGRAD_OK) return code;
    }
    for (int i = 0; i < 3; ++i)
        if (!tensors[i]->data && num_elements(*tensors[i]) > 0)
            return fail(msg, FBNGRAD_INVALID_ARGUMENT, std::string(names[i]) + " has no data (NULL pointer)");

    *out = problem_of(*x);
    return FBNGRAD_OK;
}

fbngrad_code validate_apply(const fbngrad_tensor *y_backprop, const fbngrad_tensor *x, const fbngrad_tensor *scale,
                            const fbngrad_tensor *reserve_space_1, const fbngrad_tensor *reserve_space_2,
                            const fbngrad_tensor *sum_dy, const fbngrad_tensor *sum_dyxc, int64_t count,
                            const fbngrad_attrs &attrs, const fbngrad_tensor *x_backprop,
                            const fbngrad_tensor *scale_backprop, const fbngrad_tensor *offset_backprop,
                            CheckedProblem *out, std::string *msg) {
    const fbngrad_tensor *sums[] = {sum_dy, sum_dyxc};
    const char *names[] = {"sum_dy", "sum_dyxc"};
    for (int i = 0; i < 2; ++i) {
        if (!sums[i]) return fail(msg, FBNGRAD_INVALID_ARGUMENT, std::string(names[i]) + " is NULL");
        fbngrad_code code = check_view(*sums[i], names[i], msg);
        if (code != FBNGRAD_OK) return code;
    }
    fbngrad_code code = validate(y_backprop, x, scale, reserve_space_1, reserve_space_2, attrs, x_backprop,
                                 scale_backprop, offset_backprop, out, msg);
    if (code != FBNGRAD_OK) return code;
    for (int i = 0; i < 2; ++i) {
        if (enum_bits(sums[i]->device) != out->device)
            return fail(msg, FBNGRAD_INVALID_ARGUMENT,
                        "all tensors must be on the same device, but x and " + std::string(names[i]) + " are not");
        code = check_sum_vector(*sums[i], names[i], out->C, msg);
        if (code != FBNGRAD_OK) return code;
    }
    // The sums cover count elements per channel, this worker's N*spatial among them.
    const int64_t local = out->N * out->S;
    if (count < local)
        return fail(msg, FBNGRAD_INVALID_ARGUMENT,
                    "count (elements per channel over all workers) must be at least this worker's N*spatial = " +
                        std::to_string(local) + ", got " + std::to_string(count));
    return FBNGRAD_OK;
}

}  // namespace fbngrad
