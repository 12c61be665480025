#!/usr/bin/env python3
"""Holds the claim behind FBNGRAD_SHARED_CODE (cmake/variants.cmake): a variant
that takes another variant's kernel would have been the same code had it been
generated. For each entry it runs the generator for the variant's own target
and compares the assembly with the kernel it uses instead.

    check_shared_code.py --generator fbngrad_generator --asm-dir build/src --work DIR \\
        'alias|base|generator name|halide target|param param ...' ...

Two listings are the same code when their functions, with the variants' names,
the numbering of outlined loops and of local labels taken out, are the same
lines (in any order), and only the target string of the metadata differs.
Exit status 0 when every entry holds, 1 otherwise (the first difference printed).
--self-test shows on made-up listings that a different instruction fails.
"""

import argparse
import difflib
import os
import re
import subprocess
import sys

FUNCTION_RE = re.compile(r"^\s*\.type\s+([\w.$]+)\s*,\s*[@%]function")
# The features every variant is built with (FBNGRAD_FEATURES, and no_runtime for USE_RUNTIME).
FEATURES = "strict_float-user_context-no_runtime"


def normalized_functions(text, name):
    """The listing's functions, each as normalized text, sorted."""
    funcs, current = [], None
    for line in text.splitlines():
        if FUNCTION_RE.match(line):
            current = []
            funcs.append(current)
            continue
        if current is None or re.match(r"^\s*(\.file|\.ident|//)", line):
            continue
        line = re.sub(r"//.*", "", line).rstrip()
        line = re.sub(r"\b" + re.escape(name) + r"_par_for_\w*", "LOOP", line)  # loops are numbered by order
        line = line.replace(name, "VARIANT")
        line = re.sub(r"\.L[\w.$]+", ".L", line)
        if re.match(r'^\s*\.asciz\s+"[a-z0-9_]+-\d+-[a-z]+(-[a-z0-9_]+)*"$', line):
            line = "TARGET STRING"  # the metadata's Halide target: differs by design
        if re.match(r"^\s*\.size\s+\.L,\s*\d+$", line):
            continue
        current.append(line)
    return sorted("\n".join(f) for f in funcs)


def compare(alias_text, alias, base_text, base):
    """"" when the same code, else the first difference."""
    a, b = normalized_functions(alias_text, alias), normalized_functions(base_text, base)
    if a == b:
        return ""
    if len(a) != len(b):
        return f"{len(a)} functions against {len(b)}"
    for x, y in zip(a, b):
        if x != y:
            diff = difflib.unified_diff(y.splitlines(), x.splitlines(), base, alias, lineterm="", n=1)
            return "\n".join(list(diff)[:30])
    return "different"


def check(entry, generator, asm_dir, work):
    alias, base, gen, target, params = entry.split("|")
    os.makedirs(work, exist_ok=True)
    cmd = [generator, "-g", gen, "-f", alias, "-n", alias, "-e", "assembly", "-o", work,
           f"target={target}-{FEATURES}"] + params.split()
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        return f"the generator failed ({' '.join(cmd)}):\n{run.stderr}"
    with open(os.path.join(work, alias + ".s")) as f:
        alias_text = f.read()
    base_path = os.path.join(asm_dir, base + ".s")
    if not os.path.exists(base_path):
        return f"{base_path}: missing (is the build complete?)"
    with open(base_path) as f:
        base_text = f.read()
    return compare(alias_text, alias, base_text, base)


LISTING = """\t.type\t{n}_par_for_f_s0_so{k},@function
{n}_par_for_f_s0_so{k}:
\tfadd\tv0.4s, v1.4s, v2.4s
.LBB0_1:
\tb\t.LBB0_1
\t.type\t{n},@function
{n}:
\tbl\t{n}_par_for_f_s0_so{k}
\t{insn}\tv3.4s, v4.4s, v5.4s
\t.asciz\t"{target}"
"""


def self_test():
    base = LISTING.format(n="fbng_x_neon", k="", insn="fmul", target="arm-64-linux-no_runtime")
    same = LISTING.format(n="fbng_x_arm_fp16", k="__2", insn="fmul", target="arm-64-linux-arm_fp16-no_runtime")
    other = LISTING.format(n="fbng_x_arm_fp16", k="", insn="fadd", target="arm-64-linux-arm_fp16-no_runtime")
    ok = True
    if compare(same, "fbng_x_arm_fp16", base, "fbng_x_neon"):
        print("FAIL self-test: the same code under other names and loop numbers must pass")
        ok = False
    if not compare(other, "fbng_x_arm_fp16", base, "fbng_x_neon"):
        print("FAIL self-test: a different instruction must fail")
        ok = False
    print("self-test: " + ("both cases as expected" if ok else "failed"))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generator")
    ap.add_argument("--asm-dir", help="directory holding the kernels' <variant>.s")
    ap.add_argument("--work", help="where to generate the variants' own code")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("entries", nargs="*", help="alias|base|generator name|target|params")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not (args.generator and args.asm_dir and args.work and args.entries):
        ap.error("--generator, --asm-dir, --work and at least one entry are required (or --self-test)")
    failed = 0
    for entry in args.entries:
        alias, base = entry.split("|")[:2]
        problem = check(entry, args.generator, args.asm_dir, args.work)
        if problem:
            failed += 1
            print(f"FAIL {alias} is not the code of {base}:\n{problem}")
        else:
            print(f"ok   {alias}: the code of {base}")
    print(f"{len(args.entries) - failed} of {len(args.entries)} shared variants are the same code")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
