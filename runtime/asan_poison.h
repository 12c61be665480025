// Marks memory that fbngrad's own allocators (call_arena.h, task_stack.h)
// hold but have not handed out, or have taken back, as unaddressable for
// AddressSanitizer, as malloc's free memory is: a kernel's stray access to it
// is then reported. Nothing in other builds.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FBNGRAD_ASAN 1
#endif
#endif
#if !defined(FBNGRAD_ASAN) && defined(__SANITIZE_ADDRESS__)
#define FBNGRAD_ASAN 1
#endif
#ifdef FBNGRAD_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace fbngrad::runtime {

inline void asan_poison(const uint8_t *p, size_t bytes, bool poisoned) {
#ifdef FBNGRAD_ASAN
    if (!p || bytes == 0) return;
    if (poisoned)
        ASAN_POISON_MEMORY_REGION(p, bytes);
    else
        ASAN_UNPOISON_MEMORY_REGION(p, bytes);
#else
    (void)p, (void)bytes, (void)poisoned;
#endif
}

}  // namespace fbngrad::runtime
