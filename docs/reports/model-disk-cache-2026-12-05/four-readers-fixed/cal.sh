# four sequential readers, through the page cache and O_DIRECT, raw wd500 at depth 1, the model disk fixed
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
grep debugfs /proc/mounts || mount -t debugfs none /sys/kernel/debug
cd /mnt/ioaz/agent
C=fcfs,deadline,anticipatory,kyber,vr,scan,sstf,stream
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 4p-seq-read-128k-t0-d1-g1_2-c,4p-seq-read-128k-t0-d1-g1_2 \
  --seconds 8 --reps 3 --candidates $C --out /mnt/results/four-readers-fixed.csv
