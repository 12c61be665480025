#include "parallel_runtime.h"

#include <condition_variable>
#include <mutex>
#include <string>

#include "HalideRuntime.h"
#include "halide_glue.h"

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
    return l->task(l->user_context, l->min + index, l->closure);
}

int do_par_for(void *user_context, halide_task_t task, int min, int size, uint8_t *closure) {
    // The private runtime runs fbngrad's kernels only, and every kernel call
    // passes its CallContext (api.cpp, split_phase_api.cpp).
    CallContext *call = static_cast<CallContext *>(user_context);
    fbngrad_parallel_for_fn fn = call ? call->runner.fn() : nullptr;
    if (!fn) return halide_default_do_par_for(user_context, task, min, size, closure);
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

}  // namespace fbngrad::runtime
