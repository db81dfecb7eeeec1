# wd500 at depth 1: the two write-back writers of testbed-wd500-qd1.csv again, with udev's watch
# off the disk (885474d), 8 s as they were first measured, every candidate but fifo, 3 repetitions
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
grep debugfs /proc/mounts || mount -t debugfs none /sys/kernel/debug
cd /mnt/ioaz/agent
C=fcfs,deadline,anticipatory,kyber,vr,scan,sstf,stream
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 1p-seq-write-1024k-t0-d1-g1_2-b,4p-seq-write-128k-t0-d1-g1_2-b \
  --seconds 8 --reps 3 --candidates $C --out /mnt/results/buffered.csv
