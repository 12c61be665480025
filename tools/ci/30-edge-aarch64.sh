#!/usr/bin/env bash
# CI stage: an edge build (docs/edge-builds.md), a selective build of the
# variant table cross-built for AArch64: float32 NHWC, training and inference,
# NEON and ARMv8.2 FP16, split phase included:
#   -DFBNGRAD_DTYPES=float32 -DFBNGRAD_LAYOUTS=NHWC
# Its whole C++ suite and CLI tests run under qemu (-cpu max and cortex-a53, as
# tools/ci/20-aarch64.sh does for the full build): the rows it has pass, the
# rows it left out fail with FBNGRAD_UNIMPLEMENTED naming their option
# (SelectiveBuild.*). ctest minimal_app_size links tools/edge/minimal_app.c
# against its libfbngrad.a as an application would, runs it, and fails when
# the stripped program grows beyond its budget (below).
# Budget: about 4 minutes on 2 cores (build ~2, each ctest run ~40 s; 254 s on 2026-12-05).
set -euo pipefail

root=${FBNGRAD_ROOT:?run by tools/dev.sh test}
venv=${FBNGRAD_VENV:?}
main_build=${FBNGRAD_MAIN_BUILD:?}
jobs=${FBNGRAD_JOBS:-2}
dir=${FBNGRAD_BUILD:?}/edge-aarch64
step() { printf '\n-- [edge-aarch64] %s\n' "$*"; }

# The minimal program's budgets, in bytes (docs/edge-builds.md has the sizes
# they were set from: 200,048 stripped, 147,009 loaded on 2026-12-05). The
# stripped size moves in steps of 64 KiB (AArch64 aligns the data segment to
# its maximum page size), the loaded bytes by the byte: both are held.
budget=215000
loaded_budget=160000

source "$root/tools/ci/lib/aarch64.sh"
aarch64_check_tools
aarch64_configure "$dir" -DFBNGRAD_DTYPES=float32 -DFBNGRAD_LAYOUTS=NHWC \
    -DFBNGRAD_MINIMAL_APP_BUDGET=$budget -DFBNGRAD_MINIMAL_APP_LOADED_BUDGET=$loaded_budget
grep 'fbngrad: building' "$dir.configure.log" || true

step "building for aarch64 with $jobs jobs"
start=$SECONDS
"$venv/bin/cmake" --build "$dir" -j "$jobs"
echo "built in $((SECONDS - start)) s"
archive=$dir/src/libfbngrad.a
echo "the archive: $(stat -c %s "$archive") bytes"

aarch64_ctest "$dir"
echo "30-edge-aarch64.sh: the edge build's tests passed under qemu -cpu max and -cpu cortex-a53, its minimal program within budget"
