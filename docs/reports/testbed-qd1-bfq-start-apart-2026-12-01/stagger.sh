#!/bin/sh
# Four sequential 128 KiB O_DIRECT readers at drive depth 1, as the kernel calibration's
# 4p-seq-read-128k-t0-d1-g1_2 runs them (files 1.2 GB apart from 1 GB), started together
# or 300 ms apart (more than bfq's 180 ms burst interval), under bfq and mq-deadline set
# before the readers start. Rounds alternate the order.
set -e
D=$(readlink -f /dev/disk/by-id/ata-QEMU_HARDDISK_IOAZ0000)
N=$(basename "$D")
echo 1 > /sys/block/$N/device/queue_depth
echo "disk $D depth $(cat /sys/block/$N/device/queue_depth) $(uname -r)"
run() {  # sched start round
  echo "$1" > /sys/block/$N/queue/scheduler
  sync; echo 3 > /proc/sys/vm/drop_caches
  J=/tmp/j.fio
  printf '[global]\nfilename=%s\ndirect=1\nrw=read\nbs=128k\nioengine=psync\nruntime=30\ntime_based=1\nsize=1000000000\n' "$D" > $J
  for i in 0 1 2 3; do
    off=$(( (1000 + 1200 * i) * 1000000 / 1048576 * 1048576 ))
    d=0; [ "$2" = apart ] && d=$(( 300 * i ))
    printf '[p%s]\noffset=%s\nstartdelay=%sms\n' $i $off $d >> $J
  done
  bw=$(fio --output-format=json $J | python3 -c 'import json,sys; r=json.load(sys.stdin); print(" ".join("%.1f" % (j["read"]["bw_bytes"]/1e6) for j in r["jobs"]), "total %.1f" % (sum(j["read"]["bw_bytes"] for j in r["jobs"])/1e6))')
  echo "RESULT $1 $2 round $3: $bw MB/s"
}
for r in 0 1; do
  if [ $r = 0 ]; then order="bfq:together bfq:apart mq-deadline:together mq-deadline:apart"
  else order="mq-deadline:apart mq-deadline:together bfq:apart bfq:together"; fi
  for c in $order; do run "${c%%:*}" "${c##*:}" $r; done
done
