// What halide_malloc promises the kernels (HalideRuntime.h), which every
// allocator behind fbngrad's halide_malloc keeps (scratch_cache.h,
// call_arena.h, task_stack.h): every CPU target's widest vector (AVX-512's
// 64 bytes) and a whole cache line pair, and 8 readable bytes before and
// after what it returns.
#pragma once

#include <cstddef>

namespace fbngrad::runtime {

constexpr size_t kScratchAlignment = 128;

}  // namespace fbngrad::runtime
