#!/bin/bash
# Diagnostic: sysbench fileio rndrw on the file-system disk under mq-deadline with writeback
# throttling as the kernel sets it, mq-deadline with it off, and bfq (which turns it off).
set -u
R=/mnt/results
FSD=$(readlink -f /dev/disk/by-id/ata-QEMU_HARDDISK_IOAZ0001 | xargs basename)
RAWD=$(readlink -f /dev/disk/by-id/ata-QEMU_HARDDISK_IOAZ0000 | xargs basename)
modprobe -q -a bfq kyber-iosched
for d in $FSD $RAWD; do echo 1 > /sys/block/$d/device/queue_depth; done
echo "fs=$FSD raw=$RAWD kernel=$(uname -r)"
for s in mq-deadline bfq mq-deadline; do echo $s > /sys/block/$FSD/queue/scheduler; echo "$s wbt_lat_usec=$(cat /sys/block/$FSD/queue/wbt_lat_usec)"; done
mkfs.ext4 -q -F -T largefile -E lazy_itable_init=0,lazy_journal_init=0 /dev/$FSD
mkdir -p /mnt/fs && mount -o noatime /dev/$FSD /mnt/fs
mkdir -p /mnt/fs/sb && cd /mnt/fs/sb
SB="sysbench fileio --file-num=16 --file-total-size=2G --threads=4 --time=120 --file-fsync-freq=0 --percentile=99"
$SB prepare > /dev/null && sync
run() {  # name sched wbt
  sync; echo 3 > /proc/sys/vm/drop_caches; sync
  echo $2 > /sys/block/$FSD/queue/scheduler
  if [ "$3" != "-" ]; then echo $3 > /sys/block/$FSD/queue/wbt_lat_usec; fi
  echo "== $1 round $4: scheduler $(cat /sys/block/$FSD/queue/scheduler) wbt_lat_usec $(cat /sys/block/$FSD/queue/wbt_lat_usec)"
  s0=$(cat /sys/block/$FSD/stat)
  ( while sleep 10; do echo "t dirty $(grep -E '^(Dirty|Writeback):' /proc/meminfo | awk '{print $2}' | tr '\n' ' ')"; done ) &
  mon=$!
  $SB --file-test-mode=rndrw run > $R/$1.$4.out
  kill $mon; wait $mon 2>/dev/null
  s1=$(cat /sys/block/$FSD/stat)
  echo "stat before: $s0"; echo "stat after:  $s1"
  grep -E 'read, MiB/s|written, MiB/s|total time:|total number of events|99th' $R/$1.$4.out
  # put wbt back to the kernel's choice before the next run
  echo -1 > /sys/block/$FSD/queue/wbt_lat_usec 2>/dev/null || true
}
for r in 0 1; do
  if [ $r = 0 ]; then order="A B C"; else order="C B A"; fi
  for c in $order; do
    case $c in
      A) run mqd-wbt mq-deadline - $r;;
      B) run mqd-nowbt mq-deadline 0 $r;;
      C) run bfq bfq - $r;;
    esac
  done
done
