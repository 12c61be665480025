// halide_malloc and halide_free of fbngrad's Halide runtime: the kernels'
// scratch through a ScratchCache (scratch_cache.h says why).
#pragma once

#include <cstddef>

namespace fbngrad::runtime {

class CallArena;

// Installs the allocator (install_halide_handlers calls it, once).
void install_scratch_memory();

// The calling thread's block for its calls' small scratch (below
// kScratchMinBytes; call_arena.h), made at the thread's first call and freed
// when the thread ends. False where the block is lent already (a call inside
// a call, on a runner that runs other work while it waits) or cannot be had:
// the call's small scratch then comes from malloc as before.
bool lend_thread_block(CallArena *arena);
void return_thread_block(CallArena *arena);
constexpr size_t kCallArenaBytes = size_t(256) << 10;

// Marks the thread as running a task of the call whose user context is
// `call`, for the task's lifetime: the kernel's allocations with that user
// context then come from the thread's task stack (task_stack.h), not
// malloc. parallel_runtime.cpp puts one around every task it runs. Only the
// task's own: another call nested in the task (a runner that runs other
// work while it waits) allocates as before, and so do GPU calls, whose
// runtime may keep what it allocates past the call.
class InTask {
public:
    explicit InTask(const void *call);
    ~InTask();
    InTask(const InTask &) = delete;
    InTask &operator=(const InTask &) = delete;

private:
    const void *outer_;
};
constexpr size_t kTaskStackBytes = size_t(64) << 10;

// fbngrad_release_scratch: gives the kept scratch back (and the calling
// thread's blocks, where no call holds them); the bytes it held.
size_t release_scratch();

// The bounds of what is kept: blocks of 64 KiB to 16 MiB, at most 16 of them
// and 32 MiB in all (ResNet-50's largest NHWC partials are about 2 MB).
constexpr size_t kScratchMinBytes = size_t(64) << 10;
constexpr size_t kScratchMaxBlockBytes = size_t(16) << 20;
constexpr size_t kScratchKeptBytes = size_t(32) << 20;
constexpr size_t kScratchKeptBlocks = 16;

}  // namespace fbngrad::runtime
