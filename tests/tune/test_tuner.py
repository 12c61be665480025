#!/usr/bin/env python3
"""The tuner's own test (ctest tuner_selftest): fbngrad_tune_selftest is
fbngrad_tune plus deliberately wrong generators (tests/tune/wrong_generator.cpp).
With a tiny search it must write a valid schedule table, reject the wrong
candidate (and every candidate that fails on an edge shape), never let either
win, stop at its budget, resume without redoing work, reject a candidate
that crashed an earlier run, and merge a run into an earlier table on request."""
import argparse
import json
import os
import shutil
import subprocess
import sys

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def run(tuner, *args):
    p = subprocess.run([tuner, *args], capture_output=True, text=True, timeout=500)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    return p


def check_table(path, cells, classes):
    with open(path) as f:
        t = json.load(f)
    check(t["format"] == "fbngrad-schedule-table-1", "table format")
    for k in ("cpu", "cores", "date", "halide", "isa", "target"):
        check(k in t["machine"], f"machine.{k} in the table")
    got = {(e["cell"], e["class"]) for e in t["entries"]}
    check(got == {(c, k) for c in cells for k in classes}, f"one entry per cell and class: {sorted(got)}")
    for e in t["entries"]:
        check(e["hand_ms"] > 0 and 0 < e["tuned_ms"] <= e["hand_ms"], f"times of {e}")
        check(abs(e["speedup"] - e["hand_ms"] / e["tuned_ms"]) < 1e-9, f"speedup of {e}")
        check(not e["winner"].startswith("gen:"), f"an extra generator never wins: {e}")
        if e["winner"] == "hand":
            check(e["schedule"] == {}, f"the hand schedule has no parameters: {e}")
        else:
            check("knobs" in e["schedule"] or "autoscheduler" in e["schedule"], f"a schedule: {e}")
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tuner", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    table = os.path.join(a.workdir, "table.json")
    state = table + ".state.jsonl"
    common = ["--out", table, "--dtypes", "f32", "--classes", "small_c,cache", "--extra-generator",
              "fbngrad_wrong_count", "--extra-generator", "fbngrad_wrong_scale"]
    cells = ["f32/nhwc/train", "f32/nchw/infer"]

    # 1. Two cells, with the wrong generator and the autoschedulers among the candidates.
    p = run(a.tuner, *common, "--layouts", "nhwc", "--modes", "train", "--budget", "5m")
    check(p.returncode == 0, f"first run exits 0 (got {p.returncode})")
    p = run(a.tuner, *common, "--layouts", "nchw", "--modes", "infer", "--budget", "5m", "--resume")
    check(p.returncode == 0, f"second cell exits 0 (got {p.returncode})")
    check("before/after" in p.stdout or "hand ms" in p.stdout, "the before/after table is printed")
    t = check_table(table, cells, ["small_c", "cache"])
    wrong = [r for r in t["rejected"] if r["candidate"] == "gen:fbngrad_wrong_scale"]
    check({r["cell"] for r in wrong} == set(cells), f"the wrong-scale generator is rejected in every cell: {wrong}")
    count = [r for r in t["rejected"] if r["candidate"] == "gen:fbngrad_wrong_count"]
    check([r["cell"] for r in count] == ["f32/nhwc/train"], f"the wrong count is caught in training: {count}")
    check(all(r["reason"].startswith("wrong on ") for r in wrong + count), f"as wrong, with the shape: {wrong}")
    autos = [r for r in t["rejected"] if r["candidate"] in ("Mullapudi2016", "Li2018", "Adams2019")]
    check(all(r["reason"].startswith("on ") or r["reason"].startswith("wrong on ") or
              r["reason"].startswith("does not compile") for r in autos), f"autoscheduler rejections: {autos}")
    check(all(r["reason"] for r in t["rejected"]), "every rejection says why")
    # An NCHW one pass offers at most C tasks; only vector_multiple 1 has the two-pass
    # route that meets the many-core rule (bench/tune/tune_space.cpp): no wider one is tried.
    started = [json.loads(line) for line in open(state) if '"check_started"' in line]
    nchw = {e["candidate"] for e in started if "/nchw/" in e["cell"]}
    check(any(c.startswith("onepass_vm1_") for c in nchw), f"NCHW one passes of vector_multiple 1 are tried: {sorted(nchw)}")
    check(not [c for c in nchw if c.startswith("onepass_") and not c.startswith("onepass_vm1_")],
          f"no NCHW one pass of another vector_multiple: {sorted(nchw)}")

    # 2. Resuming a finished run redoes nothing.
    lines = open(state).read().count("\n")
    p = run(a.tuner, *common, "--layouts", "nhwc,nchw", "--modes", "train,infer", "--budget", "0", "--resume")
    check("2 already done" in p.stdout, "a resumed run counts the finished cells")
    check(p.returncode == 3, f"a zero budget stops before new work with exit 3 (got {p.returncode})")
    check("--resume" in p.stdout and "budget" in p.stdout, "and says how to continue")
    check(open(state).read().count("\n") == lines, "and writes nothing to the state")
    check_table(table, cells, ["small_c", "cache"])

    # 3. A state file is never reused or lost silently.
    p = run(a.tuner, *common, "--layouts", "nhwc", "--modes", "train")
    check(p.returncode == 2 and "--resume" in p.stderr and "--fresh" in p.stderr,
          "an existing state file needs --resume or --fresh")

    # 4. A candidate whose check started but never ended crashed a run: rejected on resume.
    with open(state, "a") as f:
        f.write(json.dumps({"event": "check_started", "cell": "f32/nchw/train", "candidate": "vm2_ept4096"}) + "\n")
        f.write('{"event": "cell_do')  # a torn last line, as a killed run leaves
    p = run(a.tuner, *common, "--layouts", "nchw", "--modes", "train", "--resume", "--no-autoschedulers")
    check(p.returncode == 0, f"resume after a crash exits 0 (got {p.returncode})")
    t = json.load(open(table))
    crashed = [r for r in t["rejected"] if r["cell"] == "f32/nchw/train" and r["candidate"] == "vm2_ept4096"]
    check(len(crashed) == 1 and "crashed" in crashed[0]["reason"], f"the crashed candidate is rejected: {crashed}")

    # 5. --merge: a run of one cell and class keeps the table's other entries as they were.
    before = json.load(open(table))
    merged = os.path.join(a.workdir, "merged.json")
    shutil.copy(table, merged)
    one = ["--out", merged, "--dtypes", "f32", "--layouts", "nchw", "--modes", "infer", "--classes", "cache",
           "--no-autoschedulers", "--fresh", "--budget", "5m"]
    p = run(a.tuner, *one, "--merge")
    check(p.returncode == 0, f"a merging run exits 0 (got {p.returncode})")
    t = json.load(open(merged))
    key = lambda e: (e["cell"], e["class"])
    old = {key(e): e for e in before["entries"]}
    new = {key(e): e for e in t["entries"]}
    check(set(new) == set(old) and len(t["entries"]) == len(before["entries"]), f"the same cells and classes: {sorted(new)}")
    check(all(new[k] == old[k] for k in old if k != ("f32/nchw/infer", "cache")), "the other entries are kept as they were")
    check(t["run"].get("entries_kept_from_earlier") == len(old) - 1, f"the table says how many it kept: {t['run']}")
    check([r for r in t["rejected"] if r["cell"] != "f32/nchw/infer"] ==
          [r for r in before["rejected"] if r["cell"] != "f32/nchw/infer"], "the other cells' rejections are kept")
    check(not [r for r in t["rejected"] if r["cell"] == "f32/nchw/infer" and r["candidate"].startswith("gen:")],
          "the merged cell's rejections are this run's (it had no extra generators)")
    # Without --merge the same run writes its own entry only.
    p = run(a.tuner, *one)
    check(p.returncode == 0 and [key(e) for e in json.load(open(merged))["entries"]] == [("f32/nchw/infer", "cache")],
          "without --merge the table holds this run's entries only")
    # What cannot be merged stops the run before any work, and the file is left as it was.
    with open(merged, "w") as f:
        f.write('{"format": "something else"}')
    p = run(a.tuner, *one, "--merge")
    check(p.returncode == 2 and "not a schedule table" in p.stderr and
          open(merged).read() == '{"format": "something else"}', "a file that is not a table is not merged")
    other_isa = dict(before, machine=dict(before["machine"], isa="avx2_other"))
    with open(merged, "w") as f:
        json.dump(other_isa, f)
    p = run(a.tuner, *one, "--merge")
    check(p.returncode == 2 and "a table of avx2_other" in p.stderr, "a table of another ISA is not merged")

    # 6. A fresh run starts over; bad arguments are refused.
    p = run(a.tuner, *common, "--layouts", "nhwc", "--modes", "train", "--fresh", "--budget", "0")
    check(p.returncode == 3 and len(json.load(open(table))["entries"]) == 0, "--fresh discards the state")
    p = run(a.tuner, *common, "--layouts", "nhwc", "--modes", "train", "--resume", "--budget", "soon")
    check(p.returncode != 0 and "not a duration" in p.stderr, "a bad --budget is refused")
    p = run(a.tuner, "--out", table, "--isa", "neon", "--fresh")
    check(p.returncode == 2 and "no ISA named neon" in p.stderr, "an ISA of another platform is refused")

    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        return 1
    print("tuner self-test: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
