#!/usr/bin/env python3
"""task_model.py on hand-made task reports: the rule's minimum, greedy runners and waves of P, the serial part."""

import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import task_model  # noqa: E402


def bench(elements, call_us, *loops):
    return {"name": "fbngrad/float32/NHWC/train/1,1,1,1/real_time", "elements": elements, "call_us": call_us,
            "loops": [{"tasks": len(l), "task_us": l} for l in loops]}


class Rule(unittest.TestCase):
    def test_required_tasks(self):
        r = task_model.required_tasks
        self.assertEqual(r(0), 1)
        self.assertEqual(r(16383), 1)
        self.assertEqual(r(16384 * 49), 49)
        self.assertEqual(r(16384 * 256), 256)
        self.assertEqual(r(16384 * 1000), 256)


    def test_light_loop_asked_for_its_share(self):
        # A loop at 1/8 of the heaviest loop's time is asked for 1/8 of the tasks; at 1/4 or
        # more it is a loop over the tensors and is asked for the full count.
        self.assertEqual(task_model.loop_requirements(16384 * 64, [64.0, 8.0]), [64, 8])
        self.assertEqual(task_model.loop_requirements(16384 * 64, [64.0, 16.0]), [64, 64])
        self.assertEqual(task_model.loop_requirements(16384 * 64, [0.0, 0.0]), [64, 64])
        report = {"benchmarks": [bench(16384 * 64, 80.0, [1.0] * 64, [1.0] * 7)]}
        (row,) = task_model.rows(report, [4])
        self.assertEqual(row["required"], [64, 7])
        self.assertTrue(row["meets"])
        report = {"benchmarks": [bench(16384 * 64, 80.0, [1.0] * 64, [2.0] * 7)]}
        (row,) = task_model.rows(report, [4])
        self.assertEqual(row["required"], [64, 14])
        self.assertFalse(row["meets"])


class Model(unittest.TestCase):
    def test_waves(self):
        # 5 tasks in waves of 2: (3, 1), (2, 2), (5) -> 3 + 2 + 5.
        self.assertEqual(task_model.loop_time_waves([3, 1, 2, 2, 5], 2), 10)
        self.assertEqual(task_model.loop_time_waves([3, 1, 2, 2, 5], 8), 5)

    def test_greedy(self):
        # 2 cores: a takes 3 (free at 3), b 1 (1); b takes 2 (3); a 2 (5); b 5 (8).
        self.assertEqual(task_model.loop_time_greedy([3, 1, 2, 2, 5], 2), 8)
        self.assertEqual(task_model.loop_time_greedy([3, 1, 2, 2, 5], 8), 5)
        self.assertEqual(task_model.loop_time_greedy([4.0] * 6, 3), 8)
        self.assertEqual(task_model.loop_time_greedy([], 4), 0)
        # Slow and fast tasks in turn (32 us on 4 cores, 8 at best): a barrier every P
        # tasks waits for a slow one each time (4 waves of 3), a shared counter nearly evens
        # them out (worked by hand: the cores end at 7, 8, 8 and 9).
        spread = [3.0, 1.0] * 8
        self.assertEqual(task_model.loop_time_waves(spread, 4), 12)
        self.assertEqual(task_model.loop_time_greedy(spread, 4), 9)

    def test_schedules_in_the_model(self):
        b = bench(16384 * 16, 32.0, [3.0, 1.0] * 8)
        self.assertAlmostEqual(task_model.model(b, [4])[4], 32.0 / 9.0)
        self.assertAlmostEqual(task_model.model(b, [4], "waves")[4], 32.0 / 12.0)

    def test_speedup_with_serial_part(self):
        # 16 equal tasks of 1 us and 4 us outside them: P=4 -> 4 + 4 = 8 us of 20.
        b = bench(16384 * 16, 20.0, [1.0] * 16)
        m = task_model.model(b, [1, 4, 16])
        self.assertAlmostEqual(m[1], 1.0)
        self.assertAlmostEqual(m[4], 20.0 / 8.0)
        self.assertAlmostEqual(m[16], 20.0 / 5.0)

    def test_rows_flag_too_few_tasks(self):
        # Both loops over the tensors (the second holds 60 us against the first's 64).
        report = {"benchmarks": [bench(16384 * 64, 130.0, [1.0] * 64, [20.0] * 3)]}
        (row,) = task_model.rows(report, [4])
        self.assertEqual(row["tasks"], [64, 3])
        self.assertEqual(row["required"], [64, 64])
        self.assertFalse(row["meets"])
        self.assertAlmostEqual(row["serial_share"], 6.0 / 130.0)


class Order(unittest.TestCase):
    def test_pearson_and_spread(self):
        self.assertAlmostEqual(task_model.pearson([1, 2, 3], [2, 4, 6]), 1.0)
        self.assertAlmostEqual(task_model.pearson([1, 2, 3], [3, 2, 1]), -1.0)
        self.assertEqual(task_model.pearson([1, 1, 1], [1, 2, 3]), 0.0)
        self.assertAlmostEqual(task_model.spread([1.0, 2.0, 2.0, 4.0]), 2.0)
        self.assertAlmostEqual(task_model.spread([1.0, 2.0, 6.0]), 3.0)

    def test_order_rows(self):
        slow_every_third = [3.0 if i % 3 == 0 else 1.0 for i in range(18)]
        a = {"benchmarks": [bench(16384 * 18, 40.0, slow_every_third, [1.0] * 4)]}
        # The same tasks slow when reversed (noise aside): their data, r near 1.
        same = {"benchmarks": [bench(16384 * 18, 40.0, [t * 1.1 for t in slow_every_third], [1.0] * 4)]}
        (row,) = task_model.order_rows(a, same)  # the loop of 4 tasks is left out
        self.assertEqual(row[1:3], (0, 18))
        self.assertAlmostEqual(row[3], 1.0)
        self.assertAlmostEqual(row[4], 3.0)
        # Slow where the order put them: other tasks, r below 0.
        moved = {"benchmarks": [bench(16384 * 18, 40.0, [3.0 if i % 3 == 1 else 1.0 for i in range(18)], [1.0] * 4)]}
        self.assertLess(task_model.order_rows(a, moved)[0][3], 0.0)
        with self.assertRaises(ValueError):
            task_model.order_rows(a, {"benchmarks": [bench(16384 * 18, 40.0, [1.0] * 17, [1.0] * 4)]})
        with self.assertRaises(ValueError):
            task_model.order_rows(a, {"benchmarks": [bench(16384 * 18, 40.0, slow_every_third)]})


class Cli(unittest.TestCase):
    def run_main(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = task_model.main(list(argv))
        return code, out.getvalue(), err.getvalue()

    def test_table_and_errors(self):
        with tempfile.TemporaryDirectory() as d:
            good = os.path.join(d, "good.json")
            with open(good, "w") as f:
                json.dump({"benchmarks": [bench(16384 * 4, 4.0, [1.0] * 4)]}, f)
            code, out, _ = self.run_main(good, "--cores", "2,4", "--markdown")
            self.assertEqual(code, 0)
            self.assertIn("| float32 NHWC train 1,1,1,1 | 4 | 4 | yes | 0.0 % | 2.0 | 4.0 |", out)
            self.assertIn("each task to the core free first", out)
            code, out, _ = self.run_main(good, "--cores", "4", "--schedule", "waves")
            self.assertEqual(code, 0)
            self.assertIn("waves of P", out)
            with self.assertRaises(SystemExit):
                with contextlib.redirect_stderr(io.StringIO()):
                    task_model.main([good, "--schedule", "static"])
            # --reversed: a table of the loops of 16 tasks or more; none here, an error.
            self.assertEqual(self.run_main(good, "--reversed", good)[0], 1)
            big = os.path.join(d, "big.json")
            with open(big, "w") as f:
                json.dump({"benchmarks": [bench(16384 * 16, 20.0, [1.0, 2.0] * 8)]}, f)
            code, out, _ = self.run_main(big, "--reversed", big, "--markdown")
            self.assertEqual(code, 0)
            self.assertIn("| float32 NHWC train 1,1,1,1 | 0 | 16 | 1.00 | 1.33 | 1.33 |", out)
            self.assertEqual(self.run_main(big, "--reversed", os.path.join(d, "missing.json"))[0], 1)
            empty = os.path.join(d, "empty.json")
            with open(empty, "w") as f:
                json.dump({"benchmarks": []}, f)
            self.assertEqual(self.run_main(empty)[0], 1)
            self.assertEqual(self.run_main(os.path.join(d, "missing.json"))[0], 1)
            with self.assertRaises(SystemExit):
                with contextlib.redirect_stderr(io.StringIO()):
                    task_model.main([good, "--cores", "0"])

    def test_against(self):
        with tempfile.TemporaryDirectory() as d:
            base, new = os.path.join(d, "base.json"), os.path.join(d, "new.json")
            with open(base, "w") as f:
                json.dump({"benchmarks": [bench(16384 * 4, 10.0, [2.0] * 4)]}, f)
            with open(new, "w") as f:
                json.dump({"benchmarks": [bench(16384 * 4, 9.0, [1.5, 2.0, 2.0, 1.5])]}, f)
            code, out, _ = self.run_main(new, "--against", base, "--markdown")
            self.assertEqual(code, 0)
            self.assertIn("| float32 NHWC train 1,1,1,1 | 4 | 8.00 | 7.00 | 0.875 | 0.875 |", out)
            # The same loop cut into other tasks: compared, each loop's tasks "base -> this".
            other = os.path.join(d, "other.json")
            with open(other, "w") as f:
                json.dump({"benchmarks": [bench(16384 * 4, 10.0, [4.0] * 2, [1.0] * 3)]}, f)
            with open(new, "w") as f:
                json.dump({"benchmarks": [bench(16384 * 4, 9.0, [1.5, 2.0, 2.0, 1.5], [1.5] * 3)]}, f)
            code, out, _ = self.run_main(new, "--against", other, "--markdown")
            self.assertEqual(code, 0)
            self.assertIn("| float32 NHWC train 1,1,1,1 | 2 -> 4, 3 | 11.00 | 11.50 | 1.045 | 0.875, 1.500 |", out)
            # Other loops in the base: not the same op, an error, not a ratio.
            with open(other, "w") as f:
                json.dump({"benchmarks": [bench(16384 * 4, 10.0, [4.0] * 2)]}, f)
            code, _, err = self.run_main(new, "--against", other)
            self.assertEqual(code, 1)
            self.assertIn("loops here", err)
            # No benchmark in both.
            renamed = bench(16384 * 4, 10.0, [2.0] * 4)
            renamed["name"] = "fbngrad/float32/NCHW/train/1,1,1,1/real_time"
            with open(other, "w") as f:
                json.dump({"benchmarks": [renamed]}, f)
            self.assertEqual(self.run_main(new, "--against", other)[0], 1)
            self.assertEqual(self.run_main(new, "--against", os.path.join(d, "missing.json"))[0], 1)
            with self.assertRaises(SystemExit):
                with contextlib.redirect_stderr(io.StringIO()):
                    task_model.main([new, "--against", base, "--outside"])

    def test_against_control(self):
        def named(shape, *args):
            b = bench(*args)
            b["name"] = f"fbngrad/float32/NHWC/train/{shape}/real_time"
            return b

        with tempfile.TemporaryDirectory() as d:
            base, new = os.path.join(d, "base.json"), os.path.join(d, "new.json")
            # The new report runs 1.25x slower as a whole (the control, 2,2,2,2: every loop 1.25x);
            # 1,1,1,1's first loop 1.5x slower, its second 1.25x: only the first changed.
            with open(base, "w") as f:
                json.dump({"benchmarks": [named("1,1,1,1", 16384 * 4, 10.0, [2.0] * 4, [1.0] * 4),
                                          named("2,2,2,2", 16384 * 4, 10.0, [1.0] * 4, [1.0] * 4)]}, f)
            with open(new, "w") as f:
                json.dump({"benchmarks": [named("1,1,1,1", 16384 * 4, 10.0, [3.0] * 4, [1.25] * 4),
                                          named("2,2,2,2", 16384 * 4, 10.0, [1.25] * 4, [1.25] * 4)]}, f)
            code, out, _ = self.run_main(new, "--against", base, "--control", "2,2,2,2", "--markdown")
            self.assertEqual(code, 0)
            # The call: 17 us against 12, 1.417x, over the control's 1.25x: 1.133x.
            self.assertIn("| float32 NHWC train 1,1,1,1 | 4, 4 | 12.00 | 17.00 | 1.133 | 1.200, 1.000 |", out)
            self.assertIn("| float32 NHWC train 2,2,2,2 | 4, 4 | 8.00 | 10.00 | 1.000 | 1.000, 1.000 |", out)
            self.assertIn("divided by 2,2,2,2's", out)
            # A control that is not in the reports: an error, not an undivided table.
            code, _, err = self.run_main(new, "--against", base, "--control", "3,3,3,3")
            self.assertEqual(code, 1)
            self.assertIn("no 3,3,3,3", err)
            with self.assertRaises(SystemExit):
                with contextlib.redirect_stderr(io.StringIO()):
                    task_model.main([new, "--control", "2,2,2,2"])

    def test_split(self):
        # Two tasks of 1 and 3 us on 4 cores: the loop takes 3 us (4/3 the speed-up); split
        # in two, the 0.5, 0.5, 1.5, 1.5 us tasks take 1.5 us (8/3). The report stays as it was.
        report = {"benchmarks": [bench(16384 * 2, 4.0, [1.0, 3.0])]}
        self.assertAlmostEqual(task_model.model(report["benchmarks"][0], [4])[4], 4.0 / 3.0)
        split = task_model.split_tasks(report, 2)
        self.assertEqual(split["benchmarks"][0]["loops"][0]["task_us"], [0.5, 0.5, 1.5, 1.5])
        self.assertEqual(split["benchmarks"][0]["loops"][0]["tasks"], 4)
        self.assertAlmostEqual(task_model.model(split["benchmarks"][0], [4])[4], 8.0 / 3.0)
        self.assertEqual(report["benchmarks"][0]["loops"][0]["task_us"], [1.0, 3.0])
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            with open(path, "w") as f:
                json.dump(report, f)
            code, out, _ = self.run_main(path, "--split", "2", "--cores", "4")
            self.assertEqual(code, 0)
            self.assertIn("what-if: each task as 2 of 1/2 its time", out)
            self.assertIn("2.7", out)
            with self.assertRaises(SystemExit):
                with contextlib.redirect_stderr(io.StringIO()):
                    task_model.main([path, "--split", "0"])

    def test_outside(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "gaps.json")
            b = bench(16384 * 4, 10.0, [1.0] * 2, [2.0] * 2)
            b["gap_us"] = [1.5, 0.25, 0.25]
            with open(path, "w") as f:
                json.dump({"benchmarks": [b]}, f)
            code, out, _ = self.run_main(path, "--outside", "--markdown")
            self.assertEqual(code, 0)
            self.assertIn("| float32 NHWC train 1,1,1,1 | 10.0 | 2.00 | 20.0 % | 1.50 | 0.25 | 0.25 |", out)
            # A report without gap_us (older), or with the wrong count, is refused with the reason.
            old = os.path.join(d, "old.json")
            with open(old, "w") as f:
                json.dump({"benchmarks": [bench(16384 * 4, 10.0, [1.0] * 2)]}, f)
            code, _, err = self.run_main(old, "--outside")
            self.assertEqual(code, 1)
            self.assertIn("no gap_us", err)
            b["gap_us"] = [1.0]
            with open(path, "w") as f:
                json.dump({"benchmarks": [b]}, f)
            code, _, err = self.run_main(path, "--outside")
            self.assertEqual(code, 1)
            self.assertIn("gap_us has 1 values for 2 loops", err)
            with self.assertRaises(SystemExit):
                with contextlib.redirect_stderr(io.StringIO()):
                    task_model.main([path, "--outside", "--reversed", path])

    def test_disturbance(self):
        # Older reports carry no steal_ms: no line. Steal over 1 % of the report's time: disturbed.
        report = {"benchmarks": [bench(16384 * 4, 4.0, [1.0] * 4)]}
        self.assertIsNone(task_model.disturbance(report))
        report.update(steal_ms=10.0, wall_ms=60000.0)
        self.assertEqual(task_model.disturbance(report), "Steal time 10 ms of 60 s.")
        report["steal_ms"] = -1
        self.assertEqual(task_model.disturbance(report), "Steal time unknown (no /proc/stat).")
        report["steal_ms"] = 900.0
        self.assertTrue(task_model.disturbance(report).startswith("Disturbed: the VM's steal time was 900 ms of 60 s"))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "busy.json")
            with open(path, "w") as f:
                json.dump(dict(report, task_thread="elsewhere"), f)
            code, out, _ = self.run_main(path, "--cores", "4")
            self.assertEqual(code, 0)
            self.assertIn("Disturbed:", out)
            self.assertIn("on the 'elsewhere' thread", out)  # an unknown task_thread is named, not a KeyError
    def test_round_trip(self):
        # Older reports carry no round_trip_ns: no line, no column. Newer: the median and range under the
        # table, a column in --outside ("-" for a benchmark without one), and each report's median in --ranges.
        a = dict(bench(16384 * 4, 4.0, [1.0] * 4), gap_us=[0.0, 0.0], round_trip_ns=50.0)
        b = dict(a, name="fbngrad/float32/NCHW/train/1,1,1,1/real_time", round_trip_ns=250.0)
        c = dict(a, name="fbngrad/float32/NCHW/infer/1,1,1,1/real_time", round_trip_ns=90.0)
        self.assertIsNone(task_model.round_trip_line({"benchmarks": [bench(16384 * 4, 4.0, [1.0] * 4)]}))
        self.assertEqual(task_model.round_trip({"benchmarks": [a, b, c]}), (90.0, 50.0, 250.0))
        self.assertEqual(task_model.round_trip_line({"benchmarks": [a, b, c]}),
                         "Round trip of a cache line from the calling thread to the worker and back: 90 ns "
                         "(median; 50-250 over the benchmarks).")
        with tempfile.TemporaryDirectory() as d:
            path, old = os.path.join(d, "new.json"), os.path.join(d, "old.json")
            with open(path, "w") as f:
                json.dump({"benchmarks": [a, b, c]}, f)
            no_trip = {k: v for k, v in c.items() if k != "round_trip_ns"}
            with open(old, "w") as f:
                json.dump({"benchmarks": [dict(no_trip, name=a["name"]), dict(no_trip, name=b["name"]), no_trip]}, f)
            code, out, _ = self.run_main(path, "--cores", "4")
            self.assertEqual(code, 0)
            self.assertIn("back: 90 ns (median; 50-250", out)
            code, out, _ = self.run_main(old, "--cores", "4")
            self.assertEqual(code, 0)
            self.assertNotIn("Round trip", out)
            code, out, _ = self.run_main(path, "--outside", "--markdown")
            self.assertEqual(code, 0)
            self.assertIn("| after | round trip ns |", out)
            self.assertIn("| float32 NCHW train 1,1,1,1 | 4.0 | 0.00 | 0.0 % | 0.00 | - | 0.00 | 250 |", out)
            with open(old, "w") as f:
                json.dump({"benchmarks": [dict(no_trip, name=a["name"]), b]}, f)
            code, out, _ = self.run_main(old, "--outside", "--markdown")
            self.assertIn("| float32 NHWC train 1,1,1,1 | 4.0 | 0.00 | 0.0 % | 0.00 | - | 0.00 | - |", out)
            code, out, _ = self.run_main(path, "--ranges", path, "--cores", "16")
            self.assertEqual(code, 0)
            self.assertIn(f"{path}: 0 of 0 (round trip 90 ns); {path}: 0 of 0 (round trip 90 ns).", out)

    def test_near_and_far(self):
        # --ranges --near NS: each row apart over the reports where its own round trip was below NS and
        # the others (a report may hold both), and per side the ResNet-50 (report, row) pairs reaching
        # the targets; refused without --ranges, with NS <= 0, or where a report has no round trip.
        fast = dict(bench(16384 * 64, 64.0, [1.0] * 64), name="fbngrad/float32/NHWC/train/32,7,7,512/real_time",
                    round_trip_ns=55.0)  # 16 at P = 16, 64 at P = 64
        slow = dict(fast, call_us=65.0, round_trip_ns=400.0)  # 1 us serial: 13 and 32.5
        other = dict(fast, name="fbngrad/float32/NCHW/train/32,7,7,512/real_time")
        with tempfile.TemporaryDirectory() as d:
            a, b, c = (os.path.join(d, x + ".json") for x in "abc")
            for path, benches in ((a, [fast, other]), (b, [slow, other]), (c, [slow, dict(other, round_trip_ns=390.0)])):
                with open(path, "w") as f:
                    json.dump({"benchmarks": benches}, f)
            code, out, _ = self.run_main(a, "--ranges", b, c, "--near", "150", "--cores", "16,64", "--markdown")
            self.assertEqual(code, 0)
            self.assertIn("| float32 NHWC train 32,7,7,512 | 1 | 16.0–16.0 | 64.0–64.0 | 2 | 13.0–13.0 | **32.5**–**32.5** |",
                          out)
            self.assertIn("| float32 NCHW train 32,7,7,512 | 2 | 16.0–16.0 | 64.0–64.0 | 1 | 16.0–16.0 | 64.0–64.0 |", out)
            self.assertIn("one per report: near 3 of 3; far 1 of 3.", out)
            for bad in (["--near", "150"], ["--ranges", b, "--near", "0"]):
                with self.assertRaises(SystemExit):
                    with contextlib.redirect_stderr(io.StringIO()):
                        task_model.main([a] + bad)
            with open(c, "w") as f:
                json.dump({"benchmarks": [slow, {k: v for k, v in other.items() if k != "round_trip_ns"}]}, f)
            code, _, err = self.run_main(a, "--ranges", c, "--near", "150")
            self.assertEqual(code, 1)
            self.assertIn("float32 NCHW train 32,7,7,512 has no round_trip_ns in every report", err)

    def test_ranges(self):
        # Two reports of the same two benchmarks: the range of each, bold below the targets, and
        # each report's count of rows that reach 12 at P = 16 and 40 at P = 64.
        fast = dict(bench(16384 * 64, 64.0, [1.0] * 64),  # 64 equal tasks: 16 at P = 16, 64 at P = 64
                    name="fbngrad/float32/NHWC/train/32,7,7,512/real_time")
        slow = dict(fast, call_us=64.0 + 1.0)  # 1 us serial: 65 / (1 + 4) = 13, 65 / (1 + 1) = 32.5
        other = dict(fast, name="fbngrad/float32/NCHW/train/1,1,1,1/real_time")  # not ResNet-50: not counted
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, "a.json"), os.path.join(d, "b.json")
            with open(a, "w") as f:
                json.dump({"benchmarks": [fast, other]}, f)
            with open(b, "w") as f:
                json.dump({"benchmarks": [slow, other]}, f)
            code, out, _ = self.run_main(a, "--ranges", b, "--cores", "16,64", "--markdown")
            self.assertEqual(code, 0)
            self.assertIn("| float32 NHWC train 32,7,7,512 | 13.0–16.0 | **32.5**–64.0 |", out)
            self.assertIn("| float32 NCHW train 1,1,1,1 | 16.0–16.0 | 64.0–64.0 |", out)
            self.assertIn(f"ResNet-50 rows reaching 12 at P = 16, 40 at P = 64: {a}: 1 of 1; {b}: 0 of 1.", out)
            # Without a target among --cores: no count line; a benchmark missing from one report: refused.
            code, out, _ = self.run_main(a, "--ranges", b, "--cores", "4")
            self.assertEqual(code, 0)
            self.assertNotIn("Rows reaching", out)
            with open(b, "w") as f:
                json.dump({"benchmarks": [slow]}, f)
            code, _, err = self.run_main(a, "--ranges", b)  # `other` is missing from b
            self.assertEqual(code, 1)
            self.assertIn("float32 NCHW train 1,1,1,1 is not in every report", err)
            with self.assertRaises(SystemExit):
                with contextlib.redirect_stderr(io.StringIO()):
                    task_model.main([a, "--ranges", b, "--outside"])


if __name__ == "__main__":
    unittest.main()
