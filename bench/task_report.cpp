#include "task_report.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "fbngrad/fbngrad.h"

namespace fbngrad_bench {
namespace {

using Clock = std::chrono::steady_clock;

// A spin-wait's pause: the other hardware thread of the core keeps its share.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

bool g_reversed = false;  // set_task_order_reversed
bool g_on_worker = false; // set_tasks_on_worker

// The timing runner: the tasks one after the other on this thread (in index
// order, or the reverse), each timed and its time kept at its index. One
// Timer serves every call of a profile, and start() keeps its storage: from
// the second call on, a loop's times go where the last call's went, with no
// allocation inside the call (a loop's allocation once came to 0.1-0.3 us,
// which the model took for time outside the tasks: serial on any core count).
struct Timer {
    Clock::time_point call_start;
    std::vector<std::vector<double>> loops;  // the first `used` are this call's
    size_t used = 0;
    std::vector<double> edges;  // each loop's start and end, in us since call_start
    void start(Clock::time_point t0) {
        call_start = t0;
        used = 0;
        edges.clear();
        edges.reserve(64);
    }
    // The loop's tasks, each timed into `loop`: on this thread, or on the worker.
    static int run_tasks(std::vector<double> &loop, int32_t count, fbngrad_task_fn task, void *task_ctx) {
        for (int32_t k = 0; k < count; ++k) {
            const int32_t i = g_reversed ? count - 1 - k : k;
            const Clock::time_point t0 = Clock::now();
            if (int rc = task(task_ctx, i)) return rc;
            loop[size_t(i)] = us_since(t0);
        }
        return 0;
    }
    static int run(void *self, int32_t count, fbngrad_task_fn task, void *task_ctx) {
        Timer &timer = *static_cast<Timer *>(self);
        if (timer.used == timer.loops.size()) timer.loops.emplace_back();
        auto &loop = timer.loops[timer.used++];
        loop.assign(size_t(count), 0.0);
        timer.edges.push_back(us_since(timer.call_start));
        const int rc = timer.worker ? timer.worker->run(loop, count, task, task_ctx)
                                    : run_tasks(loop, count, task, task_ctx);
        timer.edges.push_back(us_since(timer.call_start));
        return rc;
    }

    // --fbngrad_task_thread=worker: one other thread runs every loop's tasks,
    // one after the other, while the calling thread spins until the loop is
    // done. The call's own work (before, between and after its loops) then
    // runs with the caches the tasks leave a caller on many cores, which
    // streams 1/P of the tensors, not all of them (docs/threads.md).
    struct Worker {
        std::atomic<uint64_t> posted{0}, done{0};
        std::atomic<bool> stop{false};
        std::vector<double> *loop = nullptr;
        int32_t count = 0;
        fbngrad_task_fn task = nullptr;
        void *task_ctx = nullptr;
        int rc = 0;
        std::thread thread{[this] {
            uint64_t seen = 0;
            for (;;) {
                uint64_t now;
                while ((now = posted.load(std::memory_order_acquire)) == seen) {
                    if (stop.load(std::memory_order_relaxed)) return;
                    cpu_relax();
                }
                seen = now;
                rc = run_tasks(*loop, count, task, task_ctx);
                done.store(now, std::memory_order_release);
            }
        }};
        int run(std::vector<double> &l, int32_t n, fbngrad_task_fn t, void *ctx) {
            loop = &l, count = n, task = t, task_ctx = ctx;
            const uint64_t job = posted.load(std::memory_order_relaxed) + 1;
            posted.store(job, std::memory_order_release);
            while (done.load(std::memory_order_acquire) != job) cpu_relax();
            return rc;
        }
        ~Worker() {
            stop.store(true);
            thread.join();
        }
    };
    std::unique_ptr<Worker> worker;  // null: the tasks run on the calling thread
    explicit Timer(bool on_worker) {
        if (on_worker) worker = std::make_unique<Worker>();
    }
};

nlohmann::ordered_json g_report = nlohmann::ordered_json::array();

int noop_task(void *, int32_t) { return 0; }

// The timing runner's own time per task that falls outside the task's timed
// span (the clock reads' halves and the push_back): it runs between the tasks
// on this serial runner only, and would otherwise count as time outside the
// tasks, which the model treats as serial (70 ns a task on the Zen 3 VM: 3 %
// of a 0.3 ms call of 140 tasks). Measured once, on tasks that do nothing:
// each iteration's time less the span it records. The fastest of a few
// rounds, like the tasks. On the worker, the same per task, and per loop
// the hand-over to the worker and back (measured on loops of one empty task).
struct RunnerOverhead {
    double per_task_us = 0, per_loop_us = 0;
};

RunnerOverhead runner_overhead(bool on_worker) {
    auto measure = [](bool worker) {
        constexpr int32_t kTasks = 20000, kLoops = 2000;
        RunnerOverhead best{1e9, 1e9};
        Timer timer(worker);
        for (int round = 0; round < 5; ++round) {
            timer.start(Clock::now());
            Clock::time_point t0 = Clock::now();
            Timer::run(&timer, kTasks, noop_task, nullptr);
            double recorded = 0;
            for (double t : timer.loops[0]) recorded += t;
            best.per_task_us = std::min(best.per_task_us, (us_since(t0) - recorded) / kTasks);
            if (!worker) continue;
            timer.start(Clock::now());
            t0 = Clock::now();
            recorded = 0;
            for (int l = 0; l < kLoops; ++l) {
                Timer::run(&timer, 1, noop_task, nullptr);
                timer.used = 0;
                recorded += timer.loops[0][0];
            }
            best.per_loop_us = std::min(best.per_loop_us, (us_since(t0) - recorded) / kLoops - best.per_task_us);
        }
        return RunnerOverhead{std::max(0.0, best.per_task_us), worker ? std::max(0.0, best.per_loop_us) : 0.0};
    };
    if (on_worker) {
        static const RunnerOverhead worker = measure(true);
        return worker;
    }
    static const RunnerOverhead caller = measure(false);
    return caller;
}

}  // namespace

void set_task_order_reversed(bool reversed) { g_reversed = reversed; }
void set_tasks_on_worker(bool on_worker) { g_on_worker = on_worker; }

int32_t TaskProfile::min_tasks() const {
    int32_t m = 0;
    for (const auto &l : task_us) m = m == 0 ? int32_t(l.size()) : std::min(m, int32_t(l.size()));
    return m;
}

double TaskProfile::longest_task_share() const {
    double longest = 0;
    for (const auto &l : task_us)
        for (double t : l) longest = std::max(longest, t);
    return call_us > 0 ? longest / call_us : 0;
}

bool profile_tasks(const std::function<bool()> &call, int repeats, TaskProfile *out, std::string *err) {
    // Each task's fastest time, and the fastest time outside the tasks (each
    // call's own: its time less its tasks'), so that a call slowed by the
    // machine's other work does not count as time outside the tasks.
    *out = TaskProfile{};
    double outside = 0;
    Timer timer(g_on_worker);
    const RunnerOverhead overhead = runner_overhead(g_on_worker);
    for (int r = 0; r < repeats; ++r) {
        fbngrad_set_parallel_for(Timer::run, &timer);
        const Clock::time_point t0 = Clock::now();
        timer.start(t0);
        const bool ok = call();
        const double call_us = us_since(t0);
        fbngrad_set_parallel_for(nullptr, nullptr);
        if (!ok) {
            *err = "the call failed on the timing runner";
            return false;
        }
        const std::vector<std::vector<double>> &loops = timer.loops;
        const size_t used = timer.used;
        double tasks = 0;
        size_t count = 0;
        for (size_t l = 0; l < used; ++l) {
            for (double t : loops[l]) tasks += t;
            count += loops[l].size();
        }
        tasks += double(count) * overhead.per_task_us + double(used) * overhead.per_loop_us;  // the runner's, not the call's
        // The time outside the loops, where it falls: before the first, between
        // two, after the last (the loops' own edges as the runner saw them).
        std::vector<double> gaps;
        double last = 0;
        for (size_t e = 0; e < timer.edges.size(); e += 2) {
            gaps.push_back(timer.edges[e] - last);
            last = timer.edges[e + 1];
        }
        gaps.push_back(call_us - last);
        if (r == 0) {
            outside = call_us - tasks;
            out->task_us.assign(loops.begin(), loops.begin() + ptrdiff_t(used));
            out->gap_us = std::move(gaps);
            continue;
        }
        bool same = used == out->task_us.size();
        for (size_t l = 0; same && l < used; ++l) same = loops[l].size() == out->task_us[l].size();
        if (!same) {
            *err = "the parallel loops differ between two calls of the same problem";
            return false;
        }
        outside = std::min(outside, call_us - tasks);
        for (size_t g = 0; g < gaps.size(); ++g) out->gap_us[g] = std::min(out->gap_us[g], gaps[g]);
        for (size_t l = 0; l < used; ++l)
            for (size_t i = 0; i < loops[l].size(); ++i)
                out->task_us[l][i] = std::min(out->task_us[l][i], loops[l][i]);
    }
    out->call_us = std::max(0.0, outside);
    for (const auto &l : out->task_us)
        for (double t : l) out->call_us += t;
    return true;
}

void add_to_task_report(const std::string &benchmark, int64_t elements, const TaskProfile &p) {
    nlohmann::ordered_json loops = nlohmann::ordered_json::array();
    for (const auto &l : p.task_us) loops.push_back({{"tasks", l.size()}, {"task_us", l}});
    g_report.push_back({{"name", benchmark},
                        {"elements", elements},
                        {"call_us", p.call_us},
                        {"gap_us", p.gap_us},
                        {"loops", loops}});
}

bool write_task_report(const std::string &path, const std::string &cpu, int repeats, std::string *err) {
    const nlohmann::ordered_json doc = {
        {"about", "fbngrad_bench --fbngrad_task_report: each call's parallel loops on a serial timing runner "
                  "(each task's fastest of `repeats` calls, call_us = those plus the fastest time outside the tasks, less "
                  "the timing runner's own time between tasks, runner_overhead_us_per_task); "
                  "bench/task_model.py models the speed-up on P cores"},
        {"fbngrad_version", fbngrad_version()},
        {"cpu", cpu},
        {"repeats", repeats},
        {"runner_overhead_us_per_task", runner_overhead(g_on_worker).per_task_us},
        {"runner_overhead_us_per_loop", runner_overhead(g_on_worker).per_loop_us},
        {"task_order", g_reversed ? "reverse" : "index"},
        {"task_thread", g_on_worker ? "worker" : "caller"},
        {"benchmarks", g_report}};
    const std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp);
        f << doc.dump(1) << "\n";
        if (!f) {
            *err = "cannot write " + tmp;
            return false;
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        *err = "cannot rename " + tmp + " to " + path;
        return false;
    }
    return true;
}

}  // namespace fbngrad_bench
