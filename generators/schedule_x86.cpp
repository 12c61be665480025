// The x86 schedule (SSE4.1, AVX2, AVX-512): the vector width follows the
// target; everything is vectorized along the contiguous dimension (channels in
// NHWC, the spatial plane in NCHW) and both cores share the work.
//
// Sums are split into fixed-size blocks (rfactor) whose partials are added in
// a fixed order afterwards, so a result never depends on the thread count.
// Vectorized loops use GuardWithIf: extents below the vector width (C = 1, 3;
// a 1x1 plane) are normal inputs, and rounding up would read past the tensor.
#include "schedule.h"

using namespace Halide;

namespace fbng {

namespace {

const TailStrategy guard = TailStrategy::GuardWithIf;

// Knobs::fuse_passes, NCHW: the op one block of channels at a time. A
// block's sums are computed inside x_backprop's loop over blocks, right before
// its x_backprop, so the second read (x and y_backprop in training, y_backprop
// in inference) finds the block in the cache: 3 tensor-sizes of memory traffic
// instead of 5 (training) or 4 where the tensors exceed the cache.
// scale/offset_backprop are fused into the same loop (compute_with). The
// arithmetic is the two-pass schedule's (the same rfactor split into vector
// lanes, the same order), only where it runs moves: the same bits, which
// SplitPhaseOneWorker checks against the two-pass split phase.
void schedule_x86_nchw_one_pass(BnGradFuncs &f, BnGradOutputs &out, int vec, int elements_per_task) {
    Var &c = f.c, &s = f.s, &n = f.n;
    Func &xb = out.x_backprop;
    // A block is a group of adjacent channels, at least elements_per_task
    // elements a sample: one contiguous run a sample, long enough for the
    // prefetchers (single 12 KB planes a sample were slower than two passes).
    // One block per core, and at most half the channels a block, so that
    // both cores work when the planes are tiny (H*W = 1: one block of every
    // channel otherwise); and shrunk for the many-core rule (schedule.h). A
    // block holds every sample of its channels, so with fewer channels than
    // the rule's task count, one channel a task is as far as it goes. Where
    // that, or a shrunk block's short runs, would cost, the call takes the
    // split phase's two passes instead (src/two_pass_route.h). The blocks
    // only place the work, never the sums' order.
    Var co("co"), ci("ci");
    Expr preferred = clamp(elements_per_task / max(f.S, 1), 1, max(1, (f.C + 1) / 2));
    Expr planes = piece_for_tasks(f, preferred, f.S * f.N, task_elements(f), f.C);
    xb.split(c, co, ci, planes, guard).reorder(s, ci, n, co).parallel(co).vectorize(s, vec, guard);
    for (Func g : {out.scale_backprop, out.offset_backprop})
        g.split(c, co, ci, planes, guard).parallel(co).compute_with(xb, co);
    for (Func g : {f.sums, f.inv, f.coef}) g.compute_at(xb, co);

    RVar rso("rso"), rsi("rsi");
    Var v("v");
    f.partial.update().split(f.rs.x, rso, rsi, vec);
    Func lanes = f.partial.update().rfactor(rsi, v);
    f.partial.compute_at(xb, co);
    f.partial.update().reorder(rsi, c, n);
    lanes.compute_at(f.partial, c).vectorize(v);
    lanes.update().reorder(v, rso).vectorize(v);
}

}  // namespace

void schedule_x86(BnGradFuncs &f, BnGradOutputs &out, const Target &t, const Knobs &k) {
    const int vec = t.natural_vector_size<float>() * (k.vector_multiple > 0 ? k.vector_multiple : 1);
    // NHWC defaults sized in elements, not rows: sum blocks of at least 64K
    // elements and x_backprop tasks of at least 16K (C = 256: 256 and 64 rows,
    // as fixed row counts were tuned for; C = 64: 1024 and 256 rows, the
    // tuner's dram winner, whose fixed rows lost on C >= 128; docs/benchmarks.md).
    // Both shrink where they would give too few tasks (schedule.h: the many-core rule).
    // The blocks change the sums' order with the shape only, never with the thread count.
    const Expr preferred_rows_per_block = k.rows_per_block > 0 ? Expr(k.rows_per_block) : max(256, 65536 / max(f.C, 1));
    const Expr preferred_rows_per_task = k.rows_per_task > 0 ? Expr(k.rows_per_task) : max(64, 16384 / max(f.C, 1));
    const Expr call_task_elements = task_elements(f);
    const Expr rows_per_task = piece_for_tasks(f, preferred_rows_per_task, f.C, call_task_elements, f.S);
    const int elements_per_task = k.elements_per_task > 0 ? k.elements_per_task : 16384;
    Var &c = f.c, &s = f.s, &n = f.n;
    const bool one_pass = fuses_passes(f, t, k);
    if (one_pass && f.layout == Layout::NCHW) {
        schedule_x86_nchw_one_pass(f, out, vec, elements_per_task);
        return;
    }

    const bool channel_tasks = nhwc_channel_tasks(f, one_pass);
    if (!channel_tasks) schedule_per_channel_stages(f, out, vec, call_task_elements);

    if (f.layout == Layout::NHWC) {
        // Channels are the vector lanes. With fewer channels than lanes a
        // GuardWithIf loop would run its scalar tail only: the big loops are
        // specialized for C below the target's width, on narrower vectors
        // (8 and 4 float lanes) that C still fills (vectorize_nhwc_channels).
        const std::vector<int> widths = nhwc_channel_widths(vec);
        const Expr rows_per_block = nhwc_rows_per_block(f, preferred_rows_per_block, !one_pass);
        Var scalar_loop(kScalarLoopName);
        // one_pass (inference): each block of rows' sums beside its x_backprop,
        // in one loop (compute_with), so y_backprop is read from memory once.
        // compute_with matches loops by name: the blocks of rows are `so` in both.
        Func stored;  // one_pass: the blocks' sums as the combine reads them
        Var so("so"), si("si");
        if (f.computes_sums()) {
            // Sums over rows s: blocks of rows_per_block rows summed in parallel,
            // each row a run of C contiguous channels (vector lanes = channels).
            RVar rso("rso"), rsi("rsi");
            f.partial.update().split(f.rs.x, rso, rsi, rows_per_block);
            Func block = f.partial.update().rfactor(rso, so);
            if (one_pass) {
                // The task that sums a block zeroes it first, on its own stack,
                // and stores it through `stored` (Halide's wrapper of `block`),
                // which runs in x_backprop's loop: zeroed at root, the blocks'
                // sums (2 x C floats a block, 1 MiB for NHWC 32,28,28,512) were
                // a serial memset before the tasks, 11 us on the calling thread
                // and 18-25 us after a many-core call had left them in other
                // cores' caches (Zen 5 VM), a fifth of that call's modelled
                // time on 64 cores.
                stored = block.in();
                stored.compute_root().reorder(c, so, n).parallel(so).vectorize(c, vec, guard);
                pad_partial_rows(stored, f);
                block.compute_at(stored, so).vectorize(c, vec, guard);
                // compute_with allows no specializations, so the register sums
                // cannot serve here. Each vector of channels summing the
                // block's rows as a strided strip (accumulators in registers for
                // any C) was tried: 1.25-1.66x slower in the tuner's dram screening.
                block.update().reorder(c, rsi, so, n).vectorize(c, vec, guard);
            } else {
                schedule_nhwc_block_sums(block, f, rsi, so, rows_per_block, call_task_elements, widths);
            }

            if (channel_tasks)
                schedule_nhwc_channel_tasks(f, out, rso, rows_per_block, call_task_elements, vec);
            else
                schedule_nhwc_partial_combine(f, rso, rows_per_block, call_task_elements, vec);
        }
        if (f.computes_outputs()) {
            // x_backprop: parallel over blocks of rows, vectorized over channels.
            Func &xb = out.x_backprop;
            if (one_pass) {
                xb.split(s, so, si, rows_per_block, guard).reorder(c, si, so, n).parallel(so).vectorize(c, vec, guard);
                stored.compute_with(xb, so);
            } else {
                xb.split(s, so, si, rows_per_task, guard).reorder(c, si, so, n).parallel(so);
                // Fewer channels than the narrowest vector: scalar stores, not
                // masked vector ones (a masked store is slow on AMD's cores).
                for (int small = 1; small < widths.back(); ++small)
                    xb.specialize(f.C == small).unroll(c, small).rename(so, scalar_loop);
                vectorize_nhwc_channels(xb, f, widths);
            }
        }
    } else {
        // Small planes (7x7 = 49 elements) would make one tiny task each: group
        // planes so that a task covers at least elements_per_task (16K) elements.
        Var cn("cn"), cno("cno"), cni("cni");
        Expr planes_per_task =
            piece_for_tasks(f, max(1, elements_per_task / max(f.S, 1)), f.S, call_task_elements, f.C * f.N);
        if (f.computes_sums()) {
            // NCHW: each (c, n) plane is contiguous; sum it with vector lanes along
            // s (rfactor into `lanes`), then add the lanes. (c, n) planes are the
            // parallel tasks. A task sums its planes from zero and stores each
            // (`stored`, Halide's wrapper of `partial`): zeroed at root, the
            // C*N sums were a serial loop of scalar stores before the tasks,
            // about 1 us of NCHW 32,28,28,128's reduce (Zen 4) on one thread.
            RVar rso("rso"), rsi("rsi");
            Var v("v");
            f.partial.update().split(f.rs.x, rso, rsi, vec);
            Func lanes = f.partial.update().rfactor(rsi, v);

            Func stored = f.partial.in();
            stored.compute_root().fuse(c, n, cn).split(cn, cno, cni, planes_per_task, guard).parallel(cno);
            f.partial.compute_at(stored, cni);
            f.partial.update().reorder(rsi, c, n);
            lanes.compute_at(stored, cni).vectorize(v);
            lanes.update().reorder(v, rso).vectorize(v);
        }
        if (f.computes_outputs())
            out.x_backprop.fuse(c, n, cn).split(cn, cno, cni, planes_per_task, guard).parallel(cno)
                .vectorize(s, vec, guard);
    }
}

}  // namespace fbng
