// fbngrad's own pool (runtime/parallel_runtime.cpp, on_own_pool): the threads
// that run a loop when no runner is set. Linked against the runtime itself
// (libfbngrad.a keeps its Halide runtime private), and driven through
// halide_do_par_for, the one entry point of every parallel loop of the kernels
// (tests/check_parallel_runtime.cmake), without a call: no runner, the own pool.
//
// Oracle: the threads that ran a loop's tasks, counted by the tasks themselves.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "halide_glue.h"
#include "own_pool.h"
#include "task_size.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern "C" int halide_do_par_for(void *user_context, int (*task)(void *, int, uint8_t *), int min, int size,
                                 uint8_t *closure);

namespace {

// One loop's tasks: each keeps its thread busy for 50 us, long enough for
// every thread of the pool that is awake to take some of a loop's tasks, and
// records the thread; the task at `fail_at` fails with 7.
struct Loop {
    int fail_at = -1;
    std::mutex m;
    std::set<std::thread::id> threads;
    std::vector<int> runs_of;  // how often each index ran
    std::atomic<int> ran{0};
    std::atomic<int> bad_index{0};  // tasks given an index outside [min, min + size)
    int min = 0, size = 0;

    static int task(void *, int index, uint8_t *self) {
        auto *l = reinterpret_cast<Loop *>(self);
        if (index < l->min || index >= l->min + l->size) ++l->bad_index;
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
        while (std::chrono::steady_clock::now() < until) {
        }
        {
            std::lock_guard<std::mutex> lock(l->m);
            l->threads.insert(std::this_thread::get_id());
            if (index >= l->min && index < l->min + l->size) ++l->runs_of[size_t(index - l->min)];
        }
        ++l->ran;
        return index == l->fail_at ? 7 : 0;
    }
    int run(int first, int tasks) {
        min = first, size = tasks;
        runs_of.assign(size_t(tasks), 0);
        return halide_do_par_for(nullptr, task, first, tasks, reinterpret_cast<uint8_t *>(this));
    }
    bool each_index_once() const {
        for (int r : runs_of)
            if (r != 1) return false;
        return true;
    }
};

class OwnPool : public testing::Test {
protected:
    void SetUp() override { fbngrad::runtime::install_halide_handlers(); }
    void TearDown() override { fbngrad::runtime::set_num_threads(0); }
};

// fbngrad_set_num_threads(n) holds after a larger n: a loop runs on at most n
// threads, which take the loop's tasks in turn. Halide's pool, under the own
// pool until 2026-12-07, never shrank (it woke every worker it had made for a
// job of more tasks than were asleep): a pool set to 1 after 8 ran its loops on 8.
TEST_F(OwnPool, KeepsToItsThreadCountAfterALargerOne) {
    fbngrad::runtime::set_num_threads(8);
    {
        Loop grow;  // the pool makes its 8 threads
        ASSERT_EQ(grow.run(0, 256), 0);
        EXPECT_EQ(grow.ran, 256);
        EXPECT_LE(grow.threads.size(), 8u);
    }
    for (int n : {1, 2, 3})
        for (int tasks : {0, 1, 2, 7, 63, 64, 65, 256}) {
            fbngrad::runtime::set_num_threads(n);
            Loop l;
            ASSERT_EQ(l.run(3, tasks), 0) << n << " threads, " << tasks << " tasks";
            EXPECT_EQ(l.ran, tasks) << n << " threads, " << tasks << " tasks";
            EXPECT_EQ(l.bad_index, 0) << n << " threads, " << tasks << " tasks";
            EXPECT_TRUE(l.each_index_once()) << n << " threads, " << tasks << " tasks";
            EXPECT_LE(l.threads.size(), size_t(n)) << n << " threads, " << tasks << " tasks";
            if (n == 1 && tasks > 0)
                EXPECT_EQ(l.threads.count(std::this_thread::get_id()), 1u) << "one thread: the caller's";
        }
}

// And it uses them: a loop of n tasks that each wait until all n have started
// (or 10 s have passed) ends only if n threads ran it at once. A pool that ran
// its loops on the calling thread alone passes the test above; not this one.
// A loop of n tasks that each wait until all n have started (or 10 s have
// passed): it ends in time only if n threads ran it at once. "" if they did,
// else what went wrong. user_context: the call the loop belongs to, if any;
// ran: where to put the threads that ran it.
std::string rendezvous(int n, void *user_context = nullptr, std::set<std::thread::id> *ran = nullptr) {
    struct Rendezvous {
        int n;
        std::atomic<int> started{0}, timed_out{0};
        std::mutex m;
        std::set<std::thread::id> threads;
        static int task(void *, int, uint8_t *self) {
            auto *r = reinterpret_cast<Rendezvous *>(self);
            {
                std::lock_guard<std::mutex> lock(r->m);
                r->threads.insert(std::this_thread::get_id());
            }
            ++r->started;
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (r->started.load() < r->n) {
                if (std::chrono::steady_clock::now() > deadline) {
                    ++r->timed_out;
                    break;
                }
                std::this_thread::yield();
            }
            return 0;
        }
    } r{n};
    if (int rc = halide_do_par_for(user_context, Rendezvous::task, 0, n, reinterpret_cast<uint8_t *>(&r)))
        return "the loop failed with " + std::to_string(rc);
    if (r.timed_out) return "the loop's " + std::to_string(n) + " tasks never all ran at once";
    if (r.threads.size() != size_t(n)) return std::to_string(r.threads.size()) + " threads ran it";
    if (ran) *ran = r.threads;
    return "";
}

// And it uses them. A pool that ran its loops on the calling thread alone
// passes the test above; not this one.
TEST_F(OwnPool, RunsALoopOnAllItsThreads) {
    fbngrad::runtime::set_num_threads(8);
    for (int n : {2, 3, 8}) {
        fbngrad::runtime::set_num_threads(n);
        EXPECT_EQ(rendezvous(n), "") << n << " threads";
    }
}

// Workers that have waited awake for longer than kOwnPoolSpinMicros sleep;
// the next loop wakes them, every time (a lost wake-up leaves the rendezvous
// one thread short until its 10 s are up).
TEST_F(OwnPool, WakesItsSleepingWorkers) {
    for (int n : {2, 3}) {
        fbngrad::runtime::set_num_threads(n);
        for (int round = 0; round < 5; ++round) {
            std::this_thread::sleep_for(std::chrono::microseconds(20 * fbngrad::runtime::kOwnPoolSpinMicros));
            EXPECT_EQ(rendezvous(n), "") << n << " threads, round " << round;
        }
    }
}

double process_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// ...and sleep they do: once the pool has been idle for longer than its spin,
// its workers use no CPU. Oracle: the process's CPU time over 200 ms of the
// test's own sleep; 3 workers that waited awake would use 600 ms of it.
TEST_F(OwnPool, GivesItsCoresBackWhenIdle) {
    fbngrad::runtime::set_num_threads(4);
    ASSERT_EQ(rendezvous(4), "");
    std::this_thread::sleep_for(std::chrono::microseconds(20 * fbngrad::runtime::kOwnPoolSpinMicros));
    const double before = process_cpu_seconds();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_LT(process_cpu_seconds() - before, 0.05) << "the pool's workers kept their cores while idle";
}

// Loops started from several threads at once, and loops inside a task: one
// loop has the workers at a time and the others run on their own calling
// thread, so every loop ends with each of its tasks run once, and none waits
// for another (a loop inside a task that waited for the pool would wait for
// itself).
TEST_F(OwnPool, LoopsFromSeveralThreadsAndInsideTasks) {
    fbngrad::runtime::set_num_threads(3);
    struct Nested {
        std::atomic<int> outer{0}, inner{0};
        static int inner_task(void *, int, uint8_t *self) {
            ++reinterpret_cast<Nested *>(self)->inner;
            return 0;
        }
        static int outer_task(void *, int, uint8_t *self) {
            auto *n = reinterpret_cast<Nested *>(self);
            ++n->outer;
            return halide_do_par_for(nullptr, inner_task, 0, 5, self);
        }
    };
    std::atomic<int> wrong{0};
    std::vector<std::thread> callers;
    for (int t = 0; t < 4; ++t)
        callers.emplace_back([t, &wrong] {
            for (int k = 0; k < 200; ++k) {
                const int tasks = (k * 7 + t * 3) % 70;
                Loop l;
                if (l.run(k, tasks) != 0 || l.ran != tasks || l.bad_index != 0 || !l.each_index_once()) ++wrong;
                if (k % 20 == 0) {
                    Nested n;
                    if (halide_do_par_for(nullptr, Nested::outer_task, 0, 8, reinterpret_cast<uint8_t *>(&n)) != 0 ||
                        n.outer != 8 || n.inner != 40)
                        ++wrong;
                }
            }
        });
    for (auto &c : callers) c.join();
    EXPECT_EQ(wrong, 0) << "loops with a task missing, repeated or failed";
}

// A call of fewer than kHalidePoolElements elements runs its loops on
// Halide's pool (its CallContext says how large it is), one of that many on
// the own pool's threads, as does a loop that knows no call. Oracle: the
// threads that ran a loop of 2 tasks that each wait for the other.
TEST_F(OwnPool, SmallCallsRunOnHalidesPool) {
    fbngrad::runtime::set_num_threads(2);
    const std::thread::id caller = std::this_thread::get_id();
    std::set<std::thread::id> own, small, large;
    ASSERT_EQ(rendezvous(2, nullptr, &own), "");
    own.erase(caller);
    ASSERT_EQ(own.size(), 1u);
    for (int64_t elements : {int64_t(1), fbngrad::runtime::kHalidePoolElements - 1}) {
        fbngrad::runtime::CallContext call;
        call.elements = elements;
        ASSERT_EQ(rendezvous(2, &call, &small), "") << elements << " elements";
        small.erase(caller);
        EXPECT_EQ(small.count(*own.begin()), 0u) << elements << " elements: on the own pool's worker";
    }
    fbngrad::runtime::CallContext call;
    call.elements = fbngrad::runtime::kHalidePoolElements;
    ASSERT_EQ(rendezvous(2, &call, &large), "") << "a call of kHalidePoolElements elements";
    large.erase(caller);
    EXPECT_EQ(large, own) << "a call of kHalidePoolElements elements: not on the own pool's worker";
}

#if defined(__SANITIZE_THREAD__)
#define FBNGRAD_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FBNGRAD_TEST_TSAN 1
#endif
#endif

// A child of fork() has none of its parent's workers: it runs its loops on a
// pool of its own (a pool that waited for the parent's workers would hang, one
// that counted on them would lose their tasks). Forked right after a loop,
// while the parent's workers still wait awake.
TEST_F(OwnPool, RunsLoopsInAForkedChild) {
#if defined(FBNGRAD_TEST_TSAN)
    GTEST_SKIP() << "ThreadSanitizer ends a child of a multithreaded process that starts threads";
#elif defined(FBNGRAD_TEST_UNDER_EMULATOR)
    GTEST_SKIP() << "qemu-user aborts when a child of a multithreaded process starts threads";
#else
    fbngrad::runtime::set_num_threads(3);
    ASSERT_EQ(rendezvous(3), "");
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        const bool ok = rendezvous(3).empty() && [] {
            Loop l;
            return l.run(0, 64) == 0 && l.ran == 64 && l.each_index_once();
        }();
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    pid_t done = 0;
    for (int waited_ms = 0; (done = waitpid(child, &status, WNOHANG)) == 0 && waited_ms < 30000; waited_ms += 10)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (done == 0) {
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        FAIL() << "the child's loops did not end in 30 s";
    }
    ASSERT_TRUE(WIFEXITED(status)) << "the child ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    EXPECT_EQ(WEXITSTATUS(status), 0) << "a loop in the child ran on fewer threads than asked, or lost tasks";
#endif
}

// A failing task fails the loop with its own result, on one thread and on
// several; on one thread no task starts after it; and the pool goes on.
TEST_F(OwnPool, ReturnsAFailingTasksResult) {
    for (int n : {1, 4}) {
        fbngrad::runtime::set_num_threads(n);
        Loop l;
        l.fail_at = 5;
        EXPECT_EQ(l.run(0, 64), 7) << n << " threads";
        EXPECT_GE(l.ran, 6) << n << " threads";
        if (n == 1) EXPECT_EQ(l.ran, 6) << "one thread: in order, stopping at the failure";
        Loop next;
        EXPECT_EQ(next.run(0, 64), 0) << n << " threads";
        EXPECT_EQ(next.ran, 64) << n << " threads";
        EXPECT_TRUE(next.each_index_once()) << n << " threads";
    }
}

}  // namespace
