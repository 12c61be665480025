#!/usr/bin/env python3
"""The bench's view of tuning: fbngrad (the dispatcher, with the tuned schedules)
against fbngrad-hand (the same ISA, hand schedules), per shape and per shape
class, from fbngrad_bench's JSON (docs/tuning.md):

  fbngrad_bench --fbngrad_shapes=catalogue \\
      '--benchmark_filter=^fbngrad(-hand)?/[^/]+/[^/]+/[^/]+/[^/]+/real_time' \\
      --benchmark_min_time=0.05 --benchmark_repetitions=6 --benchmark_enable_random_interleaving=true \\
      --benchmark_report_aggregates_only=true \\
      --benchmark_format=json --benchmark_out=tuned.json
  tuned_vs_hand.py tuned.json

Speed-up = hand time / tuned time (medians of the repetitions); > 1 is faster.
A class whose shapes all ran the hand variant in both rows is "hand": the same
kernel, as fast by construction; its measured ratio only shows the bench's noise.
Exit status 1 when a class that runs a tuned variant is slower than hand
(geo-mean below --min-speedup), so a script can check the build."""
import argparse
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_pairs import cell_of, geomean, load_pairs, same_kernel, speedup  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json")
    ap.add_argument("--min-speedup", type=float, default=1.0,
                    help="the geo-mean a class running a tuned variant must reach (default 1.0)")
    a = ap.parse_args()
    try:
        pairs = load_pairs(a.json)
    except (OSError, ValueError, KeyError) as e:
        print("tuned_vs_hand.py:", e, file=sys.stderr)
        return 2
    if not pairs:
        print("no fbngrad / fbngrad-hand pairs in", a.json, "(a build without tuned schedules has no fbngrad-hand)")
        return 2
    print("| dtype | layout | mode | N,H,W,C | class | hand ms | tuned ms | speed-up | variant |")
    print("|---|---|---|---|---|---:|---:|---:|---|")
    per_class = defaultdict(list)
    for p in pairs:
        per_class[(cell_of(p), p.cls)].append(p)
        print("| %s | %s | %s | %s | %s | %.4g | %.4g | %.2fx | %s |" %
              (p.dtype, p.layout, p.mode, p.shape, p.cls, p.hand_ms, p.tuned_ms, speedup(p),
               "(hand)" if same_kernel(p) else p.tuned_variant))
    print()
    print("| cell | class | shapes | runs | geo-mean speed-up | worst |")
    print("|---|---|---:|---|---:|---:|")
    tuned_s, noise_s, slow = [], [], []
    for (cell, k), ps in sorted(per_class.items()):
        tuned = [speedup(p) for p in ps if not same_kernel(p)]
        noise = [speedup(p) for p in ps if same_kernel(p)]
        tuned_s += tuned
        noise_s += noise
        if tuned:
            g = geomean(tuned)
            if g < a.min_speedup:
                slow.append("%s %s (%.2fx)" % (cell, k, g))
            print("| %s | %s | %d | tuned | %.2fx | %.2fx |" % (cell, k, len(tuned), g, min(tuned)))
        if noise:
            print("| %s | %s | %d | hand (same kernel; noise) | %.2fx | %.2fx |" %
                  (cell, k, len(noise), geomean(noise), min(noise)))
    print()
    if tuned_s:
        print("shapes running a tuned variant: %d, geo-mean %.2fx, range %.2fx-%.2fx" %
              (len(tuned_s), geomean(tuned_s), min(tuned_s), max(tuned_s)))
    if noise_s:
        print("shapes running the hand variant twice (the bench's noise): %d, geo-mean %.2fx, range %.2fx-%.2fx" %
              (len(noise_s), geomean(noise_s), min(noise_s), max(noise_s)))
    if slow:
        print("classes where the tuned variant is slower than hand (below %.2fx): %s" % (a.min_speedup, ", ".join(slow)))
        return 1
    print("every class that runs a tuned variant is at least %.2fx hand; the rest run hand" % a.min_speedup)
    return 0


if __name__ == "__main__":
    sys.exit(main())
