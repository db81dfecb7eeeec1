#!/bin/sh
# Four sequential 128 KiB O_DIRECT readers at drive depth 1, started 300 ms apart, under
# bfq, with no probe, or ioaz's probe (every request counted) attached and read every
# 0.5 s or only every 60 s (ioazctl observe --interval): which of the probe's two costs,
# its BPF programs at each request or its Python reading them, keeps bfq from its high
# level. The disk's MB/s each second from fio's bandwidth log; 36 s each; the arms' order
# rotates each round. The probe starts 15 s before the readers.
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
    python3 -m ioaz.cli.ioazctl observe --device $N --interval $6 --sample 1 --json > /tmp/obs.out 2>&1 &
    P=$!
  fi
  # every arm waits the same 15 s, so the probe's start (Python's imports, the BPF programs'
  # load and attach under TCG) is over before the readers start
  sleep 15
  [ -n "$P" ] && echo "probe: $(wc -l < /tmp/obs.out) lines before the readers start"
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
  echo "RESULT $1 ll=$2 $3 $4 interval=$6 round $5: total $tot MB/s; per second: $per"
}
for r in 0 1 2 3; do
  case $r in
    0) order="bfq:1:apart:none:- bfq:1:apart:probe:60 bfq:1:apart:probe:0.5" ;;
    1) order="bfq:1:apart:probe:60 bfq:1:apart:probe:0.5 bfq:1:apart:none:-" ;;
    2) order="bfq:1:apart:probe:0.5 bfq:1:apart:none:- bfq:1:apart:probe:60" ;;
    3) order="bfq:1:apart:probe:0.5 bfq:1:apart:probe:60 bfq:1:apart:none:-" ;;
  esac
  for c in $order; do
    IFS=: read s l st p f <<X
$c
X
    run $s $l $st $p $r $f
  done
done
