# The depth-1 grid measured again on the fixed model disk (6043c6c): the 43 O_DIRECT workloads of
# testbed-wd500-qd1.csv at 4 s and its two write-back writers at 8 s, every candidate but fifo,
# 3 repetitions, wd500 at depth 1
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
grep debugfs /proc/mounts || mount -t debugfs none /sys/kernel/debug
cd /mnt/ioaz/agent
C=fcfs,deadline,anticipatory,kyber,vr,scan,sstf,stream
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 1p-seq-read-128k-t0-d1-g1_2,1p-seq-write-128k-t0-d8-g1_2,1p-rand-read-4k-t0-d1-g1_2,1p-rand-write-4k-t0-d8-g1_2,4p-seq-read-128k-t0-d1-g1_2,4p-seq-write-128k-t0-d8-g1_2,4p-rand-read-4k-t0-d1-g1_2,4p-rand-write-4k-t0-d8-g1_2,8p-seq-read-128k-t0-d1-g1_2,8p-seq-write-128k-t0-d8-g1_2,8p-rand-read-4k-t0-d1-g1_2,8p-rand-write-4k-t0-d8-g1_2,16p-seq-read-128k-t0-d1-g1_2,16p-seq-write-128k-t0-d8-g1_2,16p-rand-read-4k-t0-d1-g1_2,16p-rand-write-4k-t0-d8-g1_2,2p-rand-mixed-64k-t0-d1-g1_2,2p-rand-mixed-4k-t0-d1-g1_2,8p-rand-read-4k-t0-d8-g1_2,16p-seq-write-4k-t0-d8-g40,1p-rand-read-4k-t0-d8-g40,2p-rand-mixed-4k-t3-d1-g1_2,16p-seq-write-128k-t0-d1-g1_2,8p-rand-read-4k-t0-d8-g40,2p-rand-read-64k-t3-d1-g40,2p-seq-read-128k-t0-d8-g1_2,4p-seq-mixed-128k-t3-d1-g40,1p-rand-read-4k-t0-d1-g40,2p-rand-read-4k-t0-d1-g1_2,4p-rand-mixed-4k-t3-d1-g40,1p-rand-write-64k-t3-d1-g1_2,2p-seq-write-4k-t0-d8-g40,1p-seq-write-4k-t3-d1-g1_2,2p-seq-read-4k-t0-d8-g40,2p-seq-write-4k-t3-d1-g40,4p-rand-mixed-64k-t0-d8-g1_2,2p-rand-write-4k-t3-d1-g40,8p-seq-read-128k-t0-d8-g40,8p-seq-write-128k-t0-d1-g40,8p-rand-write-4k-t3-d1-g40,16p-seq-mixed-4k-t0-d8-g40,16p-rand-read-4k-t0-d8-g40,16p-rand-write-64k-t3-d1-g1_2 \
  --seconds 4 --reps 3 --candidates $C --out /mnt/results/grid.csv
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 1p-seq-write-1024k-t0-d1-g1_2-b,4p-seq-write-128k-t0-d1-g1_2-b \
  --seconds 8 --reps 3 --candidates $C --out /mnt/results/buffered.csv
# par-read's shape in the grid (4 synchronous 4 KiB O_DIRECT readers, 40 GB and 1.2 GB apart)
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 4p-seq-read-4k-t0-d1-g40,4p-seq-read-4k-t0-d1-g1_2 \
  --seconds 4 --reps 3 --candidates $C --out /mnt/results/parread.csv
