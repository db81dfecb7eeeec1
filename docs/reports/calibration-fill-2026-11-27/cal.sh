set -e
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
cd /mnt/ioaz/agent
python3 -m ioaz.lab.main calibrate --device $A --destructive --fill-empty --seconds 4 \
  --reps 3 --candidates fcfs,deadline,anticipatory,kyber,fifo,vr,scan,sstf,stream \
  --out /mnt/results/testbed-wd500-qd1.csv
