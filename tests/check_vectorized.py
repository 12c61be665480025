#!/usr/bin/env python3
"""Checks that the schedules really vectorize: greps the assembly Halide wrote
for each variant of one ISA (add_halide_library's ASSEMBLY output, <name>.s).

    check_vectorized.py --variants fbngrad_variants.inc [--variants ...] --asm-dir build/src --isa avx2

The variant table's X-macro file (fbngrad_variants.inc) says which variants
exist and what ISA and dtype each has. For every variant of --isa:
  * the file has float32 vector adds and vector multiplies on the ISA's vector
    registers (sse41: addps/mulps on xmm, legacy SSE encoding; avx2: vaddps/
    vmulps on ymm; avx512: on zmm; neon, arm_fp16: fadd/fmul on v<n>.4s);
  * every parallel loop body Halide outlined (the functions named
    <name>_par_for_*: the big sums and x_backprop) does vector arithmetic on
    those registers, so one loop that silently went scalar fails the check;
    except the loops the schedule names scalar on purpose (a parallel var
    `so_scalar`: the NHWC specializations for C below the narrowest vector);
  * no register or instruction of a richer ISA appears (ymm in sse41, zmm in
    avx2, FP16 arithmetic in neon): that would be a SIGILL on the CPUs the
    dispatcher sends to this variant;
  * arm_fp16 float16 variants convert natively: fcvtl (load) and fcvtn (store,
    where the variant writes x_backprop) between v<n>.4h and v<n>.4s.
Exit status 0 when every variant passes, 1 otherwise (each failure printed).
--self-test runs the checks on small made-up listings, to show that each can fail.
"""

import argparse
import os
import re
import sys

# Any of the table's X-macros: FBNGRAD_VARIANT(name, dtype, layout, is_training, isa, device),
# FBNGRAD_REDUCE_VARIANT(name, dtype, layout, isa, device), FBNGRAD_APPLY_VARIANT(...): the
# name first, the dtype second, the ISA and the device last.
VARIANT_RE = re.compile(r"^FBNGRAD_(\w*)VARIANT\(([^)]*)\)")
FUNCTION_RE = re.compile(r"^\s*\.type\s+([\w.$]+)\s*,\s*[@%]function")

X86_ARITH = r"(add|sub|mul|div)ps"
ARM_ARITH = re.compile(r"^\s*f(add|sub|mul|div)\s+v\d+\.4s\b")

# Per ISA: (vector arithmetic, vector add, vector multiply, forbidden, why forbidden).
RULES = {
    "sse41": (re.compile(r"^\s*" + X86_ARITH + r"\s+.*%xmm"),
              re.compile(r"^\s*addps\s+.*%xmm"), re.compile(r"^\s*mulps\s+.*%xmm"),
              re.compile(r"%[yz]mm|^\s*v[a-z0-9]+\s"), "AVX (VEX/EVEX) code in an SSE4.1 variant"),
    "avx2": (re.compile(r"^\s*v" + X86_ARITH + r"\s+.*%ymm"),
             re.compile(r"^\s*vaddps\s+.*%ymm"), re.compile(r"^\s*vmulps\s+.*%ymm"),
             re.compile(r"%zmm|%k[0-7]\b"), "AVX-512 registers in an AVX2 variant"),
    "avx512": (re.compile(r"^\s*v" + X86_ARITH + r"\s+.*%zmm"),
               re.compile(r"^\s*vaddps\s+.*%zmm"), re.compile(r"^\s*vmulps\s+.*%zmm"),
               None, None),
    "neon": (ARM_ARITH, re.compile(r"^\s*fadd\s+v\d+\.4s\b"), re.compile(r"^\s*fmul\s+v\d+\.4s\b"),
             # FEAT_FP16 (ARMv8.2) half-precision arithmetic; conversions (fcvt*) are ARMv8.0.
             re.compile(r"^\s*f(?!cvt)[a-z0-9]*\s+(v\d+\.[48]h\b|h\d+\b)"),
             "ARMv8.2 FP16 arithmetic in a baseline NEON variant"),
    "arm_fp16": (ARM_ARITH, re.compile(r"^\s*fadd\s+v\d+\.4s\b"), re.compile(r"^\s*fmul\s+v\d+\.4s\b"),
                 None, None),
}
NARROWER = {
    "avx2": re.compile(r"^\s*v" + X86_ARITH + r"\s+.*%[xy]mm"),
    "avx512": re.compile(r"^\s*v" + X86_ARITH + r"\s+.*%[xyz]mm"),
}
# The schedules name the parallel loop of a specialization that is scalar by design `so_scalar`
# (kScalarLoopName, generators/schedule.h); Halide outlines it as
# <name>_par_for_<func>_s<stage>_..._so_scalar, with __<k> appended to the second and later loops
# of the same name.
SCALAR_LOOP = re.compile(r"_so_scalar(__\d+)?$")
FP16_LOAD = re.compile(r"^\s*fcvtl2?\s+v\d+\.4s\s*,\s*v\d+\.[48]h\b")
FP16_STORE = re.compile(r"^\s*fcvtn2?\s+v\d+\.[48]h\s*,\s*v\d+\.4s\b")


# A variant that takes another's kernel (cmake/variants.cmake, FBNGRAD_SHARED_CODE) has no
# assembly of its own: its ISA's rules are checked on that variant's.
SHARED_RE = re.compile(r"^// FBNGRAD_SHARED_CODE\((\w+), (\w+)\)")


def read_variants(path):
    rows, shared = [], {}
    with open(path) as f:
        for line in f:
            m = SHARED_RE.match(line.strip())
            if m:
                shared[m.group(1)] = m.group(2)
            m = VARIANT_RE.match(line.strip())
            if m:
                # FBNGRAD_TUNED_VARIANT(..., isa, device, "classes"): the classes go first.
                fields = [x.strip() for x in re.sub(r',\s*"[^"]*"\s*$', "", m.group(2)).split(",")]
                rows.append({"name": fields[0], "dtype": fields[1], "isa": fields[-2], "device": fields[-1],
                             # the reduce phase writes only float32 sums, no x_backprop
                             "writes_tensor": m.group(1) != "REDUCE_"})
    for r in rows:
        r["code"] = shared.get(r["name"], r["name"])
    return rows


def split_functions(lines):
    """{function name: its lines}, from each `.type f,@function` to the next."""
    funcs, current = {}, None
    for line in lines:
        m = FUNCTION_RE.match(line)
        if m:
            current = m.group(1)
            funcs[current] = []
        elif current is not None:
            funcs[current].append(line)
    return funcs


def check_variant(row, asm_dir):
    """A list of problems with one variant's assembly (empty: it passes)."""
    isa = row["isa"]
    name = row.get("code", row["name"])  # the variant whose code it is
    path = os.path.join(asm_dir, name + ".s")
    if not os.path.exists(path):
        return [f"{path}: missing (is the build complete? add_halide_library ASSEMBLY writes it)"]
    with open(path) as f:
        lines = f.read().splitlines()
    arith, add, mul, forbidden, why = RULES[isa]
    # A loop passes with packed arithmetic on a narrower vector of the same ISA too: the
    # NHWC schedules specialize their loops for fewer channels than the full width (8 or
    # 4 float lanes, generators/schedule_x86.cpp); the variant as a whole must still use
    # the full width (the add and multiply counts above).
    arith = NARROWER.get(isa, arith)
    problems = []
    n_add = sum(1 for l in lines if add.search(l))
    n_mul = sum(1 for l in lines if mul.search(l))
    if n_add == 0:
        problems.append(f"no float32 vector add ({add.pattern})")
    if n_mul == 0:
        problems.append(f"no float32 vector multiply ({mul.pattern})")

    funcs = split_functions(lines)
    loops = [fn for fn in funcs if fn.startswith(name + "_par_for_")]
    if not loops:
        problems.append("no parallel loop bodies (<name>_par_for_*): the schedule lost its parallel loops")
    for fn in loops:
        if SCALAR_LOOP.search(fn):
            continue
        n = sum(1 for l in funcs[fn] if arith.search(l))
        if n == 0:
            problems.append(f"{fn}: no vector arithmetic on the ISA's registers: this loop is scalar")

    if forbidden is not None:
        bad = [l.strip() for l in lines if forbidden.search(l) and not l.lstrip().startswith(("#", "//", "."))]
        if bad:
            problems.append(f"{why}: {len(bad)} lines, e.g. '{bad[0]}'")

    if isa == "arm_fp16" and row["dtype"] == "FBNGRAD_FLOAT16":
        if not any(FP16_LOAD.search(l) for l in lines):
            problems.append("float16 loads are not native conversions (no fcvtl v.4s, v.4h)")
        if row.get("writes_tensor", True) and not any(FP16_STORE.search(l) for l in lines):
            problems.append("float16 stores are not native conversions (no fcvtn v.4h, v.4s)")

    if not problems:
        print(f"ok   {name}: {n_add} vector adds, {n_mul} vector multiplies, "
              f"{len(loops)} parallel loops vectorized")
    return problems


def fake_asm(name, loop_body, main_body="", loop="x_backprop_s0_c_cn"):
    """A minimal Halide-shaped .s: one outlined parallel loop and the entry point."""
    return (f"\t.type\t{name}_par_for_{loop},@function\n{name}_par_for_{loop}:\n"
            f"{loop_body}\tret\n"
            f"\t.type\t{name},@function\n{name}:\n{main_body}\tret\n")


def self_test():
    """The check must pass vector code and fail each way a schedule can go wrong."""
    import tempfile
    x86_vec = "\tvaddps\t%ymm1, %ymm2, %ymm3\n\tvmulps\t(%rax), %ymm0, %ymm0\n"
    arm_vec = "\tfadd\tv0.4s, v1.4s, v2.4s\n\tfmul\tv3.4s, v3.4s, v4.4s\n"
    f16 = "\tfcvtl\tv4.4s, v3.4h\n\tfcvtn\tv6.4h, v6.4s\n"
    # name, isa, dtype, assembly, None (must pass) or a phrase the failure must contain
    cases = [
        ("avx2_ok", "avx2", "FBNGRAD_FLOAT32", fake_asm("avx2_ok", x86_vec), None),
        ("avx2_scalar_loop", "avx2", "FBNGRAD_FLOAT32",
         fake_asm("avx2_scalar_loop", "\tvaddss\t%xmm1, %xmm2, %xmm3\n", x86_vec), "this loop is scalar"),
        ("avx2_scalar_by_design", "avx2", "FBNGRAD_FLOAT32",
         fake_asm("avx2_scalar_by_design", "\tvaddss\t%xmm1, %xmm2, %xmm3\n", x86_vec,
                  loop="x_backprop_s0_s_so_scalar"), None),
        ("avx2_scalar_by_design_2", "avx2", "FBNGRAD_FLOAT32",
         fake_asm("avx2_scalar_by_design_2", "\tvaddss\t%xmm1, %xmm2, %xmm3\n", x86_vec,
                  loop="partial_intm_s1_so_so_scalar__2"), None),
        ("avx2_scalar_not_by_name", "avx2", "FBNGRAD_FLOAT32",
         fake_asm("avx2_scalar_not_by_name", "\tvaddss\t%xmm1, %xmm2, %xmm3\n", x86_vec,
                  loop="partial_intm_s1_so_scalar_x"), "this loop is scalar"),
        ("avx2_all_scalar", "avx2", "FBNGRAD_FLOAT32",
         fake_asm("avx2_all_scalar", "\tvaddss\t%xmm1, %xmm2, %xmm3\n\tvmulss\t%xmm1, %xmm2, %xmm3\n"),
         "no float32 vector add"),
        ("avx2_with_zmm", "avx2", "FBNGRAD_FLOAT32",
         fake_asm("avx2_with_zmm", x86_vec + "\tvmovups\t%zmm0, (%rdi)\n"), "AVX-512 registers"),
        ("sse41_ok", "sse41", "FBNGRAD_FLOAT32",
         fake_asm("sse41_ok", "\taddps\t%xmm1, %xmm0\n\tmulps\t(%rax), %xmm2\n"), None),
        ("sse41_with_vex", "sse41", "FBNGRAD_FLOAT32",
         fake_asm("sse41_with_vex", "\taddps\t%xmm1, %xmm0\n\tmulps\t%xmm1, %xmm2\n\tvmovaps\t%xmm0, %xmm1\n"),
         "AVX (VEX/EVEX) code"),
        ("avx512_on_ymm", "avx512", "FBNGRAD_FLOAT32", fake_asm("avx512_on_ymm", x86_vec), "no float32 vector add"),
        ("neon_ok", "neon", "FBNGRAD_FLOAT16", fake_asm("neon_ok", arm_vec), None),
        ("neon_scalar_loop", "neon", "FBNGRAD_FLOAT32",
         fake_asm("neon_scalar_loop", "\tfadd\ts0, s1, s2\n", arm_vec), "this loop is scalar"),
        ("neon_with_fp16_math", "neon", "FBNGRAD_FLOAT16",
         fake_asm("neon_with_fp16_math", arm_vec + "\tfadd\tv0.8h, v1.8h, v2.8h\n"), "FP16 arithmetic"),
        ("fp16_ok", "arm_fp16", "FBNGRAD_FLOAT16", fake_asm("fp16_ok", arm_vec + f16), None),
        ("fp16_emulated", "arm_fp16", "FBNGRAD_FLOAT16", fake_asm("fp16_emulated", arm_vec), "no fcvtl"),
        ("fp16_no_loops", "arm_fp16", "FBNGRAD_FLOAT32",
         f"\t.type\tfp16_no_loops,@function\nfp16_no_loops:\n{arm_vec}\tret\n", "no parallel loop bodies"),
    ]
    bad = 0
    with tempfile.TemporaryDirectory() as d:
        for name, isa, dtype, asm, expect in cases:
            with open(os.path.join(d, name + ".s"), "w") as f:
                f.write(asm)
            problems = check_variant({"name": name, "isa": isa, "dtype": dtype}, d)
            text = "; ".join(problems)
            ok = not problems if expect is None else expect in text
            print(f"{'ok  ' if ok else 'FAIL'} self-test {name}: {text or 'passes'}")
            bad += not ok
        missing = check_variant({"name": "absent", "isa": "neon", "dtype": "FBNGRAD_FLOAT32"}, d)
        if not any("missing" in p for p in missing):
            print("FAIL self-test: a missing .s file must fail")
            bad += 1
    print(f"self-test: {len(cases) + 1 - bad} of {len(cases) + 1} cases as expected")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", action="append",
                    help="an X-macro file of the variant table (fbngrad_variants.inc, ...); repeatable")
    ap.add_argument("--asm-dir", help="directory holding <variant>.s")
    ap.add_argument("--isa", choices=sorted(RULES), help="check the variants of this ISA")
    ap.add_argument("--self-test", action="store_true", help="check the checker on small made-up listings")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not (args.variants and args.asm_dir and args.isa):
        ap.error("--variants, --asm-dir and --isa are required (or --self-test)")

    rows = [r for path in args.variants for r in read_variants(path) if r["isa"] == args.isa]
    if not rows:
        print(f"FAIL: the variant table {args.variants} has no {args.isa} variant", file=sys.stderr)
        return 1
    failed = 0
    for row in rows:
        problems = check_variant(row, args.asm_dir)
        if problems:
            failed += 1
            for p in problems:
                print(f"FAIL {row['name']}: {p}")
    print(f"{len(rows) - failed} of {len(rows)} {args.isa} variants vectorized")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
