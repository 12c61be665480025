"""Reads fbngrad_bench's JSON into (tuned, hand) pairs: for each case that has both
an `fbngrad` row (the dispatcher: tuned schedules where the table has them) and an
`fbngrad-hand` row (the same ISA, hand schedules), the two median times, the
variant each one ran (the rows' labels) and the case's shape class.
Shared by tuned_vs_hand.py (the report) and prune_tuned.py (the AOT check)."""
import json
import math
from collections import namedtuple

BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}

Pair = namedtuple("Pair", "dtype layout mode shape cls hand_ms tuned_ms hand_variant tuned_variant")


def shape_class(n, h, w, c, nbytes):
    # The same rule as src/shape_class.h (classify_shape).
    rows = n * h * w
    if c < 16:
        return "small_c"
    if rows < 4096:
        return "small_nhw"
    traffic = 3 * c * rows * nbytes
    if traffic <= 16 * 1024 * 1024:
        return "cache"
    return "dram" if traffic <= 128 * 1024 * 1024 else "huge"


def cell_of(p):
    """The schedule table's name of a pair's cell: f32/nhwc/train."""
    return "%s/%s/%s" % (SHORT[p.dtype], p.layout.lower(), p.mode)


def speedup(p):
    return p.hand_ms / p.tuned_ms


def same_kernel(p):
    """Both rows ran the hand-scheduled variant: the ratio is the bench's noise."""
    return p.tuned_variant == p.hand_variant


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


def load_pairs(path):
    """The pairs of a bench JSON file, sorted; ValueError when it is not one."""
    with open(path) as f:
        try:
            data = json.load(f)
        except ValueError as e:
            raise ValueError("%s: not JSON (%s)" % (path, e))
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise ValueError("%s: not Google Benchmark JSON (no \"benchmarks\" list)" % path)
    times, labels = {}, {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name", "median") != "median" or b.get("error_occurred"):
            continue
        parts = b.get("run_name", b.get("name", "")).split("/")
        if len(parts) < 5 or parts[0] not in ("fbngrad", "fbngrad-hand") or parts[1] not in BYTES:
            continue
        if any(p == "cold" or p.startswith("threads:") for p in parts[5:]):
            continue  # the tuner times hot caches on all threads; compare the same
        key = (parts[0], tuple(parts[1:5]))
        times[key] = float(b["real_time"]) * {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ns")]
        labels[key] = b.get("label", "")
    pairs = []
    for (impl, case), t in sorted(times.items()):
        if impl != "fbngrad" or ("fbngrad-hand", case) not in times:
            continue
        dtype, layout, mode, shape = case
        n, h, w, c = map(int, shape.split(","))
        pairs.append(Pair(dtype, layout, mode, shape, shape_class(n, h, w, c, BYTES[dtype]),
                          times[("fbngrad-hand", case)], t, labels[("fbngrad-hand", case)],
                          labels[("fbngrad", case)]))
    return pairs
