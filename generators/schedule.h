// One schedule entry point per target family. Each schedules the Funcs that
// algorithm.cpp built, and nothing else: the algorithm stays in algorithm.cpp.
// A pipeline may hold only part of the op (BnGradFuncs::phase: the split-phase
// generators): an entry point schedules the reductions only when
// f.computes_sums() and the outputs only when f.computes_outputs(), the same
// way in every phase, so that a split-phase result has the fused result's bits.
#pragma once

#include "algorithm.h"
#include "task_size.h"

#include <vector>

namespace fbng {

// Schedule knobs, exposed as GeneratorParams so that a build (or a tuner) can
// set them from CMake PARAMS without touching code. 0 means "the target's default".
struct Knobs {
    int vector_multiple = 0;  // vector width = multiple * natural float32 lanes
    int rows_per_block = 0;   // NHWC: rows summed per partial-sum block (the rfactor split);
                              // x86 default max(256, 65536 / C)
    int rows_per_task = 0;    // NHWC: rows of x_backprop per parallel task; x86 default max(64, 16384 / C)
    int elements_per_task = 0;  // x86 NCHW: planes are grouped into tasks of at least this many elements
    int sum_pass_order = 0;   // 1: the sums' pass walks the samples first to last; 2: last to first
                              // (BnGradFuncs::sums_last_sample_first; the algorithm reads it)
    int fuse_passes = 0;      // x86, the fused op: 1 the sums' pass over the whole tensors, then
                              // x_backprop's; 2 one pass over blocks, each block's sums right
                              // before (NHWC inference: beside) its x_backprop, so that the
                              // second read comes from the cache. Blocks: NCHW groups of
                              // channels; NHWC (inference only) rows_per_block rows.
                              // Default: 2 for NCHW, 1 for NHWC
};

// Knobs::fuse_passes resolved: whether this pipeline computes the sums and
// x_backprop in one pass over blocks. Throws CompileError for a value the
// pipeline cannot honour (schedule_for_target calls it for every target).
bool fuses_passes(const BnGradFuncs &f, const Halide::Target &t, const Knobs &k);

// Knobs::sum_pass_order, with 0 resolved for the target and for whether
// x_backprop is computed from the sums afterwards (training, and the split
// phase's reduce, which a training apply follows).
bool sums_last_sample_first(const Halide::Target &t, const Knobs &k, bool x_backprop_reads_sums);

struct BnGradOutputs {
    Halide::Func x_backprop, scale_backprop, offset_backprop;  // Fused and Apply
    Halide::Func sum_dy, sum_dyxc;                             // Reduce: copies of f.sums
};

// Calls the entry point for the target (the one place that maps targets to
// schedule files; every generator uses it).
void schedule_for_target(BnGradFuncs &f, BnGradOutputs &out, const Halide::Target &t, const Knobs &k);

// The many-core rule: every parallel loop over the tensors offers at least
// min(256, elements / kElementsPerTask) tasks (at least one), so that 4 to 128
// cores find work on every shape, not only on the large ones. Met by a
// stronger rule that needs the shape only: no task holds more than
// max(kElementsPerTask, elements / 256) elements (one unit, a row or a plane,
// at least; runtime/task_size.h: rule_task_elements). A knob (hand default or
// tuned) is the preferred size; piece_for_tasks caps it, then evens the pieces
// out for waves of cores (runtime/task_size.h: even_piece).
//
// Two kinds of loops:
// - The NHWC sums' blocks set the order of the sums, so their size must follow
//   from the shape alone (the same bits for every thread count, and a
//   one-worker split phase the fused op's): nhwc_rows_per_block, always.
// - Every other loop only places work (x_backprop's rows, the NCHW planes and
//   channel blocks: each channel's sums keep their order whichever task holds
//   them), so its task size is task_elements(): the rule's when the call runs
//   on a caller's runner (fbngrad_set_parallel_for), and on fbngrad's own
//   pool of P threads as large as still gives a few tasks a thread
//   (runtime/parallel_runtime.cpp, fbng_task_elements): long contiguous runs
//   on 2 cores, the rule's tasks for any pool. (The fused op only; the split
//   phase keeps kElementsPerTask, see task_elements().)
// - The NHWC combine of the blocks' partials: schedule_nhwc_channel_tasks (the
//   fused op, with every per-channel stage) or schedule_nhwc_partial_combine.
constexpr int kElementsPerTask = fbngrad::runtime::kRuleTaskElements;

// The piece (rows, planes, channels) of a loop over `units` units of
// `unit_elements` elements each: the preferred piece, capped at
// `task_elements` elements, then evened out for waves of cores:
// runtime/task_size.h, even_piece.
Halide::Expr piece_for_tasks(const BnGradFuncs &f, Halide::Expr preferred, Halide::Expr unit_elements,
                             Halide::Expr task_elements, Halide::Expr units);

// The call's task size for loops that only place work (see above): an extern
// call, evaluated once when the pipeline starts, with the call's user_context.
Halide::Expr task_elements(const BnGradFuncs &f);

// The NHWC sums' rows per block (the rfactor split of the rows): the
// preferred count, capped by the rule with the shape alone. `strips`: the
// blocks are summed by schedule_nhwc_block_sums, which splits wide rows into
// strips of channels (else each task is a block of whole rows).
Halide::Expr nhwc_rows_per_block(const BnGradFuncs &f, Halide::Expr preferred, bool strips);

// The CPU schedules' NHWC combine of the sum blocks' partials (f.partial's
// update, loops c, rso, n after the rfactor of rso into blocks of
// rows_per_block rows), where nhwc_channel_tasks does not hold (the split
// phase's reduce, the NHWC one pass): 8 channels a task, added in registers,
// in parallel where its blocks·C values make a task of `task_elements` (the
// pipeline's task_elements(f): on a caller's runner the rule's size).
// Serial, it was the time outside the parallel loops (1-8 % of a call,
// C·S/rows_per_block values) that capped the modelled speed-up on many cores.
// Each channel still adds its blocks in order: the same bits.
void schedule_nhwc_partial_combine(BnGradFuncs &f, const Halide::RVar &rso, Halide::Expr rows_per_block,
                                   Halide::Expr task_elements, int vec);

// The CPU schedules' NHWC sum blocks, the rfactor'd Func `block` (its
// update's loops c, rsi, so, n from innermost): parallel over the blocks of
// rows `so`, and above kStripChannels channels over strips of channels too;
// each task zeroes and sums its partials on its own stack and stores them in
// block's wrapper (compute_root), which the combine reads; small C in
// registers (specialize_nhwc_row_sums), the rest vectorized over channels
// with `widths` (widest first). `task_elements`: the pipeline's
// task_elements(f) (one Expr a pipeline: each call of task_elements() makes a
// user_context parameter of its own, and Halide refuses two).
void schedule_nhwc_block_sums(Halide::Func block, const BnGradFuncs &f, const Halide::RVar &rsi,
                              const Halide::Var &so, Halide::Expr rows_per_block, Halide::Expr task_elements,
                              const std::vector<int> &widths);

// The narrowest strip of channels an NHWC sum task holds: 2 KB of float32 a
// row, long enough for the prefetchers (a multiple of every CPU target's
// vector width). On 2 Zen 3 cores, strips of 64 and 256 channels made
// 32,7,7,512 and 32,7,7,2048 0.63-0.77x the build before the many-core rule;
// 512, 0.88-1.00x (docs/threads.md).
constexpr int kStripChannels = 512;

// The widest strip (runtime/task_size.h, strip_channels): a task's partials,
// two float32 a channel, are 16 KB of its stack at most, whatever C.
constexpr int kWidestStrip = 4 * kStripChannels;

// The NHWC sum blocks' partials (Halide's wrapper of the rfactor'd block,
// at root) a row of C channels and this many floats more, one cache line:
// what the combine's reads down the blocks need (pad_partial_rows).
constexpr int kPartialRowPad = 16;
void pad_partial_rows(Halide::Func stored, const BnGradFuncs &f);

// The name of a parallel loop that a schedule makes scalar on purpose (NHWC,
// C below the narrowest vector): tests/check_vectorized.py lets exactly the
// loops of this name go without vector arithmetic.
inline const char *const kScalarLoopName = "so_scalar";

// The vector widths (float lanes) of the NHWC channel loops, widest first:
// vec, vec/2, ... down to 4 (the narrowest register of every CPU target).
std::vector<int> nhwc_channel_widths(int vec);

// An NHWC stage's channel loop vectorized with the widest of `widths` that C
// fills (a specialization each), the narrowest in the general case: the
// lanes stay channels whatever the width, so every width sums in the same
// order (the same bits).
void vectorize_nhwc_channels(Halide::Stage st, const BnGradFuncs &f, const std::vector<int> &widths);

// The fused op's NHWC schedules on CPUs (not the NHWC one pass, not the
// split phase): every per-channel stage after the sums' loop (the combine of
// the blocks' partials, the sums over samples, inv, coef, scale/offset
// backprop) in one parallel loop over groups of channels, in place of
// schedule_per_channel_stages and schedule_nhwc_partial_combine.
bool nhwc_channel_tasks(const BnGradFuncs &f, bool one_pass);
void schedule_nhwc_channel_tasks(BnGradFuncs &f, BnGradOutputs &out, const Halide::RVar &rso,
                                 Halide::Expr rows_per_block, Halide::Expr task_elements, int vec);

// The CPU schedules' per-channel Funcs (the sums over samples, inv, coef and
// the phase's [C] outputs): tiny, each one vectorized loop computed once
// before the loop over the tensors that needs it (scale/offset_backprop in
// coef's loop), and scheduled the same way in every phase (a split-phase
// pipeline holds only the sums or only the outputs). The x86 NCHW one pass
// computes them inside its tasks instead. `task_elements`: the pipeline's
// task_elements(f), for NCHW's sums over samples.
void schedule_per_channel_stages(BnGradFuncs &f, BnGradOutputs &out, int vec, Halide::Expr task_elements);

// NCHW's sums over samples (f.sums' update: the planes' partials, C·N of
// each sum, added in sample order): 16 channels a task, in parallel where
// the 2·C·N values make a task of `task_elements`. The same bits.
void schedule_nchw_sums_over_samples(BnGradFuncs &f, Halide::Expr task_elements, int vec);

// The CPU schedules' NHWC sums over a block of rows, the rfactor'd stage
// `blocks` (loops c, rsi, so, n from innermost): a row of a few vectors of
// channels, summed channels innermost, would load, add and store the same
// accumulators every row, a chain through memory (C = 8 on AVX2: 4x
// oneDNN's time). Specialized here for every C that is 1 to 4 vectors of one
// of `widths` (widest first; AVX2, widths 8 and 4: C = 8, 16, 24, 32, 4, 12):
// the row loop innermost, the row's vectors unrolled inside it, so the
// accumulators stay in registers; and for C below the narrowest width:
// unrolled scalar rows (schedule_nhwc_block_sums names the task loop
// kScalarLoopName there). Each channel still sums its rows in order: the
// same bits. The caller schedules the general case after.
void specialize_nhwc_row_sums(Halide::Stage blocks, const BnGradFuncs &f, const Halide::RVar &rsi,
                              const Halide::Var &so, const std::vector<int> &widths);

void schedule_x86(BnGradFuncs &f, BnGradOutputs &out, const Halide::Target &t, const Knobs &k);
void schedule_arm(BnGradFuncs &f, BnGradOutputs &out, const Halide::Target &t, const Knobs &k);
// CUDA (any target with the cuda feature); of the knobs, only fuse_passes
// applies: single_pass (fuse_passes=2, NCHW, the fused op) is the one-kernel
// schedule of the cuda_plane shape class.
void schedule_cuda(BnGradFuncs &f, BnGradOutputs &out, const Halide::Target &t, bool single_pass);

}  // namespace fbng
