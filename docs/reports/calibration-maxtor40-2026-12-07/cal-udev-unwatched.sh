# A check of realcal.udev_unwatched: the writers whose class read 3 processes for 1 and 4 for 2
# (and 4 for 2) in the sizes fill of 2026-12-07, calibrated again with udev settled after each run
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
cd /mnt/ioaz/agent
python3 -m ioaz.lab.main calibrate --device $A --destructive \
  --ids 1p-seq-write-128k-t3-d1-g1_2,2p-seq-write-128k-t3-d1-g40,1p-rand-write-4k-t3-d1-g40 \
  --seconds 4 --reps 2 --candidates deadline,anticipatory --out /mnt/results/udev2.csv
udevadm info -q property /dev/sda | head -3; ls /run/udev/rules.d/ 2>&1
