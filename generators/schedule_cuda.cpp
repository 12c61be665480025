// The CUDA schedule: every Func runs on the GPU (nothing is copied to the
// host), the sums are deterministic tree reductions, and every warp reads
// consecutive addresses.
//
// Kernels a call (issue 22; tests/cuda/check_launch_budget.py counts them in
// each variant's .stmt, ctest cuda_launches_*). Each launch costs about 2-3 us
// on an H200, and the schedule measured there (2026-12-04, docs/cuda.md)
// launched 8 (NCHW) or 10 (NHWC) a call, which made the small shapes' floor.
// Now three, for the fused op:
//   1. The partial sums over a fixed chunking, one kernel: the wrapper
//      (Func::in()) of the NHWC chunk sums / the NCHW plane sums, each block
//      zeroing and summing its own in shared memory. (Computed at root, a
//      Func's pure and update definitions are a kernel each.)
//      NHWC: chunk(c, n, u), one block per chunk of kChunkRows rows of 32
//      channels; every thread sums a strided set of the chunk's rows
//      (rfactor), then the block adds those partials in a fixed order.
//      NCHW: partial(c, n), one block per (c, n) plane, its kPlaneChunk-
//      element chunks one after another, each summed by the block's threads
//      and then, in order, by one thread.
//   2. One per-channel kernel, 32 channels a block: scale_backprop,
//      offset_backprop and x_backprop's coefficients (coef) fused into one
//      loop nest (compute_with), the sums computed inside each block for its
//      channels: NHWC adds its chunks (kChunkLanes threads a channel, then one
//      in order), then every channel its partials over n, in order.
//   3. x_backprop from coef: 2-D thread blocks whose x dimension runs along
//      the contiguous dimension (NHWC: c, then rows; NCHW: s, then channels),
//      each thread doing kElementsPerThread elements.
// The split phase: reduce is 1 and 2 (writing sum_dy, sum_dyxc), apply 2 and
// 3 (from the given sums): two each.
// The NCHW single pass (fuse_passes=2; the `plane` rows, picked by the
// dispatcher for N*H*W <= kPlaneMaxElements, src/shape_class.h): ONE kernel,
// one block a channel (schedule_single_pass_nchw).
// No float atomics anywhere: the order of every float addition is fixed by
// the schedule, the same in all of these (the same chunks, lanes and order
// over samples), so the same inputs give the same bits on every run and GPU,
// and the split phase on one worker the fused op's bits.
//
// Not done (issue 22): x_backprop over tensors larger than the L2 in groups
// of channels sized to the L2. Halide has no grid-wide barrier: a group's
// sums must be complete before its x_backprop starts, which takes a launch
// per group (a host loop of launches, unbounded against the budget).
// The GPU figures of this schedule are still to be measured (docs/cuda.md).
//
// Every grid but one is one-dimensional (all block loops fused into
// blockIdx.x): gridDim.y and .z stop at 65535, gridDim.x at 2^31 - 1, and the
// tensors may hold up to 2^31 - 1 elements. The exception, NCHW's plane sums,
// puts the channel on blockIdx.y (see schedule_plane_sums_nchw).
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
// tests/cuda/test_gpu_schedule_pocl.cpp.) One warp, not two: on an H200 the
// float32 ResNet-50 shapes ran 1.19x faster (geo-mean; 1.56x on 7x7 and
// 14x14 planes, 1.01-1.03x on 56x56 and 112x112): half the serial tail, and
// a block a plane is latency-bound on small planes. NHWC chunks of 128 rows
// instead of 512 were 0.92x there and are not used.
constexpr int kPlaneThreads = 32;
constexpr int kPlanePerThread = 128;
constexpr int kPlaneChunk = kPlaneThreads * kPlanePerThread;
// The single pass: planes summed at a time, one warp's lanes each.
constexpr int kPlaneGroup = 8;
// x_backprop tiles: NHWC 32 channels x 8 rows of threads, NCHW 64 plane
// elements x 4 channels of threads; each thread does kElementsPerThread
// elements (rows 8 apart, channels 4 apart), so that several loads are in
// flight per thread and the block-index arithmetic is shared. With one
// element per thread the kernel moved 35 % of an H200's bandwidth, with 4
// 78-86 % (float32, 32,112,112,64).
constexpr int kNhwcTileRows = 8;
constexpr int kNchwTileS = 64, kNchwTileC = 4;
constexpr int kElementsPerThread = 4;
// 16-bit elements: a warp's access is half as many bytes, so twice as many
// loads a thread keep as many bytes in flight (x_backprop's elements a
// thread, and the sums' unrolled loads): 1.06-1.10x on the float16 shapes
// above the H200's 60 MB L2.
constexpr int kHalfElementsPerThread = 8;
constexpr int kSumsLoadsInFlight = 4, kHalfSumsLoadsInFlight = 8;

int sums_unroll(const BnGradFuncs &f) {
    return f.storage_bits == 16 ? kHalfSumsLoadsInFlight : kSumsLoadsInFlight;
}

// A shared-memory stage inside a block: its channels (at most kWarp there)
// and `t` (if given) become the block's threads, x and y; `inner` (a serial
// reduction) runs inside each thread, `outer` (pure dims of extent 1 there,
// or a serial loop of the block) outside.
void block_threads(Stage st, const Var &c, const Var *t, std::vector<VarOrRVar> inner,
                   const std::vector<VarOrRVar> &outer) {
    Var lco("lco"), lci("lci");
    st.split(c, lco, lci, kWarp, kGuard);
    std::vector<VarOrRVar> order = std::move(inner);
    order.push_back(lci);
    if (t) order.push_back(*t);
    order.push_back(lco);
    order.insert(order.end(), outer.begin(), outer.end());
    st.reorder(order);
    if (t)
        st.gpu_threads(lci, *t);
    else
        st.gpu_threads(lci);
}

// Kernel 1, NHWC: the sums of chunks of kChunkRows rows, chunk(c, n, u),
// written to a global buffer by its wrapper; kernel 2 adds them.
void schedule_chunk_sums_nhwc(BnGradFuncs &f) {
    Var &c = f.c, &n = f.n;
    Var u("u"), t("t"), co("co"), ci("ci"), cn("cn"), blk("blk");
    RVar rso("rso"), rsi("rsi"), rsk("rsk"), rst("rst");

    // Row s = u*kChunkRows + rsk*kRowThreads + rst: chunk(c, n, u) sums chunk
    // u; lanes(c, n, u, t) is thread t's share, rows t, t + 8, ...: in each
    // step the block's warps read 8 consecutive rows, 32 consecutive channels
    // each. The kernel is chunk's wrapper (chunk.in()), one block per chunk of
    // 32 channels, and chunk's zeroing and its sum run inside each block: at
    // root, chunk's pure and update definitions would be a kernel each.
    f.partial.update().split(f.rs.x, rso, rsi, kChunkRows);
    Func chunk = f.partial.update().rfactor(rso, u);
    chunk.update().split(rsi, rsk, rst, kRowThreads);
    Func lanes = chunk.update().rfactor(rst, t);
    Func chunks = chunk.in();

    chunks.compute_root()
        .split(c, co, ci, kWarp, kGuard)
        .fuse(co, n, cn)
        .fuse(cn, u, blk)
        .gpu_blocks(blk)
        .gpu_threads(ci);
    // bound_storage: constant shared allocations (else the host loops over
    // every block to size the last, partial, channel tile).
    chunk.compute_at(chunks, blk).bound_storage(c, kWarp);
    block_threads(chunk, c, nullptr, {}, {n, u});
    block_threads(chunk.update(), c, nullptr, {rst}, {n, u});
    lanes.compute_at(chunks, blk).bound_storage(c, kWarp);
    block_threads(lanes, c, &t, {}, {n, u});
    block_threads(lanes.update(), c, &t, {rsk}, {n, u});
    lanes.update().unroll(rsk, sums_unroll(f));  // loads in flight per thread
}

// Kernel 2, NHWC: partial(c, n), the chunks of channel c added, computed
// inside kernel 2's blocks (32 channels a block) for each n of the sum over
// n (sums.update()'s loop `rn`, extent 1 in NHWC). Chunk u = rsoo*kChunkLanes
// + rsoi: kChunkLanes threads per channel add every kChunkLanes-th chunk
// (lanes2), then one thread per channel adds those in order.
void schedule_chunk_combine_nhwc(BnGradFuncs &f) {
    Var &c = f.c, &n = f.n;
    Var v("v");
    RVar rso("rso"), rsoo("rsoo"), rsoi("rsoi");
    RVar rn(f.rn.x);
    f.partial.update().split(rso, rsoo, rsoi, kChunkLanes);
    Func lanes2 = f.partial.update().rfactor(rsoi, v);
    f.partial.compute_at(f.sums, rn).bound_storage(c, kWarp);
    block_threads(f.partial, c, nullptr, {}, {n});
    block_threads(f.partial.update(), c, nullptr, {rsoi}, {n});
    lanes2.compute_at(f.sums, rn).bound_storage(c, kWarp);
    block_threads(lanes2, c, &v, {}, {n});
    block_threads(lanes2.update(), c, &v, {rsoo}, {n});
}

// The NCHW plane sums' stages: partial(c, n)'s update, plane element
// s = rso*kPlaneChunk + rsk*kPlaneThreads + rst, split into chunk(c, n, u)
// (chunk u of the plane) and lanes(c, n, u, t) (thread t's share of it,
// elements t, t + kPlaneThreads, ...). The same stages, so the same order of
// additions, in the two-kernel and the single-pass schedules.
struct PlaneSums {
    Func chunk, lanes;
    Var u{"u"}, t{"t"};
    RVar rso{"rso"}, rsk{"rsk"}, rst{"rst"};
};
PlaneSums plane_sum_stages(BnGradFuncs &f) {
    PlaneSums p;
    RVar rsi("rsi");
    f.partial.update().split(f.rs.x, p.rso, rsi, kPlaneChunk);
    p.chunk = f.partial.update().rfactor(p.rso, p.u);
    p.chunk.update().split(rsi, p.rsk, p.rst, kPlaneThreads);
    p.lanes = p.chunk.update().rfactor(p.rst, p.t);
    return p;
}

// Kernel 1, NCHW: partial(c, n), the sum of plane (c, n), one block per plane.
void schedule_plane_sums_nchw(BnGradFuncs &f) {
    Var &c = f.c, &n = f.n;
    // One block per (c, n) plane, its chunks one after another: in each,
    // thread t sums its lanes (a warp reads consecutive elements per step),
    // then one thread adds the partials in order into chunk, and chunk into
    // partial(c, n). Before, a block per chunk added its partials straight
    // into the global chunk(c, n, u), a read-modify-write and two barriers
    // per partial: 5 to 20x slower than cuDNN's whole op on an H200. Tried
    // there and not kept, against one plane of 64 threads: 4 planes a block
    // (64 x 4 threads) was slower on every shape; 8 planes of 32 threads 1.5x
    // faster on 7x7 and 14x14 planes and 1.4x slower on 56x56 and 112x112.
    // The kernel is partial's wrapper (partial.in()): partial's zeroing and
    // its sum run inside each block (at root they were a kernel each).
    PlaneSums p = plane_sum_stages(f);
    Func planes = f.partial.in();

    // The channel is a block dimension of its own (blockIdx.y, so C <= 65535):
    // fused into blockIdx.x it would lose, for bounds inference, being one
    // value per block, and the shared buffers would be sized for every channel.
    planes.compute_root().reorder(n, c).gpu_blocks(n, c);
    f.partial.compute_at(planes, n);
    f.partial.update().reorder(p.rso, n, c);
    // chunk's loops as one thread's loop (u has extent 1 here): else every
    // step of the partials' sum is a section of its own, between barriers.
    p.chunk.compute_at(f.partial, p.rso).gpu_threads(p.u);
    p.chunk.update().reorder(p.rst, c, n, p.u).gpu_threads(p.u).unroll(p.rst, 8);
    p.lanes.compute_at(f.partial, p.rso);
    p.lanes.reorder(p.t, c, n, p.u).gpu_threads(p.t);
    p.lanes.update().reorder(p.rsk, p.t, c, n, p.u).gpu_threads(p.t).unroll(p.rsk, sums_unroll(f));
}

// The single pass (NCHW, the fused op; the dispatcher's cuda_plane class,
// src/shape_class.h: small planes): ONE kernel, one block a channel. The
// block sums its channel, kPlaneGroup planes at a time (threads: 32 lanes x
// kPlaneGroup planes, the two-kernel schedule's lanes, chunks and order of
// additions, so the same bits), adds the planes' sums in order (one thread),
// computes its coefficients and scale/offset_backprop (compute_with: the
// same block loop), then writes x_backprop, re-reading x and y_backprop from
// the cache (L1/L2): staging them in shared memory would take 2*N*H*W
// elements a channel (200 KB for 28x28 planes at N = 32, float32), beyond
// the 48 KB Halide's CUDA runtime allows a block.
void schedule_single_pass_nchw(BnGradFuncs &f, BnGradOutputs &out) {
    Var &c = f.c, &s = f.s, &n = f.n;
    Var so("so"), si("si"), no("no"), ni("ni");
    RVar rno("rno"), rni("rni");
    Func &xb = out.x_backprop;

    // x_backprop: threads 32 plane elements x kPlaneGroup samples, the rest serial.
    xb.split(s, so, si, kWarp, kGuard)
        .split(n, no, ni, kPlaneGroup, kGuard)
        .reorder(si, ni, so, no, c)
        .gpu_blocks(c)
        .gpu_threads(si, ni);
    for (Func g : {out.scale_backprop, out.offset_backprop}) g.gpu_blocks(c).compute_with(xb, c);
    f.coef.compute_at(xb, c);
    f.sums.compute_at(xb, c);
    // The sum over samples in order (rno, then rni: serial, one thread);
    // partial computed for a group of kPlaneGroup samples at a time.
    f.sums.update().split(RVar(f.rn.x), rno, rni, kPlaneGroup, kGuard);
    PlaneSums p = plane_sum_stages(f);
    f.partial.compute_at(f.sums, rno).bound_storage(n, kPlaneGroup);
    f.partial.gpu_threads(n);
    f.partial.update().reorder(n, c, p.rso).gpu_threads(n);
    p.chunk.compute_at(f.partial, p.rso).bound_storage(n, kPlaneGroup);
    p.chunk.reorder(n, c, p.u).gpu_threads(n);
    p.chunk.update().reorder(p.rst, n, c, p.u).gpu_threads(n).unroll(p.rst, 8);
    p.lanes.compute_at(f.partial, p.rso).bound_storage(n, kPlaneGroup);
    p.lanes.reorder(p.t, n, c, p.u).gpu_threads(p.t, n);
    p.lanes.update().reorder(p.rsk, p.t, n, c, p.u).gpu_threads(p.t, n).unroll(p.rsk, sums_unroll(f));
}

}  // namespace

void schedule_cuda(BnGradFuncs &f, BnGradOutputs &out, const Target &t, bool single_pass) {
    // OpenCL only so that the tests can run this very schedule (its grids,
    // shared memory and barriers) on the CPU, under PoCL (tests/cuda/).
    if (!t.has_feature(Target::CUDA) && !t.has_feature(Target::OpenCL))
        throw CompileError("fbngrad's GPU schedule is for CUDA (and OpenCL, for tests), not " + t.to_string());
    if (single_pass) {
        schedule_single_pass_nchw(f, out);
        return;
    }
    Var &c = f.c, &s = f.s, &n = f.n;
    Var co("co"), ci("ci");

    // Kernel 1: the partial sums over a fixed chunking.
    if (f.computes_sums()) {
        if (f.layout == Layout::NHWC)
            schedule_chunk_sums_nhwc(f);
        else
            schedule_plane_sums_nchw(f);
    }

    // Kernel 2: every per-channel stage in one kernel, 32 channels a block:
    // the outputs of the phase (scale/offset_backprop, or the Reduce phase's
    // sum_dy/sum_dyxc) and x_backprop's coefficients (coef), fused into one
    // loop nest (compute_with: they match by the loop name `co`); the sums
    // computed inside each block for its channels. Reduce: 2 kernels, Apply
    // (the sums are its inputs): 2, Fused: 3 with x_backprop.
    std::vector<Func> finals;
    if (f.phase == Phase::Reduce)
        finals = {out.sum_dy, out.sum_dyxc};
    else
        finals = {out.scale_backprop, out.offset_backprop, f.coef};
    for (size_t i = 0; i < finals.size(); ++i) {
        finals[i].compute_root().split(c, co, ci, kWarp, kGuard).gpu_blocks(co).gpu_threads(ci);
        if (i > 0) finals[i].compute_with(finals[0], co);
    }
    if (f.computes_sums()) {
        RVar rn(f.rn.x);
        f.sums.compute_at(finals[0], co).bound_storage(c, kWarp);
        block_threads(f.sums, c, nullptr, {}, {});
        if (f.layout == Layout::NHWC) {
            // rn outside the threads: partial(c, n) computed for each n (its
            // own threads and shared memory, schedule_chunk_combine_nhwc).
            block_threads(f.sums.update(), c, nullptr, {}, {rn});
            schedule_chunk_combine_nhwc(f);
        } else {
            // One thread a channel adds its N plane sums in order.
            block_threads(f.sums.update(), c, nullptr, {rn}, {});
        }
    }
    if (!f.computes_outputs()) return;

    // Kernel 3: x_backprop, from coef.
    Var so("so"), si("si"), sk("sk"), st("st"), ck("ck"), ct("ct"), b("b"), blk("blk");
    const int per_thread = f.storage_bits == 16 ? kHalfElementsPerThread : kElementsPerThread;
    if (f.layout == Layout::NHWC) {
        // Row s = so*8*per_thread + sk*8 + st: thread (ci, st) does rows st, st + 8, ...
        out.x_backprop.split(c, co, ci, kWarp, kGuard)
            .split(s, so, si, kNhwcTileRows * per_thread, kGuard)
            .split(si, sk, st, kNhwcTileRows)
            .reorder(sk, ci, st, co, so, n)
            .unroll(sk)
            .fuse(co, so, b)
            .fuse(b, n, blk)
            .gpu_blocks(blk)
            .gpu_threads(ci, st);
    } else {
        // Channel c = co*4*per_thread + ck*4 + ct: thread (si, ct) does channels ct, ct + 4, ...
        // (channels, not plane elements, so that 7x7 planes keep the threads busy).
        out.x_backprop.split(s, so, si, kNchwTileS, kGuard)
            .split(c, co, ci, kNchwTileC * per_thread, kGuard)
            .split(ci, ck, ct, kNchwTileC)
            .reorder(ck, si, ct, so, co, n)
            .unroll(ck)
            .fuse(so, co, b)
            .fuse(b, n, blk)
            .gpu_blocks(blk)
            .gpu_threads(si, ct);
    }
}

}  // namespace fbng
