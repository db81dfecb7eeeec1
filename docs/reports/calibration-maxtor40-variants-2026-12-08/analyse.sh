#!/bin/bash
# maxtor40's variants: added to a copy of the shipped dataset, derived into $W/derived (the
# shipped files untouched), compared cell by cell with the shipped; a model trained on both
set -e
cd /work/main
W=/work/runs/calmaxv
R=docs/reports/calibration-fixed-2026-12-06
M=docs/reports/calibration-maxtor40-2026-12-07/merge.py
{ cat $W/variants.csv; tail -n +2 $W/variants-wb.csv; } > $W/variants-all.csv
python3 $M decision_matrices/kernel/testbed-maxtor40-qd1.csv $W/variants-all.csv $W/all.csv
# derive writes the stream tunables from the curve beside the dataset: the shipped one
cp decision_matrices/kernel/testbed-maxtor40-qd1.csv.curve.json $W/all.csv.curve.json
.venv/bin/python $R/summ.py $W/variants-all.csv $W/variants-all.csv --margins > $W/margins.txt
.venv/bin/python $W/summ_table.py $W/variants-all.csv > $W/summary-variants.md
for axes in size plain; do
  mkdir -p $W/derived-$axes
  flag=""; [ $axes = size ] && flag=--size-axis
  for gm in "mean 0.02" "throughput 0.02" "min 0.04" "max 0.04" "latency 0.07"; do
    set -- $gm
    .venv/bin/ioaz-lab derive $W/all.csv --out-dir $W/derived-$axes --name testbed-maxtor40-qd1 \
      --goal $1 --min-margin $2 --unclear-policy deadline $flag > $W/derived-$axes/derive-$1.txt 2>&1
  done
  if [ $axes = size ]; then python3 $W/cmp_sized.py decision_matrices/kernel $W/derived-$axes testbed-maxtor40-qd1; else python3 $R/cmp_matrices.py decision_matrices/kernel $W/derived-$axes testbed-maxtor40-qd1; fi > $W/cmp-$axes.txt
done
.venv/bin/ioaz-lab compare $W/variants-all.csv $W/sim/sim-variants.csv --goal mean > $W/sim/compare-variants.txt
echo done
