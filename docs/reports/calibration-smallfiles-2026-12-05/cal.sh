# readers and writers on small files (-mMIB) of an ext4 file system made on the disk, wd500 at depth 1
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
grep debugfs /proc/mounts || mount -t debugfs none /sys/kernel/debug
cd /mnt/ioaz/agent
C=fcfs,deadline,anticipatory,kyber,vr,scan,sstf,stream
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 10p-seq-mixed-128k-t0-d1-g1_2-c-b-f-m256,8p-seq-mixed-128k-t0-d1-g1_2-c-b-f-m128,8p-seq-mixed-128k-t0-d1-g1_2-c-b-f-m512,4p-seq-mixed-128k-t0-d1-g1_2-c-b-f-m256,10p-rand-mixed-4k-t0-d1-g1_2-c-b-f-m256 \
  --seconds 30 --reps 1 --candidates $C --out /mnt/results/small.csv
