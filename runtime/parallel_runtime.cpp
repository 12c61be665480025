#include "parallel_runtime.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "HalideRuntime.h"
#include "halide_glue.h"
#include "own_pool.h"
#include "scratch_memory.h"
#include "task_size.h"

// ThreadSanitizer builds (tests/tsan, tools/ci/40-reliability.sh).
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FBNGRAD_TSAN 1
#endif
#endif
#if !defined(FBNGRAD_TSAN) && defined(__SANITIZE_THREAD__)
#define FBNGRAD_TSAN 1
#endif
#ifdef FBNGRAD_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace fbngrad::runtime {

struct RunnerRecord {
    fbngrad_parallel_for_fn fn = nullptr;
    void *ctx = nullptr;
    int64_t leases = 0;  // calls running with this runner; guarded by g_mutex
};

namespace {

// A mutex rather than a reader-writer lock: glibc's rwlock prefers readers,
// so a stream of overlapping calls could keep set_parallel_for waiting forever.
// Here a replaced record takes no new leases; the wait is bounded by the
// calls already running.
std::mutex g_mutex;
std::condition_variable g_released;
RunnerRecord *g_current = new RunnerRecord;  // never null; leaked at exit on purpose (calls may outlive statics)

// What one halide_do_par_for hands to the runner as task_ctx.
struct Loop {
    halide_task_t task;
    void *user_context;
    int min;
    uint8_t *closure;
};

int run_one(void *task_ctx, int32_t index) {
    const Loop *l = static_cast<const Loop *>(task_ctx);
    const InTask in_task(l->user_context);  // the task's scratch on this thread's stack (scratch_memory.h)
    return l->task(l->user_context, l->min + index, l->closure);
}

// fbngrad's own pool of P threads: a loop whose size the shape alone sets
// (the NHWC sums' blocks, generators/schedule.h) runs in runs of consecutive
// tasks, kRunsPerThread a thread (one in a small call), so that each thread streams through
// contiguous memory; the other loops are cut that coarse by the kernels
// themselves (task_elements). Only where a task runs changes, never what it
// computes: the same bits.
std::atomic<int> g_pool_threads{0};  // fbngrad_set_num_threads; 0: Halide's default

int pool_threads() {
    const int n = g_pool_threads;
    if (n > 0) return n;
    static const int fallback = [] {  // Halide's own default: HL_NUM_THREADS, else the cores
        const char *env = std::getenv("HL_NUM_THREADS");
        const int e = env ? std::atoi(env) : 0;
        return e > 0 ? e : int(std::thread::hardware_concurrency());
    }();
    return fallback;
}

// A loop on fbngrad's own pool runs on at most P threads (P: the pool's size;
// own_pool.h), each of which takes runs of the loop's tasks from a shared
// counter until none is left. So a pool set to fewer threads than before uses
// fewer, and a worker that arrives late finds the work taken.
struct Drain {
    halide_task_t task;
    void *user_context;
    uint8_t *closure;
    int min, size, run;
    std::atomic<int> next{0};    // the next run to take
    std::atomic<int> failed{0};  // the first failing task's result; no run is taken after it
};

void drain(void *drain_ctx) {
    Drain *d = static_cast<Drain *>(drain_ctx);
    const InTask in_task(d->user_context);
    int rc = 0;
    while (rc == 0 && d->failed.load(std::memory_order_relaxed) == 0) {
        // In 64 bits: each taker's last fetch goes past the runs.
        const int64_t first = int64_t(d->next.fetch_add(1, std::memory_order_relaxed)) * d->run;
        if (first >= d->size) break;
        const int end = int(std::min<int64_t>(first + d->run, d->size));
        for (int i = int(first); i < end && rc == 0; ++i) rc = d->task(d->user_context, d->min + i, d->closure);
        if (rc != 0) {
            int none = 0;
            d->failed.compare_exchange_strong(none, rc);
        }
    }
}

// A small call's loop on Halide's pool: its tasks, each a drain. In
// ThreadSanitizer builds the loop says what Halide's pool, through its own
// uninstrumented locks, guarantees: the loop's start happens before each task,
// each task before the loop's return (without it, a task reading the call's
// runner was reported against the next fbngrad_set_parallel_for).
int drain_on_halide_pool(void *, int, uint8_t *drain_ctx) {
#ifdef FBNGRAD_TSAN
    __tsan_acquire(drain_ctx);
#endif
    drain(drain_ctx);
#ifdef FBNGRAD_TSAN
    __tsan_release(drain_ctx);
#endif
    return 0;
}

// Loops of fewer tasks than this are a small call's (the rule gives 64 tasks
// at 1M elements, task_size.h: kSmallCallElements): one run a thread, as
// own_pool_task_elements gives the other loops of such a call.
constexpr int kSmallLoopTasks = 64;

int on_own_pool(void *user_context, halide_task_t task, int min, int size, uint8_t *closure) {
    // A loop of one task, or a pool of one thread, runs on the calling thread
    // without waking the pool: the NHWC per-channel loop is one
    // task where its channels make no task of the call's size (generators/schedule.cpp,
    // schedule_nhwc_channel_tasks), on few threads every call.
    if (size <= 0) return 0;
    const int threads = std::max(1, pool_threads());
    if (size == 1 || threads == 1) {
        const InTask in_task(user_context);
        for (int i = 0; i < size; ++i)
            if (int rc = task(user_context, min + i, closure)) return rc;
        return 0;
    }
    const int runs_wanted = (size < kSmallLoopTasks ? 1 : kRunsPerThread) * threads;
    Drain d;
    d.task = task, d.user_context = user_context, d.closure = closure, d.min = min, d.size = size;
    d.run = (size + runs_wanted - 1) / runs_wanted;  // 1 where the loop has no more tasks than that
    const int runs = (size + d.run - 1) / d.run;
    const CallContext *call = static_cast<const CallContext *>(user_context);
    int rc = 0;  // Halide's pool's own failure, if any; a task's comes first
    if (call && call->elements >= 0 && call->elements < kHalidePoolElements) {
        uint8_t *ctx = reinterpret_cast<uint8_t *>(&d);
#ifdef FBNGRAD_TSAN
        __tsan_release(ctx);
#endif
        rc = halide_default_do_par_for(user_context, drain_on_halide_pool, 0, std::min(threads, runs), ctx);
#ifdef FBNGRAD_TSAN
        __tsan_acquire(ctx);
#endif
    } else {
        run_on_own_pool(std::min(threads, runs), drain, &d);
    }
    const int first = d.failed.load(std::memory_order_relaxed);
    return first != 0 ? first : rc;
}

int do_par_for(void *user_context, halide_task_t task, int min, int size, uint8_t *closure) {
    // The private runtime runs fbngrad's kernels only, and every kernel call
    // passes its CallContext (api.cpp, split_phase_api.cpp).
    CallContext *call = static_cast<CallContext *>(user_context);
    // The tasks' scratch comes from their threads' task stacks or malloc
    // (call_arena.h, set_in_loop; scratch_memory.h, InTask).
    struct InLoop {
        CallContext *call;
        explicit InLoop(CallContext *c) : call(c) {
            if (call) call->scratch.set_in_loop(true);
        }
        ~InLoop() {
            if (call) call->scratch.set_in_loop(false);
        }
    } in_loop(call);
    fbngrad_parallel_for_fn fn = call ? call->runner.fn() : nullptr;
    if (!fn) return on_own_pool(user_context, task, min, size, closure);
    if (size <= 0) return 0;
    Loop loop{task, user_context, min, closure};
    const int rc = fn(call->runner.ctx(), size, run_one, &loop);
    // A task's own failure has left its message already; a runner's has none.
    if (rc != 0 && call->error.empty())
        call->error = "the runner of fbngrad_set_parallel_for returned " + std::to_string(rc);
    return rc;
}

}  // namespace

RunnerLease::RunnerLease() {
    std::lock_guard<std::mutex> lock(g_mutex);
    record_ = g_current;
    ++record_->leases;
}

RunnerLease::~RunnerLease() {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (--record_->leases == 0 && record_ != g_current) g_released.notify_all();
}

fbngrad_parallel_for_fn RunnerLease::fn() const { return record_->fn; }
void *RunnerLease::ctx() const { return record_->ctx; }

void set_parallel_for(fbngrad_parallel_for_fn fn, void *runner_ctx) {
    auto *next = new RunnerRecord;
    next->fn = fn;
    next->ctx = fn ? runner_ctx : nullptr;
    std::unique_lock<std::mutex> lock(g_mutex);
    RunnerRecord *old = g_current;
    g_current = next;
    g_released.wait(lock, [old] { return old->leases == 0; });
    delete old;
}

void install_parallel_runtime() { halide_set_custom_do_par_for(do_par_for); }

int32_t task_elements(const CallContext *call, int64_t elements, int32_t rule_elements) {
    if (!call || call->runner.fn()) return rule_task_elements(elements, rule_elements);
    return own_pool_task_elements(elements, rule_elements, pool_threads());
}

void note_pool_threads(int n) { g_pool_threads = n > 0 ? n : 0; }

}  // namespace fbngrad::runtime

// Called by the kernels (generators/schedule.h: task_elements), once a call.
extern "C" int32_t fbng_task_elements(void *user_context, int32_t elements, int32_t rule_elements) {
    return fbngrad::runtime::task_elements(static_cast<const fbngrad::runtime::CallContext *>(user_context),
                                           elements, rule_elements);
}

// Called by the kernels (generators/schedule.cpp: piece_for_tasks), once a call and loop.
extern "C" int32_t fbng_even_piece(int32_t units, int32_t capped) {
    return fbngrad::runtime::even_piece(units, capped);
}

// Called by the kernels (generators/schedule.cpp: schedule_nhwc_block_sums), once a call.
extern "C" int32_t fbng_strip_channels(int32_t channels, int32_t rows, int32_t task_elements, int32_t align,
                                       int32_t widest) {
    return fbngrad::runtime::strip_channels(channels, rows, task_elements, align, widest);
}
