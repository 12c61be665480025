// The AArch64 schedule (baseline NEON, and NEON with the ARMv8.2 half-precision
// extension). AArch64 has 32 128-bit vector registers (4 float32 lanes each),
// twice x86-64's 16 xmm/ymm, so every vectorized loop works on two registers
// per value by default (vector_multiple 2: 8 lanes): the sums then keep four
// independent accumulator chains in flight (2 registers x {sum dy, sum dy*xc}),
// which hides the adder latency of in-order cores such as the Cortex-A53, and
// float16 loads become one fcvtl + fcvtl2 pair per 8 elements under arm_fp16.
//
// Structure as in schedule_x86.cpp: everything is vectorized along the
// contiguous dimension (channels in NHWC, the spatial plane in NCHW); sums are
// split into fixed-size blocks (rfactor) whose partials are added in a fixed
// order afterwards, so a result never depends on the thread count; vectorized
// loops use GuardWithIf, because extents below the vector width (C = 1, 3; a
// 1x1 plane) are normal inputs and rounding up would read past the tensor.
#include "schedule.h"

using namespace Halide;

namespace fbng {

namespace {

// Float32 vector registers per vectorized value (see the comment at the top).
constexpr int kDefaultVectorMultiple = 2;
// NHWC: rows per partial-sum block, and rows of x_backprop per parallel task.
// A block of 256 rows of a typical 64-channel tensor is 64 KiB of dy and x: it
// streams through the 32-64 KiB L1 of current Cortex-A cores once.
constexpr int kDefaultRowsPerBlock = 256;
constexpr int kDefaultRowsPerTask = 64;

}  // namespace

void schedule_arm(BnGradFuncs &f, BnGradOutputs &out, const Target &t, const Knobs &k) {
    const int multiple = k.vector_multiple > 0 ? k.vector_multiple : kDefaultVectorMultiple;
    const int vec = t.natural_vector_size<float>() * multiple;
    // Shrunk where they would give too few tasks (schedule.h: the many-core rule).
    const Expr rows_per_block =
        nhwc_rows_per_block(f, k.rows_per_block > 0 ? k.rows_per_block : kDefaultRowsPerBlock, true);
    const Expr call_task_elements = task_elements(f);
    const Expr rows_per_task = piece_for_tasks(f, k.rows_per_task > 0 ? k.rows_per_task : kDefaultRowsPerTask, f.C,
                                               call_task_elements, f.S);
    const TailStrategy guard = TailStrategy::GuardWithIf;
    Var &c = f.c, &s = f.s, &n = f.n;

    const bool channel_tasks = nhwc_channel_tasks(f, false);
    if (!channel_tasks) schedule_per_channel_stages(f, out, vec, call_task_elements);

    if (f.layout == Layout::NHWC) {
        if (f.computes_sums()) {
            // Sums over rows s: blocks of rows_per_block rows summed in parallel,
            // each row a run of C contiguous channels (vector lanes = channels).
            // rfactor comes before any split of the intermediate (pitfall P13).
            // Small C in registers, as on x86 (specialize_nhwc_row_sums).
            RVar rso("rso"), rsi("rsi");
            Var so("so");
            f.partial.update().split(f.rs.x, rso, rsi, rows_per_block);
            Func block = f.partial.update().rfactor(rso, so);
            schedule_nhwc_block_sums(block, f, rsi, so, rows_per_block, call_task_elements,
                                     nhwc_channel_widths(vec));

            if (channel_tasks)
                schedule_nhwc_channel_tasks(f, out, rso, rows_per_block, call_task_elements, vec);
            else
                schedule_nhwc_partial_combine(f, rso, rows_per_block, call_task_elements, vec);
        }
        if (f.computes_outputs()) {
            // x_backprop: parallel over blocks of rows, vectorized over channels.
            Var so("so"), si("si");
            out.x_backprop.split(s, so, si, rows_per_task, guard)
                .reorder(c, si, so, n)
                .vectorize(c, vec, guard)
                .parallel(so);
        }
    } else {
        Var cn("cn");
        if (f.computes_sums()) {
            // NCHW: each (c, n) plane is contiguous; sum it with vector lanes
            // along s (rfactor into `lanes`: vec independent partial sums), then
            // add the lanes in a fixed order. (c, n) planes are the parallel tasks.
            RVar rso("rso"), rsi("rsi");
            Var v("v");
            f.partial.update().split(f.rs.x, rso, rsi, vec);
            Func lanes = f.partial.update().rfactor(rsi, v);

            // Each task zeroes its plane's sums itself (schedule_x86.cpp says why).
            Func stored = f.partial.in();
            stored.compute_root().fuse(c, n, cn).parallel(cn);
            f.partial.compute_at(stored, cn);
            f.partial.update().reorder(rsi, c, n);
            lanes.compute_at(stored, cn).vectorize(v);
            lanes.update().reorder(v, rso).vectorize(v);
        }
        if (f.computes_outputs()) out.x_backprop.fuse(c, n, cn).parallel(cn).vectorize(s, vec, guard);
    }
}

}  // namespace fbng
