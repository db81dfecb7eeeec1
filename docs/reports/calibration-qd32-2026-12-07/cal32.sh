# The depth-32 grid measured again on the fixed model disk (6043c6c and later): the 32 O_DIRECT
# workloads of testbed-wd500-qd32.csv at 4 s, the two write-back writers at 8 s and par-read's
# shape, every candidate but fifo, 3 repetitions, wd500 at the drive's depth 32 (AHCI NCQ)
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 32 mq-deadline
cat /sys/block/$A/device/queue_depth
grep debugfs /proc/mounts || mount -t debugfs none /sys/kernel/debug
cd /mnt/ioaz/agent
C=fcfs,deadline,anticipatory,kyber,vr,scan,sstf,stream
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 16p-rand-read-4k-t0-d1-g1_2,16p-rand-write-4k-t0-d8-g1_2,16p-seq-read-128k-t0-d1-g1_2,16p-seq-write-128k-t0-d1-g1_2,16p-seq-write-128k-t0-d8-g1_2,16p-seq-write-4k-t0-d8-g40,1p-rand-read-4k-t0-d1-g1_2,1p-rand-read-4k-t0-d1-g40,1p-rand-read-4k-t0-d8-g40,1p-rand-write-4k-t0-d8-g1_2,1p-rand-write-64k-t3-d1-g1_2,1p-seq-read-128k-t0-d1-g1_2,1p-seq-write-128k-t0-d8-g1_2,2p-rand-mixed-4k-t0-d1-g1_2,2p-rand-mixed-4k-t3-d1-g1_2,2p-rand-mixed-64k-t0-d1-g1_2,2p-rand-read-4k-t0-d1-g1_2,2p-rand-read-64k-t3-d1-g40,2p-seq-read-128k-t0-d8-g1_2,2p-seq-write-4k-t0-d8-g40,4p-rand-mixed-4k-t3-d1-g40,4p-rand-read-4k-t0-d1-g1_2,4p-rand-write-4k-t0-d8-g1_2,4p-seq-mixed-128k-t3-d1-g40,4p-seq-read-128k-t0-d1-g1_2,4p-seq-write-128k-t0-d8-g1_2,8p-rand-read-4k-t0-d1-g1_2,8p-rand-read-4k-t0-d8-g1_2,8p-rand-read-4k-t0-d8-g40,8p-rand-write-4k-t0-d8-g1_2,8p-seq-read-128k-t0-d1-g1_2,8p-seq-write-128k-t0-d8-g1_2 \
  --seconds 4 --reps 3 --candidates $C --out /mnt/results/grid.csv
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 1p-seq-write-1024k-t0-d1-g1_2-b,4p-seq-write-128k-t0-d1-g1_2-b \
  --seconds 8 --reps 3 --candidates $C --out /mnt/results/buffered.csv
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 4p-seq-read-4k-t0-d1-g40,4p-seq-read-4k-t0-d1-g1_2 \
  --seconds 4 --reps 3 --candidates $C --out /mnt/results/parread.csv
