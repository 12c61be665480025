#!/usr/bin/env python3
"""tools/gpu/bench_report.py on hand-made benchmark output (no GPU needed):
the merge by case, the bandwidth and share of peak, the speed-up, and "n/a"
for a case an implementation refused or never ran."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "gpu"))
import bench_report  # noqa: E402


def write(path, objs):
    with open(path, "w") as f:
        f.write("some non-JSON line a tool printed\n")
        for o in objs:
            f.write(json.dumps(o) + "\n")


class BenchReport(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.fb = os.path.join(self.dir.name, "fbngrad.jsonl")
        self.tr = os.path.join(self.dir.name, "torch.jsonl")
        gb = 10**9
        write(self.fb, [
            {"device": "Test GPU", "peak_gbps": 4000.0},
            {"impl": "fbngrad", "dtype": "float32", "layout": "NHWC", "shape": [32, 7, 7, 64], "ms": 1.0, "bytes": 2 * gb},
            {"impl": "fbngrad", "dtype": "float16", "layout": "NCHW", "shape": [32, 7, 7, 64], "ms": 0.5, "bytes": gb},
        ])
        write(self.tr, [
            {"torch": "9.9", "cudnn": 91000, "device": "Test GPU"},
            {"impl": "cudnn", "dtype": "float32", "layout": "NHWC", "shape": [32, 7, 7, 64], "ms": 2.0, "bytes": 2 * gb},
            {"impl": "aten_native", "dtype": "float32", "layout": "NHWC", "shape": [32, 7, 7, 64], "ms": 4.0,
             "bytes": 2 * gb},
            {"impl": "cudnn", "dtype": "float16", "layout": "NCHW", "shape": [32, 7, 7, 64], "ms": None,
             "bytes": gb, "error": "not supported"},
        ])

    def tearDown(self):
        self.dir.cleanup()

    def rows(self, text):
        return [line for line in text.splitlines() if line.startswith("| float")]

    def test_table(self):
        text = bench_report.report(self.fb, self.tr)
        self.assertIn("GPU: Test GPU; peak memory bandwidth 4000 GB/s", text)
        self.assertIn("PyTorch 9.9, cuDNN 91000", text)
        rows = self.rows(text)
        self.assertEqual(len(rows), 2)
        # 2 GB in 1 ms = 2000 GB/s = 50% of 4000; cuDNN 2 ms: 1000 GB/s; speed-up 2.00x.
        self.assertEqual(rows[0], "| float32 | NHWC | 32,7,7,64 | 1.000 | 2000 (50%) | 2.000 | 1000 (25%) | 4.000 | 2.00x |")
        self.assertEqual(rows[1], "| float16 | NCHW | 32,7,7,64 | 0.500 | 2000 (50%) | n/a | n/a | n/a | n/a |")
        self.assertEqual(text.splitlines()[-2:], ["Refused (n/a above):", "- cudnn float16 NCHW: not supported"])

    def test_no_refusal_no_refused_section(self):
        write(self.tr, [{"impl": "cudnn", "dtype": "float32", "layout": "NHWC", "shape": [32, 7, 7, 64], "ms": 2.0,
                         "bytes": 2 * 10**9}])
        self.assertNotIn("Refused", bench_report.report(self.fb, self.tr))

    def test_peak_from_the_command_line_wins(self):
        rows = self.rows(bench_report.report(self.fb, self.tr, peak_gbps=8000.0))
        self.assertIn("2000 (25%)", rows[0])

    def test_schedule_three_kernels_and_cudnn_launches(self):
        # The newer rows: the variant that ran, cuDNN's kernels a call, the three-kernel A/B.
        gb = 10**9
        write(self.fb, [
            {"impl": "fbngrad", "dtype": "float32", "layout": "NCHW", "shape": [32, 7, 7, 64], "ms": 1.0,
             "bytes": 2 * gb, "variant": "fbng_f32_nchw_train_cuda_plane"},
            {"impl": "fbngrad", "dtype": "float32", "layout": "NHWC", "shape": [32, 7, 7, 64], "ms": 1.0,
             "bytes": 2 * gb, "variant": "fbng_f32_nhwc_train_cuda"},
        ])
        write(self.tr, [
            {"impl": "cudnn", "dtype": "float32", "layout": "NCHW", "shape": [32, 7, 7, 64], "ms": 2.0,
             "bytes": 2 * gb, "kernels": ["bn_bw_1", "bn_bw_2"]},
            {"impl": "cudnn", "dtype": "float32", "layout": "NHWC", "shape": [32, 7, 7, 64], "ms": 2.0,
             "bytes": 2 * gb, "kernels": None},
        ])
        k3 = os.path.join(self.dir.name, "three.jsonl")
        write(k3, [{"impl": "fbngrad", "dtype": "float32", "layout": "NCHW", "shape": [32, 7, 7, 64], "ms": 1.5,
                    "bytes": 2 * gb, "variant": "fbng_f32_nchw_train_cuda"}])
        text = bench_report.report(self.fb, self.tr, peak_gbps=4000.0, three_kernels_path=k3)
        self.assertIn("| fbngrad schedule | 3 kernels ms | cuDNN kernels a call |", text)
        rows = self.rows(text)
        self.assertEqual(rows[0], "| float32 | NCHW | 32,7,7,64 | 1.000 | 2000 (50%) | 2.000 | 1000 (25%) | n/a | "
                                  "2.00x | 1 pass | 1.500 | 2 |")
        self.assertEqual(rows[1], "| float32 | NHWC | 32,7,7,64 | 1.000 | 2000 (50%) | 2.000 | 1000 (25%) | n/a | "
                                  "2.00x | 3 kernels | n/a | n/a |")


if __name__ == "__main__":
    unittest.main()
