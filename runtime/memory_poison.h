// Marks memory that fbngrad's own allocators (call_arena.h, task_stack.h,
// scratch_cache.h) hold but have not handed out, or have taken back, as
// unaddressable, as malloc's free memory is, and what they hand out as
// addressable and undefined, as malloc's new memory is. Two tools read the
// marks: AddressSanitizer reports an instrumented access to such memory
// (fbngrad's own code in the sanitizer builds), and valgrind's memcheck any
// access at all, the Halide-generated kernels' included, which no compiler
// instruments (tests/valgrind: without the marks memcheck saw each block as
// one malloc'd buffer, so a kernel that ran past one of its buffers into the
// next went unseen). Nothing in other builds, and outside valgrind the
// memcheck marks cost a test of a flag read once.
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

// valgrind's client requests (header-only macros from Debian's valgrind
// package), in the builds that run the valgrind tests: FBNGRAD_VALGRIND_MARKS
// (runtime/CMakeLists.txt: native, no sanitizer, valgrind installed). Not in
// cross and edge builds, whose minimal program they grow by 1.3 KB (3.5-4.3 KB
// with the requests inline; docs/edge-builds.md), nor where the header is missing.
#if defined(FBNGRAD_VALGRIND_MARKS) && defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#define FBNGRAD_MEMCHECK 1
#include <valgrind/memcheck.h>
#endif
#endif

namespace fbngrad::runtime {

#ifdef FBNGRAD_MEMCHECK
// Whether the process runs under valgrind (memory_poison.cpp): asked once,
// by a static initializer, as each request executes a few instructions of its
// own even outside valgrind; a plain flag, not a function's static, whose
// guard cost the NHWC prologue's dozen marks 10-20 ns. Marks made before
// that initializer ran are skipped: memcheck then sees that memory as malloc
// handed it out, as without the marks.
extern bool g_running_on_valgrind;

void memcheck_mark(const uint8_t *p, size_t bytes, bool poisoned);
#endif

// poisoned: unaddressable; else addressable, its contents undefined.
inline void poison_memory(const uint8_t *p, size_t bytes, bool poisoned) {
    if (!p || bytes == 0) return;
#ifdef FBNGRAD_ASAN
    if (poisoned)
        ASAN_POISON_MEMORY_REGION(p, bytes);
    else
        ASAN_UNPOISON_MEMORY_REGION(p, bytes);
#endif
#ifdef FBNGRAD_MEMCHECK
    if (g_running_on_valgrind) memcheck_mark(p, bytes, poisoned);
#endif
    (void)poisoned;
}

}  // namespace fbngrad::runtime
