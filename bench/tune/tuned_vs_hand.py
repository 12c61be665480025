#!/usr/bin/env python3
"""The bench's view of tuning: fbngrad (the dispatcher, with the tuned schedules)
against fbngrad-hand (the same ISA, hand schedules), per shape and per shape
class, from fbngrad_bench's JSON (README: "Tuning for your machine"):

  fbngrad_bench --fbngrad_shapes=catalogue \\
      '--benchmark_filter=^fbngrad(-hand)?/[^/]+/[^/]+/[^/]+/[^/]+/real_time' \\
      --benchmark_min_time=0.05 --benchmark_repetitions=6 --benchmark_enable_random_interleaving=true \\
      --benchmark_report_aggregates_only=true \\
      --benchmark_format=json --benchmark_out=tuned.json
  tuned_vs_hand.py tuned.json

Speed-up = hand time / tuned time (medians of the repetitions); > 1 is faster."""
import argparse
import json
import math
import sys
from collections import defaultdict

BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


def shape_class(n, h, w, c, nbytes):
    # The same rule as src/shape_class.h (classify_shape).
    rows = n * h * w
    if c < 16:
        return "small_c"
    if rows < 4096:
        return "small_nhw"
    return "cache" if 3 * c * rows * nbytes <= 16 * 1024 * 1024 else "dram"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json")
    a = ap.parse_args()
    with open(a.json) as f:
        data = json.load(f)
    times, labels = {}, {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name", "median") != "median" or b.get("error_occurred"):
            continue
        parts = b["run_name"].split("/")
        impl, key = parts[0], tuple(parts[1:5])
        if impl not in ("fbngrad", "fbngrad-hand"):
            continue
        times[(impl, key)] = b["real_time"]
        if impl == "fbngrad":
            labels[key] = b.get("label", "")
    rows, per_class = [], defaultdict(list)
    for (impl, key), t in sorted(times.items()):
        if impl != "fbngrad" or ("fbngrad-hand", key) not in times:
            continue
        dtype, layout, mode, shape = key
        n, h, w, c = map(int, shape.split(","))
        k = shape_class(n, h, w, c, BYTES[dtype])
        s = times[("fbngrad-hand", key)] / t
        per_class[(dtype, layout, mode, k)].append(s)
        rows.append((dtype, layout, mode, shape, k, times[("fbngrad-hand", key)], t, s, labels.get(key, "")))
    if not rows:
        print("no fbngrad / fbngrad-hand pairs in", a.json, "(a build without tuned schedules has no fbngrad-hand)")
        return 1
    print("| dtype | layout | mode | N,H,W,C | class | hand | tuned | speed-up | variant |")
    print("|---|---|---|---|---|---:|---:|---:|---|")
    for r in rows:
        print("| %s | %s | %s | %s | %s | %.3f | %.3f | %.2fx | %s |" % r)
    print()
    print("| dtype | layout | mode | class | shapes | geo-mean speed-up | worst |")
    print("|---|---|---|---|---:|---:|---:|")
    all_s = []
    for (dtype, layout, mode, k), ss in sorted(per_class.items()):
        g = math.exp(sum(map(math.log, ss)) / len(ss))
        all_s += ss
        print("| %s | %s | %s | %s | %d | %.2fx | %.2fx |" % (dtype, layout, mode, k, len(ss), g, min(ss)))
    g = math.exp(sum(map(math.log, all_s)) / len(all_s))
    print("\nall %d shapes: geo-mean %.2fx, worst %.2fx, best %.2fx (time unit: %s)" %
          (len(all_s), g, min(all_s), max(all_s), data["benchmarks"][0].get("time_unit", "?")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
