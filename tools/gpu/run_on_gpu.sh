#!/usr/bin/env bash
# On a machine with an NVIDIA GPU, from binaries built elsewhere (no Halide,
# no CUDA toolkit, no network needed here; the NVIDIA driver, Python 3 and,
# for the comparison, PyTorch with CUDA):
#   1. the CUDA tests (fbngrad_cuda_tests: every CUDA variant against the
#      reference on the edge shapes, and the CUDA API),
#   2. fbngrad's CUDA kernels timed on ResNet-50's batch-norm shapes
#      (fbngrad_cuda_bench),
#   3. the NCHW cases again with the three-kernel schedule forced
#      (fbngrad_cuda_bench --three-kernels): the A/B of the single pass, which
#      the dispatcher picks for small planes (src/shape_class.h, plane),
#   4. PyTorch's batch-norm backward (cuDNN and ATen) on the same cases, with
#      the kernels each call launches (torch_bn_bench.py --kernels),
#   5. where nsys is installed, one profile of fbngrad's benchmark and one of
#      PyTorch's: the kernels and their counts (nsys stats cuda_gpu_kern_sum),
# then prints one markdown table (bench_report.py). A few minutes on a
# current GPU; --quick times the first and last shape only.
#
#   tools/gpu/run_on_gpu.sh [--bin DIR] [--peak-gbps GB/s] [--quick] [--skip-tests] [--out DIR]
# DIR (default build/cmake/bin) holds fbngrad_cuda_tests and fbngrad_cuda_bench.
# The peak bandwidth defaults to the driver's memory clock x bus width.
# --out keeps the JSON lines, the table and the nsys summaries in that folder.
# Exit status: non-zero when a test fails or a benchmark cannot run.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=$root/build/cmake/bin
peak=()
quick=()
run_tests=1
keep=""
while (($#)); do
    case "$1" in
    --bin) bin=$2; shift 2 ;;
    --peak-gbps) peak=(--peak-gbps "$2"); shift 2 ;;
    --quick) quick=(--quick); shift ;;
    --skip-tests) run_tests=0; shift ;;
    --out) keep=$2; shift 2 ;;
    *) echo "usage: $0 [--bin DIR] [--peak-gbps GB/s] [--quick] [--skip-tests] [--out DIR]" >&2; exit 2 ;;
    esac
done
python=${PYTHON:-python3}
if [ -n "$keep" ]; then
    mkdir -p "$keep"
    out=$(cd "$keep" && pwd)
else
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
fi
step() { printf '\n== %s\n' "$*" >&2; }

for exe in fbngrad_cuda_tests fbngrad_cuda_bench; do
    [ -x "$bin/$exe" ] || { echo "missing $bin/$exe (build it with the CUDA variants: FBNGRAD_ENABLE_CUDA=ON)" >&2; exit 1; }
done
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >&2 || true

step "CUDA device"
"$bin/fbngrad_cuda_tests" --gtest_filter=CudaDetection.LibraryAndDispatcherAgree > "$out/detect.log" 2>&1 || true
grep "^CUDA " "$out/detect.log" >&2 || cat "$out/detect.log" >&2
grep -q "^CUDA available" "$out/detect.log" || { echo "fbngrad finds no usable CUDA device here" >&2; exit 1; }

if ((run_tests)); then
    step "CUDA tests"
    "$bin/fbngrad_cuda_tests" --gtest_brief=1 >&2
fi

shapes=()
if ((${#quick[@]})); then shapes=(--shapes "32,112,112,64;32,7,7,2048"); fi
step "fbngrad CUDA benchmark"
"$bin/fbngrad_cuda_bench" "${shapes[@]}" > "$out/fbngrad.jsonl"
step "fbngrad CUDA benchmark, NCHW with the three-kernel schedule forced (the single pass's A/B)"
"$bin/fbngrad_cuda_bench" "${shapes[@]}" --layouts NCHW --three-kernels > "$out/fbngrad_3k.jsonl"
step "PyTorch batch-norm backward (cuDNN, ATen), with the kernels of one call"
"$python" "$here/torch_bn_bench.py" "${quick[@]}" --kernels > "$out/torch.jsonl"

# What each side launches, from nsys where it is installed (optional: the
# table's cuDNN kernel counts come from torch.profiler already).
if command -v nsys >/dev/null; then
    step "nsys: the kernels of fbngrad's and PyTorch's benchmarks (one rep each)"
    for side in fbngrad torch; do
        if [ "$side" = fbngrad ]; then
            cmd=("$bin/fbngrad_cuda_bench" "${shapes[@]}" --reps 1 --warmup 0)
        else
            cmd=("$python" "$here/torch_bn_bench.py" "${quick[@]}" --reps 1 --warmup 0)
        fi
        if nsys profile --force-overwrite true -o "$out/nsys_$side" "${cmd[@]}" > /dev/null 2>&1 &&
           nsys stats --report cuda_gpu_kern_sum --format csv -o "$out/nsys_$side" "$out/nsys_$side.nsys-rep" \
               > /dev/null 2>&1; then
            echo "$side: $out/nsys_${side}_cuda_gpu_kern_sum.csv" >&2
        else
            echo "$side: nsys failed (the table stands without it)" >&2
        fi
    done
else
    step "nsys not installed: the launches a call come from torch.profiler (cuDNN) and the .stmt (fbngrad: ctest cuda_launches_*)"
fi

step "results"
"$python" "$here/bench_report.py" "$out/fbngrad.jsonl" "$out/torch.jsonl" "${peak[@]}" \
    --three-kernels "$out/fbngrad_3k.jsonl" | tee "$out/table.md"
