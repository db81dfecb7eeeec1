set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
grep debugfs /proc/mounts || mount -t debugfs none /sys/kernel/debug
cd /mnt/ioaz/agent
C=fcfs,deadline,anticipatory,kyber,vr,scan,sstf,stream
# resumed: the rows already written are skipped (the O_DIRECT readers' mixes left out for time)
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 4p-seq-mixed-128k-t0-d1-g1_2-c-b,8p-seq-mixed-128k-t0-d1-g1_2-c-b,16p-seq-mixed-128k-t0-d1-g1_2-c-b,4p-seq-read-128k-t0-d1-g1_2-c,8p-seq-read-128k-t0-d1-g1_2-c,16p-seq-read-128k-t0-d1-g1_2-c \
  --seconds 8 --reps 3 --candidates $C --out /mnt/results/pagecache.csv
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 1p-seq-write-1024k-t0-d1-g1_2-b,4p-seq-write-128k-t0-d1-g1_2-b \
  --seconds 8 --reps 3 --candidates $C --out /mnt/results/writeback.csv
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 4p-seq-write-128k-t0-d8-g1_2,8p-rand-mixed-64k-t0-d8-g1_2 \
  --seconds 8 --reps 1 --candidates deadline,anticipatory,stream --out /mnt/results/direct-check.csv
