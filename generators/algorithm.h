// The FusedBatchNormGradV2 algorithm, written once, as Halide Funcs with no
// scheduling. Every schedule file (schedule_x86.cpp, ...) schedules these Funcs.
//
// Tensors reach the kernel as 3-D buffers (the dispatcher merges dims, which
// costs nothing for dense memory):
//   NHWC / NDHWC : (c, s, n) innermost first, s = N*[D*]H*W, n = 1
//   NCHW / NCDHW : (s, c, n) innermost first, s = [D*]H*W,   n = N
// so a layout is only a change of dimension order, never of code.
//
// The op has two parts: per-channel sums over the batch, and the outputs
// computed from those sums. The fused generator builds both in one pipeline;
// the split-phase generators (split_phase_generator.cpp, for batch norm
// synchronized across workers) build each part as a pipeline of its own, with
// the caller's allreduce of the sums in between. All three use the same
// define_* functions below, so the Funcs (and, with the same schedule, the
// bits) are the same.
#pragma once

#include "Halide.h"

namespace fbng {

enum class Layout { NHWC, NCHW };

// Which part of the op a pipeline computes.
enum class Phase {
    Fused,   // the whole op: the sums, then the outputs from them
    Reduce,  // the sums of this worker's shard only: sum_dy, sum_dyxc
    Apply,   // the outputs, from sums (and a count) given as inputs
};

struct BnGradFuncs {
    Layout layout;
    bool training;
    Phase phase = Phase::Fused;
    Halide::Var c{"c"}, s{"s"}, n{"n"};
    // The reduction domains of the two-level sums: over s for each (c, n), then over n.
    Halide::RDom rs, rn;
    Halide::Expr S;  // extent of s, for schedules that size their tasks by it
    Halide::Expr C;  // channels, for schedules that specialize on them
    Halide::Expr N;  // extent of n, for schedules that size their tasks by the whole tensor
    int storage_bits = 32;  // bits of a y_backprop / x element: 16 for float16 and bfloat16
    // The sums' pass walks the samples from the last to the first (the final
    // sum over samples keeps its order, so the bits do not change). Halide has
    // no loop reversal, so this is said here, in the index, not in a schedule:
    // x_backprop's pass walks from the first sample, and finds the samples the
    // sums read last still in the cache (schedule.h: Knobs::sum_pass_order).
    bool sums_last_sample_first = false;

    Halide::Func dy{"dy_f32"}, xc{"xc"};    // inputs cast to float32 at load; xc = x - mean
    Halide::Func inv{"inv"};                // 1/sqrt(var + eps), or rs2 itself under inverse_std
    Halide::Func partial{"partial"};        // (c, n) -> {sum_s dy, sum_s dy*xc}     (not in Apply)
    Halide::Func sums{"sums"};              // (c)    -> {sum_dy, sum_dyxc}: reduced here (with an
                                            //           update), or in Apply the given sums (pure)
    Halide::Func coef{"coef"};              // (c)    -> per-channel factors of x_backprop

    // What a schedule has to schedule in this phase: the reductions (partial,
    // the update of sums) and the outputs (inv, coef, x/scale/offset_backprop).
    bool computes_sums() const { return phase != Phase::Apply; }
    bool computes_outputs() const { return phase != Phase::Reduce; }

    // Storage order of the 3-D tensors for this layout: the Vars in buffer-dim order.
    std::vector<Halide::Var> dims() const {
        return layout == Layout::NHWC ? std::vector<Halide::Var>{c, s, n} : std::vector<Halide::Var>{s, c, n};
    }
};

// Inputs of the algorithm, as the generators declare them. A phase leaves the
// ones it does not have undefined.
struct BnGradInputs {
    Halide::Func y_backprop, x;                 // 3-D, storage order given by the layout
    Halide::Func scale, mean, reserve_space_2;  // 1-D float32 [C]  (Reduce: mean only)
    Halide::Expr epsilon, rs2_is_inverse_std;   // float, bool      (not in Reduce)
    Halide::Expr S, N, C;                       // extents of s, n and c of the tensors
    Halide::Expr count;                         // int64: elements per channel that the sums cover
                                                // (Fused: S*N; Apply: the global count)
    Halide::Func sum_dy, sum_dyxc;              // Apply: the globally reduced sums, float32 [C]
    Halide::Type out_type;                      // x_backprop's type
};

// dy and xc: the tensors loaded as float32.
void define_loads(BnGradFuncs &f, const BnGradInputs &in);

// partial and sums: the two-level sums over this pipeline's tensors.
void define_local_sums(BnGradFuncs &f, const BnGradInputs &in);

// sums as the given inputs in.sum_dy, in.sum_dyxc (the Apply phase).
void define_given_sums(BnGradFuncs &f, const BnGradInputs &in);

// inv, coef and the three outputs, from f.sums and in.count.
void define_outputs(BnGradFuncs &f, const BnGradInputs &in, Halide::Func x_backprop, Halide::Func scale_backprop,
                    Halide::Func offset_backprop);

// The fused op: define_loads, define_local_sums, define_outputs.
void define_algorithm(BnGradFuncs &f, const BnGradInputs &in, Halide::Func x_backprop,
                      Halide::Func scale_backprop, Halide::Func offset_backprop);

}  // namespace fbng
