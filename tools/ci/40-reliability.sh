#!/usr/bin/env bash
# CI stage: reliability. One Clang build of fbngrad's own code with
# AddressSanitizer + UndefinedBehaviorSanitizer (every report fatal) and the
# libFuzzer target over the C API (cmake/sanitize.cmake, tests/fuzz), then:
#   - the whole C++ suite (fbngrad_tests: variants, semantics, validation,
#     dispatch, split phase, concurrency; fbngrad_runtime_tests: the own pool), the C API test, the large-tensor
#     boundary tests and the CLI tests (tests/cli), all instrumented;
#   - the fuzzer for FBNGRAD_FUZZ_SECONDS (60) on the seed corpus, failing on
#     any crash, sanitizer report, leak, hang (> 10 s per input) or > 2 GiB.
# And a second Clang build with ThreadSanitizer, fbngrad_tests (run whole in one
# process) and fbngrad_runtime_tests (tests/tsan: Halide's uninstrumented runtime suppressed).
# The Halide-generated variants and Halide's runtime are not instrumented
# (they are object files that Halide writes); the generator is imported from
# the main build (FBNGRAD_MAIN_BUILD), as the cross build does, so it is not
# built again. The TensorFlow parity tests are off here (FBNGRAD_PARITY_TESTS).
# valgrind memcheck runs in the main build instead (label valgrind): it cannot
# run sanitized binaries.
# Budget: about 9 minutes on 2 cores (measured, on a loaded machine: ASan build 3.7 min, TSan
# build 2.2, TSan ctest 0.2, ASan ctest with the fuzzer 2.1).
set -euo pipefail

root=${FBNGRAD_ROOT:?run by tools/dev.sh test}
venv=${FBNGRAD_VENV:?}
main_build=${FBNGRAD_MAIN_BUILD:?}
jobs=${FBNGRAD_JOBS:-2}
dir=${FBNGRAD_BUILD:?}/reliability
tsan_dir=${FBNGRAD_BUILD:?}/reliability-tsan
step() { printf '\n-- [reliability] %s\n' "$*"; }

for tool in clang clang++ ld objcopy; do
    command -v "$tool" >/dev/null || {
        echo "40-reliability.sh: $tool is missing (tools/debian-packages.txt: clang, libclang-rt-14-dev, binutils)" >&2
        exit 1
    }
done

step "the host generator ($main_build)"
"$venv/bin/cmake" --build "$main_build" --target fbngrad_generator -j "$jobs"

halide_dir=$("$venv/bin/python" -c 'import halide, os; print(os.path.join(os.path.dirname(halide.__file__), "lib64", "cmake", "Halide"))')
# configure DIR SANITIZERS [cmake options]: a Clang build with the main build's
# generator. GNU ld and objcopy for the single-archive step
# (cmake/single_archive.cmake uses `ld -r --force-group-allocation`, which
# LLVM 14's ld.lld, CMake's pick for Clang, lacks).
configure() {
    local d=$1 sanitize=$2
    shift 2
    "$venv/bin/cmake" -S "$root" -B "$d" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
        -DCMAKE_LINKER="$(command -v ld)" -DCMAKE_OBJCOPY="$(command -v objcopy)" \
        -DHalide_DIR="$halide_dir" -Dfbngrad-halide_generators_ROOT="$main_build" \
        -DFBNGRAD_SANITIZE="$sanitize" -DFBNGRAD_BUILD_BENCH=OFF -DFBNGRAD_PARITY_TESTS=OFF \
        -DFBNGRAD_PYTHON="$venv/bin/python" "$@" >"$d.configure.log" 2>&1 || { cat "$d.configure.log"; exit 1; }
}

step "configuring the ASan + UBSan + fuzzer build ($dir)"
configure "$dir" "address;undefined" -DFBNGRAD_FUZZ=ON
step "building it with $jobs jobs (the variants, then the instrumented library, CLI, tests, fuzzer)"
start=$SECONDS
"$venv/bin/cmake" --build "$dir" -j "$jobs" \
    --target fbngrad_tests fbngrad_runtime_tests fbngrad_large_tests fbngrad_c_api_test fbngrad_cli fuzz_c_api
echo "built in $((SECONDS - start)) s"

step "configuring the TSan build ($tsan_dir)"
configure "$tsan_dir" thread
step "building fbngrad_tests and fbngrad_runtime_tests with TSan"
start=$SECONDS
"$venv/bin/cmake" --build "$tsan_dir" -j "$jobs" --target fbngrad_tests fbngrad_runtime_tests
echo "built in $((SECONDS - start)) s"
step "ctest: fbngrad_tests and fbngrad_runtime_tests under TSan"
(cd "$tsan_dir" && "$venv/bin/ctest" --output-on-failure -L tsan --timeout 600)

# ASan: leaks are errors too; a report aborts. UBSan: a stack trace with each report.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
step "ctest: the ASan + UBSan suite and ${FBNGRAD_FUZZ_SECONDS:-60} s of fuzzing"
start=$SECONDS
# Only what this build made: the suite, the boundary tests (but the one
# NHWC C = 1 case, ~30 s of CPU, which the main build runs), the C API, the
# CLI and the fuzzer (its COST makes ctest start it first, so that it overlaps the rest).
(cd "$dir" && "$venv/bin/ctest" --output-on-failure -j "$jobs" --timeout 900 \
    -R '^(fuzz_|cli$|c_api$|env_isa_|[A-Z][A-Za-z]*[./])' -E 'bf16_nhwc_s_at_limit')
echo "ctest: $((SECONDS - start)) s"
# What the fuzzer did (its own summary line, and libFuzzer's execution count).
grep -h -e '^fuzz_c_api: [0-9]* fused calls' -e 'stat::number_of_executed_units' "$dir/Testing/Temporary/LastTest.log" || true
echo "40-reliability.sh: all sanitizer, fuzzing and TSan tests passed"
