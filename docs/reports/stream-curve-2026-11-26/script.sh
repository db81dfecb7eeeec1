#!/bin/bash
# seq-read-4 under static stream, N times in one boot: per run the stream elevator's counters
# and each reader's own bandwidth (is the slow mode all readers, or some?)
set -u
D=sda
N=${N:-10}
mount -t debugfs none /sys/kernel/debug 2>/dev/null
insmod /mnt/ioaz/kmod/build/$(uname -r)/ioaz_sched.ko
echo 1 > /sys/block/$D/device/queue_depth
echo stream > /sys/block/$D/queue/scheduler
S=/sys/kernel/debug/block/$D/sched
echo "@@ sched $(cat /sys/block/$D/queue/scheduler) depth $(cat /sys/block/$D/device/queue_depth)"
for f in /sys/block/$D/queue/iosched/*; do echo "@@ knob ${f##*/} $(cat $f)"; done
ls $S > /mnt/results/debugfs_files.txt
counters() { for f in expired waits waits_paid waits_timeout waits_cut; do printf '%s=%s ' $f "$(cat $S/$f 2>/dev/null)"; done; }
I=/sys/block/$D/queue/iosched
arm() {   # default: the module's built-in curve; calibrated: decision_matrices/kernel qd1 curve
  if [ "$1" = default ]; then echo 100 > $I/svc_min_us; echo 12000 > $I/svc_max_us; echo 2147483648 > $I/svc_full_sectors
  else echo 1088 > $I/svc_min_us; echo 24921 > $I/svc_max_us; echo 878790440 > $I/svc_full_sectors; fi
}
for i in $(seq 1 $N); do
  if [ $((i % 2)) = 1 ]; then A=default; else A=calibrated; fi
  arm $A
  echo "@@ run $i arm $A knobs $(cat $I/svc_min_us) $(cat $I/svc_max_us) $(cat $I/svc_full_sectors)"
  sync; echo 3 > /proc/sys/vm/drop_caches
  b=$(counters)
  fio --name=r --filename=/dev/$D --direct=1 --time_based --runtime=15 --rw=read --bs=128k \
      --ioengine=psync --numjobs=4 --offset=1g --offset_increment=1200m --size=1g \
      --output-format=json > /mnt/results/run$i.json
  a=$(counters)
  echo "@@ run $i before $b"
  echo "@@ run $i after $a"
  python3 - "$i" <<'PY'
import json, sys
j = json.load(open(f"/mnt/results/run{sys.argv[1]}.json"))
bw = [round(x["read"]["bw_bytes"] / 1e6, 1) for x in j["jobs"]]
p99 = [round(x["read"]["clat_ns"]["percentile"]["99.000000"] / 1e6, 1) for x in j["jobs"]]
print(f"@@ run {sys.argv[1]} total {sum(bw):.1f} jobs {bw} p99ms {p99}")
PY
done
