# Shared by the AArch64 CI stages (tools/ci/20-aarch64.sh, the full build;
# tools/ci/30-edge-aarch64.sh, an edge build): sourced, not run (tools/dev.sh
# runs tools/ci/*.sh only, not this folder). Needs root, venv, main_build,
# jobs and step() set by the stage.

# Fails the stage when the cross toolchain or qemu is missing.
aarch64_check_tools() {
    local tool
    for tool in aarch64-linux-gnu-g++ aarch64-linux-gnu-gcc qemu-aarch64; do
        command -v "$tool" >/dev/null || {
            echo "$(basename "$0"): $tool is missing (tools/debian-packages.txt: g++-aarch64-linux-gnu, qemu-user)" >&2
            exit 1
        }
    done
}

# aarch64_configure DIR [cmake options]: the host generator (the main build
# exports it), then a cross build in DIR; no Google Benchmark, no TensorFlow
# parity tests (not run under emulation).
aarch64_configure() {
    local dir=$1 halide_dir
    shift
    step "the host generator ($main_build)"
    "$venv/bin/cmake" --build "$main_build" --target fbngrad_generator -j "$jobs"
    step "configuring the cross build ($dir)"
    halide_dir=$("$venv/bin/python" -c 'import halide, os; print(os.path.join(os.path.dirname(halide.__file__), "lib64", "cmake", "Halide"))')
    "$venv/bin/cmake" -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchain-aarch64-linux-gnu.cmake" \
        -DHalide_DIR="$halide_dir" \
        -Dfbngrad-halide_generators_ROOT="$main_build" \
        -DFBNGRAD_BUILD_BENCH=OFF -DFBNGRAD_PARITY_TESTS=OFF \
        -DFBNGRAD_PYTHON="$venv/bin/python" "$@" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
}

# aarch64_ctest DIR: the build's ctest under qemu -cpu max (FP16) and
# cortex-a53 (none), with the gtest case counts; fails the stage on a failure.
aarch64_ctest() {
    local dir=$1 cpu start failed=()
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
        echo "$(basename "$0"): tests failed under: ${failed[*]}" >&2
        exit 1
    fi
}
