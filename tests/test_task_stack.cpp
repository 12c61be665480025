// runtime/task_stack.h: the small scratch of a kernel's parallel tasks, a
// stack on the block of the thread that runs the task. What halide_malloc
// must give a kernel (alignment, readable bytes around), that a free of the
// top gives its bytes back and one below the top once everything above is
// freed, that nothing live overlaps; and through the public API, that a
// task's allocations come from the stack of the thread that ran it.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "fbngrad/fbngrad.hpp"
#include "problem.h"
#include "aligned_block.h"
#include "memory_poison.h"
#include "scratch_memory.h"
#include "task_stack.h"

using fbngrad::runtime::TaskStack;

namespace {

constexpr size_t A = TaskStack::kAlignment;

using Block = AlignedBlock;  // aligned_block.h

TEST(TaskStack, AlignedWithReadableBytesAroundEverySize) {
    Block b(4096);
    TaskStack stack;
    EXPECT_EQ(stack.allocate(16), nullptr) << "no block yet";
    stack.use(b.base, 4096);
    // 4096 bytes, the last 128 kept: 3968 usable, each buffer after a 128-byte slot.
    for (size_t bytes : {size_t(0), size_t(1), size_t(127), size_t(128), size_t(129), size_t(3968 - A)}) {
        auto *p = static_cast<uint8_t *>(stack.allocate(bytes));
        ASSERT_NE(p, nullptr) << bytes;
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % A, 0u) << bytes;
        EXPECT_TRUE(stack.owns(p)) << bytes;
        std::memset(p, 0xab, bytes);
        volatile uint8_t sink = 0;  // the 8 readable bytes on each side (halide_malloc's promise)
        for (uint8_t *q = p - 8; q < p + bytes + 8; ++q) sink = sink + *q;
        stack.release(p);
        EXPECT_EQ(stack.used(), 0u) << bytes;
    }
    EXPECT_EQ(stack.allocate(3968 - A + 1), nullptr) << "one byte more than the block holds";
    EXPECT_EQ(stack.allocate(SIZE_MAX), nullptr);
    EXPECT_FALSE(stack.owns(b.base - 1));
    EXPECT_FALSE(stack.owns(b.base + 4096));
    int elsewhere = 0;
    EXPECT_FALSE(stack.owns(&elsewhere));
}

TEST(TaskStack, TheNextTaskGetsTheSameBytes) {
    Block b(4096);
    TaskStack stack;
    stack.use(b.base, 4096);
    void *first = stack.allocate(300);
    void *second = stack.allocate(50);
    EXPECT_EQ(first, b.base + A);
    EXPECT_EQ(second, b.base + A + 384 + A);  // 300 bytes take 384
    stack.release(second);
    stack.release(first);
    EXPECT_EQ(stack.allocate(200), first);
}

TEST(TaskStack, AFreeBelowTheTopWaitsForTheBuffersAbove) {
    Block b(4096);
    TaskStack stack;
    stack.use(b.base, 4096);
    void *a = stack.allocate(100), *m = stack.allocate(100), *c = stack.allocate(100);
    const size_t after_a = 2 * A, all = 6 * A;
    EXPECT_EQ(stack.used(), all);
    stack.release(m);  // below the top: marked only
    EXPECT_EQ(stack.used(), all);
    stack.release(c);  // the top, and the freed one under it
    EXPECT_EQ(stack.used(), after_a);
    EXPECT_EQ(stack.allocate(100), m);
    stack.release(m);
    stack.release(a);
    EXPECT_EQ(stack.used(), 0u);
}

TEST(TaskStack, FullThenFreedFitsAgain) {
    Block b(1024);
    TaskStack stack;
    stack.use(b.base, 1024);  // 896 usable: three buffers of 128 bytes and their slots
    std::vector<void *> got;
    while (void *p = stack.allocate(128)) got.push_back(p);
    EXPECT_EQ(got.size(), 3u);
    stack.release(got.back());
    got.pop_back();
    EXPECT_NE(stack.allocate(1), nullptr);
}

TEST(TaskStack, RandomOrderNeverOverlapsAndEndsEmpty) {
    Block b(64 * 1024);
    TaskStack stack;
    stack.use(b.base, 64 * 1024);
    std::mt19937 rng(7);
    struct Live {
        uint8_t *p;
        size_t bytes;
        uint8_t mark;
    };
    std::vector<Live> live;
    for (int step = 0; step < 20000; ++step) {
        if (live.empty() || rng() % 3 != 0) {
            const size_t bytes = rng() % 3000;
            auto *p = static_cast<uint8_t *>(stack.allocate(bytes));
            if (!p) continue;  // full: the caller goes to malloc
            const uint8_t mark = uint8_t(step);
            std::memset(p, mark, bytes);
            live.push_back({p, bytes, mark});
        } else {
            // Mostly the top, as Halide frees; sometimes one below it.
            const size_t k = rng() % 4 == 0 ? rng() % live.size() : live.size() - 1;
            for (size_t i = 0; i < live[k].bytes; ++i)
                ASSERT_EQ(live[k].p[i], live[k].mark) << "step " << step << ": overwritten while live";
            stack.release(live[k].p);
            live.erase(live.begin() + std::ptrdiff_t(k));
        }
    }
    while (!live.empty()) {
        for (size_t i = 0; i < live.back().bytes; ++i) ASSERT_EQ(live.back().p[i], live.back().mark);
        stack.release(live.back().p);
        live.pop_back();
    }
    EXPECT_EQ(stack.used(), 0u);
}

// Under AddressSanitizer (tools/ci/40-reliability.sh): what no buffer holds is
// poisoned, so a kernel's stray access is reported as with malloc.
TEST(TaskStack, PoisonsWhatNoBufferHoldsUnderAddressSanitizer) {
#ifndef FBNGRAD_ASAN  // memory_poison.h
    GTEST_SKIP() << "not an AddressSanitizer build";
#else
    Block b(4096);
    TaskStack stack;
    stack.use(b.base, 4096);
    EXPECT_TRUE(__asan_address_is_poisoned(b.base + 1000)) << "unused";
    auto *p = static_cast<uint8_t *>(stack.allocate(100));
    auto *q = static_cast<uint8_t *>(stack.allocate(128));  // ends at its slot's end
    for (uint8_t *x : {p - 8, p, p + 99, p + 107, q - 8, q + 127, q + 135})
        EXPECT_FALSE(__asan_address_is_poisoned(x)) << x - p;
    EXPECT_TRUE(__asan_address_is_poisoned(p + 120)) << "past the 8 bytes after";
    EXPECT_TRUE(__asan_address_is_poisoned(q + 200));
    stack.release(p);  // below the top: the buffer, not its header
    EXPECT_TRUE(__asan_address_is_poisoned(p));
    EXPECT_FALSE(__asan_address_is_poisoned(p - 8));
    stack.release(q);  // both slots go
    EXPECT_TRUE(__asan_address_is_poisoned(q - 8));
    EXPECT_TRUE(__asan_address_is_poisoned(p - 8));
    stack.use(nullptr, 0);  // the block back to its owner, readable again
    EXPECT_FALSE(__asan_address_is_poisoned(p));
#endif
}

// scratch_memory.cpp, through the public API: a runner that, after running a
// loop's tasks on a thread, asks fbngrad_release_scratch there. Nothing else
// is free to give back at that moment (the call's own scratch is in use, a
// runner's thread has no block for calls), so it returns exactly the
// thread's task stack, made by the tasks' allocations and empty again.
int64_t g_released = 0;
std::mutex g_released_mutex;

int serial_then_release(void *, int32_t count, fbngrad_task_fn task, void *task_ctx) {
    for (int32_t i = 0; i < count; ++i)
        if (int rc = task(task_ctx, i)) return rc;
    const int64_t r = fbngrad_release_scratch();
    std::lock_guard<std::mutex> lock(g_released_mutex);
    g_released += r;
    return 0;
}

// Two threads, each the tasks of one parity, each releasing after its tasks.
int two_threads_then_release(void *, int32_t count, fbngrad_task_fn task, void *task_ctx) {
    int rcs[2] = {0, 0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t)
        threads.emplace_back([&, t] {
            for (int32_t i = t; i < count && rcs[t] == 0; i += 2) rcs[t] = task(task_ctx, i);
            const int64_t r = fbngrad_release_scratch();
            std::lock_guard<std::mutex> lock(g_released_mutex);
            g_released += r;
        });
    for (std::thread &t : threads) t.join();
    return rcs[0] ? rcs[0] : rcs[1];
}

TEST(ScratchMemory, ATasksAllocationsComeFromItsThreadsStack) {
#if !(defined(__x86_64__) || defined(_M_X64))
    GTEST_SKIP() << "the x86 NCHW one pass is the kernel known to allocate inside its tasks";
#else
    FBNGRAD_SKIP_UNLESS_BUILT(FBNGRAD_FLOAT32, FBNGRAD_NCHW, true);
    // One pass on a caller's runner (a channel's 4x28x28 planes fit the rule's
    // task): each task allocates its channels' sums, inv, coef and partials.
    fbngrad::test::TestProblem t(FBNGRAD_FLOAT32, FBNGRAD_NCHW, {4, 32, 28, 28}, true);
    fbngrad_status st;
    ASSERT_EQ(t.run(&st), FBNGRAD_OK) << st.message;
    const std::string bits = t.output_bits();
    const int64_t stack = int64_t(fbngrad::runtime::kTaskStackBytes);
    struct Case {
        const char *name;
        fbngrad_parallel_for_fn runner;
        int64_t released;  // the threads that ran tasks, a stack each
    };
    for (const Case &c : {Case{"serial", serial_then_release, stack},
                          Case{"two threads", two_threads_then_release, 2 * stack}}) {
        fbngrad_release_scratch();
        g_released = 0;
        fbngrad_set_parallel_for(c.runner, nullptr);
        const fbngrad_code code = t.run(&st);
        fbngrad_set_parallel_for(nullptr, nullptr);
        ASSERT_EQ(code, FBNGRAD_OK) << c.name << ": " << st.message;
        EXPECT_EQ(t.output_bits(), bits) << c.name;
        EXPECT_EQ(g_released, c.released) << c.name;
    }
#endif
}

}  // namespace
