// fbngrad's own threads: where a loop runs when no runner is set
// (parallel_runtime.cpp, on_own_pool). Workers that have just run a loop wait
// for the next one awake, for kOwnPoolSpinMicros, before they sleep: a call's
// loops follow one another within microseconds, and a sleeping worker's wake-up
// (a futex, and on a VM an interrupt to a halted virtual CPU) cost the short
// calls more than their extra loops' work. Measured on a 2-core Intel Xeon VM
// (2026-12-07, docs/threads.md): Halide's pool, whose workers sleep after a
// few yields, slept and woke 2.2-3.0 times a call of NHWC 32,7,7,512; the
// same calls on OpenMP threads that wait awake ran 1.4-1.5x as fast as on
// OpenMP threads that sleep.
#pragma once

namespace fbngrad::runtime {

// How long a worker waits awake after its last loop. Long enough to bridge a
// call's loops and the gap between the calls of one layer's backward pass;
// short enough that fbngrad's threads give their cores back to the trainer's
// own work well within one of its other operations.
constexpr int kOwnPoolSpinMicros = 100;

// Runs body(ctx) on the calling thread and, at the same time, on up to
// `threads` - 1 of the pool's workers (made the first time they are needed),
// and returns when every one of them has returned. The bodies share out the
// work among themselves (parallel_runtime.cpp: Drain). A body must not assume
// that any worker joins: a worker still busy elsewhere, or asleep and slow to
// wake, may arrive after the caller's body has done all the work, and then
// does not run it. One loop has the workers at a time: a loop started while
// another one runs (a second calling thread, or a loop inside a task) runs on
// its calling thread alone.
void run_on_own_pool(int threads, void (*body)(void *ctx), void *ctx);

}  // namespace fbngrad::runtime
