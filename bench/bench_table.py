#!/usr/bin/env python3
"""Markdown tables from fbngrad_bench and tf_bench.py JSON files (Google Benchmark's format).

    python3 bench/bench_table.py results/*.json > results/table.md
    fbngrad_bench --benchmark_format=json ... | python3 bench/bench_table.py -

Per dtype, hot and cold caches: one row per layout/mode/shape with every impl's median time
(ms); fbngrad's effective GB/s (3 tensors per call: x and y_backprop read, x_backprop
written, 1 GB = 1e9 bytes) and that as a fraction of the measured non-temporal copy
bandwidth (bandwidth/copy_nt at the same thread count); the fastest peer (onednn, aten,
tensorflow, tensorflow-eigen: not fbngrad-<isa> nor naive) and fbngrad's speed-up over it
(peer time / fbngrad time), with the geometric mean of the speed-ups under each table and
over everything at the end. Then the size sweep (GB/s against tensor size), thread scaling
(/threads:T runs) with fbngrad beside the fastest peer at each thread count (and fbngrad-omp, fbngrad
on a caller's OpenMP runner, the same way), and every error. With repetitions the median is used (the median
aggregate, or the median of the repetitions); with several files holding the same benchmark (runs
of one command at different times), the median of the files' medians. Python standard library only.
"""

import argparse
import json
import math
import os
import statistics
import sys
from collections import OrderedDict, defaultdict

TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
PEERS = ["onednn", "aten", "tensorflow", "tensorflow-eigen"]
# fbngrad on a caller's runner (fbngrad_set_parallel_for), which gets a side-by-side table of its own.
RUNNER_IMPLS = {"fbngrad-omp": "fbngrad on README's OpenMP runner, as a trainer that owns its threads runs it: "
                               "the many-core rule's task sizes, and the NCHW two-pass route where a channel "
                               "exceeds a task or a task's runs would be short (docs/threads.md)."}
GB_SUFFIXES = ("iterations:", "repeats:", "min_time:", "min_warmup_time:")


def load(path):
    if path == "-":
        text = sys.stdin.read()
    else:
        with open(path) as f:
            text = f.read()
    return json.loads(text[text.index("{"):])  # tolerate stray lines before the JSON


def parse_name(name):
    """(impl, dtype, layout, mode, shape, cold, threads) or ("bandwidth", probe, threads); None otherwise."""
    parts = [p for p in name.split("/") if p != "real_time" and not p.startswith(GB_SUFFIXES)]
    cold = "cold" in parts
    threads = 0
    for p in parts:
        if p.startswith("threads:"):
            threads = int(p.split(":")[1])
    core = [p for p in parts if p != "cold" and not p.startswith("threads:")]
    if len(core) == 2 and core[0] == "bandwidth":
        return ("bandwidth", core[1], threads)
    if len(core) == 5:
        return tuple(core) + (cold, threads)
    return None


class Results:
    def __init__(self):
        self.samples = defaultdict(list)  # key -> [(ms, GB/s)] of the repetitions
        self.medians = defaultdict(list)  # key -> [(ms, GB/s)] from each file's median aggregate
        self.labels = {}
        self.errors = OrderedDict()
        self.contexts = []
        self.order = OrderedDict()        # keys in first-seen order

    def add(self, doc, path):
        self.contexts.append((path, doc.get("context", {})))
        for r in doc.get("benchmarks", []):
            key = parse_name(r.get("run_name") or r["name"])
            if key is None:
                continue
            self.order[key] = True
            if r.get("error_occurred"):
                self.errors[key] = r.get("error_message", "error")
                continue
            if r.get("run_type") == "aggregate" and r.get("aggregate_name") != "median":
                continue
            ms = r["real_time"] * TO_MS.get(r.get("time_unit", "ns"), 1e-6)
            value = (ms, r.get("GB/s"))
            if r.get("run_type") == "aggregate":
                self.medians[key].append(value)
            else:
                self.samples[key].append(value)
            if r.get("label"):
                self.labels[key] = r["label"]

    def get(self, key):
        """(ms, GB/s) or None."""
        s = self.medians.get(key) or self.samples.get(key)
        if not s:
            return None
        ms = statistics.median(v[0] for v in s)
        gbs = [v[1] for v in s if v[1] is not None]
        return ms, statistics.median(gbs) if gbs else None

    def context(self, key, default=None):
        for _, c in self.contexts:
            if key in c:
                return c[key]
        return default


def fmt(v, digits=3):
    if v is None:
        return "-"
    if abs(v) >= 100:
        return "%.0f" % v
    return ("%%.%dg" % digits) % v


def ratio(v):
    """A speed-up: 2 decimals in the usual range, 3 significant digits for tiny ones."""
    return ("%.2fx" % v) if v >= 0.1 else ("%.3gx" % v)


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def table(head, rows, numeric_from):
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join(["---"] * numeric_from + ["---:"] * (len(head) - numeric_from)) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def impl_order(impls):
    rank = {"fbngrad": 0, "naive": 9}
    for i, p in enumerate(PEERS):
        rank[p] = 5 + i * 0.1
    return sorted(impls, key=lambda i: (rank.get(i, 1 if i.startswith("fbngrad-") else 8), i))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", default=["-"], metavar="FILE",
                    help="fbngrad_bench or tf_bench.py JSON; - (the default) reads standard input")
    paths = ap.parse_args(argv).files
    res = Results()
    for p in paths:
        try:
            doc = load(p)
        except (OSError, ValueError) as e:
            print(f"bench_table.py: cannot read {p}: {e}", file=sys.stderr)
            return 1
        res.add(doc, p)
    sweep = set((res.context("fbngrad_sweep_shapes") or "").split())

    print("## fbngrad benchmarks")
    print()
    host = next((c for _, c in res.contexts if "caches" in c), {})
    if host:
        caches = ", ".join("L%s%s %d KiB x%d" % (x.get("level"), {"Data": "d", "Instruction": "i"}.get(x.get("type"), ""),
                                                 x.get("size", 0) // 1024,
                                                 max(1, host.get("num_cpus", 1) // max(1, x.get("num_sharing", 1))))
                           for x in host.get("caches", []))
        print("- host: %s CPUs at %s MHz; caches %s" % (host.get("num_cpus", "?"), host.get("mhz_per_cpu", "?"), caches))
    bench = next((c for _, c in res.contexts if "fbngrad_version" in c), None)
    if bench:
        print("- fbngrad %s, %s threads; CPU features: %s; peers: %s; not built: %s" % (
            bench.get("fbngrad_version"), bench.get("fbngrad_threads"), bench.get("fbngrad_cpu_features"),
            bench.get("fbngrad_peers"), bench.get("fbngrad_missing_peers")))
    for _, c in res.contexts:
        if "tensorflow_version" in c:
            print("- TensorFlow %s, TF_ENABLE_ONEDNN_OPTS=%s (oneDNN reported %s), %s intra-op threads" % (
                c["tensorflow_version"], c.get("TF_ENABLE_ONEDNN_OPTS"), c.get("tf_onednn_enabled"),
                c.get("tf_intra_op_threads")))
    print("- load average at the start of each run (1, 5, 15 min): " + "; ".join(
        "%s %s" % (os.path.basename(path), ", ".join("%.2f" % v for v in c.get("load_avg", [])))
        for path, c in res.contexts))

    # ---- bandwidth ----
    bw = {}
    for key in res.order:
        if key[0] == "bandwidth" and res.get(key):
            bw[(key[1], key[2])] = res.get(key)[1]
    threads_default = int(res.context("fbngrad_threads", "0") or 0)

    def copy_nt(threads):
        return bw.get(("copy_nt", threads)) or (bw.get(("copy_nt", 0)) if threads in (0, threads_default) else None)

    if bw:
        print("\n### Memory bandwidth (GB/s, read + write bytes; the op's patterns one_pass and "
              "two_passes count 3 arrays, as fbngrad's GB/s does)\n")
        counts = sorted(set(t for _, t in bw))
        known = ("copy", "copy_nt", "add", "add_nt", "one_pass", "one_pass_nt", "two_passes", "two_passes_nt")
        probes = [p for p in known if any((p, t) in bw for t in counts)]
        rows = [[("%d" % t) if t else "default (%d)" % threads_default] + [fmt(bw.get((p, t))) for p in probes]
                for t in counts]
        print(table(["threads"] + probes, rows, 1))

    # ---- the main tables ----
    cases = [k for k in res.order if k[0] != "bandwidth"]
    all_speedups = []
    for cold in (False, True):
        for dtype in ("float32", "float16", "bfloat16"):
            rows_keys = OrderedDict()
            impls = OrderedDict()
            for (impl, dt, layout, mode, shape, cd, th) in cases:
                if dt == dtype and cd == cold and th == 0 and shape not in sweep:
                    rows_keys[(layout, mode, shape)] = True
                    impls[impl] = True
            if not rows_keys:
                continue
            order = impl_order(impls)
            peers = [i for i in order if i in PEERS]
            head = ["layout", "mode", "N,H,W,C"] + ["%s ms" % i for i in order] + \
                   ["fbngrad GB/s", "of copy_nt", "best peer", "speed-up"]
            rows, speedups = [], []
            # Layout, training first, then large to small.
            for (layout, mode, shape) in sorted(rows_keys, key=lambda k: (k[0], k[1] != "train") + large_first(k[2])):
                cells = [layout, mode, shape]
                get = {i: res.get((i, dtype, layout, mode, shape, cold, 0)) for i in order}
                for i in order:
                    if (i, dtype, layout, mode, shape, cold, 0) in res.errors:
                        cells.append("error")
                    else:
                        cells.append(fmt(get[i][0]) if get[i] else "-")
                f = get.get("fbngrad")
                nt = copy_nt(0)
                cells.append(fmt(f[1]) if f else "-")
                cells.append("%.0f%%" % (100 * f[1] / nt) if f and f[1] and nt else "-")
                timed = [(get[p][0], p) for p in peers if get[p]]
                if timed and f:
                    best_ms, best = min(timed)
                    cells += [best, ratio(best_ms / f[0])]
                    speedups.append(best_ms / f[0])
                else:
                    cells += ["-", "-"]
                rows.append(cells)
            print("\n### %s, %s caches\n" % (dtype, "cold" if cold else "hot"))
            print(table(head, rows, 3))
            g = geomean(speedups)
            all_speedups += speedups
            if g:
                print("\nGeometric-mean speed-up of fbngrad over the best peer: %.2fx (%d cases)" % (g, len(speedups)))

    # ---- size sweep ----
    for cold in (False, True):
        sk = OrderedDict()
        impls = OrderedDict()
        for (impl, dt, layout, mode, shape, cd, th) in cases:
            if shape in sweep and cd == cold and th == 0:
                sk[(dt, layout, mode, shape)] = True
                impls[impl] = True
        if not sk:
            continue
        order = impl_order(impls)
        print("\n### Size sweep, %s caches (GB/s)\n" % ("cold" if cold else "hot"))
        rows = []
        for (dt, layout, mode, shape) in sorted(sk, key=lambda k: (k[2] != "train", eval_elems(k[3]))):
            e = eval_elems(shape)
            cells = [dt, layout, mode, shape, "%.3g" % e, "%.3g" % (3 * e * 4 / 1e6)]
            for i in order:
                v = res.get((i, dt, layout, mode, shape, cold, 0))
                cells.append(fmt(v[1]) if v else "-")
            rows.append(cells)
        print(table(["dtype", "layout", "mode", "N,H,W,C", "elements", "MB moved"] + order, rows, 4))

    # ---- thread scaling ----
    th_keys = OrderedDict()
    counts = set()
    for (impl, dt, layout, mode, shape, cd, th) in cases:
        if th:
            th_keys[(impl, dt, layout, mode, shape, cd)] = True
            counts.add(th)
    if th_keys:
        counts = sorted(counts)
        print("\n### Thread scaling (ms; speed-up = time at %d / time at %d threads)\n" % (counts[0], counts[-1]))
        rows = []
        # Grouped by case, small to large, each case's implementations together (the
        # results arrive in the random order of the interleaved repetitions).
        for k in sorted(th_keys, key=lambda k: (k[1], k[2], k[3] != "train", eval_elems(k[4]), k[5], k[0])):
            cells = list(k[:5]) + ["cold" if k[5] else "hot"]
            vals = [res.get(k + (t,)) for t in counts]
            cells += [fmt(v[0]) if v else "-" for v in vals]
            cells.append(ratio(vals[0][0] / vals[-1][0]) if vals[0] and vals[-1] else "-")
            rows.append(cells)
        print(table(["impl", "dtype", "layout", "mode", "N,H,W,C", "cache"] + ["%d thr" % t for t in counts] +
                    ["speed-up"], rows, 6))
        side_by_side(res, th_keys, counts)
        for impl in RUNNER_IMPLS:
            side_by_side(res, th_keys, counts, impl)

    if all_speedups:
        print("\n**Geometric-mean speed-up of fbngrad over the best peer, all tables: %.2fx (%d cases; "
              "min %.2fx, max %.2fx)**" % (geomean(all_speedups), len(all_speedups), min(all_speedups),
                                           max(all_speedups)))
    parity = [k for k, label in res.labels.items() if "[parity tolerance]" in label]
    if parity:
        print("\nChecked against the parity tests' tolerance (they miss fbngrad::ref's tight bound, "
              "having their own summation order): " + ", ".join(name_of(k) for k in parity))
    if res.errors:
        print("\n### Errors\n")
        for key, err in res.errors.items():
            print("- %s: %s" % (name_of(key), err))


def side_by_side(res, th_keys, counts, ours_impl="fbngrad"):
    """fbngrad (or ours_impl: fbngrad on a caller's runner) against the fastest peer at each
    thread count: one row per case, for each count ours' and the peer's median time and the
    peer's time over ours (above 1: fbngrad is ahead). The many-core comparison of
    docs/threads.md. Prints nothing when ours_impl has no thread runs."""
    cases = OrderedDict()
    for (impl, dt, layout, mode, shape, cd) in th_keys:
        if impl == ours_impl:
            cases[(dt, layout, mode, shape, cd)] = True
    rows, wins, total = [], defaultdict(int), defaultdict(int)
    for case in sorted(cases, key=lambda k: (k[0], k[1], k[2] != "train", -eval_elems(k[3]), k[4])):
        dt, layout, mode, shape, cd = case
        cells = [dt, layout, mode, shape, "cold" if cd else "hot"]
        for t in counts:
            ours = res.get((ours_impl,) + case + (t,))
            peers = [(res.get((p,) + case + (t,)), p) for p in PEERS]
            peers = [(v[0], p) for v, p in peers if v]
            if not ours or not peers:
                cells.append("-")
                continue
            best, who = min(peers)
            total[t] += 1
            wins[t] += best > ours[0]
            cells.append("%s / %s %s (%s)" % (fmt(ours[0]), fmt(best), who, ratio(best / ours[0])))
        rows.append(cells)
    if not rows:
        return
    print("\n### %s against the fastest peer at each thread count (ms: %s / peer (peer / %s))\n" %
          (ours_impl, ours_impl, ours_impl))
    if ours_impl in RUNNER_IMPLS:
        print(RUNNER_IMPLS[ours_impl] + "\n")
    print(table(["dtype", "layout", "mode", "N,H,W,C", "cache"] + ["%d thr" % t for t in counts], rows, 5))
    print("\n%s ahead: " % ours_impl +
          ", ".join("%d of %d at %d thr" % (wins[t], total[t], t) for t in counts if total[t]))


def name_of(key):
    """The benchmark name of a parsed key."""
    if key[0] == "bandwidth":
        return "bandwidth/%s%s" % (key[1], "/threads:%d" % key[2] if key[2] else "")
    impl, dtype, layout, mode, shape, cold, threads = key
    return "/".join([impl, dtype, layout, mode, shape]) + ("/cold" if cold else "") + \
        ("/threads:%d" % threads if threads else "")


def large_first(shape):
    """Sort key: shapes by element count, largest first (ties by name). The
    tables and plots use it because interleaved repetitions arrive in random order."""
    return (-eval_elems(shape), shape)


def eval_elems(shape):
    n = 1
    for v in shape.split(","):
        n *= int(v)
    return n


if __name__ == "__main__":
    sys.exit(main())
