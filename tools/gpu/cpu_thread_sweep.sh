#!/usr/bin/env bash
# The many-core comparison (docs/threads.md): fbngrad, on its own pool and on a caller's
# OpenMP runner (fbngrad-omp: how a trainer that owns its threads runs it), against oneDNN at
# 1, 2, 4, 8 and 16 threads on ResNet-50's float32 batch-norm shapes at N = 32, both layouts,
# training and inference, in one run, then one markdown table. Meant for the GPU machine's 16 CPU cores,
# which have neither Debian's PyTorch nor its oneDNN: build here, pack, carry, run there.
#
#   here:  tools/gpu/cpu_thread_sweep.sh --pack build/carry-cpu
#          (fbngrad_bench_onednn and the libraries it needs beyond the C and C++ runtimes:
#           oneDNN, Google Benchmark, libgomp, the OpenCL loader; 44 MB, git-ignored under build/)
#   there: tools/gpu/cpu_thread_sweep.sh --bin build/carry-cpu --out DIR
#
# Options: --threads LIST (default 1,2,4,8,16; capped at the machine's cores, which are
# always added as the last count), --mode train|infer|both (default both; one mode is half
# the run, several minutes, most of it the checks against the reference: run the modes as
# two calls where one command may take 10 minutes at most), --quick (training only, the
# largest and the smallest shape: a minute or two, an estimate), --shapes REGEX (the N,H,W,C
# part of the names, e.g. '1,56,56,24').
# DIR gets cpu.txt (the CPU: lscpu), threads.json (Google Benchmark's JSON: medians of 3
# interleaved repetitions) and threads.md (bench/bench_table.py: thread scaling, and fbngrad and
# fbngrad-omp beside oneDNN at each count). Exit status: non-zero when the bench cannot run or a
# benchmark reports an error (a wrong answer: every case is checked against the
# double-precision reference before it is timed).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=$root/build/cmake/bin
pack=""
out=""
threads=1,2,4,8,16
modes="(train|infer)"
shapes="32,[0-9,]+"
usage="usage: $0 --pack DIR | [--bin DIR] [--threads LIST] [--mode train|infer|both] [--quick] [--shapes REGEX] --out DIR"
while (($#)); do
    case "$1" in
    --pack) pack=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --mode)
        case "$2" in train | infer) modes=$2 ;; both) modes="(train|infer)" ;; *) echo "$usage" >&2; exit 2 ;; esac
        shift 2 ;;
    --quick) modes="train"; shapes="(32,112,112,64|32,7,7,2048)"; shift ;;
    --shapes) shapes=$2; shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
    esac
done
exe=fbngrad_bench_onednn

if [ -n "$pack" ]; then
    [ -x "$bin/$exe" ] || { echo "missing $bin/$exe: build it (cmake --build build/cmake --target $exe)" >&2; exit 1; }
    mkdir -p "$pack/lib"
    cp "$bin/$exe" "$pack/"
    # The libraries a bare machine may lack: oneDNN, Google Benchmark, GCC's OpenMP, and
    # the OpenCL loader that Debian's oneDNN links (its GPU engine, unused here).
    ldd "$bin/$exe" | awk '$3 ~ /^\// && $1 ~ /^lib(dnnl|benchmark|gomp|OpenCL)/ {print $3}' | while read -r lib; do
        cp -L "$lib" "$pack/lib/"
    done
    for want in libdnnl libbenchmark libgomp; do
        ls "$pack/lib/$want"* >/dev/null 2>&1 || { echo "$exe does not link $want: nothing to pack" >&2; exit 1; }
    done
    du -sh "$pack" >&2
    echo "packed into $pack: carry it and run $0 --bin $pack --out DIR there" >&2
    exit 0
fi

[ -n "$out" ] || { echo "$usage" >&2; exit 2; }
[ -x "$bin/$exe" ] || { echo "missing $bin/$exe (pack it with --pack)" >&2; exit 1; }
[ -d "$bin/lib" ] && export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
python=${PYTHON:-python3}
mkdir -p "$out"
out=$(cd "$out" && pwd)

cores=$(nproc)
counts=$(tr ',' '\n' <<<"$threads" | awk -v c="$cores" '$1 > 0 && $1 <= c' | sort -n -u | paste -sd, -)
case ",$counts," in *",$cores,"*) ;; *) counts="${counts:+$counts,}$cores" ;; esac
{ lscpu 2>/dev/null || grep -m1 "model name" /proc/cpuinfo; echo "cores: $cores"; echo "thread counts: $counts"; } \
    > "$out/cpu.txt"
grep -m1 -E "^Model name|model name" "$out/cpu.txt" >&2 || true
echo "cores $cores, thread counts $counts" >&2

"$bin/$exe" --fbngrad_shapes=catalogue "--fbngrad_thread_counts=$counts" \
    "--benchmark_filter=^(fbngrad|fbngrad-omp|onednn)/float32/(NHWC|NCHW)/$modes/$shapes/threads:[0-9]+/real_time\$" \
    --benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true \
    --benchmark_report_aggregates_only=true --benchmark_format=json "--benchmark_out=$out/threads.json" \
    > "$out/bench.log" 2> "$out/bench.err" || { tail -20 "$out/bench.err" >&2; exit 1; }
if grep -q '"error_occurred": true' "$out/threads.json"; then
    echo "a benchmark reported an error (see $out/threads.json):" >&2
    grep -B2 -A2 '"error_message"' "$out/threads.json" | head -20 >&2
    exit 1
fi
"$python" "$root/bench/bench_table.py" "$out/threads.json" > "$out/threads.md"
sed -n '/### fbngrad against the fastest peer/,$p' "$out/threads.md"
