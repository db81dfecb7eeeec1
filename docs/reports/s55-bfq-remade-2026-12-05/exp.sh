# S "5 5 seq" on ext4 under bfq from the start, or under another scheduler for the first
# 8 s and then bfq: does the early period leave a lasting mark under bfq?
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
echo 0 > /sys/block/$A/queue/wbt_lat_usec
mkfs.ext4 -q -F /dev/$A && mkdir -p /mnt/fs && mount /dev/$A /mnt/fs && mkdir -p /mnt/fs/s
for i in 0 1 2 3 4; do dd if=/dev/urandom of=/mnt/fs/s/r.$i bs=1M count=256 status=none; done; sync
RT=${RT:-90}
run() {  # run NAME FIRST_SCHED SWITCH_AT
    name=$1; first=$2; at=$3
    rm -f /mnt/fs/s/w.*; sync; echo 3 > /proc/sys/vm/drop_caches
    echo $first > /sys/block/$A/queue/scheduler
    ( for s in $(seq 0 $((RT+2))); do echo "$(date +%s.%N) $(grep " $A " /proc/diskstats)"; sleep 1; done ) > /mnt/results/$name.stat &
    sp=$!
    [ $at -lt $RT ] && ( sleep $at; echo mq-deadline > /sys/block/$A/queue/scheduler; echo bfq > /sys/block/$A/queue/scheduler; echo "switched $(date +%s.%N)" ) > /mnt/results/$name.switch &
    fio --output-format=json --eta=never --directory=/mnt/fs/s --direct=0 --time_based --norandommap --randrepeat=0 --group_reporting --fallocate=none --create_on_open=0 --allow_file_create=0 \
      --name=r --rw=read --bs=128k --ioengine=psync --numjobs=5 --filename_format='r.$jobnum' --size=256m --runtime=$RT \
      --name=w --new_group --rw=write --bs=128k --ioengine=psync --numjobs=5 --filename_format='w.$jobnum' --size=256m --allow_file_create=1 --runtime=$RT > /mnt/results/$name.json
    wait $sp
    cat /sys/block/$A/queue/scheduler
}
for r in 0 1; do
  if [ $r = 0 ]; then order="bfq mq-deadline stream bfqbfq"; else order="bfqbfq stream mq-deadline bfq"; fi
  for v in $order; do
    case $v in
      bfq) run $v.$r bfq 100000 ;;         # never switched
      bfqbfq) run $v.$r bfq 8 ;;           # bfq, re-made at 8 s (through mq-deadline for an instant)
      *) run $v.$r $v 8 ;;                 # $v for 8 s, then bfq
    esac
  done
done
