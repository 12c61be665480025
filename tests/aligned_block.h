// A block as runtime/scratch_memory.cpp makes one for the runtime's own
// allocators (call_arena.h, task_stack.h): kScratchAlignment-aligned, with
// spare bytes before and after it inside a malloc'd buffer, all zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "scratch_alignment.h"

struct AlignedBlock {
    static constexpr size_t kAlignment = fbngrad::runtime::kScratchAlignment;
    std::vector<uint8_t> raw;
    uint8_t *base;
    explicit AlignedBlock(size_t bytes) : raw(bytes + 3 * kAlignment, 0) {
        const uintptr_t first = reinterpret_cast<uintptr_t>(raw.data()) + kAlignment;
        base = reinterpret_cast<uint8_t *>((first + kAlignment - 1) & ~uintptr_t(kAlignment - 1));
    }
};
