#!/usr/bin/env python3
"""Turns fbngrad_bench --benchmark_format=json (or --benchmark_out=F) output into markdown.

    fbngrad_bench --benchmark_filter='^(fbngrad|naive)/float32/.*/32,' \
        --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
        --benchmark_format=json > out.json
    python3 bench/bench_table.py out.json            # or: ... | python3 bench/bench_table.py

One table per dtype; one row per layout/mode/shape; for every impl its time (ms) and
GB/s (3 tensors per call: x and y_backprop read, x_backprop written, 1 GB = 1e9 bytes),
and for every impl but `naive` its speed-up over `naive` (naive time / impl time).
With repetitions the median aggregate is used. Python standard library only.
"""

import json
import sys
from collections import OrderedDict

TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def load(path):
    text = sys.stdin.read() if path == "-" else open(path).read()
    # The JSON report is printed on stdout; tolerate stray lines before it.
    return json.loads(text[text.index("{"):])


def entries(doc):
    runs = doc.get("benchmarks", [])
    has_median = any(r.get("aggregate_name") == "median" for r in runs)
    for r in runs:
        if has_median:
            if r.get("run_type") != "aggregate" or r.get("aggregate_name") != "median":
                continue
        elif r.get("run_type") == "aggregate":
            continue
        name = r.get("run_name") or r["name"]
        parts = [p for p in name.split("/") if p != "real_time"]
        if len(parts) < 5:
            continue
        impl, dtype, layout, mode, shape = parts[:5]
        if r.get("error_occurred"):
            yield impl, dtype, layout, mode, shape, None, None, r.get("error_message", "error")
            continue
        ms = r["real_time"] * TO_MS.get(r.get("time_unit", "ns"), 1e-6)
        gbs = r.get("GB/s")
        yield impl, dtype, layout, mode, shape, ms, gbs, None


def fmt(v, digits=3):
    if v is None:
        return "-"
    if v >= 100:
        return "%.0f" % v
    return ("%%.%dg" % digits) % v


def main():
    doc = load(sys.argv[1] if len(sys.argv) > 1 else "-")
    tables = OrderedDict()  # dtype -> rows (layout, mode, shape) -> impl -> (ms, gbs, err)
    impls = OrderedDict()
    for impl, dtype, layout, mode, shape, ms, gbs, err in entries(doc):
        tables.setdefault(dtype, OrderedDict()).setdefault((layout, mode, shape), {})[impl] = (ms, gbs, err)
        impls[impl] = True
    ctx = doc.get("context", {})
    print("Host: %s CPU(s) at %s MHz; fbngrad threads: %s; ISAs: %s; load average: %s" % (
        ctx.get("num_cpus", "?"), ctx.get("mhz_per_cpu", "?"), ctx.get("fbngrad_threads", "?"),
        ctx.get("fbngrad_isas", "?"), ", ".join("%.2f" % v for v in ctx.get("load_avg", []))))
    order = [i for i in impls if i != "naive"] + (["naive"] if "naive" in impls else [])
    for dtype, rows in tables.items():
        print()
        print("### %s" % dtype)
        print()
        head = ["layout", "mode", "N,H,W,C"]
        for i in order:
            head += ["%s ms" % i, "%s GB/s" % i]
        if "naive" in impls:
            head += ["%s speed-up" % i for i in order if i != "naive"]
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join(["---"] * 3 + ["---:"] * (len(head) - 3)) + "|")
        for (layout, mode, shape), by_impl in rows.items():
            cells = [layout, mode, shape]
            for i in order:
                ms, gbs, err = by_impl.get(i, (None, None, None))
                if err:
                    cells += ["error", "-"]
                else:
                    cells += [fmt(ms), fmt(gbs)]
            if "naive" in impls:
                base = by_impl.get("naive", (None,))[0]
                for i in order:
                    if i == "naive":
                        continue
                    ms = by_impl.get(i, (None,))[0]
                    cells.append("%.1fx" % (base / ms) if base and ms else "-")
            print("| " + " | ".join(cells) + " |")
        errors = [(r, i, v[2]) for r, b in rows.items() for i, v in b.items() if v[2]]
        for (layout, mode, shape), i, err in errors:
            print("\n%s/%s/%s/%s/%s: %s" % (i, dtype, layout, mode, shape, err))


if __name__ == "__main__":
    main()
