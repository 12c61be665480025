// runtime/scratch_cache.h: the kernels' scratch kept for the next call. What
// halide_malloc must give a kernel (alignment, readable bytes around), that a
// freed block serves the next request of its class, and the bounds of what is
// kept; with limits of the test's own, on sizes around every threshold.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "fbngrad/fbngrad.hpp"
#include "aligned_block.h"
#include "call_arena.h"
#include "problem.h"
#include "scratch_cache.h"
#include "memory_poison.h"
#include "scratch_memory.h"

using fbngrad::runtime::CallArena;
using fbngrad::runtime::ScratchCache;

namespace {

constexpr size_t KiB = 1024, MiB = 1024 * 1024;

ScratchCache::Limits limits(size_t min_bytes, size_t max_block, size_t max_bytes, size_t max_blocks) {
    return ScratchCache::Limits{min_bytes, max_block, max_bytes, max_blocks};
}

TEST(ScratchCache, AlignedWithReadableBytesAroundEverySize) {
    ScratchCache cache(limits(64 * KiB, 1 * MiB, 4 * MiB, 4));
    for (size_t bytes : {size_t(0), size_t(1), size_t(127), size_t(128), size_t(129), 64 * KiB - 1, 64 * KiB,
                         64 * KiB + 1, 1 * MiB - 1, 1 * MiB, 1 * MiB + 1, 3 * MiB}) {
        auto *p = static_cast<unsigned char *>(cache.allocate(bytes));
        ASSERT_NE(p, nullptr) << bytes;
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % ScratchCache::kAlignment, 0u) << bytes;
        const size_t capacity = cache.capacity_for(bytes);
        EXPECT_GE(capacity, bytes);
        EXPECT_EQ(capacity % ScratchCache::kAlignment, 0u) << bytes;
        // The whole capacity is the caller's, and 8 bytes on each side may be
        // read (the sanitizer build's AddressSanitizer checks these touches).
        std::memset(p, 0xab, capacity);
        volatile unsigned char around = 0;
        for (int k = 1; k <= 8; ++k) around = around + p[-k] + p[capacity - 1 + k];
        (void)around;
        cache.release(p);
    }
    cache.release(nullptr);  // nothing, as free(nullptr)
}

TEST(ScratchCache, AFreedBlockServesTheNextRequestOfItsClass) {
    ScratchCache cache(limits(64 * KiB, 1 * MiB, 4 * MiB, 4));
    void *a = cache.allocate(100 * KiB);
    cache.release(a);
    EXPECT_EQ(cache.kept_blocks(), 1u);
    EXPECT_EQ(cache.kept_bytes(), 128 * KiB);
    // 100 KiB and 70 KiB are both of the 128 KiB class.
    void *b = cache.allocate(70 * KiB);
    EXPECT_EQ(b, a);
    EXPECT_EQ(cache.kept_blocks(), 0u);
    // Another class gets a block of its own.
    void *c = cache.allocate(200 * KiB);
    EXPECT_NE(c, a);
    cache.release(b);
    cache.release(c);
    EXPECT_EQ(cache.kept_blocks(), 2u);
    EXPECT_EQ(cache.kept_bytes(), 128 * KiB + 256 * KiB);
    // The most recently freed block of a class is handed out first.
    void *d = cache.allocate(128 * KiB);
    void *e = cache.allocate(128 * KiB);
    cache.release(e);
    cache.release(d);
    void *again = cache.allocate(128 * KiB);
    EXPECT_EQ(again, d);
    cache.release(again);
}

// Under AddressSanitizer (tools/ci/40-reliability.sh): a kept block is
// poisoned until it is handed out again, and addressable once given back to
// malloc; under valgrind tests/valgrind/poison_probe.cpp checks the same.
TEST(ScratchCache, KeptBlocksAreUnaddressableUnderAddressSanitizer) {
#ifndef FBNGRAD_ASAN  // memory_poison.h
    GTEST_SKIP() << "not an AddressSanitizer build";
#else
    ScratchCache cache(limits(64 * KiB, 1 * MiB, 4 * MiB, 4));
    auto *a = static_cast<uint8_t *>(cache.allocate(100 * KiB));
    EXPECT_FALSE(__asan_region_is_poisoned(a, 128 * KiB));
    cache.release(a);
    EXPECT_TRUE(__asan_address_is_poisoned(a));
    EXPECT_TRUE(__asan_address_is_poisoned(a + 128 * KiB - 1));
    auto *b = static_cast<uint8_t *>(cache.allocate(70 * KiB));
    ASSERT_EQ(b, a);
    EXPECT_FALSE(__asan_region_is_poisoned(b, 128 * KiB));
    cache.release(b);
    EXPECT_EQ(cache.release_kept(), 128 * KiB);  // freed unpoisoned: ASan's free then marks it freed
#endif
}

TEST(ScratchCache, KeepsNoBlockBelowOrAboveItsBounds) {
    ScratchCache cache(limits(64 * KiB, 1 * MiB, 4 * MiB, 4));
    for (size_t bytes : {size_t(1), 64 * KiB - ScratchCache::kAlignment, 1 * MiB + 1, 3 * MiB}) {
        cache.release(cache.allocate(bytes));
        EXPECT_EQ(cache.kept_blocks(), 0u) << bytes;
        EXPECT_EQ(cache.kept_bytes(), 0u) << bytes;
    }
    for (size_t bytes : {64 * KiB, 1 * MiB}) {
        ScratchCache cache(limits(64 * KiB, 1 * MiB, 4 * MiB, 4));
        void *p = cache.allocate(bytes);
        cache.release(p);
        EXPECT_EQ(cache.kept_blocks(), 1u) << bytes;
        EXPECT_EQ(cache.allocate(bytes), p) << bytes;
        cache.release(p);
        EXPECT_EQ(cache.kept_blocks(), 1u) << bytes;
        cache.release(cache.allocate(bytes));
    }
}

TEST(ScratchCache, GivesTheLeastRecentlyFreedBackFirstAtItsBounds) {
    // At most 3 blocks and 1 MiB.
    ScratchCache cache(limits(64 * KiB, 1 * MiB, 1 * MiB, 3));
    std::vector<void *> blocks;
    for (int i = 0; i < 5; ++i) blocks.push_back(cache.allocate(128 * KiB));
    for (void *b : blocks) cache.release(b);
    EXPECT_EQ(cache.kept_blocks(), 3u);
    EXPECT_EQ(cache.kept_bytes(), 3 * 128 * KiB);
    // The three kept are the last three freed, newest first.
    EXPECT_EQ(cache.allocate(128 * KiB), blocks[4]);
    EXPECT_EQ(cache.allocate(128 * KiB), blocks[3]);
    EXPECT_EQ(cache.allocate(128 * KiB), blocks[2]);
    EXPECT_EQ(cache.kept_blocks(), 0u);
    for (int i = 2; i < 5; ++i) cache.release(blocks[size_t(i)]);
    // A 1 MiB block leaves room for nothing else.
    cache.release(cache.allocate(1 * MiB));
    EXPECT_EQ(cache.kept_blocks(), 1u);
    EXPECT_EQ(cache.kept_bytes(), 1 * MiB);
}

TEST(ScratchCache, ReleaseKeptGivesEveryKeptBlockBack) {
    ScratchCache cache(limits(64 * KiB, 1 * MiB, 4 * MiB, 4));
    EXPECT_EQ(cache.release_kept(), 0u);
    void *in_use = cache.allocate(128 * KiB);
    cache.release(cache.allocate(256 * KiB));
    cache.release(cache.allocate(64 * KiB));
    EXPECT_EQ(cache.release_kept(), 256 * KiB + 64 * KiB);
    EXPECT_EQ(cache.kept_blocks(), 0u);
    EXPECT_EQ(cache.kept_bytes(), 0u);
    EXPECT_EQ(cache.release_kept(), 0u);
    // A block in use meanwhile is kept when it comes back.
    cache.release(in_use);
    EXPECT_EQ(cache.kept_bytes(), 128 * KiB);
}

TEST(ScratchCache, RefusesWhatCannotBeAllocated) {
    ScratchCache cache(limits(64 * KiB, 1 * MiB, 4 * MiB, 4));
    EXPECT_EQ(cache.allocate(SIZE_MAX), nullptr);
    EXPECT_EQ(cache.allocate(SIZE_MAX / 2), nullptr);
    EXPECT_EQ(cache.kept_blocks(), 0u);
}

// Calls on many threads at once: no block is held by two of them (each fills
// its block with its own byte and finds it intact before the release), and
// the bounds hold afterwards. ThreadSanitizer runs it in the reliability stage.
TEST(ScratchCache, ManyThreadsNeverShareABlock) {
    ScratchCache cache(limits(64 * KiB, 1 * MiB, 2 * MiB, 6));
    std::vector<std::thread> threads;
    std::vector<int> failures(8, 0);
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&, t] {
            std::mt19937 rng{static_cast<unsigned>(t)};
            std::uniform_int_distribution<size_t> size(1, 600 * KiB);
            for (int i = 0; i < 300; ++i) {
                const size_t bytes = size(rng);
                auto *p = static_cast<unsigned char *>(cache.allocate(bytes));
                if (!p) {
                    ++failures[size_t(t)];
                    continue;
                }
                std::memset(p, t + 1, bytes);
                std::this_thread::yield();
                for (size_t k = 0; k < bytes; k += 4093)
                    if (p[k] != t + 1) ++failures[size_t(t)];
                if (p[bytes - 1] != t + 1) ++failures[size_t(t)];
                cache.release(p);
            }
        });
    }
    for (auto &th : threads) th.join();
    for (int t = 0; t < 8; ++t) EXPECT_EQ(failures[size_t(t)], 0) << "thread " << t;
    EXPECT_LE(cache.kept_blocks(), 6u);
    EXPECT_LE(cache.kept_bytes(), 2 * MiB);
}

// Through the C API: a call keeps its NHWC partials (2 x 63 blocks x 512
// channels of float32 on 32,7,7,512: 126 KiB each, in the 128 KiB class), and
// fbngrad_release_scratch gives them back, once.
// runtime/call_arena.h: a call's small scratch, bumped off a block it borrows.
// The test's block has kAlignment spare bytes around it, as the thread's has.
using ArenaBlock = AlignedBlock;  // aligned_block.h

TEST(CallArena, AlignedDisjointAndOwnedUntilSpent) {
    const size_t block = 4 * KiB;
    ArenaBlock b(block);
    CallArena arena;
    EXPECT_EQ(arena.allocate(16), nullptr) << "nothing lent yet";
    arena.lend(b.base, block);
    EXPECT_EQ(arena.allocate(0), nullptr);
    EXPECT_EQ(arena.allocate(block + 1), nullptr);
    size_t used = 0;
    std::set<uintptr_t> page_offsets;
    uint8_t *last_end = b.base;
    for (size_t bytes : {size_t(1), size_t(127), size_t(128), size_t(129), size_t(1000)}) {
        auto *p = static_cast<uint8_t *>(arena.allocate(bytes));
        ASSERT_NE(p, nullptr) << bytes;
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % CallArena::kAlignment, 0u) << bytes;
        EXPECT_GE(p, last_end) << bytes << ": overlaps the block before";
        EXPECT_TRUE(arena.owns(p) && arena.owns(p + bytes - 1)) << bytes;
        volatile uint8_t sink = 0;  // the 8 readable bytes around it, as halide_malloc promises
        for (uint8_t *q = p - 8; q < p + bytes + 8; ++q) sink = sink + *q;
        last_end = p + bytes;
        EXPECT_TRUE(page_offsets.insert((reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(b.base)) % 4096)
                        .second)
            << bytes << ": at the page offset of another block (call_arena.h)";
        used += (bytes + 127) / 128 * 128 + 128;
    }
    // The rest of the block, then nothing: the caller allocates elsewhere.
    EXPECT_NE(arena.allocate(block - used - 128), nullptr);
    EXPECT_EQ(arena.allocate(1), nullptr);
    EXPECT_FALSE(arena.owns(b.base + block));
    EXPECT_FALSE(arena.owns(b.base - 1));
    int elsewhere = 0;
    EXPECT_FALSE(arena.owns(&elsewhere));
    // Lent again (the next call): the block from its start.
    arena.lend(b.base, block);
    EXPECT_EQ(arena.allocate(200), b.base);
    // Inside a parallel loop: nothing (the tasks' scratch comes from malloc),
    // and again after it; what it gave before is still its own.
    arena.set_in_loop(true);
    EXPECT_EQ(arena.allocate(16), nullptr);
    EXPECT_TRUE(arena.owns(b.base));
    arena.set_in_loop(false);
    EXPECT_EQ(arena.allocate(16), b.base + 384);  // 200 bytes: 256, and the gap
    // Taken back: owns nothing, gives nothing.
    arena.lend(nullptr, 0);
    EXPECT_FALSE(arena.owns(b.base));
    EXPECT_EQ(arena.allocate(1), nullptr);
}

// Under AddressSanitizer (tools/ci/40-reliability.sh): what the call has not
// been given is poisoned, so a kernel's stray access is reported as with malloc.
TEST(CallArena, PoisonsWhatTheCallHasNotBeenGivenUnderAddressSanitizer) {
#ifndef FBNGRAD_ASAN  // memory_poison.h
    GTEST_SKIP() << "not an AddressSanitizer build";
#else
    ArenaBlock b(4 * KiB);
    CallArena arena;
    arena.lend(b.base, 4 * KiB);
    EXPECT_TRUE(__asan_address_is_poisoned(b.base));
    auto *p = static_cast<uint8_t *>(arena.allocate(100));
    auto *q = static_cast<uint8_t *>(arena.allocate(128));
    for (uint8_t *x : {p - 8, p, p + 107, q - 8, q + 135}) EXPECT_FALSE(__asan_address_is_poisoned(x)) << x - p;
    EXPECT_TRUE(__asan_address_is_poisoned(p + 120)) << "past the 8 bytes after";
    EXPECT_TRUE(__asan_address_is_poisoned(q + 200));
    arena.lend(nullptr, 0);  // the block back to its owner, readable again
    EXPECT_FALSE(__asan_address_is_poisoned(q + 200));
#endif
}

TEST(CallArena, ThreadsOfACallNeverShareABlock) {
    const size_t block = 64 * KiB;
    ArenaBlock b(block);
    CallArena arena;
    arena.lend(b.base, block);
    constexpr int kThreads = 8, kEach = 100;
    std::vector<std::vector<uint8_t *>> got(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < kEach; ++i)
                if (auto *p = static_cast<uint8_t *>(arena.allocate(100))) {
                    std::memset(p, t, 100);
                    got[t].push_back(p);
                }
        });
    for (std::thread &t : threads) t.join();
    size_t count = 0;
    for (int t = 0; t < kThreads; ++t)
        for (uint8_t *p : got[t]) {
            ++count;
            for (int k = 0; k < 100; ++k) ASSERT_EQ(p[k], uint8_t(t)) << "a block written by two threads";
        }
    // 800 asked, 256 fit (128 bytes each and the gap): every one that fits is given, no more.
    EXPECT_EQ(count, block / (2 * CallArena::kAlignment));
}

TEST(ScratchMemory, ReleaseGivesBackWhatACallKept) {
    FBNGRAD_SKIP_UNLESS_BUILT(FBNGRAD_FLOAT32, FBNGRAD_NHWC, true);
    fbngrad_release_scratch();  // what earlier tests left
    fbngrad::test::TestProblem t(FBNGRAD_FLOAT32, FBNGRAD_NHWC, {32, 7, 7, 512}, true);
    fbngrad_status st;
    ASSERT_EQ(t.run(&st), FBNGRAD_OK) << st.message;
    const std::string bits = t.output_bits();
    // The partials' two blocks of 128 KiB or more, and this thread's block for small scratch.
    EXPECT_GE(fbngrad_release_scratch(), int64_t(2 * 128 * KiB + fbngrad::runtime::kCallArenaBytes));
    EXPECT_EQ(fbngrad::release_scratch(), 0);
    // The next call allocates afresh: the same bits.
    ASSERT_EQ(t.run(&st), FBNGRAD_OK) << st.message;
    EXPECT_EQ(t.output_bits(), bits);
    EXPECT_GE(fbngrad_release_scratch(), int64_t(2 * 128 * KiB + fbngrad::runtime::kCallArenaBytes));
}

}  // namespace
