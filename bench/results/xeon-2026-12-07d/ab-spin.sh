#!/bin/bash
# The A/B: old (07f8414) against new (main + the own pool that waits awake), the 104 cases, both orders.
O=${OUT:-.}; mkdir -p $O
OLD=${OLD:?fbngrad_bench of 07f8414}
NEW=${NEW:?fbngrad_bench of this commit}
ALL='^(fbngrad|fbngrad-hand)/float32/[^/]+/[^/]+/[^/]+/real_time$'
run() { $1 "--benchmark_filter=$ALL" --fbngrad_shapes=catalogue --benchmark_min_time=0.05 --benchmark_repetitions=3 \
     --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true --benchmark_format=json --benchmark_out=$2 >/dev/null 2>&1
  echo "$(date +%T) $2 rc=$?"; }
for r in 1 2 3; do run $OLD $O/ab-AB-A$r.json; run $NEW $O/ab-AB-B$r.json; done
for r in 1 2 3; do run $NEW $O/ab-BA-B$r.json; run $OLD $O/ab-BA-A$r.json; done
echo done
