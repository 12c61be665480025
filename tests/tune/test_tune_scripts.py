#!/usr/bin/env python3
"""ctest tune_scripts_selftest: prune_tuned.py and tuned_vs_hand.py on made-up
bench output, where the right answer is known: which entries are kept, which go
back to the hand schedule, that nothing is written on bad input, and the report's
exit status."""
import copy
import json
import os
import subprocess
import sys
import tempfile

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "tune")
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def bench_row(impl, case, ms, label, unit="ms", extra=""):
    return {"name": "%s/%s%s/real_time_median" % (impl, case, extra), "run_name": "%s/%s%s/real_time" % (impl, case, extra),
            "aggregate_name": "median", "real_time": ms * {"ms": 1, "us": 1e3, "ns": 1e6}[unit], "time_unit": unit,
            "label": label}


def entry(cell, cls, winner, speedup=1.2):
    sched = {} if winner == "hand" else {"knobs": {"rows_per_task": 256}}
    return {"cell": cell, "class": cls, "winner": winner, "schedule": sched, "hand_ms": 1.0,
            "tuned_ms": 1.0 / speedup if winner != "hand" else 1.0, "speedup": speedup if winner != "hand" else 1.0}


TABLE = {"format": "fbngrad-schedule-table-1", "machine": {"isa": "avx512"}, "entries": [
    entry("f32/nhwc/train", "dram", "rpt256"),        # faster in the AOT bench: kept
    entry("f32/nchw/train", "small_c", "ept4096"),    # slower there: pruned
    entry("f16/nhwc/infer", "cache", "rpb1024"),      # no bench rows: pruned (or kept: --keep-unmeasured)
    entry("f32/nhwc/train", "small_nhw", "hand"),     # hand: untouched
]}
HAND = {"f32_nhwc_train": "fbng_f32_nhwc_train_avx512", "f32_nchw_train": "fbng_f32_nchw_train_avx512"}


def bench_json(nchw_tuned_ms):
    rows = []
    # f32 NHWC train dram: two shapes, 1.25x and 1.05x (geo-mean 1.146), one in us, one cold row to ignore.
    for shape, hand, tuned, unit in (("32,56,56,64", 4.0, 3.2, "ms"), ("32,28,28,256", 2.1, 2.0, "us")):
        case = "float32/NHWC/train/" + shape
        rows.append(bench_row("fbngrad-hand", case, hand, HAND["f32_nhwc_train"], unit))
        rows.append(bench_row("fbngrad", case, tuned, "fbng_f32_nhwc_train_avx512_dram", unit))
    rows.append(bench_row("fbngrad", "float32/NHWC/train/32,56,56,64", 99.0, "x", extra="/cold"))
    rows.append(bench_row("fbngrad-hand", "float32/NHWC/train/32,56,56,64", 0.01, "x", extra="/cold"))
    # f32 NHWC train small_nhw: the same kernel in both rows, 0.7x: noise, never pruned or counted.
    rows.append(bench_row("fbngrad-hand", "float32/NHWC/train/32,7,7,512", 0.1, HAND["f32_nhwc_train"]))
    rows.append(bench_row("fbngrad", "float32/NHWC/train/32,7,7,512", 0.143, HAND["f32_nhwc_train"]))
    # f32 NCHW train small_c: the tuned variant at hand/nchw_tuned_ms.
    case = "float32/NCHW/train/32,28,28,8"
    rows.append(bench_row("fbngrad-hand", case, 0.030, HAND["f32_nchw_train"]))
    rows.append(bench_row("fbngrad", case, nchw_tuned_ms, "fbng_f32_nchw_train_avx512_small_c"))
    # A row without a partner, and an aggregate that is not the median.
    rows.append(bench_row("onednn", case, 0.01, "jit"))
    rows.append(dict(bench_row("fbngrad", case, 0.001, "x"), aggregate_name="mean"))
    return {"context": {}, "benchmarks": rows}


def run(script, *args):
    p = subprocess.run([sys.executable, os.path.join(SCRIPTS, script), *args], capture_output=True, text=True)
    sys.stdout.write(p.stdout + p.stderr)
    return p


def write(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)


def check_shape_classes():
    """bench_pairs.shape_class is src/shape_class.h's rule again: the same answers
    at each boundary (tests/test_shape_class.cpp checks the C++ side)."""
    sys.path.insert(0, SCRIPTS)
    from bench_pairs import shape_class  # noqa: E402
    cache_rows, dram_rows = 16 * 1024 * 1024 // (3 * 64 * 4), 128 * 1024 * 1024 // (3 * 64 * 4)
    half_dram_rows = 128 * 1024 * 1024 // (3 * 64 * 2)
    for rows_c_bytes, want in [((1 << 20, 15, 4), "small_c"), ((4095, 16, 4), "small_nhw"),
                               ((cache_rows, 64, 4), "cache"), ((cache_rows + 1, 64, 4), "dram"),
                               ((dram_rows, 64, 4), "dram"), ((dram_rows + 1, 64, 4), "huge"),
                               ((half_dram_rows, 64, 2), "dram"), ((half_dram_rows + 1, 64, 2), "huge"),
                               ((32 * 28 * 28, 512, 4), "huge"), ((32 * 28 * 28, 512, 2), "dram")]:
        rows, c, nbytes = rows_c_bytes
        got = shape_class(rows, 1, 1, c, nbytes)
        check(got == want, "shape_class(rows %d, C %d, %d bytes) = %s, not %s" % (rows, c, nbytes, got, want))


def main():
    check_shape_classes()
    with tempfile.TemporaryDirectory() as d:
        table, bench = os.path.join(d, "avx512.json"), os.path.join(d, "bench.json")
        write(table, TABLE)
        write(bench, bench_json(nchw_tuned_ms=0.036))  # 0.83x

        # The report: a tuned class slower than hand fails it; the same-kernel class does not.
        p = run("tuned_vs_hand.py", bench)
        check(p.returncode == 1, "tuned_vs_hand exits 1 with a slow tuned class (got %d)" % p.returncode)
        check("f32/nchw/train small_c (0.83x)" in p.stdout, "the report names the slow class")
        check("hand (same kernel; noise) | 0.70x" in p.stdout, "the same-kernel class is reported as noise")
        check("| tuned | 1.15x | 1.05x |" in p.stdout, "the dram class's geo-mean (ms and us rows, no cold row)")

        # A dry run writes nothing.
        before = open(table).read()
        p = run("prune_tuned.py", "--table", table, bench, "--dry-run")
        check(p.returncode == 0 and open(table).read() == before, "--dry-run leaves the table")

        p = run("prune_tuned.py", "--table", table, bench)
        check(p.returncode == 0, "prune exits 0")
        t = json.load(open(table))
        e = {(x["cell"], x["class"]): x for x in t["entries"]}
        kept, pruned = e[("f32/nhwc/train", "dram")], e[("f32/nchw/train", "small_c")]
        check(kept["winner"] == "rpt256" and abs(kept["aot_check"]["speedup"] - 1.1456) < 1e-3,
              "the faster entry is kept with its AOT speed-up: %s" % kept)
        check(kept["aot_check"]["shapes"] == ["32,28,28,256", "32,56,56,64"], "the kept entry lists its shapes")
        check(pruned["winner"] == "hand" and pruned["schedule"] == {} and pruned["speedup"] == 1.0 and
              pruned["tuned_ms"] == pruned["hand_ms"], "the slower entry goes back to hand: %s" % pruned)
        check(pruned.get("pruned", {}).get("winner") == "ept4096" and
              pruned["pruned"]["schedule"] == {"knobs": {"rows_per_task": 256}} and
              abs(pruned["pruned"]["aot_check"]["speedup"] - 0.8333) < 1e-3, "what the tuner chose is kept as a record")
        um = e[("f16/nhwc/infer", "cache")]
        check(um["winner"] == "hand" and um["pruned"]["aot_check"]["speedup"] is None and
              "no shape" in um["pruned"]["aot_check"]["reason"], "an entry the bench did not measure is pruned: %s" % um)
        check(e[("f32/nhwc/train", "small_nhw")] == TABLE["entries"][3], "a hand entry is left")
        check(t["aot_check"]["kept"] == 1 and t["aot_check"]["pruned"] == 2, "the table says what the check did")
        check(not [f for f in os.listdir(d) if f.startswith(".prune-")], "no temporary file is left")

        # After the rebuild the class runs hand in both rows: the report passes.
        b = bench_json(nchw_tuned_ms=0.036)
        for r in b["benchmarks"]:
            if r["label"] == "fbng_f32_nchw_train_avx512_small_c":
                r["label"] = HAND["f32_nchw_train"]
        write(bench, b)
        p = run("tuned_vs_hand.py", bench)
        check(p.returncode == 0, "tuned_vs_hand exits 0 once the slow class runs hand (got %d)" % p.returncode)

        # --keep-unmeasured leaves the unmeasured entry as it was.
        write(table, TABLE)
        p = run("prune_tuned.py", "--table", table, bench, "--keep-unmeasured")
        t = json.load(open(table))
        check(p.returncode == 0 and t["entries"][2] == TABLE["entries"][2], "--keep-unmeasured leaves it")

        # A threshold above the kept entry's speed-up prunes it too.
        write(table, TABLE)
        write(bench, bench_json(nchw_tuned_ms=0.036))
        p = run("prune_tuned.py", "--table", table, bench, "--min-speedup", "1.2")
        t = json.load(open(table))
        check(all(x["winner"] == "hand" for x in t["entries"]), "--min-speedup 1.2 prunes both")

        # Errors: nothing written, exit 2, a message.
        write(table, TABLE)
        before = open(table).read()
        bad = os.path.join(d, "bad.json")
        for content, what in (("{not json", "a file that is not JSON"), ('{"x": 1}', "JSON without benchmarks"),
                              (json.dumps({"benchmarks": []}), "a bench run without fbngrad pairs")):
            with open(bad, "w") as f:
                f.write(content)
            p = run("prune_tuned.py", "--table", table, bad)
            check(p.returncode == 2 and p.stderr.strip() and open(table).read() == before, "rejected: " + what)
        other = copy.deepcopy(TABLE)
        other["machine"]["isa"] = "avx2"
        write(table, other)
        before = open(table).read()
        p = run("prune_tuned.py", "--table", table, bench)
        check(p.returncode == 2 and "not the table's ISA avx2" in p.stderr and open(table).read() == before,
              "a bench run of another ISA is rejected")
        write(table, {"format": "something-else", "entries": []})
        p = run("prune_tuned.py", "--table", table, bench)
        check(p.returncode == 2 and "not a schedule table" in p.stderr, "a file that is not a table is rejected")
        p = run("prune_tuned.py", "--table", os.path.join(d, "missing.json"), bench)
        check(p.returncode == 2, "a missing table is an error")
    print("%d failure(s)" % len(FAILURES))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
