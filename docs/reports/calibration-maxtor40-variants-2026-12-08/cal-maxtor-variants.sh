# maxtor40 (IOAZ's 40 GB IDE disk, queue depth 1) on the real kernel: the depth-1 wd500 grid's
# 40 variant workloads (depth, size, think time, 2 processes, mixes, far-apart files, two
# write-back writers), the same ids (files fitted to the smaller disk), every candidate but
# fifo, 2 repetitions of 4 s (the write-back writers 8 s), udev's watch off the disk
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
grep debugfs /proc/mounts || mount -t debugfs none /sys/kernel/debug
cd /mnt/ioaz/agent
C=fcfs,deadline,anticipatory,kyber,vr,scan,sstf,stream
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 16p-rand-read-4k-t0-d8-g40,16p-rand-write-64k-t3-d1-g1_2,16p-seq-mixed-4k-t0-d8-g40,16p-seq-read-4k-t0-d1-g1_2,16p-seq-read-4k-t0-d1-g40,16p-seq-write-128k-t0-d1-g1_2,16p-seq-write-4k-t0-d8-g40,1p-rand-read-4k-t0-d1-g40,1p-rand-read-4k-t0-d8-g40,1p-rand-write-64k-t3-d1-g1_2,1p-seq-read-4k-t0-d1-g1_2,1p-seq-write-4k-t3-d1-g1_2,2p-rand-mixed-4k-t0-d1-g1_2,2p-rand-mixed-4k-t3-d1-g1_2,2p-rand-mixed-64k-t0-d1-g1_2,2p-rand-read-4k-t0-d1-g1_2,2p-rand-read-64k-t3-d1-g40,2p-rand-write-4k-t3-d1-g40,2p-seq-read-128k-t0-d8-g1_2,2p-seq-read-4k-t0-d1-g1_2,2p-seq-read-4k-t0-d1-g40,2p-seq-read-4k-t0-d8-g40,2p-seq-write-4k-t0-d8-g40,2p-seq-write-4k-t3-d1-g40,4p-rand-mixed-4k-t3-d1-g40,4p-rand-mixed-64k-t0-d8-g1_2,4p-seq-mixed-128k-t3-d1-g40,4p-seq-read-4k-t0-d1-g1_2,4p-seq-read-4k-t0-d1-g40,4p-seq-read-64k-t0-d1-g1_2,8p-rand-read-4k-t0-d8-g1_2,8p-rand-read-4k-t0-d8-g40,8p-rand-write-4k-t3-d1-g40,8p-seq-read-128k-t0-d8-g40,8p-seq-read-4k-t0-d1-g1_2,8p-seq-read-4k-t0-d1-g40,8p-seq-read-64k-t0-d1-g1_2,8p-seq-write-128k-t0-d1-g40 \
  --seconds 4 --reps 2 --candidates $C --out /mnt/results/variants.csv
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 1p-seq-write-1024k-t0-d1-g1_2-b,4p-seq-write-128k-t0-d1-g1_2-b \
  --seconds 8 --reps 2 --candidates $C --out /mnt/results/variants-wb.csv
