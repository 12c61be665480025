// The split-phase variants (from the variant table, cmake/split_phase_variants.cmake)
// and their dispatch. The rule: take the ISA the fused op's dispatcher picks
// for the same dtype, layout, mode and device (dispatch.h: the CPU's best, or
// the forced one; for CUDA tensors the CUDA row), and use the split-phase
// variant of that ISA and device. So the split phase follows FBNGRAD_ISA /
// fbngrad_force_isa like the fused op, and on one worker reduce + apply run
// the fused variant's schedule and give its bits.
#pragma once

#include <string>

#include "HalideRuntime.h"
#include "dispatch.h"

namespace fbngrad {

// The signatures of the generators in generators/split_phase_generator.cpp.
using ReduceFn = int (*)(void const *user_context, halide_buffer_t *y_backprop, halide_buffer_t *x,
                         halide_buffer_t *reserve_space_1, halide_buffer_t *sum_dy, halide_buffer_t *sum_dyxc);
using ApplyFn = int (*)(void const *user_context, halide_buffer_t *y_backprop, halide_buffer_t *x,
                        halide_buffer_t *scale, halide_buffer_t *reserve_space_1, halide_buffer_t *reserve_space_2,
                        float epsilon, bool rs2_is_inverse_std, halide_buffer_t *sum_dy, halide_buffer_t *sum_dyxc,
                        int64_t count, halide_buffer_t *x_backprop, halide_buffer_t *scale_backprop,
                        halide_buffer_t *offset_backprop);

struct ReduceVariant {
    const char *name;
    fbngrad_dtype dtype;
    fbngrad_layout layout;
    Isa isa;
    fbngrad_device device;
    ReduceFn fn;
};

struct ApplyVariant {
    const char *name;
    fbngrad_dtype dtype;
    fbngrad_layout layout;
    bool is_training;
    Isa isa;
    fbngrad_device device;
    ApplyFn fn;
};

// nullptr when nothing can run here; *why then says why, and *why_code (required) is
// FBNGRAD_UNIMPLEMENTED where this build left it out (FBNGRAD_SPLIT_PHASE=OFF,
// or the row's dtype, layout or mode: dispatch.h), else FBNGRAD_NOT_FOUND.
const ReduceVariant *select_reduce_variant(fbngrad_dtype dtype, fbngrad_layout layout, fbngrad_device device,
                                           std::string *why, fbngrad_code *why_code);
const ApplyVariant *select_apply_variant(fbngrad_dtype dtype, fbngrad_layout layout, bool is_training,
                                         fbngrad_device device, std::string *why, fbngrad_code *why_code);

}  // namespace fbngrad
