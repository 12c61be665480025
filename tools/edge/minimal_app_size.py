#!/usr/bin/env python3
"""Builds the minimal program (tools/edge/minimal_app.c, or --app) against a
libfbngrad.a exactly as an application would, stripped:

    <cc> -O2 app.c -I<include> libfbngrad.a -Wl,--gc-sections -s -o <out> -lstdc++ -lpthread -ldl -lm

and prints its size: the file, and what it loads (the PT_LOAD segments' bytes in
the file, so without the padding that aligns them). With --run it runs the
program (under --emulator, for a cross build) and checks that it prints
tools/edge/minimal_app.expected. With --budget / --loaded-budget (bytes) it
fails when the program grew beyond them (tools/ci/30-edge-aarch64.sh; the
sizes and the budgets are in docs/edge-builds.md). --json prints the sizes as
JSON (tools/edge/sizes.sh). Exit status 0 when everything asked holds.
"""

import argparse
import json
import os
import shlex
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def loaded_bytes(path):
    """The file bytes of an ELF64 little-endian program's PT_LOAD segments."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not a little-endian ELF64 file")
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    total = 0
    for i in range(phnum):
        p_type, _flags, _offset, _vaddr, _paddr, filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 1:  # PT_LOAD
            total += filesz
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cc", required=True, help="the C compiler (e.g. aarch64-linux-gnu-gcc)")
    ap.add_argument("--lib", required=True, help="libfbngrad.a")
    ap.add_argument("--include", required=True, help="the directory holding fbngrad/fbngrad.h")
    ap.add_argument("--app", default=os.path.join(HERE, "minimal_app.c"))
    ap.add_argument("--out", required=True, help="the program to write")
    ap.add_argument("--run", action="store_true", help="run it and compare its output")
    ap.add_argument("--emulator", default="", help="what runs it, one string (e.g. 'qemu-aarch64 -L /usr/aarch64-linux-gnu')")
    ap.add_argument("--budget", type=int, help="bytes the stripped file may have at most")
    ap.add_argument("--loaded-budget", type=int, help="bytes its loaded segments may have at most")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    cmd = [args.cc, "-O2", args.app, "-I" + args.include, args.lib, "-Wl,--gc-sections", "-s", "-o", args.out,
           "-lstdc++", "-lpthread", "-ldl", "-lm"]
    build = subprocess.run(cmd, capture_output=True, text=True)
    if build.returncode != 0:
        print(f"FAIL: {' '.join(cmd)}\n{build.stdout}{build.stderr}", file=sys.stderr)
        return 1
    size, loaded = os.path.getsize(args.out), loaded_bytes(args.out)
    if args.json:
        print(json.dumps({"file": size, "loaded": loaded}))
    else:
        print(f"{os.path.basename(args.out)}: {size} bytes stripped, {loaded} bytes loaded ({' '.join(cmd)})")
    failed = False
    if args.budget is not None and size > args.budget:
        print(f"FAIL: the stripped program is {size} bytes, over its budget of {args.budget}")
        failed = True
    if args.loaded_budget is not None and loaded > args.loaded_budget:
        print(f"FAIL: the program loads {loaded} bytes, over its budget of {args.loaded_budget}")
        failed = True
    if args.run:
        run = subprocess.run(shlex.split(args.emulator) + [args.out], capture_output=True, text=True, timeout=120)
        with open(os.path.splitext(args.app)[0] + ".expected") as f:
            expected = f.read()
        if run.returncode != 0 or run.stdout != expected:
            print(f"FAIL: the program exited {run.returncode} and printed\n{run.stdout}{run.stderr}"
                  f"instead of\n{expected}")
            failed = True
        else:
            print("it runs and prints what it should")
    if not failed and (args.budget is not None or args.loaded_budget is not None):
        print(f"within budget ({args.budget} bytes stripped, {args.loaded_budget} loaded)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
