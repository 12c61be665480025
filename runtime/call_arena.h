// The small scratch of one call: a bump allocator over the calling thread's
// block. A kernel allocates its small per-channel Funcs (sums, inv, coef, the
// NHWC partials of C floats: a few KB each, 8 to 10 a call) at every call and
// frees them before returning; through malloc they cost 50-80 ns each where
// their heap headers had gone cold under the call's own tensors, and so about
// 0.5 us of the 3 us a small NHWC call (32,7,7,512) spends outside its
// parallel tasks, which is what caps its speed-up on many cores
// (docs/threads.md). Taken from a block the call owns they cost an atomic add,
// and a free is nothing: the whole block is the next call's again. Only the
// call's own allocations, outside its parallel loops (set_in_loop). What the
// call has not been given is unaddressable to AddressSanitizer and valgrind
// (memory_poison.h), and so are a buffer's bytes past its 8 spare ones.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "memory_poison.h"
#include "scratch_alignment.h"

namespace fbngrad::runtime {

class CallArena {
public:
    // scratch_alignment.h, and sizes a multiple of it. The block's owner
    // leaves kAlignment spare bytes before and after it.
    static constexpr size_t kAlignment = kScratchAlignment;

    // Lends [base, base + bytes) to one call; base kAlignment-aligned. No block: allocates nothing.
    void lend(uint8_t *base, size_t bytes) {
        // The last call's block back to its owner, readable; this one's unaddressable until given out.
        poison_memory(base_.load(std::memory_order_relaxed), bytes_.load(std::memory_order_relaxed), false);
        base_.store(base, std::memory_order_relaxed);
        bytes_.store(base ? bytes / kAlignment * kAlignment : 0, std::memory_order_relaxed);
        next_.store(0, std::memory_order_relaxed);
        poison_memory(base, bytes_.load(std::memory_order_relaxed), true);
    }

    // Safe from any thread of the call; nullptr where the block is spent or
    // the call is inside a parallel loop (the caller then allocates elsewhere).
    void *allocate(size_t bytes) {
        const size_t size = bytes_.load(std::memory_order_relaxed);
        if (bytes == 0 || bytes > size || in_loop_.load(std::memory_order_relaxed)) return nullptr;
        // One kAlignment more than rounded up: the per-channel arrays are C
        // floats each, and at C = 1024 or 2048 back to back they would all start
        // at the same offset in a 4 KiB page, and x_backprop reads three of them
        // beside rows of the tensors at that offset too (one L1 set for all).
        const size_t need = (bytes + kAlignment - 1) / kAlignment * kAlignment + kAlignment;
        const size_t at = next_.fetch_add(need, std::memory_order_relaxed);
        if (at > size || need > size - at) return nullptr;
        uint8_t *ptr = base_.load(std::memory_order_relaxed) + at;
        // The buffer and the 8 bytes after it (the 8 before are the gap after
        // the buffer before, or the owner's spare bytes before the block).
        poison_memory(ptr, bytes + 8, false);
        if (at >= 8) poison_memory(ptr - 8, 8, false);
        return ptr;
    }

    // Around each parallel loop of the call (parallel_runtime.cpp). A task's
    // scratch is freed at the task's end and taken again by the next task:
    // from malloc that is the same block, still in the core's cache; bumped
    // off the arena it was new memory every task, which made NHWC 32,7,7,2048's
    // sums 25 % slower on the timing runner (Zen 3). So tasks allocate elsewhere.
    void set_in_loop(bool in_loop) { in_loop_.store(in_loop, std::memory_order_relaxed); }

    // Whether `ptr` came from allocate() (its free is then nothing).
    bool owns(const void *ptr) const {
        const uint8_t *p = static_cast<const uint8_t *>(ptr), *base = base_.load(std::memory_order_relaxed);
        return base && p >= base && p < base + bytes_.load(std::memory_order_relaxed);
    }

private:
    // Atomic, as allocate() may be called from any thread (fbngrad's runtime
    // itself allocates from the calling thread only: scratch_memory.cpp).
    std::atomic<uint8_t *> base_{nullptr};
    std::atomic<size_t> bytes_{0};
    std::atomic<size_t> next_{0};
    std::atomic<bool> in_loop_{false};
};

}  // namespace fbngrad::runtime
