#!/usr/bin/env bash
# CI stage: fbngrad cross-built for AArch64 (Debian's g++-aarch64-linux-gnu)
# and its whole C++ test suite run under qemu-user, twice:
#   QEMU_CPU=max         has the ARMv8.2 FP16 extension: the neon and the arm_fp16 variants run
#   QEMU_CPU=cortex-a53  lacks it: arm_fp16 is reported unsupported and the dispatcher falls back to neon
# The Halide generator runs on the host: the cross build imports the one the
# main build (FBNGRAD_MAIN_BUILD, already built) exports (docs/arm.md).
# The TensorFlow parity tests are not run under emulation; Google Benchmark is off.
# Budget: about 5 minutes on 2 cores (build ~3, each ctest run ~1).
set -euo pipefail

root=${FBNGRAD_ROOT:?run by tools/dev.sh test}
venv=${FBNGRAD_VENV:?}
main_build=${FBNGRAD_MAIN_BUILD:?}
jobs=${FBNGRAD_JOBS:-2}
dir=${FBNGRAD_BUILD:?}/aarch64
step() { printf '\n-- [aarch64] %s\n' "$*"; }

source "$root/tools/ci/lib/aarch64.sh"
aarch64_check_tools
aarch64_configure "$dir"

step "building for aarch64 with $jobs jobs"
start=$SECONDS
"$venv/bin/cmake" --build "$dir" -j "$jobs"
echo "built in $((SECONDS - start)) s"

archive=$dir/src/libfbngrad.a
step "the archive: $archive"
echo "$(stat -c %s "$archive") bytes; members: $(aarch64-linux-gnu-ar t "$archive" | tr '\n' ' ')"
aarch64-linux-gnu-objdump -f "$archive" | grep -m1 'file format' | sed 's/^/  /'

aarch64_ctest "$dir"
echo "20-aarch64.sh: all aarch64 tests passed under qemu -cpu max and -cpu cortex-a53"
