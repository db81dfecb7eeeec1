# sysbench fileio seqrd (the bench's workload: 4 threads, 16 files, 2 GiB) under the static
# candidates, with stream's counters; wd500 at depth 1, ext4 on the whole disk
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
D=$(disk_by_serial 0)
set_queue $D 1 mq-deadline
grep debugfs /proc/mounts || mount -t debugfs none /sys/kernel/debug
mkfs.ext4 -q -F -T largefile -E lazy_itable_init=0,lazy_journal_init=0 /dev/$D
mkdir -p /mnt/fs && mount -o noatime /dev/$D /mnt/fs && mkdir -p /mnt/fs/sb && cd /mnt/fs/sb
SB="sysbench fileio --file-num=16 --file-total-size=2G --threads=4 --time=${RT:-40} --file-fsync-freq=0 --percentile=99"
$SB prepare > /dev/null && sync
OUT=/mnt/results
C="kyber stream stream-noidle vr mq-deadline bfq"
n=0
for rep in 0 1 2; do
  set -- $C
  # rotate by rep, reversed every other rep
  list=$(for i in $(seq 0 5); do k=$(( (i + rep*2) % 6 )); eval echo \${$((k+1))}; done)
  [ $((rep % 2)) = 1 ] && list=$(echo $list | tr ' ' '\n' | tac)
  for c in $list; do
    s=${c%-noidle}
    echo $s > /sys/block/$D/queue/scheduler
    [ "$c" = stream-noidle ] && echo 0 > /sys/block/$D/queue/iosched/stream_idle
    sync; echo 3 > /proc/sys/vm/drop_caches; sleep 1
    $SB --file-test-mode=seqrd run > $OUT/$c.$rep.out 2>&1
    for f in /sys/kernel/debug/block/$D/sched/*; do [ -f $f ] && echo "$(basename $f) $(cat $f 2>/dev/null | head -1)"; done > $OUT/$c.$rep.sched 2>/dev/null
    echo "$c $rep $(grep -E 'read, MiB/s' $OUT/$c.$rep.out) p99 $(grep 99th $OUT/$c.$rep.out)" | tee -a $OUT/summary.txt
    echo mq-deadline > /sys/block/$D/queue/scheduler
  done
done
