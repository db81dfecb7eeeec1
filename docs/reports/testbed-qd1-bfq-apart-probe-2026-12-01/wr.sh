#!/bin/sh
# Four sequential 128 KiB O_DIRECT readers at drive depth 1 started 300 ms apart under bfq,
# with bfq's low_latency on (its default) and off: the disk's MB/s each second for 30 s.
# Rounds alternate the order.
set -e
D=$(readlink -f /dev/disk/by-id/ata-QEMU_HARDDISK_IOAZ0000)
N=$(basename "$D")
echo 1 > /sys/block/$N/device/queue_depth
echo "disk $D depth $(cat /sys/block/$N/device/queue_depth) $(uname -r)"
run() {  # sched low_latency round
  echo "$1" > /sys/block/$N/queue/scheduler
  [ "$1" = bfq ] && echo "$2" > /sys/block/$N/queue/iosched/low_latency
  sync; echo 3 > /proc/sys/vm/drop_caches
  J=/tmp/j.fio
  printf '[global]\nfilename=%s\ndirect=1\nrw=read\nbs=128k\nioengine=psync\nruntime=30\ntime_based=1\nsize=1000000000\n' "$D" > $J
  for i in 0 1 2 3; do
    off=$(( (1000 + 1200 * i) * 1000000 / 1048576 * 1048576 ))
    printf '[p%s]\noffset=%s\nstartdelay=%sms\n' $i $off $(( 300 * i )) >> $J
  done
  fio --output-format=json $J > /tmp/out.json &
  F=$!
  prev=$(awk '{print $3}' /sys/block/$N/stat)
  line=""
  for s in $(seq 1 31); do
    sleep 1
    cur=$(awk '{print $3}' /sys/block/$N/stat)
    line="$line $(( (cur - prev) * 512 / 1000000 ))"
    prev=$cur
  done
  wait $F
  echo "RESULT $1 low_latency=$2 round $3 MB/s per second:$line"
}
for r in 0 1; do
  if [ $r = 0 ]; then order="bfq:1 bfq:0 mq-deadline:-"; else order="mq-deadline:- bfq:0 bfq:1"; fi
  for c in $order; do run "${c%%:*}" "${c##*:}" $r; done
done
