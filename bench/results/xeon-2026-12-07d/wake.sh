#!/bin/bash
# Does a sleeping worker's wake-up cost the small NHWC calls? Context switches a call, and OpenMP passive vs active.
OLD=${OLD:?fbngrad_bench of 07f8414}
MAIN=${MAIN:?fbngrad_bench of ccf9a51}
F='^fbngrad/float32/NHWC/(train|infer)/32,7,7,512/real_time$'
for b in main old main old; do
  B=$MAIN; [ $b = old ] && B=$OLD
  for m in train infer; do
    perf stat -x, -e context-switches,cpu-migrations -o ${TMPDIR:-/tmp}/stat.txt -- $B "--benchmark_filter=^fbngrad/float32/NHWC/$m/32,7,7,512/real_time\$" --fbngrad_shapes=catalogue --benchmark_min_time=1 --benchmark_format=json --benchmark_out=${TMPDIR:-/tmp}/stat.json >/dev/null 2>&1
    it=$(python3 -c "import json;print(sum(b['iterations'] for b in json.load(open('${TMPDIR:-/tmp}/stat.json'))['benchmarks']))")
    t=$(python3 -c "import json;print(json.load(open('${TMPDIR:-/tmp}/stat.json'))['benchmarks'][0]['real_time'])")
    cs=$(grep context-switches ${TMPDIR:-/tmp}/stat.txt | cut -d, -f1)
    echo "$b $m ms=$t iterations=$it context_switches=$cs per_call=$(python3 -c "print(round($cs/$it,2))")"
  done
done
for r in 1 2 3; do
 for w in passive active; do
  OMP_WAIT_POLICY=$w $MAIN '--benchmark_filter=^(fbngrad|fbngrad-omp)/float32/NHWC/(train|infer)/(32,7,7,512|32,14,14,256|32,28,28,128)/real_time$' --fbngrad_shapes=catalogue --benchmark_min_time=0.2 2>/dev/null | grep real_time | awk -v w=$w '{print w, $1, $2}'
 done
done | sort | awk '{k=$1" "$2; a[k]=a[k]" "$3} END{for(k in a) print k, a[k]}' | sort -k2
