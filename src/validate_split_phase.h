// Validation of the split-phase calls (fbngrad.h, "split phase"), in
// TensorFlow's order and words where the fused op has the same check (they
// reuse validate.cpp), then the checks of the sums and the count.
#pragma once

#include <cstdint>
#include <string>

#include "fbngrad/fbngrad.h"
#include "validate.h"

namespace fbngrad {

// reduce: y_backprop, x and reserve_space_1 as the fused op takes them;
// sum_dy and sum_dyxc float32 [C]; count not NULL.
fbngrad_code validate_reduce(const fbngrad_tensor *y_backprop, const fbngrad_tensor *x,
                             const fbngrad_tensor *reserve_space_1, const fbngrad_tensor *sum_dy,
                             const fbngrad_tensor *sum_dyxc, const int64_t *count, CheckedProblem *out,
                             std::string *msg);

// apply: everything validate() checks for the fused op, then sum_dy and
// sum_dyxc float32 [C] on x's device, and count >= this worker's N*spatial.
fbngrad_code validate_apply(const fbngrad_tensor *y_backprop, const fbngrad_tensor *x, const fbngrad_tensor *scale,
                            const fbngrad_tensor *reserve_space_1, const fbngrad_tensor *reserve_space_2,
                            const fbngrad_tensor *sum_dy, const fbngrad_tensor *sum_dyxc, int64_t count,
                            const fbngrad_attrs &attrs, const fbngrad_tensor *x_backprop,
                            const fbngrad_tensor *scale_backprop, const fbngrad_tensor *offset_backprop,
                            CheckedProblem *out, std::string *msg);

}  // namespace fbngrad
