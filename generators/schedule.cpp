// Which schedule file a target gets. The fused and the split-phase generators
// all come here, so a new target family is added once, for all of them.
#include "schedule.h"

#include <algorithm>
#include <set>

using namespace Halide;

namespace fbng {

void schedule_for_target(BnGradFuncs &f, BnGradOutputs &out, const Target &t, const Knobs &k) {
    // Refuses a fuse_passes value the target's schedule cannot honour.
    const bool one_pass = fuses_passes(f, t, k);
    // A GPU target is a CPU target too (the host code's arch): check the GPU first.
    if (t.has_gpu_feature()) {
        schedule_cuda(f, out, t, one_pass);
    } else if (t.arch == Target::X86) {
        schedule_x86(f, out, t, k);
    } else if (t.arch == Target::ARM && t.bits == 64) {
        schedule_arm(f, out, t, k);
    } else {
        throw CompileError("fbngrad has no schedule for target " + t.to_string());
    }
}

std::vector<int> nhwc_channel_widths(int vec) {
    std::vector<int> widths{vec};
    for (int w = vec / 2; w >= 4; w /= 2) widths.push_back(w);
    return widths;
}

void vectorize_nhwc_channels(Stage st, const BnGradFuncs &f, const std::vector<int> &widths) {
    const TailStrategy guard = TailStrategy::GuardWithIf;
    for (size_t i = 0; i + 1 < widths.size(); ++i) st.specialize(f.C >= widths[i]).vectorize(f.c, widths[i], guard);
    st.vectorize(f.c, widths.back(), guard);
}

void schedule_per_channel_stages(BnGradFuncs &f, BnGradOutputs &out, int vec, Expr task_elements) {
    const TailStrategy guard = TailStrategy::GuardWithIf;
    const Var &c = f.c;
    if (f.computes_sums()) {
        f.sums.compute_root().vectorize(c, vec, guard);
        if (f.layout == Layout::NCHW)
            schedule_nchw_sums_over_samples(f, task_elements, vec);
        else
            f.sums.update().vectorize(c, vec, guard);
    }
    if (f.phase == Phase::Reduce) {
        out.sum_dy.vectorize(c, vec, guard);
        out.sum_dyxc.vectorize(c, vec, guard);
    }
    if (f.computes_outputs()) {
        f.inv.compute_root().vectorize(c, vec, guard);
        // Training: scale/offset_backprop in coef's loop (compute_with: none
        // reads another), before the loop over the tensors, not after it:
        // there they read sums and inv back cold and ran on one thread after
        // the last task, 0.3-0.4 us of a 32,7,7,512 call (the time that caps
        // many cores' speed-up). Inference's coef needs no sums, and the NHWC
        // one pass computes the sums with x_backprop, which needs coef: the
        // outputs stay last there (fused, a cycle Halide refuses).
        if (f.training) {
            Var co("c_pc"), ci("c_pci");
            f.coef.compute_root().split(c, co, ci, vec, guard).vectorize(ci);
            for (Func g : {out.scale_backprop, out.offset_backprop})
                g.split(c, co, ci, vec, guard).vectorize(ci).compute_with(f.coef, co);
        } else {
            f.coef.compute_root().vectorize(c, vec, guard);
            out.scale_backprop.vectorize(c, vec, guard);
            out.offset_backprop.vectorize(c, vec, guard);
        }
    }
}

void specialize_nhwc_row_sums(Stage blocks, const BnGradFuncs &f, const RVar &rsi, const Var &so,
                              const std::vector<int> &widths) {
    const Var &c = f.c, &n = f.n;
    std::set<int> specialized;
    for (int w : widths) {
        for (int k = 1; k <= 4; ++k) {
            if (!specialized.insert(k * w).second) continue;
            Var co("co"), ci("ci");
            blocks.specialize(f.C == k * w).split(c, co, ci, w).reorder(ci, co, rsi, so, n).vectorize(ci).unroll(co);
        }
    }
    for (int small = 1; small < widths.back(); ++small)
        blocks.specialize(f.C == small).reorder(rsi, c, so, n).unroll(c, small);
}

namespace {

// runtime/task_size.h, even_piece. It never exceeds `capped`; a min() with it
// here would put the shape into the split factor beside the call, which
// (where `capped` holds S) kept bounds inference busy for minutes.
Expr even_piece(Expr units, Expr capped) {
    using namespace Halide::Internal;
    return max(1, Call::make(Int(32), "fbng_even_piece", {units, capped}, Call::PureExtern));
}

// Whether a combine of `values` partial sums runs as a parallel loop (the
// bound and its figures: partials_in_parallel, below).
Expr combine_in_parallel(Expr values, Expr task_elements) {
    return values >= min(2 * kElementsPerTask, max(kElementsPerTask, task_elements));
}

// Whether the NHWC loop over the blocks' partials (their combine, with the
// per-channel stages) runs in parallel: where their values, two partial sums
// a channel a block (2·blocks·C), make a task of the call's size, or two of
// the rule's smallest tasks (kElementsPerTask), whichever is less. Below
// that the loop is a few microseconds, less than a parallel loop costs a
// call on a framework's pool (the catalogue's small calls hold 208 to 1920
// values; the N = 32 ResNet-50 shapes 32K, 32,56,56,64, and more). The
// second bound is what makes it parallel on fbngrad's own pool of few
// threads, whose call-sized tasks kept it one task, on the calling thread
// while the others waited: there the combine reads the partials 8 channels
// at a time, one row apart, about 0.1 ms of a 1.5-3.3 ms call (NHWC
// 32,14,14,1024 and 32,7,7,2048, perf on 2 Zen 4 and Intel Xeon cores). In
// parallel, by the fastest runs on a 2-core Intel Xeon VM (2026-12-07;
// docs/threads.md): 32,14,14,256 2-18 % faster, 32,14,14,1024 and
// 32,7,7,2048 -5 to +9 %, 32,7,7,512 -9 to +4 %; the NHWC catalogue's
// geo-mean 1.02x and 1.00x by the two orders' medians. On many cores it
// is what the rule needs: the call's task size grows with the call
// (elements / 256), and 32,112,112,64's 13 us combine, a tenth of a task of
// that size, had stayed one task, an eighth of the call's modelled time on
// 64 cores.
Expr partials_in_parallel(const BnGradFuncs &f, Expr rows_per_block, Expr task_elements) {
    const Expr blocks = (f.S + rows_per_block - 1) / max(rows_per_block, 1);
    return combine_in_parallel(2 * blocks * f.C, task_elements);
}

}  // namespace

Expr piece_for_tasks(const BnGradFuncs &f, Expr preferred, Expr unit_elements, Expr task_elements, Expr units) {
    Expr capped = max(1, min(preferred, task_elements / max(unit_elements, 1)));
    // In the split phase too: it is the x86 NCHW one pass's two-pass route
    // (src/two_pass_route.h), where 32,28,28,128's 205 tasks a loop left 64
    // cores a last wave a fifth full (256 now). An empty shard has no units:
    // even_piece gives 1, and the loop no task.
    return even_piece(units, capped);
}

Expr task_elements(const BnGradFuncs &f) {
    using namespace Halide::Internal;
    // The split phase runs on empty shards too (an apply computes the global
    // scale/offset backprop), and bounds inference, which knows of an extern
    // value only its range, then asks for rows before 0. The fused op never
    // runs a kernel on an empty tensor (api.cpp).
    if (f.phase != Phase::Fused) return kElementsPerTask;
    // Pure (the same value all call long), so that Halide hoists it out of the
    // loops: an impure extern is called again inside every task's loops and
    // keeps them from being simplified (measured 8x slower on small shapes).
    return Call::make(Int(32), "fbng_task_elements",
                      {user_context_value(), f.C * f.S * f.N, Expr(kElementsPerTask)}, Call::PureExtern);
}

Expr nhwc_rows_per_block(const BnGradFuncs &f, Expr preferred, bool strips) {
    // The shape alone (no user_context): the same blocks on every runner, and
    // in every phase (a one-worker split phase gives the fused op's bits). The
    // rule's task size (runtime/task_size.h: rule_task_elements) as rows,
    // written out here: an extern taking C·S kept bounds inference busy for
    // minutes (AVX-512, NHWC).
    // Rows for the narrowest strip of channels (schedule_nhwc_block_sums), not
    // for whole rows: above kStripChannels channels part of the rule's tasks
    // come from strips, and the blocks keep more rows (32,7,7,2048: 25 rows,
    // not 7, a third of the partials to zero, write and add; 32,14,14,1024:
    // 33, not 20). At most kStripChannels channels: whole rows, as before.
    Expr strip = strips ? min(max(f.C, 1), kStripChannels) : max(f.C, 1);
    Expr rows = max(kElementsPerTask / strip, (f.S / 256) * max(f.C, 1) / strip);
    return even_piece(f.S, max(1, min(preferred, rows)));
}

void schedule_nhwc_partial_combine(BnGradFuncs &f, const RVar &rso, Expr rows_per_block, Expr task_elements,
                                   int vec) {
    const Var &c = f.c, &n = f.n;
    const TailStrategy guard = TailStrategy::GuardWithIf;
    // 8 channels a task: C/8 tasks, 32 at C = 256 and 64 at C = 512, so that
    // 64 cores take the combine in one wave of short tasks (at 16 channels,
    // its longest task was 0.4-1.0 us of the 8-9 us a 32,7,7,512 or
    // 32,14,14,256 call takes on 64 cores in the model). Two tasks read
    // halves of one 64-byte line of each block's partials; they only read it.
    // A task adds its channels' blocks in registers: `partial` is computed
    // per task into a register-sized buffer (store_in Register) and the
    // wrapper stores it once. Added in place in memory, each block's add
    // waited for the last one's store (0.3 us a task of 63 blocks, whatever
    // the width), and 8 channels a task cost a loop run on one thread (below
    // partials_in_parallel's bound), twice 16's time. With
    // 32 channels, C = 256 had 8 tasks of up to 19 us (0.1 ms in all,
    // 32,56,56,256 on Zen 3). The same adds in the same order: the same bits.
    const int width = 8;
    const int lanes = std::min(vec, width);
    Var co("co"), ci("ci");
    Func combined = f.partial.in();
    combined.compute_root().split(c, co, ci, width, guard).reorder(ci, co, n).vectorize(ci, lanes, guard);
    combined.specialize(partials_in_parallel(f, rows_per_block, task_elements)).parallel(co);
    f.partial.compute_at(combined, co).store_in(MemoryType::Register).vectorize(c, lanes, guard);
    f.partial.update().reorder(c, rso, n).vectorize(c, lanes, guard);
}

void schedule_nchw_sums_over_samples(BnGradFuncs &f, Expr task_elements, int vec) {
    const TailStrategy guard = TailStrategy::GuardWithIf;
    // The NCHW partials are one per plane, 2·C·N values (32K at 32,7,7,512,
    // 4 % of the tensors' elements), written by the sums' tasks on every core.
    // Added on the calling thread, they were the time between the route's
    // two passes (src/two_pass_route.h) that kept NCHW 32,7,7,512 and
    // 32,7,7,2048 below 40x at 64 cores in the model: 7 and 25 us, 0.8-1.5 %
    // of the call, on a 2-core Intel Xeon VM, whose calling core read them
    // from the other's caches at about 3 ns a line (2 and 13 us on Zen 4;
    // docs/threads.md). In parallel where their values make a task
    // (combine_in_parallel). 16 channels a task (one 64-byte line of each
    // sum a sample): with 8, as the NHWC combine (schedule_nhwc_partial_combine),
    // a 2-thread OpenMP runner (schedule(dynamic, 1)) ran 32,7,7,512 and
    // 32,7,7,2048 through the route 2-4 % slower than with the loop serial,
    // by the fastest runs; with 16, 0.97-1.01x. Each channel adds its
    // samples in order: the same bits.
    const int width = 16;
    const int lanes = std::min(vec, width);
    Var co("c_sums"), ci("c_sumsi");
    Stage adds = f.sums.update();
    adds.split(f.c, co, ci, width, guard).reorder(ci, f.rn.x, co).vectorize(ci, lanes, guard);
    adds.specialize(combine_in_parallel(2 * f.C * f.N, task_elements)).parallel(co);
}

bool nhwc_channel_tasks(const BnGradFuncs &f, bool one_pass) {
    return f.layout == Layout::NHWC && f.computes_sums() && f.computes_outputs() && !one_pass;
}

void schedule_nhwc_channel_tasks(BnGradFuncs &f, BnGradOutputs &out, const RVar &rso, Expr rows_per_block,
                                 Expr task_elements, int vec) {
    const Var &c = f.c, &n = f.n;
    const TailStrategy guard = TailStrategy::GuardWithIf;
    // Everything per channel between the loops over the tensors, in one
    // parallel loop over groups of 8 channels (64 tasks at C = 512): a task
    // adds its channels' blocks (partial, in registers), then the sums over
    // samples, inv, coef and scale/offset_backprop of those channels. On one
    // thread these stages were 0.5-0.8 us of a 32,7,7,512 call (the time
    // outside its tasks that caps many cores' speed-up), and the combine
    // alone a loop of its own. The group's loop is coef's, which x_backprop
    // reads, in inference too, whose coef (scale * inv) needs no sums: at
    // root before x_backprop, its inv's square roots and divisions were
    // 0.2-0.3 us on one thread of a 32,7,7,512 call, and x_backprop now runs
    // after the sums, as in training. The same arithmetic in the same order:
    // the same bits.
    const int width = 8;
    const int lanes = std::min(vec, width);
    Var co("co"), ct("ct"), cg("cg"), ci("ci");
    // All the groups in one task where the blocks' partials are too few for
    // a parallel loop (partials_in_parallel: a loop of one task, which
    // fbngrad's pool runs on the calling thread).
    const Expr groups = (f.C + width - 1) / width;
    const Expr per_task = select(partials_in_parallel(f, rows_per_block, task_elements), 1, max(groups, 1));
    // No loop partitioning: Halide would copy the group's whole body into a
    // prologue and an epilogue of the task loop for the guards' sake, 19 KB
    // more code in a kernel (AArch64's minimal program: 161 -> 181 KB loaded)
    // for loops of a few tasks that a guard costs nothing in.
    auto group_loop = [&](Func g) {
        g.compute_root().split(c, co, ci, width, guard).split(co, ct, cg, per_task, guard).vectorize(ci, lanes, guard)
            .parallel(ct).never_partition_all();
    };
    Func lead = f.coef;
    group_loop(lead);
    for (Func g : {out.offset_backprop, out.scale_backprop}) {
        group_loop(g);
        g.compute_with(lead, cg);
    }
    // A group's values in registers: `width` channels whatever the tail's
    // guard makes of the extent (bound_storage).
    auto in_registers = [&](Func g) { g.bound_storage(c, width).store_in(MemoryType::Register); };
    f.sums.compute_at(lead, cg).vectorize(c, lanes, guard).never_partition_all();
    in_registers(f.sums);
    // partial (the combine) at the sums' vector of channels, not at the
    // group: the group's extent is the union of the fused stages' bounds,
    // which Halide cannot prove one vector, and its loop over them kept
    // partial out of registers (0.34 us a task against 0.17).
    Var cvo("cvo"), cvi("cvi");
    f.sums.update().split(c, cvo, cvi, lanes, guard).reorder(cvi, cvo, f.rn.x).vectorize(cvi).never_partition_all();
    f.partial.compute_at(f.sums, cvo).vectorize(c, lanes, guard).never_partition_all();
    in_registers(f.partial);
    f.partial.update().reorder(c, rso, n).vectorize(c, lanes, guard).never_partition_all();
    f.inv.compute_at(lead, cg).vectorize(c, lanes, guard).never_partition_all();
    in_registers(f.inv);
}

void schedule_nhwc_block_sums(Func block, const BnGradFuncs &f, const RVar &rsi, const Var &so,
                              Expr rows_per_block, Expr task_elements, const std::vector<int> &widths) {
    const Var &c = f.c, &n = f.n;
    const TailStrategy guard = TailStrategy::GuardWithIf;
    using namespace Halide::Internal;
    // More channels than a strip: each task sums a strip of channels over a
    // block's rows (runtime/task_size.h, strip_channels), so the tasks meet the
    // rule with blocks of many rows. Whole rows where they fit a task (fbngrad's
    // own pool on few cores). Only the work's placement: the same bits.
    const Expr width = Call::make(Int(32), "fbng_strip_channels",
                                  {f.C, rows_per_block, task_elements, Expr(kStripChannels), Expr(kWidestStrip)},
                                  Call::PureExtern);
    const int lanes = std::min(widths.front(), kStripChannels);
    const Expr vectors_per_strip = max(1, (width + lanes - 1) / lanes);
    const Expr strips = f.C > kStripChannels;

    // A task zeroes its partials (a strip of channels of one block), sums the
    // block's rows into them, in a buffer on its own stack, and stores them
    // where the combine reads them (`stored`, Halide's wrapper of `block`).
    // The zeroing had a parallel loop of its own before the sums' (0.1-0.2 us
    // and a gap of 32,7,7,512's 6-7 us on 64 cores in the model, and one more
    // loop for a runner to start and wait for). The parallel loop is `so_task`
    // (kScalarLoopName below the narrowest vector); the task's loop of one
    // iteration inside it, `so_sums`, the one `block` is computed at, is in
    // every specialization (compute_at needs a loop of that name in each).
    Func stored = block.in();
    Var task("so_task"), at("so_sums");
    stored.compute_root().reorder(c, so, n);  // rfactor made so the outermost
    pad_partial_rows(stored, f);
    {
        // Split into vectors first, then the vectors into strips: a strip's end
        // is then a loop bound, not a masked vector. (Split the other way, the
        // last strip's masked-off vectors past C seemingly still took their
        // cache lines, which the next block's task was writing on another
        // core: with 64-channel strips, 8,14,14,96 ran 6x slower on 2 threads
        // than on 1, on Zen 3.)
        Var cv("cv"), cl("cl"), cs("cs"), cvi("cvi"), fused("so_strip");
        stored.specialize(strips)
            .split(c, cv, cl, lanes, guard)
            .split(cv, cs, cvi, vectors_per_strip, guard)
            .reorder(cl, cvi, cs, so, n)
            .fuse(cs, so, fused)
            .split(fused, task, at, 1)
            .parallel(task)
            .vectorize(cl);
    }
    for (int small = 1; small < widths.back(); ++small) {
        const Var scalar(kScalarLoopName);
        stored.specialize(f.C == small).split(so, scalar, at, 1).parallel(scalar);
    }
    stored.split(so, task, at, 1).parallel(task);
    vectorize_nhwc_channels(stored, f, widths);

    // At most kWidestStrip channels a task (strip_channels; below
    // kStripChannels channels the task's are C): a constant size, so the
    // buffer is the task's stack, not a heap allocation each task.
    block.compute_at(stored, at).bound_storage(c, kWidestStrip).store_in(MemoryType::Stack);
    block.vectorize(c, lanes, guard);
    Stage blocks = block.update();
    blocks.reorder(c, rsi, so, n);
    specialize_nhwc_row_sums(blocks, f, rsi, so, widths);
    vectorize_nhwc_channels(blocks, f, widths);
}

void pad_partial_rows(Func stored, const BnGradFuncs &f) {
    // The combine reads the partials a group of 8 channels at a time, down
    // the blocks: a stride of one row. At C = 1024 or 2048 (4 or 8 KB) every
    // block's line of a group fell into the same few cache sets, so the
    // 2 x 224 lines a group reads (NHWC 32,14,14,1024) evicted each other in
    // L1 and L2 before the next group, which shares them, came back. One
    // line more a row puts consecutive blocks in consecutive sets. With the
    // combine one task on fbngrad's own pool of 2 threads (as it then was),
    // perf put 5-12 % of x_backprop's time in it on those shapes (inference
    // the most), 3-6 % with the pad (Zen 4 VM, 2026-12-07; docs/threads.md).
    // Storage only: the same bits.
    stored.bound_storage(f.c, f.C + kPartialRowPad);
}

bool sums_last_sample_first(const Target &t, const Knobs &k, bool x_backprop_reads_sums) {
    if (k.sum_pass_order == 1) return false;
    if (k.sum_pass_order == 2) return true;
    if (k.sum_pass_order != 0) throw CompileError("sum_pass_order: 0, 1 or 2, not " + std::to_string(k.sum_pass_order));
    // Measured on the CPU (fbngrad_tune, float32, the dram class;
    // docs/benchmarks.md): last-first makes training 8-15 % faster where the tensors
    // exceed the cache, and inference 5-10 % slower. A GPU has no cache to reuse
    // at this scale.
    return !t.has_gpu_feature() && x_backprop_reads_sums;
}

bool fuses_passes(const BnGradFuncs &f, const Target &t, const Knobs &k) {
    if (k.fuse_passes != 0 && k.fuse_passes != 1 && k.fuse_passes != 2)
        throw CompileError("fuse_passes: 0, 1 or 2, not " + std::to_string(k.fuse_passes));
    if (k.fuse_passes == 2 && t.has_gpu_feature()) {
        // The GPU's single pass (schedule_cuda.cpp): one block a channel.
        if (f.layout != Layout::NCHW || f.phase != Phase::Fused)
            throw CompileError("fuse_passes=2 on a GPU is the NCHW fused op's single pass (generators/schedule_cuda.cpp)");
        return true;
    }
    if (k.fuse_passes == 2) {
        if (t.arch != Target::X86)
            throw CompileError("fuse_passes=2 is scheduled for x86 CPUs only (and NCHW on GPUs: generators/schedule_x86.cpp, "
                               "schedule_cuda.cpp)");
        if (f.layout == Layout::NHWC && f.training)
            throw CompileError("fuse_passes=2 is for NCHW or NHWC inference: NHWC training needs every row's "
                               "sums before any x_backprop, and its channel blocks are strided parts of rows");
    }
    // Only the fused op has both the sums and x_backprop in one pipeline.
    if (f.phase != Phase::Fused || t.arch != Target::X86 || t.has_gpu_feature()) return false;
    if (k.fuse_passes != 0) return k.fuse_passes == 2;
    // Default: NCHW only, where it was measured faster on every shape tried,
    // cache-resident ones too (docs/benchmarks.md). The NHWC one pass cannot
    // specialize for C below the vector width (compute_with forbids
    // specializations), so it stays a tuner choice. ARM keeps two passes (not
    // measured on hardware).
    return f.layout == Layout::NCHW;
}

}  // namespace fbng
