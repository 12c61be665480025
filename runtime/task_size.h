// The size of a task on fbngrad's own pool, for the kernels' loops that only
// place work (generators/schedule.h: task_elements): the rule's size, or larger
// so that a loop over `elements` leaves kRunsPerThread tasks a thread. Shared
// by the runtime (parallel_runtime.cpp) and the tuner's JIT (bench/tune/), so
// that a tuned schedule is timed with the task sizes the library will use.
#pragma once

#include <algorithm>
#include <cstdint>

namespace fbngrad::runtime {

constexpr int kRunsPerThread = 4;

inline int32_t own_pool_task_elements(int64_t elements, int32_t rule_elements, int threads) {
    const int64_t per_run = elements / (int64_t(kRunsPerThread) * std::max(1, threads));
    return int32_t(std::min<int64_t>(INT32_MAX, std::max<int64_t>(rule_elements, per_run)));
}

}  // namespace fbngrad::runtime
