#!/usr/bin/env python3
"""bench_table.py on hand-made Google Benchmark documents: names, medians, ratios, geometric means."""

import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_table  # noqa: E402


def run(name, ms, gbs=None, **extra):
    d = {"name": name, "run_name": name, "run_type": "iteration", "real_time": ms, "time_unit": "ms"}
    if gbs is not None:
        d["GB/s"] = gbs
    d.update(extra)
    return d


class ParseName(unittest.TestCase):
    def test_forms(self):
        p = bench_table.parse_name
        self.assertEqual(p("fbngrad/float32/NHWC/train/32,56,56,64/real_time"),
                         ("fbngrad", "float32", "NHWC", "train", "32,56,56,64", False, 0))
        self.assertEqual(p("onednn/bfloat16/NCHW/infer/1,56,56,24/cold/threads:2/iterations:200/real_time"),
                         ("onednn", "bfloat16", "NCHW", "infer", "1,56,56,24", True, 2))
        self.assertEqual(p("bandwidth/copy_nt/threads:1/real_time"), ("bandwidth", "copy_nt", 1))
        self.assertIsNone(p("something/else"))


class Table(unittest.TestCase):
    def render(self, *docs):
        paths = []
        with tempfile.TemporaryDirectory() as d:
            for i, doc in enumerate(docs):
                path = os.path.join(d, "%d.json" % i)
                with open(path, "w") as f:
                    json.dump(doc, f)
                paths.append(path)
            out = io.StringIO()
            argv = sys.argv
            sys.argv = ["bench_table.py"] + paths
            try:
                with contextlib.redirect_stdout(out):
                    bench_table.main()
            finally:
                sys.argv = argv
        return out.getvalue()

    def test_ratios_and_geomean(self):
        bench = {"context": {"fbngrad_threads": "2", "fbngrad_sweep_shapes": "1,12,12,64"},
                 "benchmarks": [
                     run("bandwidth/copy_nt/real_time", 10.0, 40.0),
                     # Three repetitions: the median (2 ms) counts, not the mean.
                     run("fbngrad/float32/NHWC/train/32,7,7,512/real_time", 2.0, 20.0),
                     run("fbngrad/float32/NHWC/train/32,7,7,512/real_time", 9.0, 4.0),
                     run("fbngrad/float32/NHWC/train/32,7,7,512/real_time", 1.0, 40.0),
                     run("onednn/float32/NHWC/train/32,7,7,512/real_time", 8.0, 5.0),
                     run("fbngrad/float32/NHWC/infer/32,7,7,512/real_time", 1.0, 30.0),
                     run("aten/float32/NHWC/infer/32,7,7,512/real_time", 2.0, 15.0),
                     run("naive/float32/NHWC/infer/32,7,7,512/real_time", 0.5, 60.0),  # not a peer
                     run("aten/float32/NCHW/train/32,7,7,512/real_time", 1.0, error_occurred=True,
                         error_message="disagrees"),
                 ]}
        tf = {"context": {"tensorflow_version": "2.21.0"},
              "benchmarks": [run("tensorflow/float32/NHWC/train/32,7,7,512/real_time", 6.0, 6.0)]}
        text = self.render(bench, tf)
        rows = [line for line in text.splitlines() if line.startswith("| NHWC")]
        self.assertEqual(len(rows), 2)
        train = [c.strip() for c in rows[0].strip("|").split("|")]
        # best peer of training: tensorflow (6 ms) -> 3x; fbngrad 20 GB/s of 40 GB/s copy_nt -> 50%
        self.assertIn("tensorflow", train)
        self.assertIn("3.00x", train)
        self.assertIn("50%", train)
        infer = [c.strip() for c in rows[1].strip("|").split("|")]
        self.assertIn("aten", infer)
        self.assertIn("2.00x", infer)
        # geometric mean of 3x and 2x
        self.assertIn("%.2fx (2 cases)" % (6 ** 0.5), text)
        self.assertIn("aten/float32/NCHW/train/32,7,7,512: disagrees", text)

    def test_thread_rows_grouped_by_case_small_to_large(self):
        names = ["onednn/float32/NHWC/train/1,50,50,64/cold/threads:%d/real_time",
                 "fbngrad/float32/NHWC/train/1,12,12,64/cold/threads:%d/real_time",
                 "fbngrad/float32/NHWC/train/1,50,50,64/cold/threads:%d/real_time",
                 "onednn/float32/NHWC/train/1,12,12,64/cold/threads:%d/real_time"]
        bench = {"context": {"fbngrad_threads": "2"},
                 "benchmarks": [run(n % t, 1.0 * t) for t in (2, 1) for n in names]}
        text = self.render(bench)
        rows = [line for line in text.split("### Thread scaling")[1].splitlines() if line.startswith("| fbngrad") or
                line.startswith("| onednn")]
        self.assertEqual([(r.split("|")[1].strip(), r.split("|")[5].strip()) for r in rows],
                         [("fbngrad", "1,12,12,64"), ("onednn", "1,12,12,64"), ("fbngrad", "1,50,50,64"),
                          ("onednn", "1,50,50,64")])
        self.assertIn("| 1 | 2 | 0.50x |", rows[0])

    def test_side_by_side_at_each_thread_count(self):
        # fbngrad 1.0 ms at 1 thread and 0.8 at 2; oneDNN 2.0 and 0.4: ahead at 1, behind at 2.
        times = {("fbngrad", 1): 1.0, ("fbngrad", 2): 0.8, ("onednn", 1): 2.0, ("onednn", 2): 0.4}
        bench = {"context": {"fbngrad_threads": "2"},
                 "benchmarks": [run("%s/float32/NHWC/train/32,7,7,512/threads:%d/real_time" % (i, t), ms)
                                for (i, t), ms in times.items()]}
        text = self.render(bench)
        part = text.split("### fbngrad against the fastest peer at each thread count")[1]
        self.assertIn("| float32 | NHWC | train | 32,7,7,512 | hot | 1 / 2 onednn (2.00x) | 0.8 / 0.4 onednn (0.50x) |",
                      part)
        self.assertIn("fbngrad ahead: 1 of 1 at 1 thr, 0 of 1 at 2 thr", part)
        # Without a peer at a count, that cell is "-" and the count is not scored.
        bench["benchmarks"] = [b for b in bench["benchmarks"] if not b["name"].startswith("onednn/float32/NHWC/train/"
                                                                                         "32,7,7,512/threads:2")]
        part = self.render(bench).split("### fbngrad against the fastest peer at each thread count")[1]
        self.assertIn("| 1 / 2 onednn (2.00x) | - |", part)
        self.assertIn("fbngrad ahead: 1 of 1 at 1 thr", part)
        self.assertNotIn("at 2 thr", part)

    def test_runner_impl_gets_a_side_by_side_table_of_its_own(self):
        # fbngrad-omp (fbngrad on a caller's runner) 0.5 ms at 1 thread, 1.0 at 2; oneDNN 1.0 and 0.5.
        times = {("fbngrad", 1): 0.4, ("fbngrad-omp", 1): 0.5, ("fbngrad-omp", 2): 1.0, ("onednn", 1): 1.0,
                 ("onednn", 2): 0.5}
        bench = {"context": {"fbngrad_threads": "2"},
                 "benchmarks": [run("%s/float32/NCHW/infer/32,56,56,64/threads:%d/real_time" % (i, t), ms)
                                for (i, t), ms in times.items()]}
        text = self.render(bench)
        ours = text.split("### fbngrad against the fastest peer at each thread count")[1].split("###")[0]
        self.assertIn("| 0.4 / 1 onednn (2.50x) | - |", ours)
        omp = text.split("### fbngrad-omp against the fastest peer at each thread count")[1]
        self.assertIn("OpenMP runner", omp)
        self.assertIn("| float32 | NCHW | infer | 32,56,56,64 | hot | 0.5 / 1 onednn (2.00x) | 1 / 0.5 onednn (0.50x) |",
                      omp)
        self.assertIn("fbngrad-omp ahead: 1 of 1 at 1 thr, 0 of 1 at 2 thr", omp)
        # Without fbngrad-omp runs, no table of it.
        bench["benchmarks"] = [b for b in bench["benchmarks"] if not b["name"].startswith("fbngrad-omp/")]
        self.assertNotIn("fbngrad-omp", self.render(bench))

    def test_several_runs_give_the_median_of_their_medians(self):
        # Three runs of the same command, each with its median aggregate: 1, 2 and 5 ms at 1 thread
        # (the median, 2 ms, counts, not the last file's 5 nor the mean aggregate), 1 ms at 2 threads in each.
        def doc(ms_1):
            agg = {"run_type": "aggregate", "aggregate_name": "median"}
            mean = {"run_type": "aggregate", "aggregate_name": "mean"}
            name = "fbngrad/float32/NHWC/train/32,7,7,512/threads:%d/real_time"
            return {"context": {"fbngrad_threads": "2"},
                    "benchmarks": [run(name % 1, 100.0, **mean), run(name % 1, ms_1, **agg), run(name % 2, 1.0, **agg)]}
        text = self.render(doc(1.0), doc(2.0), doc(5.0))
        rows = [line for line in text.split("### Thread scaling")[1].splitlines() if line.startswith("| fbngrad")]
        self.assertEqual(len(rows), 1)
        self.assertIn("| 2 | 1 | 2.00x |", rows[0])

    def test_main_rows_by_layout_training_first_large_to_small(self):
        # As interleaved repetitions leave them: in no useful order.
        cases = ["NHWC/infer/32,7,7,512", "NCHW/train/32,7,7,512", "NHWC/train/32,7,7,512",
                 "NHWC/train/32,112,112,64", "NCHW/train/32,56,56,256", "NHWC/infer/32,112,112,64"]
        bench = {"context": {"fbngrad_threads": "2"},
                 "benchmarks": [run("fbngrad/float32/%s/real_time" % c, 1.0, 10.0) for c in cases]}
        text = self.render(bench)
        rows = [[c.strip() for c in line.strip("|").split("|")[:3]] for line in text.splitlines()
                if line.startswith("| NHWC") or line.startswith("| NCHW")]
        self.assertEqual(["/".join(r) for r in rows],
                         ["NCHW/train/32,56,56,256", "NCHW/train/32,7,7,512", "NHWC/train/32,112,112,64",
                          "NHWC/train/32,7,7,512", "NHWC/infer/32,112,112,64", "NHWC/infer/32,7,7,512"])


class Cli(unittest.TestCase):
    def test_help_and_unreadable_files(self):
        out = io.StringIO()
        with self.assertRaises(SystemExit) as e, contextlib.redirect_stdout(out):
            bench_table.main(["--help"])
        self.assertEqual(e.exception.code, 0)
        self.assertIn("usage:", out.getvalue())
        with tempfile.TemporaryDirectory() as d:
            missing = os.path.join(d, "missing.json")
            not_json = os.path.join(d, "log.txt")
            with open(not_json, "w") as f:
                f.write("no benchmark here\n")
            for path in (missing, not_json):
                err = io.StringIO()
                with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                    self.assertEqual(bench_table.main([path]), 1)
                self.assertIn("cannot read " + path, err.getvalue())


if __name__ == "__main__":
    unittest.main()
