#!/usr/bin/env python3
"""Checks that the calling thread leaves the blocks' partial sums to the tasks: greps the loop
nest Halide wrote for each CPU variant (add_halide_library's STMT output, <name>.stmt).

    check_caller_work.py --variants fbngrad_variants.inc [--variants ...] --stmt-dir build/src

The pipeline's own function (the .stmt's `external... func <name>`, what the calling thread
runs before, between and after the parallel loops; the loops' bodies are the `internal func
<name>_par_for_*` before it) must realize no rfactor intermediate: no `produce <f>_intm {`.
Those intermediates are the sums' blocks (NHWC: 2 x C floats for each block of rows); each
block is zeroed and summed by the task that owns it. Realized by the calling thread, the
blocks were zeroed there, in a serial memset before the first parallel loop: 11-25 us of
NHWC 32,28,28,512's 6 ms inference (the one pass, before 2026-12-06's fix), which is serial
on any number of cores. Which variant shares which code: check_vectorized.read_variants.
Exit status 0 when every variant passes, 1 otherwise. --self-test shows that it can fail.
"""

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_vectorized import read_variants  # noqa: E402

MAIN_RE = re.compile(r"^(external_plus_metadata |external )?func (\S+) \(")
LOOP_BODY_RE = re.compile(r"^internal func ")
INTM_RE = re.compile(r"\bproduce ([\w$.]+_intm) \{")


def caller_realizes(stmt_text, name):
    """The rfactor intermediates the pipeline `name` realizes on the calling thread, or None where
    the text has no function `name` (one pass over the text)."""
    found, in_main, seen = [], False, False
    for line in stmt_text.splitlines():
        m = MAIN_RE.match(line)
        if m:
            in_main = m.group(2) == name
            seen |= in_main
            continue
        if LOOP_BODY_RE.match(line):
            in_main = False
            continue
        if in_main:
            found += INTM_RE.findall(line)
    return found if seen else None


def check_variant(row, stmt_dir):
    name = row["code"]
    path = os.path.join(stmt_dir, name + ".stmt")
    if not os.path.exists(path):
        return [f"{path}: missing (is the build complete? add_halide_library STMT writes it)"]
    with open(path) as f:
        problems = check_text(f.read(), name, path)
    if not problems:
        print(f"ok   {name}")
    return problems


def check_text(text, name, path):
    """The problems of the .stmt text `text` (read from `path`) for the pipeline `name`."""
    bad = caller_realizes(text, name)
    if bad is None:
        return [f"{path}: no `func {name} (` (the pipeline's own function)"]
    if bad:
        return [f"the calling thread realizes {', '.join(sorted(set(bad)))}: the sums' blocks are zeroed "
                "and summed outside the tasks (a serial pass before the parallel loops)"]
    return []


def self_test():
    loop = "internal func k_par_for_x_backprop_s0_so (__user_context, so, closure_arg) {\n" \
           " produce partial_intm {\n  for (partial_intm.s0.c, 0, 8) {\n  }\n }\n}\n"
    good = loop + "external_plus_metadata func k (__user_context, x) {\n" \
                  " produce partial_intm_global_wrapper$0 {\n  halide_do_par_for(k_par_for_x_backprop_s0_so)\n }\n}\n"
    bad = loop + "external_plus_metadata func k (__user_context, x) {\n" \
                 " produce partial_intm {\n  for (partial_intm.s0.c, 0, 8) {\n  }\n }\n}\n"
    failures = 0
    if caller_realizes(good, "k"):
        print("self-test: an intermediate inside a task was taken for the caller's")
        failures += 1
    if caller_realizes(bad, "k") != ["partial_intm"]:
        print("self-test: the caller's `produce partial_intm {` was not found")
        failures += 1
    if caller_realizes(bad, "other") is not None:
        print("self-test: another pipeline's function was read as this one's")
        failures += 1
    if check_text(good, "k", "k.stmt") or not check_text(good, "other", "k.stmt"):
        print("self-test: a missing pipeline function was not reported, or a good one was")
        failures += 1
    print("self-test " + ("failed" if failures else "passed"))
    return 1 if failures else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variants", action="append", default=[], help="an X-macro file of the variant table")
    ap.add_argument("--stmt-dir", help="where add_halide_library wrote <name>.stmt")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    if not args.variants or not args.stmt_dir:
        ap.error("--variants and --stmt-dir are required (or --self-test)")
    rows = [r for p in args.variants for r in read_variants(p) if r["device"] == "FBNGRAD_CPU"]
    if not rows:
        print("no CPU variant in " + ", ".join(args.variants))
        return 1
    problems = 0
    for row in rows:
        for p in check_variant(row, args.stmt_dir):
            print(f"FAIL {row['name']}: {p}")
            problems += 1
    print(f"{len(rows)} CPU variants, {problems} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
