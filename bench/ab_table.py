#!/usr/bin/env python3
"""A/B of two fbngrad builds: bench JSON of build A and of build B, run alternately (A B A B).

Per benchmark: each build's median over its runs, the speed-up B over A (A's time / B's),
and the noise, which is the larger spread between two runs of the same build. A case is
"slower" only when B is slower than A by more than that noise and more than --min-noise.

With --fastest: each build's fastest single repetition over all its files instead (the JSON
must hold the repetitions: run the bench without --benchmark_report_aggregates_only), the
steadier measure of a few-% change on a noisy VM (docs/threads.md); no verdict.

    python bench/ab_table.py --a old1.json old2.json --b new1.json new2.json [--markdown] [--fastest]

Exit status 0; the verdict is in the output (a speed target is a benchmark, not a test).
"""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_table  # noqa: E402


def medians(paths):
    """[{key: ms}] per file: each run's median times (run_name keys as bench_table parses them)."""
    runs = []
    for p in paths:
        r = bench_table.Results()
        r.add(bench_table.load(p), p)
        runs.append({k: r.get(k)[0] for k in r.order if r.get(k) and k[0] != "bandwidth"})
    return runs


def fastest(paths):
    """{key: (ms, repetitions)}: the fastest repetition of each case over all the files."""
    r = bench_table.Results()
    for p in paths:
        r.add(bench_table.load(p), p)
    return {k: (min(v[0] for v in r.samples[k]), len(r.samples[k]))
            for k in r.order if r.samples.get(k) and k[0] != "bandwidth"}


def compare_fastest(a, b):
    return [{"key": k, "a_ms": a[k][0], "b_ms": b[k][0], "speedup": a[k][0] / b[k][0],
             "runs": "%d, %d" % (a[k][1], b[k][1])} for k in a if k in b and b[k][0] > 0]


def spread(values):
    """max/min - 1 of one build's runs of a case."""
    return max(values) / min(values) - 1 if len(values) > 1 and min(values) > 0 else 0.0


def compare(a_runs, b_runs, min_noise):
    rows = []
    keys = [k for k in a_runs[0] if all(k in r for r in a_runs + b_runs)]
    for k in keys:
        a = [r[k] for r in a_runs]
        b = [r[k] for r in b_runs]
        noise = max(min_noise, spread(a), spread(b))
        speedup = statistics.median(a) / statistics.median(b)
        rows.append({"key": k, "a_ms": statistics.median(a), "b_ms": statistics.median(b), "speedup": speedup,
                     "noise": noise, "slower": speedup < 1 / (1 + noise)})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", nargs="+", required=True, help="build A's bench JSON files (the before)")
    ap.add_argument("--b", nargs="+", required=True, help="build B's bench JSON files (the after)")
    ap.add_argument("--min-noise", type=float, default=0.05, help="the smallest noise band (default 0.05: 5 %%)")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--fastest", action="store_true",
                    help="compare each build's fastest repetition over all its files (no verdict)")
    args = ap.parse_args(argv)
    if args.fastest:
        rows = compare_fastest(fastest(args.a), fastest(args.b))
        if not rows:
            print("ab_table.py: no benchmark has repetitions in both builds' files (run the bench "
                  "without --benchmark_report_aggregates_only for --fastest)", file=sys.stderr)
            return 1
    else:
        rows = compare(medians(args.a), medians(args.b), args.min_noise)
        if not rows:
            print("ab_table.py: no benchmark is in every file", file=sys.stderr)
            return 1
    # The cache and thread columns only where some run has them (/cold, /threads:T).
    cold = any(r["key"][5] for r in rows)
    threads = any(r["key"][6] for r in rows)
    head = ["impl", "dtype", "layout", "mode", "shape"] + (["cache"] if cold else []) + \
        (["threads"] if threads else []) + \
        (["A fastest ms", "B fastest ms", "B vs A", "repetitions"] if args.fastest else
         ["A ms", "B ms", "B vs A", "noise", ""])
    body = [[*r["key"][:5]] + (["cold" if r["key"][5] else "hot"] if cold else []) +
            ([str(r["key"][6] or "")] if threads else []) +
            [bench_table.fmt(r["a_ms"]), bench_table.fmt(r["b_ms"]), bench_table.ratio(r["speedup"])] +
            ([r["runs"]] if args.fastest else ["%.0f %%" % (100 * r["noise"]), "slower" if r["slower"] else ""])
            for r in rows]
    if args.markdown:
        print(bench_table.table(head, body, 5))
    else:
        for line in [head] + body:
            print("  ".join(x.ljust(9) for x in line))
    if args.fastest:
        print("\ngeo-mean B vs A by the fastest repetitions: %s over %d cases" % (
            bench_table.ratio(bench_table.geomean([r["speedup"] for r in rows])), len(rows)))
        return 0
    slower = [r for r in rows if r["slower"]]
    print("\ngeo-mean B vs A: %s over %d cases; slower beyond the noise: %d%s" % (
        bench_table.ratio(bench_table.geomean([r["speedup"] for r in rows])), len(rows), len(slower),
        (" (" + ", ".join(bench_table.name_of(r["key"]) for r in slower) + ")") if slower else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
