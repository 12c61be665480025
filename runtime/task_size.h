// The size of a task on fbngrad's own pool, for the kernels' loops that only
// place work (generators/schedule.h: task_elements): the rule's size, or larger
// so that a loop over `elements` leaves kRunsPerThread tasks a thread (one below
// kSmallCallElements). Shared
// by the runtime (parallel_runtime.cpp) and the tuner's JIT (bench/tune/), so
// that a tuned schedule is timed with the task sizes the library will use.
#pragma once

#include <algorithm>
#include <cstdint>

namespace fbngrad::runtime {

constexpr int kRunsPerThread = 4;

// The many-core rule asks every loop over the tensors for min(256, elements /
// rule_elements) tasks (generators/schedule.h). Tasks of at most this many
// elements meet it: rule_elements, or elements / 256 where that is more (then
// 256 tasks are enough, and larger ones add fewer partial sums and less task
// overhead). The NHWC sum blocks follow the same rule, written as rows in
// generators/schedule.cpp (nhwc_rows_per_block).
constexpr int64_t kRuleMaxTasks = 256;
// The rule's smallest task, in elements (generators/schedule.h: kElementsPerTask).
constexpr int32_t kRuleTaskElements = 16384;

inline int32_t rule_task_elements(int64_t elements, int32_t rule_elements) {
    const int64_t per_task = elements / kRuleMaxTasks;  // rounded down: 256 tasks or more
    return int32_t(std::min<int64_t>(INT32_MAX, std::max<int64_t>(rule_elements, per_task)));
}

// Below this many elements a call on fbngrad's own pool gives each thread one
// task, not kRunsPerThread: a 0.03 ms call lost a fifth of its time to the
// extra tasks (NCHW 32,28,28,8 and 8,14,14,96 on 2 Zen 3 cores: 0.74-0.92x
// of one task a thread), where balance gains nothing.
constexpr int64_t kSmallCallElements = int64_t(1) << 20;

// Below this many elements a call on fbngrad's own pool runs its loops on
// Halide's thread pool, not on the own pool's threads that wait awake
// (own_pool.h): on 2 threads of those, calls of 75K and 100K float32 elements
// (1,56,56,24 and 4,28,28,32, 12-25 us) ran 0.84-0.89x as fast as on Halide's,
// and 0.63-0.88x on the calling thread alone, where 150K and 200K (8,14,14,96,
// 32,28,28,8) ran 1.1-1.6x as fast as on Halide's (2026-12-07, Intel Xeon VM;
// docs/threads.md). Only where the tasks run: the same bits.
constexpr int64_t kHalidePoolElements = int64_t(1) << 17;

inline int32_t own_pool_task_elements(int64_t elements, int32_t rule_elements, int threads) {
    const int64_t runs = elements < kSmallCallElements ? 1 : kRunsPerThread;
    const int64_t per_run = elements / (runs * std::max(1, threads));
    return int32_t(std::min<int64_t>(INT32_MAX, std::max<int64_t>(rule_task_elements(elements, rule_elements), per_run)));
}

// The x86 NCHW one pass (src/two_pass_route.h) gives a task every sample of a
// group of channels, so in each sample a task reads one contiguous run: its
// channels' planes, (task / (N * plane)) channels of them. Where that run is
// shorter than this many elements, the call takes the two passes instead. On a
// caller's runner of 1 and 2 threads (2026-12-07, Zen 5 VM; docs/threads.md),
// the two passes were 1.5-2.3x as fast as the one pass's runs of 392 to 784
// float32 elements from cold caches (NCHW 32,7,7,512, 32,14,14,256,
// 32,14,14,1024, 32,7,7,2048), 0.88-1.41x as fast as its runs of 1568
// (32,28,28,512), and slower than its runs of 3136 (32,56,56,256): short runs
// of many samples at once are what the prefetchers do worst with.
constexpr int64_t kShortestOnePassRun = 1024;

// Whether a call of the x86 NCHW one pass, N samples of `plane` elements a
// channel and `elements` in all, takes the two passes where its loops' tasks
// hold `task` elements: where one channel exceeds a task (the one pass could
// not offer the rule's tasks), or where the call is more than one task and a
// task's run in each sample would be shorter than kShortestOnePassRun.
inline bool nchw_takes_two_passes(int64_t n, int64_t plane, int64_t elements, int64_t task) {
    const int64_t channel = n * plane;
    if (channel <= 0) return false;
    if (channel > task) return true;
    return elements > task && task / channel * plane < kShortestOnePassRun;
}

// The piece of a loop over `units` units (rows, channels), given the largest
// piece the many-core rule allows (`capped`, at least 1): never larger, so
// never fewer tasks. 32 tasks or more are rounded up to a multiple of 64, so
// that waves of 16, 32 or 64 cores end full (49 equal tasks keep 64 cores at
// most 49x busy; 63 tasks, 63x), and the units are shared out equally rather
// than as full pieces and a short last one. A function of its arguments only:
// the NHWC sum blocks it sizes must depend on the shape alone. The kernels call
// it as fbng_even_piece (parallel_runtime.cpp), the tuner's JIT directly: an
// extern, because the same arithmetic as Halide expressions in a split factor
// kept the generator's bounds inference busy for many minutes.
inline int32_t even_piece(int32_t units, int32_t capped) {
    if (units <= 0 || capped <= 0) return 1;
    const int64_t tasks = (int64_t(units) + capped - 1) / capped;
    const int64_t rounded = tasks >= 32 ? (tasks + 63) / 64 * 64 : tasks;
    return int32_t(std::max<int64_t>(1, (int64_t(units) + rounded - 1) / rounded));
}

// The NHWC sum blocks' channel strips (generators/schedule.cpp,
// schedule_nhwc_block_sums): the channels one task sums over a block of `rows`
// rows. Whole rows where rows x channels fit in `task_elements`; else strips of
// a multiple of `align` channels (at least one: a strip of 64 float32 channels
// is 4 cache lines a row), as wide as fit and then evened out. Never wider
// than `widest` (a multiple of `align`): a task sums its strip in a buffer on
// its own stack, of that many channels. Only places the work: every channel
// sums the block's rows in order whichever strip holds it, so a strip may
// follow the runner (task_elements) where the blocks may not. An extern for
// the kernels (fbng_strip_channels), like even_piece.
inline int32_t strip_channels(int32_t channels, int32_t rows, int32_t task_elements, int32_t align, int32_t widest) {
    if (channels <= 0 || rows <= 0 || align <= 0) return std::max(1, channels);
    const int64_t fits = int64_t(rows) * channels <= task_elements
                             ? int64_t(channels)
                             : std::max<int64_t>(align, int64_t(std::max(1, task_elements)) / rows / align * align);
    const int64_t width = std::min<int64_t>(fits, std::max(align, widest));
    if (width >= channels) return channels;
    const int64_t strips = (channels + width - 1) / width;
    const int64_t even = ((channels + strips - 1) / strips + align - 1) / align * align;
    return int32_t(std::min<int64_t>(channels, even));
}

}  // namespace fbngrad::runtime
