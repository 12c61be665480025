#!/usr/bin/env bash
# CI stage: edge builds (docs/edge-builds.md), selective builds of the variant
# table cross-built for AArch64.
# 1. float32 NHWC, training and inference, NEON and ARMv8.2 FP16, split phase
#    included (-DFBNGRAD_DTYPES=float32 -DFBNGRAD_LAYOUTS=NHWC): its whole C++
#    suite and CLI tests under qemu (-cpu max and cortex-a53, as
#    tools/ci/20-aarch64.sh does for the full build): the rows it has pass, the
#    rows it left out fail with FBNGRAD_UNIMPLEMENTED naming their option
#    (SelectiveBuild.*). ctest minimal_app_size links tools/edge/minimal_app.c
#    against its libfbngrad.a as an application would, runs it, and fails when
#    the stripped program grows beyond its budget (below).
# 2. one row, one ISA, no split phase (below): the other options' error paths.
# Budget: about 7 minutes on 2 cores (builds ~2 + ~2, qemu runs ~40 s each).
set -euo pipefail

root=${FBNGRAD_ROOT:?run by tools/dev.sh test}
venv=${FBNGRAD_VENV:?}
main_build=${FBNGRAD_MAIN_BUILD:?}
jobs=${FBNGRAD_JOBS:-2}
dir=${FBNGRAD_BUILD:?}/edge-aarch64
step() { printf '\n-- [edge-aarch64] %s\n' "$*"; }

# The minimal program's budgets, in bytes (docs/edge-builds.md has the sizes
# they were set from: 200,048 stripped, 147,009 loaded on 2026-12-05; 158,260
# loaded by cd2ec01, 161,451 with a call's arena, the dispatcher's kept answers
# and the NCHW route, 2026-12-06, when the loaded budget went from 160,000 to
# 165,000; 162,833 with the NHWC per-channel loop, built without Halide's loop
# partitioning, later that day; 156,809 with the zeroing inside the NHWC sums'
# tasks). The stripped size moves in steps of 64 KiB (AArch64 aligns the data
# segment to its maximum page size), the loaded bytes by the byte: both are held.
budget=215000
loaded_budget=165000

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

# The other options, at their narrowest: one row (float32 NHWC training), one
# ISA (arm_fp16), no split phase, no CLI. Under -cpu max the suite runs what is
# there and checks that inference, the split phase and neon say they were left
# out; under cortex-a53 (no FP16) nothing can run, and every call must say
# FBNGRAD_NOT_FOUND and which ISAs FBNGRAD_ISAS left out (SelectiveBuild.*).
min_dir=${FBNGRAD_BUILD}/edge-aarch64-min
aarch64_configure "$min_dir" -DFBNGRAD_DTYPES=float32 -DFBNGRAD_LAYOUTS=NHWC -DFBNGRAD_MODES=training \
    -DFBNGRAD_ISAS=arm_fp16 -DFBNGRAD_SPLIT_PHASE=OFF -DFBNGRAD_BUILD_CLI=OFF
grep 'fbngrad: building' "$min_dir.configure.log" || true
step "building the one-row build with $jobs jobs"
start=$SECONDS
"$venv/bin/cmake" --build "$min_dir" -j "$jobs"
echo "built in $((SECONDS - start)) s"
step "ctest of the one-row build under qemu-aarch64 -cpu max"
(cd "$min_dir" && QEMU_CPU=max "$venv/bin/ctest" --output-on-failure -j "$jobs" --timeout 600)
step "the one-row build on a CPU without FP16 (qemu-aarch64 -cpu cortex-a53): what it is told"
QEMU_CPU=cortex-a53 qemu-aarch64 -L /usr/aarch64-linux-gnu "$min_dir/tests/fbngrad_tests" \
    --gtest_filter='SelectiveBuild.*:LeftOut.*' --gtest_brief=1

echo "30-edge-aarch64.sh: the edge builds' tests passed under qemu -cpu max and -cpu cortex-a53, the minimal program within budget"
