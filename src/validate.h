// Argument validation in TensorFlow's order and with TensorFlow's messages
// (shared/spec/semantics-research.md §3), then fbngrad's own checks of the
// caller-allocated outputs. Nothing here touches any data.
#pragma once

#include <cstdint>
#include <string>

#include "fbngrad/fbngrad.h"

namespace fbngrad {

// The problem as the kernels see it, once validation has passed.
struct CheckedProblem {
    fbngrad_dtype dtype;
    fbngrad_layout layout;
    fbngrad_device device;
    int64_t N, S, C;       // batch, merged spatial extent, channels
    int64_t elements;      // N * S * C
};

// Largest tensor the 32-bit-indexed kernels accept.
constexpr int64_t kMaxElements = 2147483647;

// Returns FBNGRAD_OK and fills *out, or an error code with the message in *msg.
fbngrad_code validate(const fbngrad_tensor *y_backprop, const fbngrad_tensor *x, const fbngrad_tensor *scale,
                      const fbngrad_tensor *reserve_space_1, const fbngrad_tensor *reserve_space_2,
                      const fbngrad_attrs &attrs, const fbngrad_tensor *x_backprop,
                      const fbngrad_tensor *scale_backprop, const fbngrad_tensor *offset_backprop,
                      CheckedProblem *out, std::string *msg);

// "[2,3,4]", as TensorShape::DebugString renders it.
std::string shape_string(const fbngrad_tensor &t);
const char *dtype_name(fbngrad_dtype d);  // "float", "half", "bfloat16" (TensorFlow's names)
const char *layout_name(fbngrad_layout l, int rank);  // "NHWC", "NCDHW", ...

}  // namespace fbngrad
