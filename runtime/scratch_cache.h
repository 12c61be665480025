// The kernels' scratch buffers, kept for the next call.
//
// A kernel allocates its scratch through halide_malloc at every call and frees
// it before it returns; the largest is the NHWC sum blocks' partials
// (blocks·C·2 floats: 50 KB to 2 MB on ResNet-50's shapes). With glibc a block
// that size comes from the top of the heap (brk), and the free gives it back
// (the heap's trim), so every call paid two system calls and a page fault for
// every 4 KiB page it then touched: on the Zen 3 VM, perf put 8 % of an NHWC
// 32,7,7,512 training call in the kernel's page-fault and unmap paths, and the
// two brk calls were a microsecond outside its parallel loops, time that no
// core count shortens (docs/threads.md). So a freed block of at least
// `min_bytes` is kept and handed to the next request of its size class
// (powers of two), bounded in count and bytes; the least recently freed go
// back to the system first. Smaller blocks go straight to malloc and free,
// whose per-thread caches serve them without system calls. A kept block is
// unaddressable until handed out again (memory_poison.h), as freed memory is.
//
// Header-only so that tests/test_scratch_cache.cpp can test it with limits of
// its own; runtime/scratch_memory.cpp holds the one instance the kernels use.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "memory_poison.h"
#include "scratch_alignment.h"

namespace fbngrad::runtime {

class ScratchCache {
public:
    // scratch_alignment.h, and a size that is a multiple of it.
    static constexpr size_t kAlignment = kScratchAlignment;

    struct Limits {
        size_t min_bytes;        // a block smaller than this is never kept
        size_t max_block_bytes;  // nor one larger than this
        size_t max_bytes;        // the blocks kept, in all
        size_t max_blocks;
    };

    // The list never grows past max_blocks + 1, so release() never allocates.
    explicit ScratchCache(Limits limits) : limits_(limits) { kept_.reserve(limits.max_blocks + 1); }
    ScratchCache(const ScratchCache &) = delete;
    ScratchCache &operator=(const ScratchCache &) = delete;
    ~ScratchCache() {
        for (const Kept &k : kept_) free_kept(k);
    }

    // kAlignment-aligned, at least `bytes` long; nullptr when the system has no memory.
    void *allocate(size_t bytes) {
        const size_t capacity = capacity_for(bytes);
        if (capacity == 0) return nullptr;
        if (cacheable(capacity)) {
            void *ptr = nullptr;
            {
                std::lock_guard<std::mutex> lock(mutex_);
                for (size_t i = kept_.size(); i-- > 0;) {
                    if (kept_[i].capacity != capacity) continue;
                    ptr = kept_[i].ptr;
                    kept_bytes_ -= capacity;
                    kept_.erase(kept_.begin() + std::ptrdiff_t(i));
                    break;
                }
            }
            if (ptr) {
                poison_memory(static_cast<uint8_t *>(ptr), capacity, false);  // new memory again, as malloc's
                return ptr;
            }
        }
        // The header (the raw pointer and the capacity) sits in the 16 bytes
        // before the aligned pointer; one kAlignment more on each side keeps the
        // 8 readable bytes inside the allocation.
        void *raw = std::malloc(capacity + 2 * kAlignment);
        if (!raw) return nullptr;
        const uintptr_t first = reinterpret_cast<uintptr_t>(raw) + sizeof(Header);
        void *ptr = reinterpret_cast<void *>((first + kAlignment - 1) & ~uintptr_t(kAlignment - 1));
        *header(ptr) = Header{raw, capacity};
        return ptr;
    }

    // A pointer from allocate() (nullptr: nothing).
    void release(void *ptr) {
        if (!ptr) return;
        const size_t capacity = header(ptr)->capacity;
        if (!cacheable(capacity)) {
            std::free(header(ptr)->raw);
            return;
        }
        // Kept, it is as free as malloc's freed memory: a use after this free is reported.
        poison_memory(static_cast<uint8_t *>(ptr), capacity, true);
        std::vector<Kept> evicted;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            kept_.push_back(Kept{ptr, capacity});
            kept_bytes_ += capacity;
            size_t drop = 0;
            while (drop < kept_.size() &&
                   (kept_bytes_ > limits_.max_bytes || kept_.size() - drop > limits_.max_blocks)) {
                kept_bytes_ -= kept_[drop].capacity;
                evicted.push_back(kept_[drop]);
                ++drop;
            }
            kept_.erase(kept_.begin(), kept_.begin() + std::ptrdiff_t(drop));
        }
        for (const Kept &k : evicted) free_kept(k);  // outside the lock
    }

    // Gives every kept block back to the system; the bytes they held. Blocks
    // in use stay with their callers (and are kept when they come back).
    // Allocates nothing (clear() keeps the list's capacity).
    size_t release_kept() {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const Kept &k : kept_) free_kept(k);
        kept_.clear();
        const size_t bytes = kept_bytes_;
        kept_bytes_ = 0;
        return bytes;
    }

    size_t kept_bytes() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return kept_bytes_;
    }
    size_t kept_blocks() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return kept_.size();
    }

    // The capacity a request gets: a multiple of kAlignment, and where it may
    // be kept, the power of two at or above it (its size class); 0 when too
    // large to allocate.
    size_t capacity_for(size_t bytes) const {
        if (bytes > SIZE_MAX / 4) return 0;
        size_t capacity = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
        if (capacity < limits_.min_bytes || capacity > limits_.max_block_bytes) return capacity;
        size_t pow2 = kAlignment;
        while (pow2 < capacity) pow2 *= 2;
        return pow2;
    }

private:
    struct Header {
        void *raw;
        size_t capacity;
    };
    struct Kept {
        void *ptr;
        size_t capacity;
    };
    static Header *header(void *ptr) { return static_cast<Header *>(ptr) - 1; }
    // Back to malloc, addressable again as malloc handed it out.
    static void free_kept(const Kept &k) {
        poison_memory(static_cast<uint8_t *>(k.ptr), k.capacity, false);
        std::free(header(k.ptr)->raw);
    }
    bool cacheable(size_t capacity) const {
        return capacity >= limits_.min_bytes && capacity <= limits_.max_block_bytes && limits_.max_blocks > 0;
    }

    const Limits limits_;
    mutable std::mutex mutex_;
    std::vector<Kept> kept_;  // the least recently freed first
    size_t kept_bytes_ = 0;
};

}  // namespace fbngrad::runtime
