// The FusedBatchNormGradV2 algorithm, written once, as Halide Funcs with no
// scheduling. Every schedule file (schedule_x86.cpp, ...) schedules these Funcs.
//
// Tensors reach the kernel as 3-D buffers (the dispatcher merges dims, which
// costs nothing for dense memory):
//   NHWC / NDHWC : (c, s, n) innermost first, s = N*[D*]H*W, n = 1
//   NCHW / NCDHW : (s, c, n) innermost first, s = [D*]H*W,   n = N
// so a layout is only a change of dimension order, never of code.
#pragma once

#include "Halide.h"

namespace fbng {

enum class Layout { NHWC, NCHW };

struct BnGradFuncs {
    Layout layout;
    bool training;
    Halide::Var c{"c"}, s{"s"}, n{"n"};
    // The reduction domains of the two-level sums: over s for each (c, n), then over n.
    Halide::RDom rs, rn;

    Halide::Func dy{"dy_f32"}, xc{"xc"};    // inputs cast to float32 at load; xc = x - mean
    Halide::Func inv{"inv"};                // 1/sqrt(var + eps), or rs2 itself under inverse_std
    Halide::Func partial{"partial"};        // (c, n) -> {sum_s dy, sum_s dy*xc}
    Halide::Func sums{"sums"};              // (c)    -> {sum_dy, sum_dyxc}
    Halide::Func coef{"coef"};              // (c)    -> per-channel factors of x_backprop

    // Storage order of the 3-D tensors for this layout: the Vars in buffer-dim order.
    std::vector<Halide::Var> dims() const {
        return layout == Layout::NHWC ? std::vector<Halide::Var>{c, s, n} : std::vector<Halide::Var>{s, c, n};
    }
};

// Inputs of the algorithm, as the generator declares them.
struct BnGradInputs {
    Halide::Func y_backprop, x;                 // 3-D, storage order given by the layout
    Halide::Func scale, mean, reserve_space_2;  // 1-D float32 [C]
    Halide::Expr epsilon, rs2_is_inverse_std;   // float, bool
    Halide::Expr S, N;                          // extents of s and n
    Halide::Type out_type;                      // x_backprop's type
};

// Builds the Funcs; x_backprop, scale_backprop and offset_backprop are defined
// on the given output Funcs.
void define_algorithm(BnGradFuncs &f, const BnGradInputs &in, Halide::Func x_backprop,
                      Halide::Func scale_backprop, Halide::Func offset_backprop);

}  // namespace fbng
