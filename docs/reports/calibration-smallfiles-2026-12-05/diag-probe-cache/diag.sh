# The calibration's 10p-...-c-b-f-m256 job file (S '5 5 seq' in shape) under bfq and stream, on the
# bench's file system: caches dropped before and no probe (as the bench runs S), with ioaz's probe
# counting every request (as the calibration runs it), or without the caches dropped. Every arm
# waits 15 s before fio (the probe's start under TCG is over by then); 2 rounds, order rotated.
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
mkfs.ext4 -q -F -T largefile -E lazy_itable_init=0,lazy_journal_init=0 /dev/$A
mkdir -p /mnt/fs && mount -o noatime /dev/$A /mnt/fs && mkdir -p /mnt/fs/s
for i in 0 2 4 6 8; do dd if=/dev/urandom of=/mnt/fs/s/r.$i bs=1M count=256 status=none; done; sync
cd /mnt/ioaz/agent
python3 -c "
from ioaz.learn.grid import WorkSpec
from ioaz.learn.realcal import fio_jobfile
w = WorkSpec.from_id('10p-seq-mixed-128k-t0-d1-g1_2-c-b-f-m256')
open('/tmp/cal.fio', 'w').write(fio_jobfile(w, '/dev/$A', 100 * 10**9, 40, '/mnt/fs/s'))
"
run() {  # sched arm round
  echo $1 > /sys/block/$A/queue/scheduler
  if [ $1 = stream ]; then
    echo 599 > /sys/block/$A/queue/iosched/svc_min_us; echo 24916 > /sys/block/$A/queue/iosched/svc_max_us
    echo 878790440 > /sys/block/$A/queue/iosched/svc_full_sectors
  fi
  [ $2 = nodrop ] || { sync; echo 3 > /proc/sys/vm/drop_caches; sync; }
  P=""
  if [ $2 = probe ]; then
    python3 -m ioaz.cli.ioazctl observe --device $A --interval 0.5 --sample 1 --json > /tmp/obs.out 2>&1 &
    P=$!
  fi
  sleep 15
  n=$1.$2.$3
  grep " $A " /proc/diskstats > /mnt/results/$n.before
  t0=$(date +%s.%N)
  fio --output-format=json --eta=never /tmp/cal.fio > /mnt/results/$n.json
  t1=$(date +%s.%N)
  grep " $A " /proc/diskstats > /mnt/results/$n.after
  echo "$t0 $t1" > /mnt/results/$n.time
  [ -n "$P" ] && { kill $P; wait $P; echo "probe: $(wc -l < /tmp/obs.out) lines"; }
}
for r in 0 1; do
  if [ $r = 0 ]; then order="bfq:clean stream:clean bfq:probe stream:probe bfq:nodrop stream:nodrop"
  else order="stream:nodrop bfq:nodrop stream:probe bfq:probe stream:clean bfq:clean"; fi
  for c in $order; do run ${c%%:*} ${c##*:} $r; done
done
