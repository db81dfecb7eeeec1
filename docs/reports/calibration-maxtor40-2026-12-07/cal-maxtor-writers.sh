# maxtor40: the 8 writer workloads again, with the udev watch off (885474d)
# (1, 4, 8, 16 writers x sequential/random), every candidate but fifo, 3 repetitions of 4 s
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
grep debugfs /proc/mounts || mount -t debugfs none /sys/kernel/debug
cd /mnt/ioaz/agent
C=fcfs,deadline,anticipatory,kyber,vr,scan,sstf,stream
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 1p-seq-write-128k-t0-d8-g1_2,1p-rand-write-4k-t0-d8-g1_2,4p-seq-write-128k-t0-d8-g1_2,4p-rand-write-4k-t0-d8-g1_2,8p-seq-write-128k-t0-d8-g1_2,8p-rand-write-4k-t0-d8-g1_2,16p-seq-write-128k-t0-d8-g1_2,16p-rand-write-4k-t0-d8-g1_2 \
  --seconds 4 --reps 3 --candidates $C --out /mnt/results/grid.csv
