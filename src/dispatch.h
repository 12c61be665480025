// The dispatcher: the compiled variants (from the variant table's X-macro
// file) in priority order, and the rule that picks one. The rule, in full:
// the first variant in table order whose dtype, layout, mode and device match
// and whose ISA this CPU has (or, when an ISA is forced, whose ISA is that one);
// then, if a tuned variant of that same row serves the problem's shape class
// (src/shape_class.h, cmake/tuned_variants.cmake), that tuned variant.
#pragma once

#include "HalideRuntime.h"
#include "cpu_features.h"
#include "fbngrad/fbngrad.h"
#include "shape_class.h"

namespace fbngrad {

// Every variant has this signature (the generator's interface).
using KernelFn = int (*)(void const *user_context, halide_buffer_t *y_backprop, halide_buffer_t *x,
                         halide_buffer_t *scale, halide_buffer_t *reserve_space_1, halide_buffer_t *reserve_space_2,
                         float epsilon, bool rs2_is_inverse_std, halide_buffer_t *x_backprop,
                         halide_buffer_t *scale_backprop, halide_buffer_t *offset_backprop);

struct TwoPassRoute;  // two_pass_route.h

struct Variant {
    fbngrad_variant_info info;
    Isa isa;
    KernelFn fn;
    uint32_t classes = 0;  // tuned: bit k serves ShapeClass k; 0: hand-scheduled (every shape)
    // The x86 NCHW one pass: the split phase that replaces it where a channel
    // exceeds the call's task size (two_pass_route.h); else nullptr.
    const TwoPassRoute *two_pass = nullptr;
};

int variant_count();
const Variant &variant(int i);

// nullptr when nothing can run here; *why then says why, and *why_code is
// FBNGRAD_UNIMPLEMENTED where this build left the row out (FBNGRAD_DTYPES,
// FBNGRAD_LAYOUTS, FBNGRAD_MODES, FBNGRAD_ENABLE_CUDA: src/left_out.h) or
// FBNGRAD_NOT_FOUND where none of its variants can run on this CPU. Without a
// shape class, the hand-scheduled variant.
const Variant *select_variant(fbngrad_dtype dtype, fbngrad_layout layout, bool is_training, fbngrad_device device,
                              std::string *why, const ShapeClass *shape_class = nullptr,
                              fbngrad_code *why_code = nullptr);

// Forcing one variant for the problems of its row (fbngrad_force_variant).
bool force_variant(const std::string &name, std::string *msg);

// Forcing an ISA (tests, benchmarks, FBNGRAD_ISA).
bool force_isa(const std::string &name, std::string *msg);
const char *forced_isa_name();

}  // namespace fbngrad
