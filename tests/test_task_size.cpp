// runtime/task_size.h: the arithmetic that sizes the kernels' tasks (the
// many-core rule, generators/schedule.h). Checked against its promises, on
// every size around its thresholds, not against copied numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "task_size.h"

using namespace fbngrad::runtime;

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

TEST(TaskSize, RuleTaskElementsGivesTheRulesTaskCount) {
    for (int64_t elements : {int64_t(1), int64_t(16383), int64_t(16384), int64_t(16385), int64_t(4194303),
                             int64_t(4194304), int64_t(4194560), int64_t(6422528), int64_t(1) << 31}) {
        const int64_t per_task = rule_task_elements(elements, 16384);
        EXPECT_GE(per_task, 16384) << elements;
        // At least min(256, elements / 16384) tasks of that size.
        const int64_t want = std::max<int64_t>(1, std::min<int64_t>(256, elements / 16384));
        EXPECT_GE(ceil_div(elements, per_task), want) << elements;
    }
}

TEST(TaskSize, OwnPoolTasksAreNeverSmallerThanTheRules) {
    for (int threads : {0, 1, 2, 16, 128})
        for (int64_t elements : {int64_t(1000), int64_t(1) << 20, int64_t(1) << 26})
            EXPECT_GE(own_pool_task_elements(elements, 16384, threads), rule_task_elements(elements, 16384));
}

// fbngrad's own pool: one task a thread in a small call (its tasks' own cost
// was a fifth of a 0.03 ms call), kRunsPerThread from kSmallCallElements on.
TEST(TaskSize, OwnPoolGivesSmallCallsOneTaskAThread) {
    for (int threads : {1, 2, 3, 16})
        for (int64_t elements : {int64_t(100000), int64_t(200704), kSmallCallElements - 1, kSmallCallElements,
                                 int64_t(25690112)}) {
            const int64_t per_task = own_pool_task_elements(elements, 16384, threads);
            const int64_t runs = elements < kSmallCallElements ? 1 : kRunsPerThread;
            EXPECT_EQ(per_task, std::max<int64_t>(rule_task_elements(elements, 16384), elements / (runs * threads)))
                << elements << " elements, " << threads << " threads";
            // Never more tasks than the runs asked for (beyond the rule's own).
            if (per_task > rule_task_elements(elements, 16384))
                EXPECT_LE(ceil_div(elements, per_task), runs * threads + 1) << elements << ", " << threads;
        }
}

// The x86 NCHW one pass takes its two-pass route where one channel's planes
// (N*H*W elements) exceed the call's task size, or where a task's run of its
// channels in each sample would be shorter than kShortestOnePassRun
// (src/two_pass_route.h). On a caller's runner that is the rule's size:
// ResNet-50's NCHW shapes with fewer channels than the rule's tasks take it,
// and those whose tasks hold fewer than 1024 elements a sample; the others
// keep the one pass. On fbngrad's own pool, P threads: the one pass up to 4
// tasks a thread, as long as their runs are long enough.
TEST(TaskSize, NchwTwoPassRouteWhereAChannelExceedsATaskOrItsRunsAreShort) {
    struct Case {
        int64_t n, c, hw;
        bool on_runner;  // else on fbngrad's own pool of `threads`
        int threads;
        bool two_passes;
    };
    for (const Case &k : {// a channel exceeds the rule's task
                          Case{32, 64, 112 * 112, true, 0, true}, Case{32, 64, 56 * 56, true, 0, true},
                          Case{32, 128, 28 * 28, true, 0, true}, Case{32, 8, 28 * 28, true, 0, true},
                          // runs of 3136 and 1568 elements a sample
                          Case{32, 256, 56 * 56, true, 0, false}, Case{32, 512, 28 * 28, true, 0, false},
                          // runs of 392 to 784
                          Case{32, 256, 14 * 14, true, 0, true}, Case{32, 1024, 14 * 14, true, 0, true},
                          Case{32, 512, 7 * 7, true, 0, true}, Case{32, 2048, 7 * 7, true, 0, true},
                          // one sample: its channels are one run, however few
                          Case{1, 2048, 7 * 7, true, 0, false}, Case{1, 64, 112 * 112, true, 0, false},
                          // a call of one task: short runs, but no other task to run beside
                          Case{32, 8, 7 * 7, true, 0, false},
                          // fbngrad's own pool
                          Case{32, 64, 112 * 112, false, 2, false}, Case{32, 64, 112 * 112, false, 16, false},
                          Case{32, 64, 112 * 112, false, 17, true}, Case{32, 64, 112 * 112, false, 64, true},
                          // (8 threads: a channel a task, runs of 784; 2: 4 channels, runs of 3136)
                          Case{32, 8, 28 * 28, false, 2, false}, Case{32, 8, 28 * 28, false, 8, true},
                          Case{32, 8, 28 * 28, false, 9, true}, Case{32, 2048, 7 * 7, false, 2, false},
                          Case{32, 256, 14 * 14, false, 2, false}, Case{32, 256, 14 * 14, false, 8, false},
                          Case{32, 256, 14 * 14, false, 16, true}, Case{32, 512, 7 * 7, false, 16, false},
                          Case{32, 512, 7 * 7, false, 64, true}}) {
        const int64_t elements = k.n * k.c * k.hw;
        const int32_t task = k.on_runner ? rule_task_elements(elements, kRuleTaskElements)
                                         : own_pool_task_elements(elements, kRuleTaskElements, k.threads);
        EXPECT_EQ(nchw_takes_two_passes(k.n, k.hw, elements, task), k.two_passes)
            << k.n << "," << k.c << "," << k.hw << (k.on_runner ? " on a runner" : " on the own pool of ")
            << k.threads << ": task " << task;
    }
}

// Around each threshold: a channel of task and task + 1 elements; runs of
// kShortestOnePassRun - 1 and kShortestOnePassRun; a call of task and task + 1.
TEST(TaskSize, NchwTwoPassRouteAtItsThresholds) {
    const int64_t task = 16384;
    EXPECT_FALSE(nchw_takes_two_passes(8, 2048, 8 * 2048 * 4, task));  // a channel of the task's size
    EXPECT_TRUE(nchw_takes_two_passes(8, 2049, 8 * 2049 * 4, task));
    // 16 samples: a task of 1024 elements a sample; planes of 1024 give one
    // channel a task (a run of 1024), of 1023 one too (16384 / 16368 = 1).
    EXPECT_FALSE(nchw_takes_two_passes(16, kShortestOnePassRun, 16 * kShortestOnePassRun * 8, task));
    EXPECT_TRUE(nchw_takes_two_passes(16, kShortestOnePassRun - 1, 16 * (kShortestOnePassRun - 1) * 8, task));
    // Channels of 32 planes of 256: a task holds 2 (runs of 512). A call of 2
    // channels is one task; of 3, more than one.
    EXPECT_FALSE(nchw_takes_two_passes(32, 256, 2 * 32 * 256, task));
    EXPECT_TRUE(nchw_takes_two_passes(32, 256, 3 * 32 * 256, task));
    EXPECT_FALSE(nchw_takes_two_passes(0, 49, 0, task));  // no samples: nothing to route
    EXPECT_FALSE(nchw_takes_two_passes(32, 0, 0, task));
}

TEST(TaskSize, EvenPieceNeverGivesFewerTasksAndEvensThemOut) {
    for (int32_t units : {1, 2, 7, 31, 32, 33, 49, 63, 64, 65, 196, 1568, 6272, 100352})
        for (int32_t capped : {1, 2, 3, 8, 24, 25, 32, 64, 256, 100000}) {
            const int32_t piece = even_piece(units, capped);
            ASSERT_GE(piece, 1);
            EXPECT_LE(piece, capped) << units << " units, cap " << capped;
            const int64_t tasks = ceil_div(units, piece), asked = ceil_div(units, capped);
            EXPECT_GE(tasks, asked) << units << " units, cap " << capped;
            // Evened: the units shared equally among the tasks asked for, 32 or
            // more rounded up to a multiple of 64 (waves of 16, 32, 64 cores).
            const int64_t shared = asked >= 32 ? ceil_div(asked, 64) * 64 : asked;
            EXPECT_EQ(piece, ceil_div(units, shared)) << units << " units, cap " << capped;
            EXPECT_LE(tasks, shared) << units << " units, cap " << capped;
        }
    EXPECT_EQ(even_piece(0, 5), 1);
    EXPECT_EQ(even_piece(5, 0), 1);
}

TEST(TaskSize, StripChannelsFitTheTaskOrTakeTheNarrowestStrip) {
    const int32_t align = 512, widest = 2048;
    for (int32_t channels : {1, 64, 511, 512, 513, 768, 1000, 1024, 1025, 2048, 2049, 2560, 4096, 100000})
        for (int32_t rows : {1, 7, 32, 48, 224, 256})
            for (int32_t task : {16384, 25088, 65536, 1 << 22}) {
                const int32_t w = strip_channels(channels, rows, task, align, widest);
                SCOPED_TRACE(testing::Message() << channels << " channels, " << rows << " rows, task " << task);
                ASSERT_GE(w, 1);
                ASSERT_LE(w, channels);
                // Never wider than a task's stack buffer holds (generators/schedule.h, kWidestStrip).
                EXPECT_LE(w, widest);
                const bool whole_rows_fit = int64_t(rows) * channels <= task;
                if (whole_rows_fit && channels <= widest) {
                    EXPECT_EQ(w, channels);  // whole rows where they fit
                    continue;
                }
                // The widest strip the task allows: whole rows, else as many aligned channels as fit.
                const int64_t fit =
                    whole_rows_fit ? channels : std::max<int64_t>(align, int64_t(task) / rows / align * align);
                const int64_t allowed = std::min<int64_t>(fit, widest);
                if (w == channels) {
                    // Whole rows only where no narrower strip fits the task better.
                    EXPECT_LE(channels, allowed);
                    continue;
                }
                EXPECT_EQ(w % align, 0);  // strip boundaries on whole vectors and cache lines
                // No wider than fits the task, unless it is the narrowest strip.
                EXPECT_TRUE(w == align || int64_t(w) * rows <= task);
                // Evened out: the last strip is not a sliver beside full ones.
                const int64_t strips = ceil_div(channels, w);
                EXPECT_GT(channels - (strips - 1) * w, 0);
                EXPECT_EQ(strips, ceil_div(channels, allowed));
            }
    EXPECT_EQ(strip_channels(0, 10, 16384, 512, 2048), 1);
    EXPECT_EQ(strip_channels(100, 0, 16384, 512, 2048), 100);
    // Whole rows that fit the task but not the widest strip: strips, evened out.
    EXPECT_EQ(strip_channels(4096, 1, 1 << 22, 512, 2048), 2048);
    EXPECT_EQ(strip_channels(2560, 1, 1 << 22, 512, 2048), 1536);
}

}  // namespace
