set -e
insmod /mnt/ioaz/kmod/build/$(uname -r)/ioaz_sched.ko
modprobe -a bfq kyber-iosched
cd /mnt/ioaz/agent
python3 -m ioaz.lab.main calibrate --device sda --destructive --workloads 32 --seconds 4 --reps 3 \
  --candidates fcfs,deadline,anticipatory,kyber,fifo,vr,scan,sstf,stream \
  --out /mnt/results/testbed-wd500-qd32-r3.csv
