// The small scratch a kernel allocates inside its parallel tasks, on a block
// of the thread that runs the task.
//
// A task of the x86 NCHW one pass allocates its channels' sums, inv, coef and
// partials (8 arrays of a few hundred bytes, heap allocations because their
// size follows the call) and frees them at its end. Through malloc and the
// scratch cache's header that was 3 % of NCHW 1,56,56,24's training call on
// 2 threads (Zen 4; 1.8 % with this stack), about 0.1 us of every such task
// on any core count. Halide frees a task's buffers in the same task, on the same
// thread, in the reverse order of their allocation, so a stack serves them:
// an allocation moves the top, a free of the top moves it back (a free below
// the top is marked, and reclaimed when everything above it is freed too).
// The block is the thread's own (scratch_memory.cpp): no atomics, no sharing,
// and the next task on the thread finds the same bytes in its cache.
//
// The bytes no buffer holds are unaddressable to AddressSanitizer and
// valgrind (memory_poison.h), as malloc's would be: a kernel's access past a
// buffer's 8 spare bytes, or to a freed one, is reported as it was when the
// buffers came from malloc.
//
// Header-only so that tests/test_task_stack.cpp can test it on blocks of its own.
#pragma once

#include <cstddef>
#include <cstdint>

#include "memory_poison.h"
#include "scratch_alignment.h"

namespace fbngrad::runtime {

class TaskStack {
public:
    static constexpr size_t kAlignment = kScratchAlignment;  // scratch_alignment.h

    // Over [base, base + bytes), base kAlignment-aligned, the last kAlignment
    // bytes kept free (the bytes after the last buffer). No block: allocates nothing.
    void use(uint8_t *base, size_t bytes) {
        poison(base_, end_, false);  // the old block, as its owner had it
        base_ = base;
        end_ = base && bytes > kAlignment ? (bytes - kAlignment) / kAlignment * kAlignment : 0;
        top_ = 0;
        last_ = nullptr;
        poison(base_, end_, true);
    }

    // kAlignment-aligned, at least `bytes` long; nullptr where it does not fit.
    void *allocate(size_t bytes) {
        if (bytes > end_) return nullptr;
        const size_t capacity = (bytes + kAlignment - 1) / kAlignment * kAlignment;
        // Each buffer follows a kAlignment slot that ends in its header.
        const size_t need = kAlignment + (capacity == 0 ? kAlignment : capacity);
        if (need > end_ - top_) return nullptr;
        uint8_t *ptr = base_ + top_ + kAlignment;
        // The header, the buffer and the 8 bytes on each side of it.
        poison(ptr - sizeof(Header), sizeof(Header) + bytes + 8, false);
        *header(ptr) = Header{last_, top_, bytes, false};
        top_ += need;
        last_ = ptr;
        return ptr;
    }

    bool owns(const void *ptr) const {
        const uint8_t *p = static_cast<const uint8_t *>(ptr);
        return base_ && p >= base_ && p < base_ + end_;
    }

    // A pointer from allocate().
    void release(void *ptr) {
        Header *h = header(static_cast<uint8_t *>(ptr));
        h->freed = true;
        poison(static_cast<uint8_t *>(ptr), h->bytes + 8, true);  // a use after this free is reported
        while (last_ && header(last_)->freed) {
            const Header popped = *header(last_);
            // The slot and the header too, but for the slot's first 8 bytes: the
            // buffer below may end right before them, and they are its 8 after.
            poison(base_ + popped.top_before + 8, top_ - popped.top_before - 8, true);
            top_ = popped.top_before;
            last_ = popped.below;
        }
    }

    // The bytes in use (0: every buffer freed).
    size_t used() const { return top_; }

private:
    struct Header {
        uint8_t *below;     // the buffer allocated before this one, or nullptr
        size_t top_before;  // top_ when this one was allocated
        size_t bytes;       // as asked for
        bool freed;
    };
    static_assert(sizeof(Header) <= kAlignment, "a header fits the slot before its buffer");
    static Header *header(uint8_t *ptr) { return reinterpret_cast<Header *>(ptr) - 1; }
    static void poison(uint8_t *p, size_t bytes, bool poisoned) { poison_memory(p, bytes, poisoned); }

    uint8_t *base_ = nullptr;
    size_t end_ = 0;  // the usable bytes
    size_t top_ = 0;
    uint8_t *last_ = nullptr;
};

}  // namespace fbngrad::runtime
