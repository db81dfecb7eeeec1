# wd500 at depth 1: every writer workload of testbed-wd500-qd1.csv (20) and of its sized-cell fill
# (14) again, with udev's watch off the disk (885474d), every candidate but fifo, 3 repetitions of 4 s
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
grep debugfs /proc/mounts || mount -t debugfs none /sys/kernel/debug
cd /mnt/ioaz/agent
C=fcfs,deadline,anticipatory,kyber,vr,scan,sstf,stream
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 1p-seq-write-128k-t0-d8-g1_2,1p-rand-write-4k-t0-d8-g1_2,4p-seq-write-128k-t0-d8-g1_2,4p-rand-write-4k-t0-d8-g1_2,8p-seq-write-128k-t0-d8-g1_2,8p-rand-write-4k-t0-d8-g1_2,16p-seq-write-128k-t0-d8-g1_2,16p-rand-write-4k-t0-d8-g1_2,16p-seq-write-4k-t0-d8-g40,16p-seq-write-128k-t0-d1-g1_2,1p-rand-write-64k-t3-d1-g1_2,2p-seq-write-4k-t0-d8-g40,1p-seq-write-4k-t3-d1-g1_2,2p-seq-write-4k-t3-d1-g40,2p-rand-write-4k-t3-d1-g40,8p-seq-write-128k-t0-d1-g40,8p-rand-write-4k-t3-d1-g40,16p-rand-write-64k-t3-d1-g1_2,1p-seq-write-1024k-t0-d1-g1_2-b,4p-seq-write-128k-t0-d1-g1_2-b \
  --seconds 4 --reps 3 --candidates $C --out /mnt/results/base.csv
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 16p-rand-write-4k-t0-d1-g1_2,16p-rand-write-64k-t0-d8-g1_2,16p-seq-write-4k-t0-d1-g1_2,1p-rand-write-4k-t3-d1-g40,1p-rand-write-64k-t0-d8-g1_2,1p-seq-write-128k-t3-d1-g1_2,1p-seq-write-4k-t0-d8-g1_2,2p-rand-write-64k-t0-d8-g40,2p-seq-write-128k-t3-d1-g40,4p-rand-write-64k-t0-d1-g40,8p-rand-write-64k-t0-d1-g1_2,8p-rand-write-64k-t0-d8-g40,8p-seq-write-4k-t0-d1-g1_2,8p-seq-write-4k-t0-d8-g40 \
  --seconds 4 --reps 3 --candidates $C --out /mnt/results/sizes.csv
