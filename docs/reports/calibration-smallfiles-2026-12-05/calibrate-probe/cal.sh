# S's shape from calibrate itself, bfq and stream, 3 runs each: without the BPF probe (diskstats),
# then with it (the calibration's default)
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
grep debugfs /proc/mounts || mount -t debugfs none /sys/kernel/debug
cd /mnt/ioaz/agent
for probe in diskstats auto; do
python3 -m ioaz.lab.main calibrate --device $A --destructive --probe $probe \
  --ids 10p-seq-mixed-128k-t0-d1-g1_2-c-b-f-m256 \
  --seconds 30 --reps 3 --candidates anticipatory,stream --out /mnt/results/s55-$probe.csv
done
