// Glue between fbngrad and the Halide runtime that all variants share.
#pragma once

#include <string>

#include "parallel_runtime.h"

namespace fbngrad::runtime {

// Passed as Halide's user_context to every kernel call: the error handler
// writes the kernel's message here instead of aborting the process (Halide's
// default handler calls abort()).
struct CallContext {
    std::string error;
    // CUDA calls only: the context and stream this call's kernels use
    // (cuda_context.h fills them in when the call starts).
    void *cuda_context = nullptr;
    void *cuda_stream = nullptr;
    // The parallel-loop runner this call uses from start to end (parallel_runtime.h).
    RunnerLease runner;
};

// Installs fbngrad's Halide error and print handlers and its parallel-loop
// hook (parallel_runtime.h); idempotent, thread-safe.
void install_halide_handlers();

// Halide's thread pool size; n <= 0 means one thread per core. Returns the old value.
int set_num_threads(int n);

}  // namespace fbngrad::runtime
