#!/usr/bin/env python3
"""ab_table.py on hand-made Google Benchmark documents: the medians, the noise, the verdict, and
the thread and cache columns that tell apart the runs of one case."""

import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ab_table  # noqa: E402
from test_bench_table import run  # noqa: E402  (one benchmark's entry)


def doc(times):
    """A bench JSON document: {benchmark name: ms}."""
    return {"context": {}, "benchmarks": [run(n, ms) for n, ms in times.items()]}


class AbTable(unittest.TestCase):
    def render(self, a_docs, b_docs, *extra):
        with tempfile.TemporaryDirectory() as d:
            def write(docs, tag):
                paths = []
                for i, x in enumerate(docs):
                    paths.append(os.path.join(d, "%s%d.json" % (tag, i)))
                    with open(paths[-1], "w") as f:
                        json.dump(x, f)
                return paths
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = ab_table.main(["--a"] + write(a_docs, "a") + ["--b"] + write(b_docs, "b") + list(extra))
            self.assertEqual(rc, 0)
            return out.getvalue()

    def test_thread_counts_are_rows_of_their_own(self):
        name = "fbngrad-omp/float32/NCHW/infer/32,7,7,2048/threads:%d/real_time"
        a = [doc({name % 1: 4.0, name % 2: 2.0}), doc({name % 1: 4.4, name % 2: 2.0})]
        # B: twice as fast on 1 thread; 1.5x slower on 2, beyond A's and B's own 10 % and 0 % spread.
        b = [doc({name % 1: 2.0, name % 2: 3.0}), doc({name % 1: 2.1, name % 2: 3.0})]
        text = self.render(a, b, "--markdown")
        self.assertIn("| impl | dtype | layout | mode | shape | threads | A ms |", text)
        self.assertIn("| fbngrad-omp | float32 | NCHW | infer | 32,7,7,2048 | 1 | 4.2 | 2.05 | 2.05x | 10 % |  |", text)
        self.assertIn("| fbngrad-omp | float32 | NCHW | infer | 32,7,7,2048 | 2 | 2 | 3 | 0.67x | 5 % | slower |", text)
        self.assertIn("slower beyond the noise: 1 (fbngrad-omp/float32/NCHW/infer/32,7,7,2048/threads:2)", text)

    def test_no_thread_column_without_thread_runs_and_a_cache_column_with_cold_ones(self):
        hot = "fbngrad/float32/NHWC/train/32,7,7,512/real_time"
        cold = "fbngrad/float32/NHWC/train/32,7,7,512/cold/iterations:200/real_time"
        text = self.render([doc({hot: 1.0, cold: 2.0})], [doc({hot: 1.0, cold: 1.0})], "--markdown")
        self.assertIn("| impl | dtype | layout | mode | shape | cache | A ms |", text)
        self.assertNotIn("threads", text)
        self.assertIn("| 32,7,7,512 | cold | 2 | 1 | 2.00x |", text)
        self.assertIn("| 32,7,7,512 | hot | 1 | 1 | 1.00x |", text)

    def test_fastest_takes_each_builds_fastest_repetition_over_all_files(self):
        name = "fbngrad/float32/NHWC/infer/32,14,14,1024/real_time"
        other = "fbngrad/float32/NHWC/train/32,14,14,1024/real_time"
        # A's fastest is 2.0 (second file), B's 2.5 (first file), whatever the medians say.
        a = [{"context": {}, "benchmarks": [run(name, 3.0), run(name, 3.1), run(other, 1.0)]},
             {"context": {}, "benchmarks": [run(name, 2.0), run(name, 9.0), run(other, 1.0)]}]
        b = [{"context": {}, "benchmarks": [run(name, 2.5), run(name, 2.6), run(other, 0.5)]},
             {"context": {}, "benchmarks": [run(name, 2.7), run(name, 2.8), run(other, 0.5)]}]
        text = self.render(a, b, "--markdown", "--fastest")
        self.assertIn("| impl | dtype | layout | mode | shape | A fastest ms | B fastest ms | B vs A | repetitions |",
                      text)
        self.assertIn("| fbngrad | float32 | NHWC | infer | 32,14,14,1024 | 2 | 2.5 | 0.80x | 4, 4 |", text)
        self.assertIn("| fbngrad | float32 | NHWC | train | 32,14,14,1024 | 1 | 0.5 | 2.00x | 2, 2 |", text)
        self.assertIn("geo-mean B vs A by the fastest repetitions: 1.26x over 2 cases", text)
        self.assertNotIn("slower", text)

    def test_fastest_needs_the_repetitions(self):
        aggregate = {"context": {}, "benchmarks": [run("fbngrad/float32/NHWC/infer/4,28,28,32/real_time_median",
                                                       1.0, run_name="fbngrad/float32/NHWC/infer/4,28,28,32/real_time",
                                                       run_type="aggregate", aggregate_name="median")]}
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "agg.json")
            with open(path, "w") as f:
                json.dump(aggregate, f)
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                rc = ab_table.main(["--a", path, "--b", path, "--fastest"])
        self.assertEqual(rc, 1)
        self.assertIn("without --benchmark_report_aggregates_only", err.getvalue())


if __name__ == "__main__":
    unittest.main()
