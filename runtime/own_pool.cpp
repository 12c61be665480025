#include "own_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <system_error>
#include <thread>

#include <pthread.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace fbngrad::runtime {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

// One loop at a time. `state` numbers the loops: odd while loop state/2 is
// open to workers, even once its caller has closed it. A worker enters a loop
// by counting itself in `active` and then finding the loop still open; the
// caller closes the loop and then waits for `active` to fall to 0. Both steps
// are sequentially consistent, so a worker either is counted before the caller
// waits or sees the loop closed, and never reads `body`/`ctx` (which the next
// loop's caller rewrites) or the caller's work (on its stack) after the caller
// has returned.
class Pool {
public:
    void run(int threads, void (*body)(void *), void *ctx) {
        bool idle = false;
        if (threads <= 1 || !busy_.compare_exchange_strong(idle, true, std::memory_order_acquire)) {
            body(ctx);
            return;
        }
        const int helpers = grow(threads - 1);
        body_ = body;
        ctx_ = ctx;
        helpers_.store(helpers, std::memory_order_relaxed);
        const uint64_t open = state_.load(std::memory_order_relaxed) + 1;
        state_.store(open);
        if (sleeping_.load() > 0) {
            std::lock_guard<std::mutex> lock(sleep_mutex_);
            wake_.notify_all();
        }
        body(ctx);
        state_.store(open + 1);
        for (int spins = 0; active_.load(std::memory_order_acquire) != 0; ++spins) {
            if (spins < 4096)
                cpu_relax();
            else
                std::this_thread::yield();  // a worker was descheduled mid-task
        }
        busy_.store(false, std::memory_order_release);
    }

private:
    // Starts workers until there are `workers`; returns how many there are, at
    // most `workers`: fewer where the system would start no more threads (the
    // loop then runs on those there are, as it would on a busy machine).
    int grow(int workers) {
        if (made_.load(std::memory_order_acquire) < workers) {
            std::lock_guard<std::mutex> lock(grow_mutex_);
            for (int i = made_.load(std::memory_order_relaxed); i < workers; ++i) {
                try {
                    // Detached: the pool outlives static destruction (it is
                    // never freed), and a worker asleep at exit holds nothing.
                    std::thread([this, i] { work(i); }).detach();
                } catch (const std::system_error &) {
                    break;
                }
                made_.store(i + 1, std::memory_order_release);
            }
        }
        return std::min(workers, made_.load(std::memory_order_acquire));
    }

    void work(int index) {
        using Clock = std::chrono::steady_clock;
        const auto spin = std::chrono::microseconds(kOwnPoolSpinMicros);
        uint64_t seen = 0;  // the last loop this worker looked at
        auto last = Clock::now();
        for (int polls = 0;; ++polls) {
            const uint64_t s = state_.load(std::memory_order_acquire);
            if ((s & 1) && s != seen) {
                seen = s;
                if (index < helpers_.load(std::memory_order_relaxed)) {
                    active_.fetch_add(1);
                    if (state_.load() == s) body_(ctx_);
                    active_.fetch_sub(1, std::memory_order_release);
                }
                last = Clock::now();
                polls = 0;
                continue;
            }
            cpu_relax();
            if ((polls & 63) != 63) continue;
            if (Clock::now() - last < spin) {
                // On cores shared with more threads than they have, the
                // thread a core would run instead (another of the loop's
                // bodies, the caller's) runs now rather than at the next tick.
                std::this_thread::yield();
                continue;
            }
            std::unique_lock<std::mutex> lock(sleep_mutex_);
            sleeping_.fetch_add(1);
            wake_.wait(lock, [&] {
                const uint64_t t = state_.load();
                return (t & 1) && t != seen;
            });
            sleeping_.fetch_sub(1);
            last = Clock::now();
            polls = 0;
        }
    }

    // What waiting workers poll, read-mostly, on a cache line of its own; the
    // line that each joining and leaving worker writes is the next one.
    alignas(64) std::atomic<uint64_t> state_{0};  // see the class comment
    std::atomic<int> helpers_{0};                 // how many workers the open loop wants (workers 0 .. helpers-1)
    void (*body_)(void *) = nullptr;              // written only while no worker can enter (state even, active 0)
    void *ctx_ = nullptr;
    alignas(64) std::atomic<int> active_{0};      // workers inside the open loop
    alignas(64) std::atomic<bool> busy_{false};   // a loop has the workers
    std::atomic<int> sleeping_{0};                // workers waiting on wake_
    std::atomic<int> made_{0};                    // workers started
    std::mutex sleep_mutex_, grow_mutex_;
    std::condition_variable wake_;
};

// Never freed: detached workers use it until the process ends.
Pool *g_pool = nullptr;
std::once_flag g_pool_made;

// A child of fork() has the calling thread only: no worker, and perhaps a
// lock held by a thread that no longer exists. It starts a pool of its own
// (the parent's is left as it is, unused).
void new_pool_in_child() { g_pool = new Pool; }

Pool &pool() {
    std::call_once(g_pool_made, [] {
        g_pool = new Pool;
        pthread_atfork(nullptr, nullptr, new_pool_in_child);
    });
    return *g_pool;
}

}  // namespace

void run_on_own_pool(int threads, void (*body)(void *ctx), void *ctx) { pool().run(threads, body, ctx); }

}  // namespace fbngrad::runtime
