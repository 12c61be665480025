#!/usr/bin/env bash
# CI stage: fbngrad cross-built for AArch64 (Debian's g++-aarch64-linux-gnu)
# and its whole C++ test suite run under qemu-user, twice:
#   QEMU_CPU=max         has the ARMv8.2 FP16 extension: the neon and the arm_fp16 variants run
#   QEMU_CPU=cortex-a53  lacks it: arm_fp16 is reported unsupported and the dispatcher falls back to neon
# The Halide generator runs on the host: the cross build imports the one the
# main build (FBNGRAD_MAIN_BUILD, already built) exports (README "Building for ARM").
# The TensorFlow parity tests are not run under emulation; Google Benchmark is off.
# Budget: about 5 minutes on 2 cores (build ~3, each ctest run ~1).
set -euo pipefail

root=${FBNGRAD_ROOT:?run by tools/dev.sh test}
venv=${FBNGRAD_VENV:?}
main_build=${FBNGRAD_MAIN_BUILD:?}
jobs=${FBNGRAD_JOBS:-2}
dir=${FBNGRAD_BUILD:?}/aarch64
step() { printf '\n-- [aarch64] %s\n' "$*"; }

for tool in aarch64-linux-gnu-g++ aarch64-linux-gnu-gcc qemu-aarch64; do
    command -v "$tool" >/dev/null || {
        echo "20-aarch64.sh: $tool is missing (tools/debian-packages.txt: g++-aarch64-linux-gnu, qemu-user)" >&2
        exit 1
    }
done

step "the host generator ($main_build)"
"$venv/bin/cmake" --build "$main_build" --target fbngrad_generator -j "$jobs"

step "configuring the cross build ($dir)"
halide_dir=$("$venv/bin/python" -c 'import halide, os; print(os.path.join(os.path.dirname(halide.__file__), "lib64", "cmake", "Halide"))')
"$venv/bin/cmake" -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchain-aarch64-linux-gnu.cmake" \
    -DHalide_DIR="$halide_dir" \
    -Dfbngrad-halide_generators_ROOT="$main_build" \
    -DFBNGRAD_BUILD_BENCH=OFF -DFBNGRAD_PARITY_TESTS=OFF \
    -DFBNGRAD_PYTHON="$venv/bin/python" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }

step "building for aarch64 with $jobs jobs"
start=$SECONDS
"$venv/bin/cmake" --build "$dir" -j "$jobs"
echo "built in $((SECONDS - start)) s"

archive=$dir/src/libfbngrad.a
step "the archive: $archive"
echo "$(stat -c %s "$archive") bytes; members: $(aarch64-linux-gnu-ar t "$archive" | tr '\n' ' ')"
aarch64-linux-gnu-objdump -f "$archive" | grep -m1 'file format' | sed 's/^/  /'

failed=()
for cpu in max cortex-a53; do
    step "ctest under qemu-aarch64 -cpu $cpu"
    rm -rf "$dir/Testing/gtest"
    start=$SECONDS
    if ! (cd "$dir" && QEMU_CPU=$cpu "$venv/bin/ctest" --output-on-failure -j "$jobs" --timeout 600); then
        failed+=("$cpu")
    fi
    echo "ctest under -cpu $cpu: $((SECONDS - start)) s"
    "$venv/bin/python" "$root/tools/ci/gtest_case_counts.py" "cpu $cpu" "$dir"/Testing/gtest/*.json || failed+=("$cpu (gtest reports)")
done

if ((${#failed[@]})); then
    echo "20-aarch64.sh: tests failed under: ${failed[*]}" >&2
    exit 1
fi
echo "20-aarch64.sh: all aarch64 tests passed under qemu -cpu max and -cpu cortex-a53"
