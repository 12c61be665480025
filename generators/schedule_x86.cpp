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

void schedule_x86(BnGradFuncs &f, BnGradOutputs &out, const Target &t, const Knobs &k) {
    const int vec = t.natural_vector_size<float>() * (k.vector_multiple > 0 ? k.vector_multiple : 1);
    const int rows_per_block = k.rows_per_block > 0 ? k.rows_per_block : 256;
    const int rows_per_task = k.rows_per_task > 0 ? k.rows_per_task : 64;
    const int elements_per_task = k.elements_per_task > 0 ? k.elements_per_task : 16384;
    const TailStrategy guard = TailStrategy::GuardWithIf;
    Var &c = f.c, &s = f.s, &n = f.n;

    // Per-channel values: tiny, computed once before the big loops.
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

    if (f.layout == Layout::NHWC) {
        // Channels are the vector lanes. With fewer channels than lanes a
        // GuardWithIf loop would run its scalar tail only: the big loops are
        // specialized for C below the target's width, on narrower vectors
        // (8 and 4 float lanes) that C still fills. The lanes stay channels,
        // so every specialization sums in the same order (same bits).
        std::vector<int> widths{vec};
        for (int w = vec / 2; w >= 4; w /= 2) widths.push_back(w);
        auto vectorize_channels = [&](Stage st) {
            for (size_t i = 0; i + 1 < widths.size(); ++i)
                st.specialize(f.C >= widths[i]).vectorize(c, widths[i], guard);
            st.vectorize(c, widths.back(), guard);
        };
        if (f.computes_sums()) {
            // Sums over rows s: blocks of rows_per_block rows summed in parallel,
            // each row a run of C contiguous channels (vector lanes = channels).
            RVar rso("rso"), rsi("rsi");
            Var u("u");
            f.partial.update().split(f.rs.x, rso, rsi, rows_per_block);
            Func block = f.partial.update().rfactor(rso, u);
            block.compute_root().vectorize(c, vec, guard);
            Stage blocks = block.update();
            blocks.reorder(c, rsi, u, n).parallel(u);
            vectorize_channels(blocks);

            f.partial.compute_root().vectorize(c, vec, guard);
            f.partial.update().reorder(c, rso, n).vectorize(c, vec, guard);
        }
        if (f.computes_outputs()) {
            // x_backprop: parallel over blocks of rows, vectorized over channels.
            Var so("so"), si("si");
            Func &xb = out.x_backprop;
            xb.split(s, so, si, rows_per_task, TailStrategy::GuardWithIf).reorder(c, si, so, n).parallel(so);
            vectorize_channels(xb);
        }
    } else {
        // Small planes (7x7 = 49 elements) would make one tiny task each: group
        // planes so that a task covers at least elements_per_task (16K) elements.
        Var cn("cn"), cno("cno"), cni("cni");
        Expr planes_per_task = max(1, elements_per_task / max(f.S, 1));
        if (f.computes_sums()) {
            // NCHW: each (c, n) plane is contiguous; sum it with vector lanes along
            // s (rfactor into `lanes`), then add the lanes. (c, n) planes are the
            // parallel tasks.
            RVar rso("rso"), rsi("rsi");
            Var v("v");
            f.partial.update().split(f.rs.x, rso, rsi, vec);
            Func lanes = f.partial.update().rfactor(rsi, v);

            f.partial.compute_root();
            f.partial.update().reorder(rsi, c, n).fuse(c, n, cn).split(cn, cno, cni, planes_per_task, guard)
                .parallel(cno);
            lanes.compute_at(f.partial, cni).vectorize(v);
            lanes.update().reorder(v, rso).vectorize(v);
        }
        if (f.computes_outputs())
            out.x_backprop.fuse(c, n, cn).split(cn, cno, cni, planes_per_task, guard).parallel(cno)
                .vectorize(s, vec, guard);
    }
}

}  // namespace fbng
