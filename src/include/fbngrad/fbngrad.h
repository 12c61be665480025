/*
 * fbngrad: TensorFlow's FusedBatchNormGradV2 as Halide-generated AOT kernels.
 *
 * Plain C API, usable from C, C++ and any language with a C FFI.
 *
 * Threading: every function may be called from any thread at the same time.
 * fbngrad_set_num_threads and fbngrad_force_isa change process-wide settings;
 * calls already running keep the settings they started with.
 *
 * Errors: a call that fails returns a non-zero code, fills *status with a
 * TensorFlow-style message, and leaves every output buffer untouched. Nothing
 * aborts the process and no C++ exception crosses this API.
 */
#ifndef FBNGRAD_FBNGRAD_H
#define FBNGRAD_FBNGRAD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FBNGRAD_VERSION_MAJOR 0
#define FBNGRAD_VERSION_MINOR 1
#define FBNGRAD_VERSION_PATCH 0

/* Status codes: the numbers are TensorFlow's (absl) status codes. */
typedef enum fbngrad_code {
    FBNGRAD_OK = 0,
    FBNGRAD_INVALID_ARGUMENT = 3,
    FBNGRAD_NOT_FOUND = 5,
    FBNGRAD_UNIMPLEMENTED = 12,
    FBNGRAD_INTERNAL = 13,
    FBNGRAD_UNAVAILABLE = 14
} fbngrad_code;

#define FBNGRAD_MESSAGE_CAPACITY 1024

typedef struct fbngrad_status {
    fbngrad_code code;
    char message[FBNGRAD_MESSAGE_CAPACITY]; /* NUL-terminated; "" on success */
} fbngrad_status;

typedef enum fbngrad_dtype {
    FBNGRAD_FLOAT32 = 0,
    FBNGRAD_FLOAT16 = 1,  /* IEEE binary16 */
    FBNGRAD_BFLOAT16 = 2  /* raw bfloat16 bits, 16 per element */
} fbngrad_dtype;

/* Channels-last is NHWC (rank 4) or NDHWC (rank 5); channels-first is NCHW or NCDHW. */
typedef enum fbngrad_layout {
    FBNGRAD_NHWC = 0,
    FBNGRAD_NCHW = 1
} fbngrad_layout;

typedef enum fbngrad_device {
    FBNGRAD_CPU = 0,
    FBNGRAD_CUDA = 1
} fbngrad_device;

/* What reserve_space_2 holds: the variance (TF's CPU kernel, the default), or
 * 1/sqrt(variance + epsilon) (TF's GPU/cuDNN kernel; epsilon is then not applied again). */
typedef enum fbngrad_reserve_space_2_is {
    FBNGRAD_RS2_VARIANCE = 0,
    FBNGRAD_RS2_INVERSE_STD = 1
} fbngrad_reserve_space_2_is;

#define FBNGRAD_MAX_RANK 8  /* views up to rank 8, so that bad ranks are reported with their shape */

/* A view of caller-owned, dense (row-major, no padding) memory. fbngrad never
 * allocates, frees or keeps it. `layout` matters for y_backprop, x and
 * x_backprop only; 1-D tensors ignore it. */
typedef struct fbngrad_tensor {
    void *data;
    fbngrad_dtype dtype;
    int32_t rank;
    int64_t shape[FBNGRAD_MAX_RANK];
    fbngrad_layout layout;
    fbngrad_device device;
} fbngrad_tensor;

typedef struct fbngrad_attrs {
    float epsilon;                                 /* default 0.0001 */
    int32_t is_training;                           /* default 1 */
    fbngrad_reserve_space_2_is reserve_space_2_is; /* default FBNGRAD_RS2_VARIANCE */
} fbngrad_attrs;

/* Sets TensorFlow's defaults. */
void fbngrad_attrs_init(fbngrad_attrs *attrs);

/* Convenience: a tensor view of `data` with the given shape. */
fbngrad_tensor fbngrad_make_tensor(void *data, fbngrad_dtype dtype, int32_t rank,
                                   const int64_t *shape, fbngrad_layout layout);

/* The op. Inputs: y_backprop and x ([N,H,W,C] / [N,C,H,W] or the 5-D forms, same
 * dtype, shape and layout), scale, reserve_space_1 and reserve_space_2 (float32 [C]).
 * Outputs, allocated by the caller: x_backprop (x's dtype, shape and layout),
 * scale_backprop and offset_backprop (float32 [C]). reserve_space_3 and
 * reserve_space_4 are float32 [0] in TensorFlow and so have no storage here.
 * `attrs` may be NULL for the defaults. `status` may be NULL. */
fbngrad_code fbngrad_fused_batch_norm_grad_v2(
    const fbngrad_tensor *y_backprop, const fbngrad_tensor *x, const fbngrad_tensor *scale,
    const fbngrad_tensor *reserve_space_1, const fbngrad_tensor *reserve_space_2,
    const fbngrad_attrs *attrs, fbngrad_tensor *x_backprop, fbngrad_tensor *scale_backprop,
    fbngrad_tensor *offset_backprop, fbngrad_status *status);

/* ---- split phase: batch norm synchronized across workers ----
 *
 * The op cut at its per-channel sums, for data-parallel training where each
 * worker (an MPI rank, a GPU, ...) holds a shard of the batch and the batch
 * statistics are global ("synchronized batch norm"). Per step, every worker:
 *
 *   1. fbngrad_split_phase_reduce: its shard's sums, and its element count;
 *   2. allreduces (sums) sum_dy, sum_dyxc and count with the other workers
 *      (MPI_Allreduce, ncclAllReduce, Horovod, gloo: any sum will do);
 *   3. fbngrad_split_phase_apply: x_backprop of its shard, and
 *      scale_backprop / offset_backprop from the global sums (the same on
 *      every worker).
 *
 * reserve_space_1/2 are the global batch statistics (or the population ones
 * in inference), as the forward pass saved them. With one worker, reduce and
 * then apply give bit for bit what fbngrad_fused_batch_norm_grad_v2 gives (the
 * same kernels' code, split in two, with the same ISA). Validation, errors and
 * the "outputs untouched on error" rule are the fused op's. CUDA tensors as
 * for the fused op (device pointers used in place, fbngrad_set_cuda_context):
 * sum_dy and sum_dyxc are then device memory and stay there, for an allreduce
 * on the device (ncclAllReduce in the same stream); count is always a host int64. */

/* Sums over this worker's shard (any N, also 0), per channel c:
 *   sum_dy[c]   = sum of y_backprop over N and the spatial dims
 *   sum_dyxc[c] = sum of y_backprop * (x - reserve_space_1[c])
 * both float32 [C], computed in float32 as the fused op does; *count = N times
 * the spatial size (int64). Mode-independent: one call serves training and inference. */
fbngrad_code fbngrad_split_phase_reduce(const fbngrad_tensor *y_backprop, const fbngrad_tensor *x,
                                        const fbngrad_tensor *reserve_space_1, fbngrad_tensor *sum_dy,
                                        fbngrad_tensor *sum_dyxc, int64_t *count, fbngrad_status *status);

/* The outputs for this worker's shard, from the sums and count summed over
 * all workers (the fused op's arguments plus sum_dy, sum_dyxc float32 [C] and
 * count, which must be at least this shard's N*spatial). Training:
 *   x_backprop = scale*inv*(dy - sum_dy/count - (x - mean)*inv^2*sum_dyxc/count);
 * inference: x_backprop = dy*scale*inv; both: scale_backprop = sum_dyxc*inv,
 * offset_backprop = sum_dy (inv = 1/sqrt(var + epsilon), or reserve_space_2
 * itself under FBNGRAD_RS2_INVERSE_STD). A worker whose shard is empty (N = 0)
 * still gets scale_backprop and offset_backprop; with count = 0 they are zeros,
 * as for the fused op on an empty batch. */
fbngrad_code fbngrad_split_phase_apply(
    const fbngrad_tensor *y_backprop, const fbngrad_tensor *x, const fbngrad_tensor *scale,
    const fbngrad_tensor *reserve_space_1, const fbngrad_tensor *reserve_space_2, const fbngrad_tensor *sum_dy,
    const fbngrad_tensor *sum_dyxc, int64_t count, const fbngrad_attrs *attrs, fbngrad_tensor *x_backprop,
    fbngrad_tensor *scale_backprop, fbngrad_tensor *offset_backprop, fbngrad_status *status);

/* ---- variants and dispatch ---- */

typedef struct fbngrad_variant_info {
    const char *name;      /* e.g. "fbng_f32_nhwc_train_avx2" */
    fbngrad_dtype dtype;
    fbngrad_layout layout;
    int32_t is_training;
    const char *isa;       /* x86-64: "avx512", "avx2", "sse41"; AArch64: "arm_fp16", "neon" */
    fbngrad_device device;
    int32_t supported;     /* this machine can run it */
    const char *shape_classes; /* "" for a hand-scheduled variant (it serves every shape);
                                * for a tuned one (fbngrad_tune's schedule table), the shape
                                * classes it serves, e.g. "cache,dram" (docs/tuning.md) */
} fbngrad_variant_info;

/* Number of compiled variants; fbngrad_variant(i) for 0 <= i < count, in dispatch
 * priority order (the first supported match wins), the hand-scheduled ones first,
 * then the tuned ones. NULL when i is out of range. */
int32_t fbngrad_variant_count(void);
const fbngrad_variant_info *fbngrad_variant(int32_t i);

/* The hand-scheduled variant the dispatcher would pick now, or NULL if none can run here.
 * (A build with tuned schedules may run a tuned variant of the same ISA for some
 * shapes: fbngrad_selected_variant_for_shape says which.) */
const fbngrad_variant_info *fbngrad_selected_variant(fbngrad_dtype dtype, fbngrad_layout layout,
                                                     int32_t is_training, fbngrad_device device);

/* The variant the dispatcher would pick now for x of this shape (rank 4 or 5, in
 * the layout's order), or NULL if none can run here or the shape is not valid. */
const fbngrad_variant_info *fbngrad_selected_variant_for_shape(fbngrad_dtype dtype, fbngrad_layout layout,
                                                               int32_t is_training, fbngrad_device device,
                                                               int32_t rank, const int64_t *shape);

/* Run the variant named `name` (fbngrad_variant(i)->name) for every problem of its
 * dtype, layout, mode and device, whatever the shape and any forced ISA (tests,
 * benchmarks: a tuned variant on shapes outside its classes, or a hand-scheduled one
 * where a tuned one would be picked); other problems dispatch as usual. NULL or ""
 * restores automatic choice. Fails (and changes nothing) for an unknown name or a
 * variant this machine cannot run. */
fbngrad_code fbngrad_force_variant(const char *name, fbngrad_status *status);

/* Restrict CPU dispatch to one ISA (x86-64: "sse41", "avx2", "avx512";
 * AArch64: "neon", "arm_fp16"), as if the CPU
 * had nothing better; NULL or "" restores automatic choice. The environment
 * variable FBNGRAD_ISA does the same at start-up. Fails (and changes nothing)
 * for an unknown name or an ISA this CPU lacks. Safe while other threads run
 * the op: each call reads the setting once, when it picks its variant, and
 * runs that variant to the end (tests/test_concurrency.cpp). The split phase
 * is two calls, so a change between reduce and apply may give them different
 * ISAs (both correct; with one worker their bits then need not equal the fused op's). */
fbngrad_code fbngrad_force_isa(const char *isa, fbngrad_status *status);

/* The ISA currently forced, or "" when dispatch is automatic. */
const char *fbngrad_forced_isa(void);

/* CPU features found, e.g. "sse41 avx2(avx,fma,f16c)" or "neon arm_fp16(fphp,asimdhp)". */
const char *fbngrad_cpu_features(void);

/* Worker threads for the kernels (fbngrad's own pool, whose workers wait
 * awake for 0.1 ms after a loop, then sleep). n <= 0 restores the
 * default (one per core). Returns the previous setting. No effect on calls
 * that run on a runner of fbngrad_set_parallel_for. */
int32_t fbngrad_set_num_threads(int32_t n);

/* A call's own scratch memory (the NHWC sums' partial blocks: up to about
 * 2 MB on ResNet-50's shapes) is kept for the next call once the call is done
 * with it, at most 16 blocks and 32 MiB in all, for the life of the process;
 * and each thread that calls fbngrad keeps a 256 KiB block for its calls'
 * small scratch until it ends, as each thread that runs fbngrad's parallel
 * tasks (a pool's or a runner's) keeps a 64 KiB block for the tasks' own.
 * This gives every kept block, and the calling thread's, back to the system
 * now and returns the bytes they held; calls running meanwhile keep theirs.
 * Any thread, any time. */
int64_t fbngrad_release_scratch(void);

/* ---- the caller's thread pool ----
 * Every parallel loop of the CPU kernels is `count` independent tasks. By
 * default fbngrad runs them on its own pool (Halide's); a program that owns a
 * pool (a trainer, TensorFlow, PyTorch, OpenMP, TBB, pthreadpool) can run
 * them there instead, so that no second set of threads competes for the cores.
 *
 * A runner must call task(task_ctx, i) exactly once for every i in [0, count),
 * in any order, on any threads (the calling thread included), return only
 * when all have returned, and return 0, or a non-zero result of a task (the
 * call then fails with FBNGRAD_INTERNAL). It may run the tasks one after the
 * other. The results do not depend on the runner: the same bits as fbngrad's
 * own pool, whatever the number of threads (the work is split by the shape only).
 *
 * fbngrad_set_parallel_for installs `fn` (NULL: fbngrad's own pool again) for
 * every call that starts after it, process-wide. Calls already running finish
 * on the runner they started with: fbngrad_set_parallel_for returns only when
 * none of them is left, so the old runner (and its runner_ctx) may be freed as
 * soon as it returns. It must therefore not be called from inside a task or a
 * runner (it would wait for its own call). CUDA calls use no runner. */
typedef int (*fbngrad_task_fn)(void *task_ctx, int32_t index);
typedef int (*fbngrad_parallel_for_fn)(void *runner_ctx, int32_t count, fbngrad_task_fn task, void *task_ctx);
void fbngrad_set_parallel_for(fbngrad_parallel_for_fn fn, void *runner_ctx);

/* ---- CUDA ----
 * Tensors with device FBNGRAD_CUDA hold device pointers (cuMemAlloc,
 * cudaMalloc, a torch.Tensor's data_ptr() on "cuda", ...): all eight tensors of
 * a call must be on the device. They are used in place, nothing is copied, and
 * the outputs are left on the device. The kernels are queued on the call's
 * stream: synchronize it (or use its results on the same stream) before reading
 * the outputs. Without a usable CUDA device the call returns
 * FBNGRAD_UNAVAILABLE, "no CUDA device available".
 *
 * Context and stream of a call: those given to fbngrad_set_cuda_context; by
 * default the context current on the calling thread, else the primary context
 * of device 0 (where cudaMalloc allocates), and the default stream (0). */

/* 1 when a CUDA device is usable (libcuda.so.1 loads, cuInit succeeds, at least
 * one device): checked once per process. */
int32_t fbngrad_cuda_available(void);

/* "" when fbngrad_cuda_available(); otherwise why not. */
const char *fbngrad_cuda_unavailable_reason(void);

/* The CUcontext and CUstream (as void *) for every later CUDA call of this
 * process; NULL for either restores its default above. The device pointers of
 * a call must belong to its context. Process-wide and thread-safe: a call takes
 * the setting when it starts, so calls already running are not affected; calls
 * from several threads may run at once (on one stream they run in order). */
void fbngrad_set_cuda_context(void *cu_context, void *cu_stream);

/* The version string, "MAJOR.MINOR.PATCH". */
const char *fbngrad_version(void);

#ifdef __cplusplus
}
#endif

#endif /* FBNGRAD_FBNGRAD_H */
