# The depth-1 grid's two write-back writers measured with the kernel's writeback throttling off
# under every candidate (as ioazd runs a rotating disk; calibrate's default since ecdbc5b) and
# as the kernel ties it to the scheduler (--writeback-throttling kernel), the two modes taking
# turns repetition by repetition; every candidate but fifo, 8 s each, wd500 at depth 1
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
cat /sys/block/$A/queue/wbt_lat_usec /sys/block/$A/queue/rotational
grep debugfs /proc/mounts || mount -t debugfs none /sys/kernel/debug
cd /mnt/ioaz/agent
C=fcfs,deadline,anticipatory,kyber,vr,scan,sstf,stream
IDS=1p-seq-write-1024k-t0-d1-g1_2-b,4p-seq-write-128k-t0-d1-g1_2-b
for r in 0 1 2; do
  python3 -m ioaz.lab.main calibrate --device $A --destructive --ids $IDS --seconds 8 \
    --first-rep $r --reps 1 --candidates $C --out /mnt/results/buffered-off.csv
  python3 -m ioaz.lab.main calibrate --device $A --destructive --ids $IDS --seconds 8 \
    --first-rep $r --reps 1 --candidates $C --writeback-throttling kernel \
    --out /mnt/results/buffered-kernel.csv
done
cat /sys/block/$A/queue/wbt_lat_usec
