#include "task_report.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>

#include <unistd.h>

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

// The machine's steal time so far, in ms (/proc/stat: the time the hypervisor
// ran something else while a vCPU of this VM wanted to run); -1 where unknown.
double steal_ms() {
    std::ifstream f("/proc/stat");
    std::string cpu;
    long long v[8] = {};
    if (!(f >> cpu) || cpu != "cpu") return -1;
    for (long long &x : v)
        if (!(f >> x)) return -1;
    const long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? double(v[7]) * 1000.0 / double(hz) : -1;
}

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
        timer.edges.push_back(us_since(timer.call_start));  // first: the bookkeeping below is the runner's
        if (timer.used == timer.loops.size()) timer.loops.emplace_back();
        auto &loop = timer.loops[timer.used++];
        loop.assign(size_t(count), 0.0);
        const int rc = timer.worker ? timer.worker->run(&loop, count, task, task_ctx)
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
        fbngrad_task_fn task = nullptr;  // null: a job of `count` ping-pong exchanges (round_trip_ns)
        void *task_ctx = nullptr;
        int rc = 0;
        alignas(64) std::atomic<int64_t> ball{0};  // round_trip_ns's, on a cache line of its own
        char pad[64 - sizeof(std::atomic<int64_t>)];
        std::thread thread{[this] {
            uint64_t seen = 0;
            for (;;) {
                uint64_t now;
                while ((now = posted.load(std::memory_order_acquire)) == seen) {
                    if (stop.load(std::memory_order_relaxed)) return;
                    cpu_relax();
                }
                seen = now;
                if (task) {
                    rc = run_tasks(*loop, count, task, task_ctx);
                } else {
                    for (int64_t i = 0; i < count; ++i) {
                        while (ball.load(std::memory_order_acquire) != 2 * i + 1) cpu_relax();
                        ball.store(2 * i + 2, std::memory_order_release);
                    }
                    rc = 0;
                }
                done.store(now, std::memory_order_release);
            }
        }};
        int run(std::vector<double> *l, int32_t n, fbngrad_task_fn t, void *ctx) {
            loop = l, count = n, task = t, task_ctx = ctx;
            const uint64_t job = posted.load(std::memory_order_relaxed) + 1;
            posted.store(job, std::memory_order_release);
            if (!t) serve(n);
            while (done.load(std::memory_order_acquire) != job) cpu_relax();
            return rc;
        }
        // The calling thread's side of a ping-pong job: it serves, the worker returns.
        void serve(int32_t n) {
            for (int64_t i = 0; i < n; ++i) {
                ball.store(2 * i + 1, std::memory_order_release);
                while (ball.load(std::memory_order_acquire) != 2 * i + 2) cpu_relax();
            }
        }
        // One cache line from the calling thread to this worker and back, in ns:
        // the median of 9 rounds of 100 exchanges. What each loop's hand-over
        // and its first task's reads of what the calling thread wrote cost
        // grows with it (docs/threads.md: the VM's vCPUs near or far apart).
        double round_trip_ns() {
            std::vector<double> rounds;
            for (int r = 0; r < 9; ++r) {
                ball.store(0, std::memory_order_relaxed);
                const Clock::time_point t0 = Clock::now();
                run(nullptr, 100, nullptr, nullptr);
                rounds.push_back(us_since(t0) * 1000.0 / 100);
            }
            std::nth_element(rounds.begin(), rounds.begin() + 4, rounds.end());
            return rounds[4];
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

double g_steal_at_start = -1;                 // steal_ms() at the first profile
Clock::time_point g_first_profile = Clock::now();  // reset at the first profile

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
    // Each task's fastest time, and at each place outside the loops (before the
    // first, between two, after the last) the fastest time of the calls: the
    // call's own work, timed from the loops' edges as the runner saw them, so
    // that neither the timing runner's time between tasks nor the hand-over to
    // the worker and back counts as the call's (a hand-over estimated on empty
    // loops came to 0-0.6 us a loop by where the host put the two vCPUs, and
    // left 0.3-1.7 us of it in NHWC 32,7,7,512's serial time).
    *out = TaskProfile{};
    Timer timer(g_on_worker);
    // On the calling thread the tasks need no worker, but the round trip is
    // taken all the same, with one made for it: the same figure in both kinds
    // of report.
    out->round_trip_ns = timer.worker ? timer.worker->round_trip_ns() : Timer::Worker().round_trip_ns();
    if (g_steal_at_start < 0) {
        g_steal_at_start = steal_ms();
        g_first_profile = Clock::now();
    }
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
        std::vector<double> gaps;
        double last = 0;
        for (size_t e = 0; e < timer.edges.size(); e += 2) {
            gaps.push_back(timer.edges[e] - last);
            last = timer.edges[e + 1];
        }
        gaps.push_back(call_us - last);
        if (r == 0) {
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
        for (size_t g = 0; g < gaps.size(); ++g) out->gap_us[g] = std::min(out->gap_us[g], gaps[g]);
        for (size_t l = 0; l < used; ++l)
            for (size_t i = 0; i < loops[l].size(); ++i)
                out->task_us[l][i] = std::min(out->task_us[l][i], loops[l][i]);
    }
    for (double g : out->gap_us) out->call_us += std::max(0.0, g);
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
                        {"round_trip_ns", p.round_trip_ns},
                        {"loops", loops}});
}

bool write_task_report(const std::string &path, const std::string &cpu, int repeats, std::string *err) {
    const nlohmann::ordered_json doc = {
        {"about", "fbngrad_bench --fbngrad_task_report: each call's parallel loops on a serial timing runner "
                  "(each task's fastest of `repeats` calls; gap_us, the call's own time before, between and after "
                  "its loops, each the fastest; call_us = the sum of both; steal_ms: the VM's steal time over "
                  "the report's wall_ms, -1 where unknown; round_trip_ns: a cache line from the calling thread to the "
                  "timing runner's worker and back, taken before each benchmark's calls); bench/task_model.py "
                  "models the speed-up on P cores"},
        {"fbngrad_version", fbngrad_version()},
        {"cpu", cpu},
        {"repeats", repeats},
        {"steal_ms", g_steal_at_start < 0 ? -1.0 : std::max(-1.0, steal_ms() - g_steal_at_start)},
        {"wall_ms", us_since(g_first_profile) / 1000.0},
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
