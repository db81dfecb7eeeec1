set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
grep debugfs /proc/mounts || mount -t debugfs none /sys/kernel/debug
cd /mnt/ioaz/agent
C=fcfs,deadline,anticipatory,kyber,vr,scan,sstf,stream
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 4p-seq-mixed-128k-t0-d1-g1_2-b,8p-seq-mixed-128k-t0-d1-g1_2-b,16p-seq-mixed-128k-t0-d1-g1_2-b \
  --seconds 8 --reps 3 --candidates $C --out /mnt/results/mixdirect.csv
