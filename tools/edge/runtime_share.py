#!/usr/bin/env python3
"""What each part of libfbngrad.a costs in the minimal program: links
tools/edge/minimal_app.c against the parts that the archive is made of (the
build directory's per-variant libraries, the API, the glue and the Halide
runtime, which cmake/single_archive.cmake joins into one object) with a link
map, and sums the bytes of the loaded sections each part contributes:

    runtime_share.py --cc aarch64-linux-gnu-gcc --build build/edge/arm-f32-nhwc [--json]
    -> halide runtime 29540, kernels 79000, fbngrad (API, validation, dispatch, glue) 27000, ...

tools/edge/sizes.sh reports the Halide runtime's share (docs/edge-builds.md).
"""

import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def sections(map_path):
    """(bytes, output section, input file) of every input section the map places."""
    lines = open(map_path).read().splitlines()
    start = lines.index("Linker script and memory map")
    out, pending, items = None, None, []
    for line in lines[start:]:
        m = re.match(r"^(\.\S+)\s+0x", line)
        if m:
            out = m.group(1)
        m = re.match(r"^ (\.\S+|COMMON)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+(\S+)", line)
        if m:
            items.append((int(m.group(2), 16), out, m.group(3)))
            pending = None
            continue
        m = re.match(r"^ (\.\S+)$", line)
        if m:
            pending = m.group(1)
            continue
        m = re.match(r"^\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+(\S+)", line)
        if m and pending:
            items.append((int(m.group(1), 16), out, m.group(2)))
            pending = None
    return items


def part_of(path):
    if "fbngrad_halide_runtime" in path:
        return "halide runtime"
    if re.search(r"libfbng_\w+\.a", path):
        return "kernels"
    if "libfbngrad_api.a" in path or "libfbngrad_runtime.a" in path:
        return "fbngrad (API, validation, dispatch, glue)"
    return "the program and the C library's start-up"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cc", required=True)
    ap.add_argument("--build", required=True, help="a build directory of fbngrad (its src/ and runtime/)")
    ap.add_argument("--app", default=os.path.join(HERE, "minimal_app.c"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    b = args.build
    parts = ([f"{b}/src/libfbngrad_api.a", f"{b}/runtime/libfbngrad_runtime.a"] +
             sorted(glob.glob(f"{b}/src/libfbng_*.a")) + [f"{b}/runtime/libfbngrad_halide_runtime.a"])
    include = os.path.join(HERE, "..", "..", "src", "include")
    with tempfile.TemporaryDirectory() as tmp:
        map_path = os.path.join(tmp, "app.map")
        cmd = ([args.cc, "-O2", args.app, "-I" + include, "-Wl,--gc-sections", "-Wl,-Map," + map_path,
                "-o", os.path.join(tmp, "app"), "-Wl,--start-group"] + parts +
               ["-Wl,--end-group", "-lstdc++", "-lpthread", "-ldl", "-lm"])
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            print(f"FAIL: {' '.join(cmd)}\n{run.stderr}", file=sys.stderr)
            return 1
        share = collections.Counter()
        for size, out, path in sections(map_path):
            if out in (".bss", ".tbss", ".comment") or out is None or out.startswith(".debug"):
                continue  # not in the file, or not loaded
            share[part_of(path)] += size
    if args.json:
        print(json.dumps(share))
    else:
        print(", ".join(f"{k} {v}" for k, v in share.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
