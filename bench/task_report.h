// The task report (fbngrad_bench --fbngrad_task_report=FILE): each fbngrad
// benchmark's call, run once more on a runner of fbngrad_set_parallel_for that
// runs the tasks one after the other on the calling thread and times each.
// Per benchmark: the tasks of every parallel loop and each task's time, and
// the call's time on that runner; bench/task_model.py turns them into a
// modelled speed-up on P cores. Serial timing keeps each task's time free of
// the other tasks' interference: the model's input, not a measurement of P cores.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fbngrad_bench {

struct TaskProfile {
    double call_us = 0;                        // the tasks' times plus the gaps'
    std::vector<std::vector<double>> task_us;  // per parallel loop, per task
    // The time outside the loops where it falls (each the fastest of the
    // calls): before the first loop, between each two, after the last.
    std::vector<double> gap_us;
    // A cache line from the calling thread to the timing runner's worker and
    // back (ns), taken before the calls: what hand-overs cost on the cores the
    // host gave the two threads, which a report's figures depend on.
    double round_trip_ns = 0;
    int32_t min_tasks() const;                 // the fewest tasks of any loop (0: no loop)
    double longest_task_share() const;         // the longest task / call_us
};

// Runs `call` `repeats` times on the timing runner; keeps each task's fastest
// time and each gap's. false when a call fails or the
// loops differ between calls.
bool profile_tasks(const std::function<bool()> &call, int repeats, TaskProfile *out, std::string *err);

// The order the timing runner runs a loop's tasks in (times are kept by index
// either way). Reverse tells a task's own cost from its place in the order:
// a slow task that stays slow when it runs last is slow by its data (where
// its part of the tensors lies), not by what ran before it.
void set_task_order_reversed(bool reversed);

// Whether the timing runner runs the tasks on a thread of its own (the calling
// thread waits) rather than on the calling thread. On the calling thread, the
// call's own work before, between and after its loops finds the caches that
// streaming all of the tensors left, as on one core; on a worker, the caches
// that a caller among many cores, which streams a P-th of them, would find.
// Neither changes what the tasks do or the order they run in.
void set_tasks_on_worker(bool on_worker);

// Collects profiles and writes them as JSON (the format task_model.py reads).
void add_to_task_report(const std::string &benchmark, int64_t elements, const TaskProfile &p);
// `repeats`: the calls each profile took (profile_tasks), recorded in the file.
bool write_task_report(const std::string &path, const std::string &cpu, int repeats, std::string *err);

}  // namespace fbngrad_bench
