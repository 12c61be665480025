// The CUDA schedule: every Func runs on the GPU (nothing is copied to the
// host), the sums are deterministic tree reductions, and every warp reads
// consecutive addresses.
//
// Sums (no atomics: the order of every float addition is fixed by the
// schedule, so the same inputs give the same bits on every run and GPU):
//   NHWC: 1. chunk(c, n, u): one GPU block per chunk of kChunkRows rows of 32
//         channels; every thread sums a strided set of the chunk's rows into
//         shared memory (rfactor), then the block adds those partials in a
//         fixed order. 2. partial(c, n): the chunks of each channel, added by
//         a small kernel (again a block-wide tree).
//   NCHW: partial(c, n): one block per (c, n) plane, its kPlaneChunk-element
//         chunks one after another, each summed by the block's threads into
//         shared memory and then, in order, by one thread.
//   Then sums(c): partial over n, one thread per channel.
// Elementwise (x_backprop): 2-D thread blocks whose x dimension runs along
// the contiguous dimension (NHWC: c, then rows; NCHW: s, then channels), each
// thread doing kElementsPerThread elements.
//
// Every grid but one is one-dimensional (all block loops fused into
// blockIdx.x): gridDim.y and .z stop at 65535, gridDim.x at 2^31 - 1, and the
// tensors may hold up to 2^31 - 1 elements. The exception, NCHW's plane sums,
// puts the channel on blockIdx.y (see schedule_sums_nchw).
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

// Kernel 1, NHWC: the sums of chunks of kChunkRows rows. Returns the Func
// that holds them (chunk(c, n, u), a global buffer), which kernel 2 adds.
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

// Kernel 1, NCHW: partial(c, n), the sum of plane (c, n), one block per plane.
void schedule_plane_sums_nchw(BnGradFuncs &f) {
    Var &c = f.c, &n = f.n;
    Var u("u"), t("t");
    RVar rso("rso"), rsi("rsi"), rsk("rsk"), rst("rst");

    // Plane element s = rso*kPlaneChunk + rsk*kPlaneThreads + rst. One block
    // per (c, n) plane, its chunks one after another: in each, thread t sums
    // elements t, t + kPlaneThreads, ... (a warp reads consecutive elements
    // per step) into lanes(t), then one thread adds the partials in order into
    // chunk, and chunk into partial(c, n). Before, a block per chunk added
    // its partials straight into the global chunk(c, n, u), a read-modify-
    // write and two barriers per partial: 5 to 20x slower than cuDNN's whole
    // op on an H200. Tried there and not kept, against one plane of 64
    // threads: 4 planes a block (64 x 4 threads) was slower on every shape;
    // 8 planes of 32 threads 1.5x faster on 7x7 and 14x14 planes and 1.4x
    // slower on 56x56 and 112x112.
    // The kernel is partial's wrapper (partial.in()): partial's zeroing and
    // its sum run inside each block (at root they were a kernel each).
    f.partial.update().split(f.rs.x, rso, rsi, kPlaneChunk);
    Func chunk = f.partial.update().rfactor(rso, u);
    chunk.update().split(rsi, rsk, rst, kPlaneThreads);
    Func lanes = chunk.update().rfactor(rst, t);
    Func planes = f.partial.in();

    // The channel is a block dimension of its own (blockIdx.y, so C <= 65535):
    // fused into blockIdx.x it would lose, for bounds inference, being one
    // value per block, and the shared buffers would be sized for every channel.
    planes.compute_root().reorder(n, c).gpu_blocks(n, c);
    f.partial.compute_at(planes, n);
    f.partial.update().reorder(rso, n, c);
    // chunk's loops as one thread's loop (u has extent 1 here): else every
    // step of the partials' sum is a section of its own, between barriers.
    chunk.compute_at(f.partial, rso).gpu_threads(u);
    chunk.update().reorder(rst, c, n, u).gpu_threads(u).unroll(rst, 8);
    lanes.compute_at(f.partial, rso);
    lanes.reorder(t, c, n, u).gpu_threads(t);
    lanes.update().reorder(rsk, t, c, n, u).gpu_threads(t).unroll(rsk, sums_unroll(f));
}

}  // namespace

void schedule_cuda(BnGradFuncs &f, BnGradOutputs &out, const Target &t) {
    // OpenCL only so that the tests can run this very schedule (its grids,
    // shared memory and barriers) on the CPU, under PoCL (tests/cuda/).
    if (!t.has_feature(Target::CUDA) && !t.has_feature(Target::OpenCL))
        throw CompileError("fbngrad's GPU schedule is for CUDA (and OpenCL, for tests), not " + t.to_string());
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
