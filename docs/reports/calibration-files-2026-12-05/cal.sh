# readers and writers on files of an ext4 file system made on the disk (-f), wd500 at depth 1
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
grep debugfs /proc/mounts || mount -t debugfs none /sys/kernel/debug
cd /mnt/ioaz/agent
C=fcfs,deadline,anticipatory,kyber,vr,scan,sstf,stream
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 8p-seq-mixed-128k-t0-d1-g1_2-c-b-f,4p-seq-mixed-128k-t0-d1-g1_2-c-b-f,16p-seq-mixed-128k-t0-d1-g1_2-c-b-f,8p-seq-read-128k-t0-d1-g1_2-c-f,4p-seq-write-128k-t0-d1-g1_2-b-f \
  --seconds 15 --reps 2 --candidates $C --out /mnt/results/files.csv
