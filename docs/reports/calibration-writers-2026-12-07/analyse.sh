#!/bin/bash
# the wd500 depth-1 writers measured again: merged into copies of the two datasets, derived into
# /work/runs/calwdw/derived (the shipped files untouched), compared cell by cell with the shipped
set -e
cd /work/main
W=/work/runs/calwdw
R=docs/reports/calibration-fixed-2026-12-06
M=docs/reports/calibration-maxtor40-2026-12-07/merge.py
# the write-back writers (-b) ran 4 s in cal-wd500-writers.sh, not the 8 s they were measured
# at: their rows come from cal-wd500-buffered.sh (8 s) when it has run, else the old ones stay
{ head -1 $W/base.csv; grep -v -- '-b,' $W/base.csv | tail -n +2; } > $W/writers.csv
if [ -f /work/runs/calwdb/buffered.csv ]; then
  tail -n +2 /work/runs/calwdb/buffered.csv >> $W/writers.csv
fi
python3 $M decision_matrices/kernel/testbed-wd500-qd1.csv $W/writers.csv $W/qd1.csv
if [ -f $W/sizes.csv ]; then
  python3 $M decision_matrices/kernel/testbed-wd500-qd1-sizes.csv $W/sizes.csv $W/qd1-sizes.csv
  { cat $W/qd1.csv; tail -n +2 $W/qd1-sizes.csv; } > $W/qd1-all.csv
fi
.venv/bin/python $R/summ.py $W/qd1.csv $W/qd1.csv --margins > $W/margins.txt
.venv/bin/python $R/summ.py decision_matrices/kernel/testbed-wd500-qd1.csv $W/qd1.csv > $W/summ-base.txt
mkdir -p $W/derived $W/derived-sizes
for gm in "mean 0.03" "throughput 0.03" "min 0.05" "max 0.05" "latency 0.09"; do
  set -- $gm
  .venv/bin/ioaz-lab derive $W/qd1.csv --out-dir $W/derived --name testbed-wd500-qd1 --goal $1 \
    --min-margin $2 --unclear-policy deadline --size-axis > $W/derived/derive-$1.txt 2>&1
  [ -f $W/qd1-all.csv ] && .venv/bin/ioaz-lab derive $W/qd1-all.csv --out-dir $W/derived-sizes \
    --name testbed-wd500-qd1 --goal $1 --min-margin $2 --unclear-policy deadline --size-axis \
    > $W/derived-sizes/derive-$1.txt 2>&1
done
python3 $R/cmp_matrices.py decision_matrices/kernel $W/derived testbed-wd500-qd1 > $W/cmp-base.txt
[ -f $W/qd1-all.csv ] && python3 $R/cmp_matrices.py decision_matrices/kernel $W/derived-sizes testbed-wd500-qd1 > $W/cmp-sizes.txt
echo done
