#!/bin/sh
# Four sequential 128 KiB O_DIRECT readers at drive depth 1 under bfq (and mq-deadline),
# started together or 300 ms apart, bfq's low_latency on (default) or off, with or without
# ioaz's probe watching at 0.5 s (ioazctl observe: the calibration's observer): the
# disk's MB/s each second from fio's own bandwidth log (no process spawned while it runs).
# 36 s each; rounds alternate the order.
set -e
D=$(readlink -f /dev/disk/by-id/ata-QEMU_HARDDISK_IOAZ0000)
N=$(basename "$D")
echo 1 > /sys/block/$N/device/queue_depth
echo "disk $D depth $(cat /sys/block/$N/device/queue_depth) $(uname -r)"
cd /mnt/ioaz/agent
run() {  # sched low_latency start probe round
  echo "$1" > /sys/block/$N/queue/scheduler
  [ "$1" = bfq ] && echo "$2" > /sys/block/$N/queue/iosched/low_latency
  sync; echo 3 > /proc/sys/vm/drop_caches
  J=/tmp/j.fio
  rm -f /tmp/bw*.log
  printf '[global]\nfilename=%s\ndirect=1\nrw=read\nbs=128k\nioengine=psync\nruntime=36\ntime_based=1\nsize=1000000000\nwrite_bw_log=/tmp/bw\nlog_avg_msec=1000\n' "$D" > $J
  for i in 0 1 2 3; do
    off=$(( (1000 + 1200 * i) * 1000000 / 1048576 * 1048576 ))
    d=0; [ "$3" = apart ] && d=$(( 300 * i ))
    printf '[p%s]\noffset=%s\nstartdelay=%sms\n' $i $off $d >> $J
  done
  P=""
  if [ "$4" = probe ]; then
    python3 -m ioaz.cli.ioazctl observe --device $N --interval 0.5 --json > /dev/null 2>&1 &
    P=$!
    sleep 3
  fi
  tot=$(fio --output-format=json $J | python3 -c 'import json,sys; r=json.load(sys.stdin); print("%.1f" % (sum(j["read"]["bw_bytes"] for j in r["jobs"])/1e6))')
  [ -n "$P" ] && kill $P
  per=$(python3 - <<'PY'
import glob, collections
s = collections.Counter()
for f in glob.glob("/tmp/bw_bw.*.log"):
    for line in open(f):
        t, kib = line.split(",")[:2]
        s[round(int(t) / 1000)] += int(kib)
print(" ".join(str(round(s[k] * 1024 / 1e6)) for k in sorted(s)))
PY
)
  echo "RESULT $1 ll=$2 $3 $4 round $5: total $tot MB/s; per second: $per"
}
for r in 0 1; do
  if [ $r = 0 ]; then
    order="bfq:1:apart:none bfq:1:apart:probe bfq:0:apart:probe bfq:1:together:probe mq-deadline:-:apart:probe"
  else
    order="mq-deadline:-:apart:probe bfq:1:together:probe bfq:0:apart:probe bfq:1:apart:probe bfq:1:apart:none"
  fi
  for c in $order; do
    IFS=: read s l st p <<X
$c
X
    run $s $l $st $p $r
  done
done
