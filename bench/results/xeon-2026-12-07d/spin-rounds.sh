#!/bin/bash
# old (07f8414), base (ccf9a51, Halide's pool), spin (the own pool that waits awake): rounds rotating the first build.
O=${OUT:-.}; mkdir -p $O
declare -A BIN=([old]=${OLD:?fbngrad_bench of 07f8414} [base]=${BASE:?fbngrad_bench of ccf9a51} [spin]=${NEW:?fbngrad_bench of this commit})
F='^(fbngrad|fbngrad-hand)/float32/(NHWC/(train|infer)/(32,28,28,512|32,14,14,1024|32,7,7,2048|32,7,7,512|32,14,14,256|32,28,28,128|32,56,56,64)|NCHW/(train|infer)/(32,7,7,512|32,14,14,256|32,7,7,2048|32,28,28,128))/real_time$'
orders=("old base spin" "base spin old" "spin old base" "old spin base" "spin base old" "base old spin")
for r in $(seq 1 ${1:-6}); do
  for b in ${orders[$(( (r-1) % 6 ))]}; do
    ${BIN[$b]} "--benchmark_filter=$F" --fbngrad_shapes=catalogue --benchmark_min_time=0.1 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_format=json --benchmark_out=$O/spin-rounds-$b$r.json >/dev/null 2>&1
    echo "$(date +%T) $b$r rc=$?"
  done
done
echo done
