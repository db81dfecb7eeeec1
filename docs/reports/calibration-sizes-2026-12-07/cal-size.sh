# The sized cells the depth-1 dataset has not measured (25: classes measured at the other size
# only, or not at all), one grid workload each at the missing size, every candidate but fifo,
# 3 repetitions of 4 s, wd500 at depth 1; added to a copy of testbed-wd500-qd1.csv
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
grep debugfs /proc/mounts || mount -t debugfs none /sys/kernel/debug
cd /mnt/ioaz/agent
C=fcfs,deadline,anticipatory,kyber,vr,scan,sstf,stream
python3 -m ioaz.lab.main calibrate --device $A --destructive --fill-empty --size-axis \
  --seconds 4 --reps 3 --candidates $C --out /mnt/results/grid.csv
