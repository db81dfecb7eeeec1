# does a longer run change the 4+4 on files cell? wd500 depth 1, 60 s runs
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
grep debugfs /proc/mounts || mount -t debugfs none /sys/kernel/debug
cat /proc/sys/vm/dirty_ratio /proc/sys/vm/dirty_background_ratio; free -m
cd /mnt/ioaz/agent
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 8p-seq-mixed-128k-t0-d1-g1_2-c-b-f \
  --seconds 60 --reps 2 --candidates anticipatory,stream,deadline --out /mnt/results/long.csv
