# S '5 5 seq' as the bench runs it, the calibration's 10p-...-c-b-f-m256 job file, and the same with
# a 10 s ramp_time; same fs, same files; fio's figures against the disk's (diskstats)
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
mkfs.ext4 -q -F -T largefile -E lazy_itable_init=0,lazy_journal_init=0 /dev/$A
mkdir -p /mnt/fs && mount -o noatime /dev/$A /mnt/fs && mkdir -p /mnt/fs/s
for i in $(seq 0 9); do dd if=/dev/urandom of=/mnt/fs/s/r.$i bs=1M count=256 status=none; done; sync
cd /mnt/ioaz/agent
python3 -c "
from ioaz.learn.grid import WorkSpec
from ioaz.learn.realcal import fio_jobfile
w = WorkSpec.from_id('10p-seq-mixed-128k-t0-d1-g1_2-c-b-f-m256')
open('/tmp/cal.fio', 'w').write(fio_jobfile(w, '/dev/$A', 100 * 10**9, 40, '/mnt/fs/s'))
"
sed -e 's/^runtime=40$/runtime=30\nramp_time=10/' /tmp/cal.fio > /tmp/calw.fio
cat /tmp/cal.fio /tmp/calw.fio
run_s() {
  fio --output-format=json --eta=never --directory=/mnt/fs/s --direct=0 --time_based --norandommap \
    --randrepeat=0 --group_reporting --fallocate=none --create_on_open=0 --allow_file_create=0 \
    --name=r --rw=read --bs=128k --ioengine=psync --numjobs=5 --filename_format='r.$jobnum' \
    --size=256m --runtime=40 --name=w --new_group --rw=write --bs=128k --ioengine=psync \
    --numjobs=5 --filename_format='w.$jobnum' --size=256m --allow_file_create=1 --runtime=40
  rm -f /mnt/fs/s/w.*; sync
}
for sched in bfq stream; do
  for shape in s cal calw; do
    echo $sched > /sys/block/$A/queue/scheduler
    if [ $sched = stream ]; then
      echo 599 > /sys/block/$A/queue/iosched/svc_min_us; echo 24916 > /sys/block/$A/queue/iosched/svc_max_us
      echo 878790440 > /sys/block/$A/queue/iosched/svc_full_sectors
    fi
    sync; echo 3 > /proc/sys/vm/drop_caches; sync
    grep " $A " /proc/diskstats > /mnt/results/$shape.$sched.before
    t0=$(date +%s.%N)
    if [ $shape = s ]; then run_s > /mnt/results/$shape.$sched.json
    else fio --output-format=json --eta=never /tmp/$shape.fio > /mnt/results/$shape.$sched.json; fi
    t1=$(date +%s.%N)
    grep " $A " /proc/diskstats > /mnt/results/$shape.$sched.after
    echo "$t0 $t1" > /mnt/results/$shape.$sched.time
    ls /mnt/fs/s
  done
done
