// A double-precision reference of the contract (shared/spec/CONTRACT.md):
// the op's formulas evaluated in double from the same (already rounded)
// inputs, with an error bound per output element that a correct float32
// kernel must stay within. Independent of Halide; the tests, the CLI's demo
// and the bench use it as their oracle.
//
// Tolerances (derived from the precisions, u = 2^-24 for float32 arithmetic,
// u_T = half an ulp of the stored type: 2^-24, 2^-11, 2^-8):
//   sums:        (16 + 2*sqrt(M)) * u * sum|terms|   (blocked float sums: the
//                statistical growth of their rounding error, with margin)
//   x_backprop:  |scale*inv| * (8u * (|dy| + |sum_dy/M| + |xc*inv^2*sum_dyxc/M|)
//                + err(sum_dy)/M + |xc|*inv^2*err(sum_dyxc)/M)   (training)
//                8u * |dy*scale*inv|                              (inference)
//                then (1+u_T) * that + u_T * |exact| + the type's smallest subnormal
//   scale_backprop: err(sum_dyxc) * inv + 8u * |exact|; offset_backprop: err(sum_dy)
// Where the op's float32 factor scale*inv is infinite (an infinite scale, or a product past
// float32's largest), x_backprop is that infinity times the bracket (training) or dy
// (inference): its sign, or NaN where the factor is zero. A training bracket that is zero
// within its error may come out +0, -0 or either sign in float32: the reference says
// NaN with an infinite tolerance there, and any non-finite result is right.
// Otherwise a NaN in the reference must be NaN in the result; an infinity must be the same infinity;
// a finite value that (within its tolerance) rounds past the type's largest may be that
// infinity (float16 x_backprop over 65504 is, as TensorFlow's cast to half gives).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fbngrad/fbngrad.h"

namespace fbngrad::ref {

struct Problem {
    fbngrad_dtype dtype = FBNGRAD_FLOAT32;
    fbngrad_layout layout = FBNGRAD_NHWC;
    int rank = 4;
    int64_t shape[FBNGRAD_MAX_RANK] = {0};
    const void *y_backprop = nullptr;  // elements of dtype, dense, in `layout`
    const void *x = nullptr;
    const float *scale = nullptr, *mean = nullptr, *reserve_space_2 = nullptr;
    float epsilon = 0.0001f;
    bool is_training = true;
    bool rs2_is_inverse_std = false;

    int64_t channels() const;
    int64_t elements() const;
};

struct Expected {
    std::vector<double> x_backprop, scale_backprop, offset_backprop;
    std::vector<double> x_backprop_tol, scale_backprop_tol, offset_backprop_tol;
};

Expected compute(const Problem &p);

struct Comparison {
    int64_t mismatches = 0;
    double max_abs_error = 0;   // over finite elements
    double worst_ratio = 0;     // max |error| / tolerance
    std::string first_mismatch; // "x_backprop[17]: got 1.5, expected 1.25 +- 1e-6"
    bool ok() const { return mismatches == 0; }
};

// Compares a kernel's outputs (x_backprop in the problem's dtype) with `e`.
Comparison compare(const Problem &p, const Expected &e, const void *x_backprop,
                   const float *scale_backprop, const float *offset_backprop);

// The value of element i of a tensor of the given dtype, as a double.
double load(fbngrad_dtype dtype, const void *data, int64_t i);
// Stores v rounded to the dtype (round to nearest even).
void store(fbngrad_dtype dtype, void *data, int64_t i, float v);
// Bytes per element.
int dtype_size(fbngrad_dtype dtype);

}  // namespace fbngrad::ref
