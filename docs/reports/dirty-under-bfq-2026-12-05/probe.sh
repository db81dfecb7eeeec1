source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 bfq
mount -t debugfs none /sys/kernel/debug 2>/dev/null
MM=$(cat /sys/block/$A/dev)
sample() { # label seconds
  for i in $(seq 1 $2); do
    d=$(awk '/^Dirty:/{print $2}' /proc/meminfo); w=$(awk '/^Writeback:/{print $2}' /proc/meminfo)
    b=$(tr '\n' ' ' < /sys/kernel/debug/bdi/$MM/stats 2>/dev/null | sed 's/  */ /g' | cut -c1-120)
    echo "$1 t=$i dirty_kb=$d writeback_kb=$w bdi: $b"; sleep 1
  done
}
job() { # readers writers
  args=""
  for i in $(seq 0 $(( $1 - 1 ))); do args="$args --name=r$i --rw=read --offset=$(( (1 + i*2) * 1000 ))m --size=1000m --direct=0"; done
  for i in $(seq 0 $(( $2 - 1 ))); do args="$args --name=w$i --rw=write --offset=$(( (2 + i*2) * 1000 ))m --size=1000m --direct=0"; done
  fio --filename=/dev/$A --bs=128k --ioengine=psync --time_based=1 --runtime=30 --invalidate=1 $args --output=/mnt/results/fio-$1-$2.txt &
}
echo 3 > /proc/sys/vm/drop_caches
job 5 5; sleep 2; sample mix 25; wait; sync; sleep 3
echo 3 > /proc/sys/vm/drop_caches
job 5 0; sleep 2; sample readers 25; wait
grep -E "READ:|WRITE:" /mnt/results/fio-*.txt
