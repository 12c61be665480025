#!/usr/bin/env bash
# On a machine with an NVIDIA GPU, from binaries built elsewhere (no Halide,
# no CUDA toolkit, no network needed here; the NVIDIA driver, Python 3 and,
# for the comparison, PyTorch with CUDA):
#   1. the CUDA tests (fbngrad_cuda_tests: every CUDA variant against the
#      reference on the edge shapes, and the CUDA API),
#   2. fbngrad's CUDA kernels timed on ResNet-50's batch-norm shapes
#      (fbngrad_cuda_bench),
#   3. PyTorch's batch-norm backward (cuDNN and ATen) on the same cases
#      (torch_bn_bench.py),
# then prints one markdown table (bench_report.py). About two minutes on a
# current GPU; --quick times the first and last shape only.
#
#   tools/gpu/run_on_gpu.sh [--bin DIR] [--peak-gbps GB/s] [--quick] [--skip-tests]
# DIR (default build/cmake/bin) holds fbngrad_cuda_tests and fbngrad_cuda_bench.
# The peak bandwidth defaults to the driver's memory clock x bus width.
# Exit status: non-zero when a test fails or a benchmark cannot run.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=$root/build/cmake/bin
peak=()
quick=()
run_tests=1
while (($#)); do
    case "$1" in
    --bin) bin=$2; shift 2 ;;
    --peak-gbps) peak=(--peak-gbps "$2"); shift 2 ;;
    --quick) quick=(--quick); shift ;;
    --skip-tests) run_tests=0; shift ;;
    *) echo "usage: $0 [--bin DIR] [--peak-gbps GB/s] [--quick] [--skip-tests]" >&2; exit 2 ;;
    esac
done
python=${PYTHON:-python3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
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
step "PyTorch batch-norm backward (cuDNN, ATen)"
"$python" "$here/torch_bn_bench.py" "${quick[@]}" > "$out/torch.jsonl"

step "results"
"$python" "$here/bench_report.py" "$out/fbngrad.jsonl" "$out/torch.jsonl" "${peak[@]}"
