// Glue between fbngrad and the Halide runtime that all variants share.
#pragma once

#include <string>

#include "call_arena.h"
#include "parallel_runtime.h"

namespace fbngrad::runtime {

// Passed as Halide's user_context to every kernel call: the error handler
// writes the kernel's message here instead of aborting the process (Halide's
// default handler calls abort()).
struct CallContext {
    CallContext();
    ~CallContext();
    CallContext(const CallContext &) = delete;
    CallContext &operator=(const CallContext &) = delete;

    std::string error;
    // CUDA calls only: the context and stream this call's kernels use
    // (cuda_context.h fills them in when the call starts).
    void *cuda_context = nullptr;
    void *cuda_stream = nullptr;
    // The parallel-loop runner this call uses from start to end (parallel_runtime.h).
    RunnerLease runner;
    // The elements of the call's tensors (N·H·W·C), set by the API where it
    // knows them, else -1: without a runner, a small call's loops run on
    // Halide's thread pool (task_size.h: kHalidePoolElements).
    int64_t elements = -1;
    // The call's small scratch (call_arena.h), on a block of the calling
    // thread's (scratch_memory.h), for CPU calls (use_thread_scratch): a
    // GPU runtime may keep what it allocates past the call. None where the
    // block is already lent to a call further up this thread's stack.
    CallArena scratch;
    void use_thread_scratch();

private:
    bool borrowed_block_ = false;
};

// Installs fbngrad's Halide error and print handlers and its parallel-loop
// hook (parallel_runtime.h); idempotent, thread-safe.
void install_halide_handlers();

// The threads of fbngrad's own pool (parallel_runtime.h, own_pool.h), and of
// Halide's, which no kernel uses; n <= 0 means one thread per core. Returns the old value.
int set_num_threads(int n);

}  // namespace fbngrad::runtime
