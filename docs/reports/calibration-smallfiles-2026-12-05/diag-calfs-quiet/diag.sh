# The calibration's job for S's shape on the calibration's own file system (mkfs's defaults, a
# relatime mount, the readers' files laid out by O_DIRECT writes: learn/calfs.py), no probe, caches
# kept as the calibration keeps them: bfq right after a stream run (as the calibration runs it), or
# after 15 s of quiet; 2 rounds
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
cd /mnt/ioaz/agent
mkdir -p /mnt/fs
python3 - <<PY
from pathlib import Path
from ioaz.learn import calfs
from ioaz.learn.grid import WorkSpec
from ioaz.learn.realcal import fio_jobfile, laid_out_files, region_bytes
w = WorkSpec.from_id('10p-seq-mixed-128k-t0-d1-g1_2-c-b-f-m256')
calfs._run([*calfs.MKFS, '/dev/$A'], 'mkfs', 600)
calfs._run(['mount', '-t', 'ext4', '/dev/$A', '/mnt/fs'], 'mount', 60)
print(calfs.lay_out(Path('/mnt/fs'), laid_out_files(w), region_bytes(10**11, w.span_gb)))
open('/tmp/cal.fio', 'w').write(fio_jobfile(w, '/dev/$A', 100 * 10**9, 40, '/mnt/fs'))
PY
mount | grep /mnt/fs
run() {  # sched arm round
  echo $1 > /sys/block/$A/queue/scheduler
  if [ $1 = stream ]; then
    echo 599 > /sys/block/$A/queue/iosched/svc_min_us; echo 24916 > /sys/block/$A/queue/iosched/svc_max_us
    echo 878790440 > /sys/block/$A/queue/iosched/svc_full_sectors
  fi
  [ $2 = quiet ] && sleep 15
  n=$1.$2.$3
  grep " $A " /proc/diskstats > /mnt/results/$n.before
  t0=$(date +%s.%N)
  fio --output-format=json --eta=never /tmp/cal.fio > /mnt/results/$n.json
  t1=$(date +%s.%N)
  grep " $A " /proc/diskstats > /mnt/results/$n.after
  echo "$t0 $t1" > /mnt/results/$n.time
}
for r in 0 1; do
  run stream b2b $r; run bfq b2b $r; run stream before-quiet $r; run bfq quiet $r
done
true
