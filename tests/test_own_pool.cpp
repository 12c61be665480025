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
#include <thread>
#include <vector>

#include "halide_glue.h"

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

// fbngrad_set_num_threads(n) holds after a larger n. Halide's pool never
// shrinks (it wakes every worker it has made for a job of more tasks than are
// asleep), so the own pool runs a loop as at most n tasks that take the loop's
// tasks in turn; before that, a pool set to 1 after 8 ran its loops on 8.
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
TEST_F(OwnPool, RunsALoopOnAllItsThreads) {
    fbngrad::runtime::set_num_threads(8);
    for (int n : {2, 3, 8}) {
        fbngrad::runtime::set_num_threads(n);
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
        ASSERT_EQ(halide_do_par_for(nullptr, Rendezvous::task, 0, n, reinterpret_cast<uint8_t *>(&r)), 0);
        EXPECT_EQ(r.timed_out, 0) << n << " threads: the loop's " << n << " tasks never all ran at once";
        EXPECT_EQ(r.threads.size(), size_t(n)) << n << " threads";
    }
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
