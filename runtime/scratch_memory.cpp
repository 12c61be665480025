#include "scratch_memory.h"

#include <cstdlib>

#include "HalideRuntime.h"
#include "call_arena.h"
#include "scratch_cache.h"
#include "task_stack.h"

namespace fbngrad::runtime {
namespace {

// Never destroyed: a kernel may still run from another static destructor.
ScratchCache &cache() {
    static ScratchCache *const instance =
        new ScratchCache({kScratchMinBytes, kScratchMaxBlockBytes, kScratchKeptBytes, kScratchKeptBlocks});
    return *instance;
}

// The arena of the call this thread started, if any (lend_thread_block).
// Only the calling thread allocates from it (outside the call's loops) and
// frees into it, so a pool thread never reads the call's memory: that kept
// ThreadSanitizer, which could not see Halide's pool (the own pool's before
// own_pool.h) order a task before the call's end, from taking the next call's
// CallContext on the same stack bytes for a race.
thread_local CallArena *t_arena = nullptr;

// A block of `bytes` for the call arena or a task stack: kScratchAlignment-
// aligned, with kScratchAlignment spare bytes on each side (the 8 readable
// bytes around what halide_malloc returns, scratch_alignment.h). Its start
// for free() in *raw; nullptr without memory.
uint8_t *malloc_block(void **raw, size_t bytes) {
    constexpr size_t kAlign = kScratchAlignment;
    if (!(*raw = std::malloc(bytes + 3 * kAlign))) return nullptr;
    const uintptr_t first = reinterpret_cast<uintptr_t>(*raw) + kAlign;
    return reinterpret_cast<uint8_t *>((first + kAlign - 1) & ~uintptr_t(kAlign - 1));
}

// The user context of the task this thread runs (InTask), or nullptr.
thread_local const void *t_task_call = nullptr;

// The thread's task stack: `t_stack` points to it once a task has
// allocated on this thread (trivially destructible, so a free on any thread
// reads it without making a block), `t_stack_block` holds its memory until
// the thread ends; `t_stack_gone` as `t_block_gone` below.
thread_local TaskStack *t_stack = nullptr;
thread_local bool t_stack_gone = false;
struct StackBlock {
    void *raw = nullptr;
    TaskStack stack;
    ~StackBlock() {
        t_stack = nullptr;
        t_stack_gone = true;
        std::free(raw);
    }
    void make() {
        if (uint8_t *base = malloc_block(&raw, kTaskStackBytes)) {
            stack.use(base, kTaskStackBytes);
            t_stack = &stack;
        }
    }
    size_t release() {
        if (!raw || stack.used() != 0) return 0;
        t_stack = nullptr;
        stack.use(nullptr, 0);
        std::free(raw);
        raw = nullptr;
        return kTaskStackBytes;
    }
};
thread_local StackBlock t_stack_block;

TaskStack *task_stack() {
    if (!t_stack && !t_stack_gone) t_stack_block.make();
    return t_stack;
}

void *scratch_malloc(void *user_context, size_t bytes) {
    if (bytes < kScratchMinBytes) {
        if (t_arena)
            if (void *ptr = t_arena->allocate(bytes)) return ptr;
        if (user_context && user_context == t_task_call)
            if (TaskStack *stack = task_stack())
                if (void *ptr = stack->allocate(bytes)) return ptr;
    }
    return cache().allocate(bytes);
}

void scratch_free(void *, void *ptr) {
    if (t_arena && t_arena->owns(ptr)) return;
    // A task frees its buffers on the thread that ran it (Halide frees them
    // in the task's own function), so the thread's stack holds them.
    if (t_stack && t_stack->owns(ptr)) {
        t_stack->release(ptr);
        return;
    }
    cache().release(ptr);
}

// The thread's block (lend_thread_block). A call may still start on this
// thread after the block's destructor ran (from a static destructor, at
// exit): `t_block_gone`, trivially destructible, says so, and the call then
// goes without.
struct ThreadBlock {
    void *raw = nullptr;
    uint8_t *base = nullptr;  // the aligned block in raw
    bool lent = false;
    ~ThreadBlock();
    size_t release() {
        if (!raw || lent) return 0;
        std::free(raw);
        raw = nullptr;
        base = nullptr;
        return kCallArenaBytes;
    }
};
thread_local ThreadBlock t_block;
thread_local bool t_block_gone = false;
ThreadBlock::~ThreadBlock() {
    std::free(raw);
    t_block_gone = true;
}

}  // namespace

bool lend_thread_block(CallArena *arena) {
    if (t_block_gone || t_block.lent) return false;
    if (!t_block.raw && !(t_block.base = malloc_block(&t_block.raw, kCallArenaBytes))) return false;
    arena->lend(t_block.base, kCallArenaBytes);
    t_block.lent = true;
    t_arena = arena;
    return true;
}

void return_thread_block(CallArena *arena) {
    arena->lend(nullptr, 0);
    t_block.lent = false;
    t_arena = nullptr;
}

InTask::InTask(const void *call) : outer_(t_task_call) { t_task_call = call; }
InTask::~InTask() { t_task_call = outer_; }

void install_scratch_memory() {
    cache();
    halide_set_custom_malloc(scratch_malloc);
    halide_set_custom_free(scratch_free);
}

size_t release_scratch() {
    return cache().release_kept() + (t_block_gone ? 0 : t_block.release()) + (t_stack ? t_stack_block.release() : 0);
}

}  // namespace fbngrad::runtime
