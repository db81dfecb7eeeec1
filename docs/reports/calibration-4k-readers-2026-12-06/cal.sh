# Sequential readers of 4 KiB (and 64 KiB) at depth 1 for the depth-1 grid: 1, 2, 4, 8 and 16
# synchronous O_DIRECT readers 1.2 GB and 40 GB apart, and 4 and 8 readers of 64 KiB; the
# grid had sequential readers only at 128 KiB, so a model trained on it could not tell small
# sequential readers from random ones. Every candidate but fifo, 3 repetitions of 4 s, wd500
# at depth 1, the same settings as calibration-fixed-2026-12-06/cal.sh.
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
grep debugfs /proc/mounts || mount -t debugfs none /sys/kernel/debug
cd /mnt/ioaz/agent
C=fcfs,deadline,anticipatory,kyber,vr,scan,sstf,stream
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 1p-seq-read-4k-t0-d1-g1_2,2p-seq-read-4k-t0-d1-g1_2,2p-seq-read-4k-t0-d1-g40,4p-seq-read-4k-t0-d1-g1_2,4p-seq-read-4k-t0-d1-g40,8p-seq-read-4k-t0-d1-g1_2,8p-seq-read-4k-t0-d1-g40,16p-seq-read-4k-t0-d1-g1_2,16p-seq-read-4k-t0-d1-g40,4p-seq-read-64k-t0-d1-g1_2,8p-seq-read-64k-t0-d1-g1_2 \
  --seconds 4 --reps 3 --candidates $C --out /mnt/results/seq4k.csv
