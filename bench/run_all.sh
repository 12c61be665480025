#!/usr/bin/env bash
# The benchmark campaign: runs (builds nothing) fbngrad_bench from a build directory and
# bench/tf_bench.py in both TensorFlow modes, writes their JSON into a results directory,
# then the markdown table (bench_table.py) and the plots (plot.py).
#
#   bench/run_all.sh [--build DIR] [--results DIR] [--repetitions N] [--min-time S]
#                    [--quick] [--no-tf] [--no-isa] [--no-sweep] [--no-threads]
#
#   --build DIR      the CMake build directory holding bin/fbngrad_bench (default build/cmake)
#   --results DIR    where the JSON, logs, table.md and PNGs go (default build/bench-results/<date>)
#   --repetitions N  Google Benchmark repetitions per benchmark (default 3; the median is reported)
#   --min-time S     seconds per repetition (default 0.5)
#   --quick          a trial: 3 catalogue shapes, 3 sweep sizes, 1 repetition of 0.1 s
#   --no-tf / --no-isa / --no-sweep / --no-threads   leave a phase out
#
# Phases, in order (each writes <phase>.json and <phase>.log):
#   bandwidth         the memory-bandwidth probe (copy, copy_nt, add, add_nt) and the op's access
#                     patterns (one_pass, two_passes, each also _nt)
#   catalogue         ResNet-50 and mobile shapes: fbngrad, onednn, aten, naive; every dtype,
#                     layout and mode; hot and /cold
#   isa               the same shapes, hot, for each fbngrad-<isa> (dispatch forced to one ISA)
#   sweep             the size sweep (float32 NHWC C=64): fbngrad, onednn, aten; hot and cold
#   threads           1 and 2 threads: the bandwidth probe and float32 NHWC training, hot
#   tensorflow        tf_bench.py --onednn 1 (TF's oneDNN kernels), catalogue and sweep
#   tensorflow-eigen  tf_bench.py --onednn 0 (TF's Eigen kernels)
# Run it on a quiet machine: the figures are wall-clock times.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build/cmake
results=
reps=3
min_time=0.5
quick=0
tf=1 isa=1 sweep=1 threads=1
while [[ $# -gt 0 ]]; do
    case $1 in
        --build) build=$2; shift 2 ;;
        --results) results=$2; shift 2 ;;
        --repetitions) reps=$2; shift 2 ;;
        --min-time) min_time=$2; shift 2 ;;
        --quick) quick=1; shift ;;
        --no-tf) tf=0; shift ;;
        --no-isa) isa=0; shift ;;
        --no-sweep) sweep=0; shift ;;
        --no-threads) threads=0; shift ;;
        -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
        *) echo "run_all.sh: unknown argument $1 (--help lists them)" >&2; exit 2 ;;
    esac
done
bench=$build/bin/fbngrad_bench
[[ -x $bench ]] || { echo "run_all.sh: no $bench (build the fbngrad_bench target first)" >&2; exit 1; }
results=${results:-$root/build/bench-results/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$results"
python=${FBNGRAD_VENV:-$root/build/venv}/bin/python

shapes='[^/]+'
sweep_shapes='[^/]+'
if [[ $quick == 1 ]]; then
    shapes='(32,56,56,64|32,7,7,2048|1,56,56,24)'
    sweep_shapes='(1,25,25,64|1,200,200,64|1,800,800,64)'
    reps=1
    min_time=0.1
fi
gb=(--benchmark_repetitions="$reps" --benchmark_min_time="$min_time" --benchmark_out_format=json)

step() { printf '\n== %s ==\n' "$*"; }
run_bench() {  # phase, then fbngrad_bench arguments
    local phase=$1; shift
    step "$phase: fbngrad_bench $*"
    "$bench" "${gb[@]}" --benchmark_out="$results/$phase.json" "$@" 2>&1 | tee "$results/$phase.log"
}

step "results in $results (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
run_bench bandwidth --benchmark_filter='^bandwidth/'
run_bench catalogue --fbngrad_shapes=catalogue \
    --benchmark_filter="^(fbngrad|onednn|aten|naive)/[^/]+/[^/]+/[^/]+/$shapes(/|\$)"
if [[ $isa == 1 ]]; then
    run_bench isa --fbngrad_shapes=catalogue --benchmark_filter="^fbngrad-[^/]+/[^/]+/[^/]+/[^/]+/$shapes/real_time\$"
fi
if [[ $sweep == 1 ]]; then
    run_bench sweep --fbngrad_shapes=sweep \
        --benchmark_filter="^(fbngrad|onednn|aten)/float32/NHWC/[^/]+/$sweep_shapes(/|\$)"
fi
if [[ $threads == 1 ]]; then
    run_bench threads --fbngrad_shapes=catalogue --fbngrad_thread_counts=1,2 \
        --benchmark_filter="^(bandwidth/(copy_nt|add_nt)|(fbngrad|onednn|aten)/float32/NHWC/train/$shapes)/threads:[0-9]+/real_time\$"
fi
if [[ $tf == 1 ]]; then
    if "$python" -c "import tensorflow" 2>/dev/null; then
        # Hot and cold, catalogue and (float32 NHWC) sweep shapes, as fbngrad_bench names them.
        tf_filter="^fbngrad/[^/]+/[^/]+/[^/]+/($shapes|$sweep_shapes)(/cold)?(/iterations:[0-9]+)?/real_time\$"
        [[ $sweep == 1 ]] || tf_filter="^fbngrad/[^/]+/[^/]+/[^/]+/$shapes(/cold)?(/iterations:[0-9]+)?/real_time\$"
        for mode in 1 0; do
            phase=tensorflow; [[ $mode == 0 ]] && phase=tensorflow-eigen
            step "$phase: tf_bench.py --onednn $mode"
            "$python" "$root/bench/tf_bench.py" --bench "$bench" --onednn $mode --filter "$tf_filter" \
                --repetitions "$reps" --min-time "$min_time" --out "$results/$phase.json" 2>&1 | tee "$results/$phase.log"
        done
    else
        echo "run_all.sh: no TensorFlow in $python: the tensorflow peers are left out" >&2
    fi
fi

step "table: $results/table.md"
python3 "$root/bench/bench_table.py" "$results"/*.json > "$results/table.md"
cat "$results/table.md"
if /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
    step "plots"
    /usr/bin/python3 "$root/bench/plot.py" --out "$results" "$results"/*.json
else
    echo "run_all.sh: no matplotlib for /usr/bin/python3 (Debian python3-matplotlib): no plots" >&2
fi
step "done: $results"
