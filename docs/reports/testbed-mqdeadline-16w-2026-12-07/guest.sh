#!/bin/bash
# The writers of phases-contrast's second phase alone (16 sequential 128 KiB writers, libaio 8
# deep, 1.2 GB apart, O_DIRECT) on the bench's raw wd500 disk at queue depth 1, mq-deadline
# switched in under several histories; each writer's bandwidth a second (fio's logs) in
# /mnt/results/RUN/. The five experiments ran as five boots, in this order:
#   ioaz-lab testbed run --disks model:wd500,model:wd500 --path-credit-us 350 \
#     --results DIR -- 'bash /mnt/results/guest.sh N'      (N = 1..5; experiment 5 also
#     needs ioazd-dry.json in DIR). summary.py DIR prints what summary.txt holds.
# Experiment 1 ran 40 s runs with the switch written as a list (dl2dl: none, then mq-deadline);
# 2-5 ran 30 s runs and reset max_sectors_kb to the kernel's 1280 before each.
set -x
N=$1
insmod /mnt/ioaz/kmod/build/$(uname -r)/ioaz_sched.ko 2>/dev/null; modprobe -q -a bfq kyber-iosched
udevadm settle
D=$(readlink -f /dev/disk/by-id/ata-QEMU_HARDDISK_IOAZ0000 | xargs basename)
echo 1 > /sys/block/$D/device/queue_depth
cat /sys/block/$D/queue/scheduler /sys/block/$D/queue/nr_requests /sys/block/$D/queue/max_sectors_kb
RT=$([ "$N" = 1 ] && echo 40 || echo 30)
cat > /tmp/w.fio <<J
[global]
filename=/dev/$D
direct=1
time_based
runtime=$RT
rw=write
bs=128k
ioengine=libaio
iodepth=8
numjobs=16
offset=1g
offset_increment=1200m
size=1g
log_avg_msec=1000
[w]
J
# run NAME FIRST THEN AT_S [ioazd|split] [busy]: FIRST set 2 s before fio; THEN (a comma
# list, or -) written AT_S into the run; ioazd: ioazd's writes after the switch (its expiry
# at twice a p99 of 530 ms, the kernel's writeback throttling); split: max_sectors_kb 512
# after it; busy: a shell loop holding a vCPU through the run
run() {
  [ "$N" != 1 ] && echo 1280 > /sys/block/$D/queue/max_sectors_kb
  echo $2 > /sys/block/$D/queue/scheduler
  sleep 2
  mkdir -p /mnt/results/$1 && cd /mnt/results/$1
  if [ "$6" = busy ]; then (timeout 33 sh -c 'while :; do :; done') & fi
  fio /tmp/w.fio --write_bw_log=bw --output-format=json --output=fio.json &
  F=$!
  if [ "$3" != "-" ]; then sleep $4
    for s in ${3//,/ }; do echo $s > /sys/block/$D/queue/scheduler; done
    if [ "$5" = split ]; then echo 512 > /sys/block/$D/queue/max_sectors_kb; fi
    if [ "$5" = ioazd ]; then echo 1060 > /sys/block/$D/queue/iosched/read_expire
      echo 10600 > /sys/block/$D/queue/iosched/write_expire; echo -1 > /sys/block/$D/queue/wbt_lat_usec; fi
    cat /sys/block/$D/queue/scheduler > switch.txt; fi
  (for i in $(seq $RT); do cat /sys/block/$D/inflight; sleep 1; done) > inflight.txt &
  wait $F
  cd /
}
case $N in
1) for r in 0 1; do
     run dl-$r mq-deadline - 0
     run st2dl-$r stream mq-deadline 10
     run dl2dl-$r mq-deadline none,mq-deadline 10
     run bfq2dl-$r bfq mq-deadline 10
   done ;;
2) for r in 0 1 2 3 4; do
     run plain-$r stream mq-deadline 3.5
     run ioazd-$r stream mq-deadline 3.5 ioazd
   done ;;
3) for r in 0 1 2 3; do
     run busy-$r stream mq-deadline 3.5 ioazd busy
     run idle-$r stream mq-deadline 3.5 ioazd
   done ;;
4) for r in 0 1 2; do
     run none2dl-$r none mq-deadline 3.5
     run none2dlsplit-$r none mq-deadline 3.5 split
   done
   run st2dl-0 stream mq-deadline 3.5
   run st2dlsplit-0 stream mq-deadline 3.5 split ;;
5) mkdir -p /run/ioazd-dry   # ioazd observing (dry run) through every other run
   for r in 0 1 2 3; do
     (cd /mnt/ioaz/agent && PYTHONPATH=/mnt/ioaz/agent exec python3 -m ioaz.daemon.main \
        --config /mnt/results/ioazd-dry.json > /mnt/results/ioazd-$r.log 2>&1) &
     IO=$!
     sleep 25
     run probe-$r stream mq-deadline 3.5
     kill $IO; wait $IO
     run noprobe-$r stream mq-deadline 3.5
   done ;;
esac
