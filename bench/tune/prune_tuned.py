#!/usr/bin/env python3
"""The tuner's last step, against the AOT build: the tuner times its candidates
under Halide's JIT, and on kernels of a few microseconds that ranking does not
always carry over to the compiled library. So after building with a fresh table,
run the bench (fbngrad against fbngrad-hand, docs/tuning.md)
and give it to this script: each table entry whose tuned variant is not at least
--min-speedup times the hand schedule there (geo-mean over the bench's shapes of
that class), or that the bench has no shape for, goes back to the hand schedule.
Rebuild afterwards.

  prune_tuned.py --table generators/tuned/avx512.json tuned.json

Every entry checked gets "aot_check" (speed-up, shapes, bench file); a pruned one
keeps what the tuner chose under "pruned". The table is replaced atomically, and
left as it was when nothing changes or on any error."""
import argparse
import datetime
import json
import os
import sys
import tempfile
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_pairs import cell_of, geomean, load_pairs, same_kernel, speedup  # noqa: E402


def prune(table, pairs, min_speedup, bench_name, keep_unmeasured=False):
    """Updates table in place; returns (kept, pruned, unmeasured) lists of "cell class".
    An entry the bench has no shape for is pruned too, unless keep_unmeasured."""
    by_class = defaultdict(list)
    for p in pairs:
        if not same_kernel(p):
            by_class[(cell_of(p), p.cls)].append(p)
    kept, pruned, unmeasured = [], [], []
    for e in table["entries"]:
        if e.get("winner") == "hand":
            continue
        what = "%s %s" % (e["cell"], e["class"])
        ps = by_class.get((e["cell"], e["class"]), [])
        if not ps and keep_unmeasured:
            unmeasured.append(what)
            continue
        g = geomean([speedup(p) for p in ps]) if ps else None
        check = {"speedup": round(g, 4) if ps else None, "shapes": sorted({p.shape for p in ps}), "bench": bench_name,
                 "min_speedup": min_speedup}
        if not ps:
            check["reason"] = "the bench run has no shape of this class"
        if ps and g >= min_speedup:
            e["aot_check"] = check
            kept.append("%s (%.2fx)" % (what, g))
            continue
        e["pruned"] = {"winner": e["winner"], "schedule": e["schedule"], "tuned_ms": e["tuned_ms"],
                       "jit_speedup": e["speedup"], "aot_check": check}
        e.update(winner="hand", schedule={}, tuned_ms=e["hand_ms"], speedup=1.0)
        e.pop("aot_check", None)
        pruned.append("%s (%s)" % (what, "%.2fx" % g if ps else "not measured"))
    if pruned or kept:
        table["aot_check"] = {"date": datetime.date.today().isoformat(), "bench": bench_name,
                              "min_speedup": min_speedup, "kept": len(kept),
                              "pruned": sum("pruned" in e for e in table["entries"])}  # this run's and earlier
    return kept, pruned, unmeasured


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench_json", help="fbngrad_bench --benchmark_format=json output of the tuned build")
    ap.add_argument("--table", required=True, help="the schedule table the build read (generators/tuned/<isa>.json)")
    ap.add_argument("--min-speedup", type=float, default=1.02,
                    help="keep a tuned entry only at this geo-mean speed-up over hand or more (default 1.02)")
    ap.add_argument("--keep-unmeasured", action="store_true",
                    help="leave entries whose class the bench run has no shape of (default: back to hand)")
    ap.add_argument("--dry-run", action="store_true", help="report, do not write the table")
    a = ap.parse_args()
    try:
        pairs = load_pairs(a.bench_json)
        with open(a.table) as f:
            try:
                table = json.load(f)
            except ValueError as e:
                raise ValueError("%s: not JSON (%s)" % (a.table, e))
        if table.get("format") != "fbngrad-schedule-table-1" or not isinstance(table.get("entries"), list):
            raise ValueError("%s: not a schedule table written by fbngrad_tune" % a.table)
    except (OSError, ValueError, KeyError) as e:
        print("prune_tuned.py:", e, file=sys.stderr)
        return 2
    if not pairs:
        print("prune_tuned.py: no fbngrad / fbngrad-hand pairs in %s (was it a tuned build?)" % a.bench_json,
              file=sys.stderr)
        return 2
    isa = table.get("machine", {}).get("isa")
    variants = {p.hand_variant for p in pairs}
    if isa and not any(v.endswith("_" + isa) for v in variants):
        print("prune_tuned.py: %s measured %s, not the table's ISA %s" % (a.bench_json, sorted(variants)[:3], isa),
              file=sys.stderr)
        return 2
    kept, pruned, unmeasured = prune(table, pairs, a.min_speedup, os.path.basename(a.bench_json),
                                     a.keep_unmeasured)
    for name, xs in (("kept", kept), ("pruned (back to hand)", pruned), ("not in the bench run, left", unmeasured)):
        print("%s: %d%s" % (name, len(xs), "".join("\n  " + x for x in xs)))
    if a.dry_run or not (kept or pruned):
        return 0
    d = os.path.dirname(os.path.abspath(a.table))
    with tempfile.NamedTemporaryFile("w", dir=d, prefix=".prune-", suffix=".json", delete=False) as f:
        json.dump(table, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(f.name, a.table)
    print("wrote %s%s" % (a.table, "; rebuild to drop the pruned variants" if pruned else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
