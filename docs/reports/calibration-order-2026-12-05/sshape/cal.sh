# S "5 5 seq"'s shape again, every candidate but fifo, on ioaz 288a8f8: each run's candidate set anew,
# and repetitions 6-8 so that the workload's first run is stream's (the order rotates by repetition)
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
grep debugfs /proc/mounts || mount -t debugfs none /sys/kernel/debug
cd /mnt/ioaz/agent
git -C /mnt/ioaz log --oneline -1 2>/dev/null
C=fcfs,deadline,anticipatory,kyber,vr,scan,sstf,stream
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 10p-seq-mixed-128k-t0-d1-g1_2-c-b-f-m256 \
  --seconds 30 --reps 3 --first-rep 6 --candidates $C --out /mnt/results/sshape.csv
