#!/bin/bash
# Today's A/B of old (07f8414) and main (ccf9a51): focus rounds, then the 104 cases in both orders.
set -u
O=${OUT:-.}; mkdir -p $O
OLD=${OLD:?fbngrad_bench of 07f8414}
MAIN=${MAIN:?fbngrad_bench of ccf9a51}
FOCUS='^(fbngrad|fbngrad-hand)/float32/NHWC/(train|infer)/(32,28,28,512|32,14,14,1024|32,7,7,2048|32,7,7,512|32,14,14,256|32,28,28,128|32,56,56,64)/real_time$'
ALL='^(fbngrad|fbngrad-hand)/float32/[^/]+/[^/]+/[^/]+/real_time$'
run() { # bin filter T aggregates out
  local agg=""; [ "$4" = 1 ] && agg=--benchmark_report_aggregates_only=true
  $1 "--benchmark_filter=$2" --fbngrad_shapes=catalogue --benchmark_min_time=$3 --benchmark_repetitions=3 \
     --benchmark_enable_random_interleaving=true $agg --benchmark_format=json --benchmark_out=$5 >/dev/null 2>&1
  echo "$(date +%T) $5 rc=$?"
}
vmstat 1 2 | tail -1
for r in 1 2 3 4 5 6 7 8; do
  run $OLD "$FOCUS" 0.1 0 $O/rule-focus-A$r.json
  run $MAIN "$FOCUS" 0.1 0 $O/rule-focus-B$r.json
done
for r in 1 2 3; do
  run $OLD "$ALL" 0.05 1 $O/ab-rule-AB-A$r.json
  run $MAIN "$ALL" 0.05 1 $O/ab-rule-AB-B$r.json
done
for r in 1 2 3; do
  run $MAIN "$ALL" 0.05 1 $O/ab-rule-BA-B$r.json
  run $OLD "$ALL" 0.05 1 $O/ab-rule-BA-A$r.json
done
vmstat 1 2 | tail -1
echo done
