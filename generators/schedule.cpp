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

void schedule_per_channel_stages(BnGradFuncs &f, BnGradOutputs &out, int vec) {
    const TailStrategy guard = TailStrategy::GuardWithIf;
    const Var &c = f.c;
    if (f.computes_sums()) {
        f.sums.compute_root().vectorize(c, vec, guard);
        f.sums.update().vectorize(c, vec, guard);
    }
    if (f.phase == Phase::Reduce) {
        out.sum_dy.vectorize(c, vec, guard);
        out.sum_dyxc.vectorize(c, vec, guard);
    }
    if (f.computes_outputs()) {
        f.inv.compute_root().vectorize(c, vec, guard);
        f.coef.compute_root().vectorize(c, vec, guard);
        out.scale_backprop.vectorize(c, vec, guard);
        out.offset_backprop.vectorize(c, vec, guard);
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
        blocks.specialize(f.C == small).reorder(rsi, c, so, n).unroll(c, small).rename(so, Var(kScalarLoopName));
}

namespace {

// runtime/task_size.h, even_piece. It never exceeds `capped`; a min() with it
// here would put the shape into the split factor beside the call, which
// (where `capped` holds S) kept bounds inference busy for minutes.
Expr even_piece(Expr units, Expr capped) {
    using namespace Halide::Internal;
    return max(1, Call::make(Int(32), "fbng_even_piece", {units, capped}, Call::PureExtern));
}

// Whether the NHWC loops over the blocks' partials (their zeroing, their
// combine) run in parallel: where their blocks·C values make a task of the
// call's size (the rule's on a caller's runner). Below that such a loop is a
// few microseconds, less than a parallel loop costs a call on a framework's
// pool; on fbngrad's own pool of 2 threads that keeps both serial on the
// catalogue (the 2-core A/B, docs/threads.md), on many threads they are
// parallel where large.
Expr partials_in_parallel(const BnGradFuncs &f, Expr rows_per_block, Expr task_elements) {
    const Expr blocks = (f.S + rows_per_block - 1) / max(rows_per_block, 1);
    return blocks * f.C >= max(kElementsPerTask, task_elements);
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
    // 16 channels a task: one whole 64-byte line of each block's float32
    // partials, read down the blocks (8 channels read half a line, and two
    // tasks shared it). On 2 cores no width was measurably faster: there the
    // cost is the blocks' partials themselves (docs/threads.md, the 2-core
    // A/B). C/16 tasks meet the rule for the blocks·C values this loop adds
    // while blocks <= 1024 (the catalogue's largest: 448). With 32 channels,
    // C = 256 had 8 tasks of up to 19 us (0.1 ms in all, 32,56,56,256 on
    // Zen 3): more time a value than the sums take an element, so the model
    // asked for 10-12 (bench/task_model.py).
    const int width = 16;
    Var co("co"), ci("ci");
    f.partial.compute_root().vectorize(c, vec, guard);
    Stage combine = f.partial.update();
    combine.split(c, co, ci, width, guard).reorder(ci, rso, co, n).vectorize(ci, std::min(vec, 8), guard);
    combine.specialize(partials_in_parallel(f, rows_per_block, task_elements)).parallel(co);
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
                                  {f.C, rows_per_block, task_elements, Expr(kStripChannels)}, Call::PureExtern);
    // Split into vectors first, then the vectors into strips: a strip's end is
    // then a loop bound, not a masked vector. (Split the other way, the last
    // strip's masked-off vectors past C seemingly still took their cache lines,
    // which the next block's task was writing on another core: with 64-channel
    // strips, 8,14,14,96 ran 6x slower on 2 threads than on 1, on Zen 3.)
    const int lanes = std::min(widths.front(), kStripChannels);
    const Expr vectors_per_strip = max(1, (width + lanes - 1) / lanes);
    const Expr strips = f.C > kStripChannels;

    // The zeroing of the blocks' partials (the pure stage). On one thread it
    // was most of a small NHWC call's time outside its tasks (2-3 % of
    // 32,7,7,512 on the timing runner), which caps the speed-up on many cores.
    // In parallel with the sums' own tasks (a task zeroes what the same task
    // of the sums' loop then adds into) where the combine is parallel too
    // (partials_in_parallel).
    // Its parallel loops are named kZeroingLoopName: they only store zeros,
    // with no arithmetic, which tests/check_vectorized.py needs to know.
    // A task: one strip of vectors of channels over one block of rows, its
    // `rows` loops (none for the zeroing, the block's rows for the sums)
    // inside the strip's vectors.
    auto strip_tasks = [&](Stage st, const std::vector<VarOrRVar> &rows, const Var &task) {
        Var cv("cv"), cl("cl"), cs("cs"), cvi("cvi");
        std::vector<VarOrRVar> order{cl, cvi};
        order.insert(order.end(), rows.begin(), rows.end());
        order.insert(order.end(), {cs, so, n});
        st.split(c, cv, cl, lanes, guard).split(cv, cs, cvi, vectors_per_strip, guard).reorder(order)
            .fuse(cs, so, task).parallel(task).vectorize(cl);
    };

    block.compute_root();
    {
        Var zero(kZeroingLoopName);
        const Expr in_parallel = partials_in_parallel(f, rows_per_block, task_elements);
        strip_tasks(block.specialize(in_parallel && strips), {}, zero);
        block.specialize(in_parallel).rename(so, zero).parallel(zero).vectorize(c, lanes, guard);
        block.vectorize(c, lanes, guard);
    }

    Stage blocks = block.update();
    blocks.reorder(c, rsi, so, n);
    strip_tasks(blocks.specialize(strips), {rsi}, Var("so_strip"));
    blocks.parallel(so);
    specialize_nhwc_row_sums(blocks, f, rsi, so, widths);
    vectorize_nhwc_channels(blocks, f, widths);
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
