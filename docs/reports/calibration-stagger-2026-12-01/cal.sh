# The staggered twins of every multi-process sequential reading workload (read or 70%-read
# mixed) of testbed-wd500-qd1.csv: the same workloads, the processes started 300 ms apart
set -e
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
cd /mnt/ioaz/agent
python3 -m ioaz.lab.main calibrate --device $A --destructive --seconds 4 --reps 3 \
  --ids 4p-seq-read-128k-t0-d1-g1_2,8p-seq-read-128k-t0-d1-g1_2,16p-seq-read-128k-t0-d1-g1_2,2p-seq-read-128k-t0-d8-g1_2,4p-seq-mixed-128k-t3-d1-g40,2p-seq-read-4k-t0-d8-g40,8p-seq-read-128k-t0-d8-g40,16p-seq-mixed-4k-t0-d8-g40 \
  --stagger-ms 300 --candidates fcfs,deadline,anticipatory,kyber,vr,scan,sstf,stream \
  --out /mnt/results/testbed-wd500-qd1.csv
