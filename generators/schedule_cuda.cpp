// The CUDA schedule: every Func runs on the GPU (nothing is copied to the
// host), the sums are deterministic tree reductions, and every warp reads
// consecutive addresses.
//
// Sums (no atomics: the order of every float addition is fixed by the
// schedule, so the same inputs give the same bits on every run and GPU):
//   1. chunk(c, n, u): one GPU block per chunk of rows (NHWC: kChunkRows rows
//      of 32 channels; NCHW: kPlaneChunk elements of one (c, n) plane).
//      Inside the block every thread sums a strided set of the chunk's
//      elements into shared memory (rfactor), then the block adds those
//      partials in a fixed order.
//   2. partial(c, n): the chunks of each (c, n), added by a small kernel
//      (NHWC, where a channel has many chunks: again a block-wide tree).
//   3. sums(c): partial over n, one thread per channel.
// Elementwise (x_backprop): 2-D thread blocks whose x dimension runs along
// the contiguous dimension: NHWC threads along c then s, NCHW along s.
//
// Every grid is one-dimensional (all block loops fused into blockIdx.x):
// gridDim.y and .z stop at 65535, gridDim.x at 2^31 - 1, and the tensors may
// hold up to 2^31 - 1 elements.
#include "schedule.h"

using namespace Halide;

namespace fbng {
namespace {

const TailStrategy kGuard = TailStrategy::GuardWithIf;  // extents are arbitrary; never read past a tensor

constexpr int kWarp = 32;              // threads along the contiguous dimension: one coalesced warp access
// NHWC sums: a block is 32 channels x kRowThreads rows of threads, each thread
// summing kRowsPerThread rows of one channel (rows kRowThreads apart).
constexpr int kRowThreads = 8;
constexpr int kRowsPerThread = 64;
constexpr int kChunkRows = kRowThreads * kRowsPerThread;
constexpr int kChunkLanes = 16;        // NHWC step 2: threads per channel adding its chunks
// NCHW sums: a block is kPlaneThreads threads along one (c, n) plane, each
// summing kPlanePerThread elements kPlaneThreads apart; one thread then adds
// the block's partials in order. (A two-level combine, a second rfactor of
// that last sum into groups, gave wrong sums when run under PoCL; see
// tests/cuda/test_gpu_schedule_pocl.cpp.)
constexpr int kPlaneThreads = 128;
constexpr int kPlanePerThread = 32;
constexpr int kPlaneChunk = kPlaneThreads * kPlanePerThread;
// x_backprop tiles: NHWC 32 channels x 8 rows, NCHW 64 plane elements x 4 channels.
constexpr int kNhwcTileRows = 8;
constexpr int kNchwTileS = 64, kNchwTileC = 4;

// A per-channel stage (c innermost, possibly with a serial reduction inside):
// one thread per channel, a warp of consecutive channels per block, every
// other pure dimension fused into the block index.
void per_channel(Stage st, const Var &c, const std::vector<Var> &others) {
    Var co("co"), ci("ci");
    st.split(c, co, ci, kWarp, kGuard);
    Var blk = co;
    for (const Var &o : others) {
        Var fused(blk.name() + "_" + o.name());
        st.fuse(blk, o, fused);
        blk = fused;
    }
    st.gpu_blocks(blk).gpu_threads(ci);
}

// A shared-memory stage inside a block: its channels (at most kWarp there)
// and `t` become the block's threads, x and y; `inner` (a serial reduction)
// runs inside each thread, `outer` (pure dims of extent 1 there) outside.
void block_threads(Stage st, const Var &c, const Var &t, std::vector<VarOrRVar> inner,
                   const std::vector<VarOrRVar> &outer) {
    Var lco("lco"), lci("lci");
    st.split(c, lco, lci, kWarp, kGuard);
    std::vector<VarOrRVar> order = std::move(inner);
    order.insert(order.end(), {lci, t, lco});
    order.insert(order.end(), outer.begin(), outer.end());
    st.reorder(order).gpu_threads(lci, t);
}

void schedule_sums_nhwc(BnGradFuncs &f) {
    Var &c = f.c, &n = f.n;
    Var u("u"), t("t"), v("v"), co("co"), ci("ci"), cn("cn"), blk("blk");
    RVar rso("rso"), rsi("rsi"), rsk("rsk"), rst("rst"), rsoo("rsoo"), rsoi("rsoi");

    // Row s = u*kChunkRows + rsk*kRowThreads + rst: chunk(c, n, u) sums chunk u;
    // lanes(c, n, u, t) is thread t's share, rows t, t + 8, ...: in each step
    // the block's warps read 8 consecutive rows, 32 consecutive channels each.
    f.partial.update().split(f.rs.x, rso, rsi, kChunkRows);
    Func chunk = f.partial.update().rfactor(rso, u);
    chunk.update().split(rsi, rsk, rst, kRowThreads);
    Func lanes = chunk.update().rfactor(rst, t);

    chunk.compute_root();
    per_channel(chunk, c, {n, u});
    chunk.update()
        .split(c, co, ci, kWarp, kGuard)
        .reorder(rst, ci, co, n, u)
        .fuse(co, n, cn)
        .fuse(cn, u, blk)
        .gpu_blocks(blk)
        .gpu_threads(ci);
    // bound_storage: a constant shared allocation (else the host loops over
    // every block to size the last, partial, channel tile).
    lanes.compute_at(chunk, blk).bound_storage(c, kWarp);
    block_threads(lanes, c, t, {}, {n, u});
    block_threads(lanes.update(), c, t, {rsk}, {n, u});
    lanes.update().unroll(rsk, 4);  // four loads in flight per thread

    // partial(c, n) = the chunks of channel c, chunk u = rsoo*kChunkLanes + rsoi:
    // kChunkLanes threads per channel add every kChunkLanes-th chunk (lanes2),
    // then one thread per channel adds those in order.
    f.partial.update().split(rso, rsoo, rsoi, kChunkLanes);
    Func lanes2 = f.partial.update().rfactor(rsoi, v);
    f.partial.compute_root();
    per_channel(f.partial, c, {n});
    f.partial.update()
        .split(c, co, ci, kWarp, kGuard)
        .reorder(rsoi, ci, co, n)
        .fuse(co, n, blk)
        .gpu_blocks(blk)
        .gpu_threads(ci);
    lanes2.compute_at(f.partial, blk).bound_storage(c, kWarp);
    block_threads(lanes2, c, v, {}, {n});
    block_threads(lanes2.update(), c, v, {rsoo}, {n});
}

void schedule_sums_nchw(BnGradFuncs &f) {
    Var &c = f.c, &n = f.n;
    Var u("u"), t("t"), co("co"), ci("ci"), blk("blk");
    RVar rso("rso"), rsi("rsi"), rsk("rsk"), rst("rst");

    // Plane element s = u*kPlaneChunk + rsk*kPlaneThreads + rst: one block per
    // (c, n, u); thread t sums elements t, t + 128, ... (a warp reads 32
    // consecutive elements per step); then one thread adds the 128 partials.
    f.partial.update().split(f.rs.x, rso, rsi, kPlaneChunk);
    Func chunk = f.partial.update().rfactor(rso, u);
    chunk.update().split(rsi, rsk, rst, kPlaneThreads);
    Func lanes = chunk.update().rfactor(rst, t);

    chunk.compute_root();
    per_channel(chunk, c, {n, u});
    // The channel is a block dimension of its own (blockIdx.y, so C <= 65535):
    // fused into blockIdx.x it would lose, for bounds inference, being one
    // value per block, and the shared buffers would be sized for every channel.
    chunk.update().reorder(rst, n, u, c).fuse(n, u, blk).gpu_blocks(blk, c);
    lanes.compute_at(chunk, blk);
    lanes.reorder(t, c, n, u).gpu_threads(t);
    lanes.update().reorder(rsk, t, c, n, u).gpu_threads(t).unroll(rsk, 4);

    // partial(c, n): the few chunks of each plane, one thread per (c, n).
    f.partial.compute_root();
    per_channel(f.partial, c, {n});
    f.partial.update()
        .split(c, co, ci, kWarp, kGuard)
        .reorder(rso, ci, co, n)
        .fuse(co, n, blk)
        .gpu_blocks(blk)
        .gpu_threads(ci);
}

}  // namespace

void schedule_cuda(BnGradFuncs &f, BnGradOutputs &out, const Target &t) {
    // OpenCL only so that the tests can run this very schedule (its grids,
    // shared memory and barriers) on the CPU, under PoCL (tests/cuda/).
    if (!t.has_feature(Target::CUDA) && !t.has_feature(Target::OpenCL))
        throw CompileError("fbngrad's GPU schedule is for CUDA (and OpenCL, for tests), not " + t.to_string());
    Var &c = f.c, &s = f.s, &n = f.n;

    if (f.computes_sums()) {
        if (f.layout == Layout::NHWC)
            schedule_sums_nhwc(f);
        else
            schedule_sums_nchw(f);
        f.sums.compute_root();
        per_channel(f.sums, c, {});
        per_channel(f.sums.update(), c, {});  // over n, in order
    }
    if (f.phase == Phase::Reduce) {
        per_channel(out.sum_dy, c, {});
        per_channel(out.sum_dyxc, c, {});
    }
    if (!f.computes_outputs()) return;

    // Per-channel factors: inv is inlined into coef and scale_backprop.
    f.coef.compute_root();
    per_channel(f.coef, c, {});
    per_channel(out.scale_backprop, c, {});
    per_channel(out.offset_backprop, c, {});

    Var so("so"), si("si"), co("co"), ci("ci"), b("b"), blk("blk");
    if (f.layout == Layout::NHWC) {
        out.x_backprop.split(c, co, ci, kWarp, kGuard)
            .split(s, so, si, kNhwcTileRows, kGuard)
            .reorder(ci, si, co, so, n)
            .fuse(co, so, b)
            .fuse(b, n, blk)
            .gpu_blocks(blk)
            .gpu_threads(ci, si);
    } else {
        out.x_backprop.split(s, so, si, kNchwTileS, kGuard)
            .split(c, co, ci, kNchwTileC, kGuard)
            .reorder(si, ci, so, co, n)
            .fuse(so, co, b)
            .fuse(b, n, blk)
            .gpu_blocks(blk)
            .gpu_threads(si, ci);
    }
}

}  // namespace fbng
