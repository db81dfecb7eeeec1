#!/bin/bash
set -u
D=sda
R=/mnt/results
echo 1 > /sys/block/$D/device/queue_depth
DEVT=$(( ($(cut -d: -f1 /sys/block/$D/dev) << 20) | $(cut -d: -f2 /sys/block/$D/dev) ))
run() {  # name sched fio-args
  name=$1; sched=$2; shift 2
  echo $sched > /sys/block/$D/queue/scheduler
  sync; echo 3 > /proc/sys/vm/drop_caches
  rm -f $R/$name.ev.ready
  python3 $R/trace_turn.py $DEVT 40 $R/$name.ev > $R/$name.tracer.log 2>&1 &
  T=$!
  for i in $(seq 1 240); do [ -e $R/$name.ev.ready ] && break; sleep 1; done
  echo "@@ $name tracer ready after ${i}s sched $(cat /sys/block/$D/queue/scheduler)"
  fio --name=$name --filename=/dev/$D --direct=1 --time_based --runtime=8 "$@" \
      --output-format=json > $R/$name.json
  kill -INT $T 2>/dev/null; wait $T
  echo "@@ $name done $(wc -l < $R/$name.ev) events"
}
run one4k-none none --rw=read --bs=4k --ioengine=psync --offset=10g --size=1g
run one4k-dl mq-deadline --rw=read --bs=4k --ioengine=psync --offset=10g --size=1g
run par4k-dl mq-deadline --rw=read --bs=4k --ioengine=psync --numjobs=4 --offset=10g --offset_increment=50g --size=1g
run one128k-dl mq-deadline --rw=read --bs=128k --ioengine=psync --offset=1g --size=1g
run seq4-dl mq-deadline --rw=read --bs=128k --ioengine=psync --numjobs=4 --offset=1g --offset_increment=1200m --size=1g
