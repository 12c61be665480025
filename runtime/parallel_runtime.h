// fbngrad's parallel loops on the caller's thread pool (fbngrad_set_parallel_for).
//
// Every parallel loop of every CPU variant is one halide_do_par_for call (the
// kernels use no other parallel construct: tests/check_parallel_runtime.cmake
// checks their objects). fbngrad's private Halide runtime routes that call to
// the runner the call started with, or to fbngrad's own pool (own_pool.h) when none is set.
#pragma once

#include <cstdint>

#include "fbngrad/fbngrad.h"

namespace fbngrad::runtime {

struct RunnerRecord;  // one installed runner and the calls that use it

// Held by a call for its whole duration (CallContext has one): the runner that
// was installed when the call started. set_parallel_for waits for every lease
// of the runner it replaces, so a runner is never used after it was replaced.
class RunnerLease {
public:
    RunnerLease();
    ~RunnerLease();
    RunnerLease(const RunnerLease &) = delete;
    RunnerLease &operator=(const RunnerLease &) = delete;
    fbngrad_parallel_for_fn fn() const;
    void *ctx() const;

private:
    RunnerRecord *record_;
};

// fbngrad_set_parallel_for: installs fn (NULL: fbngrad's own pool) for calls that
// start from now on, then waits until the calls still using the old runner
// have returned.
void set_parallel_for(fbngrad_parallel_for_fn fn, void *runner_ctx);

// Routes Halide's parallel loops through the call's lease (install_halide_handlers calls it).
// On fbngrad's own pool, a loop's tasks run in runs of consecutive tasks, a
// few per thread of the pool (whose size set_num_threads tells it, note_pool_threads).
void install_parallel_runtime();
void note_pool_threads(int n);  // n <= 0: Halide's default

struct CallContext;
// The task size of the kernels' loops that only place work (generators/schedule.h):
// the rule's size (task_size.h: rule_task_elements) on a caller's runner (or
// without a call); on fbngrad's own pool,
// at least that and as large as leaves kRunsPerThread tasks a thread (one in a
// small call, task_size.h: kSmallCallElements). The kernels
// call it as fbng_task_elements(user_context, elements, rule_elements).
int32_t task_elements(const CallContext *call, int64_t elements, int32_t rule_elements);

}  // namespace fbngrad::runtime
