# two more repetitions of bfq and stream on the two workloads where they lead (S's shape and 4+4 on 128 MiB files)
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
grep debugfs /proc/mounts || mount -t debugfs none /sys/kernel/debug
cd /mnt/ioaz/agent
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 10p-seq-mixed-128k-t0-d1-g1_2-c-b-f-m256,8p-seq-mixed-128k-t0-d1-g1_2-c-b-f-m128 \
  --seconds 30 --first-rep 1 --reps 2 --candidates anticipatory,stream --out /mnt/results/small.csv
