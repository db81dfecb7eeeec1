# 4 sequential 128 KiB psync readers on 1 GB files 1.2 GB apart (the calibration's
# 4p-seq-read-128k-t0-d1-g1_2 and the bench mix's seq-read-4), under bfq and mq-deadline,
# runs of 4 s and of 15 s, alternated, two rounds
set -u
modprobe bfq
D=$(basename $(readlink -f /dev/disk/by-id/ata-QEMU_HARDDISK_IOAZ0000))
Q=/sys/block/$D/queue
for round in 1 2; do
  for len in 4 15; do
    for s in bfq mq-deadline; do
      echo $s > $Q/scheduler
      echo 3 > /proc/sys/vm/drop_caches
      mb=$(fio --name=r --filename=/dev/$D --direct=1 --rw=read --bs=128k --ioengine=psync \
           --numjobs=4 --offset=1g --offset_increment=1200m --size=1g --runtime=$len \
           --time_based --group_reporting --output-format=json |
           python3 -c 'import json,sys; print(round(json.load(sys.stdin)["jobs"][0]["read"]["bw_bytes"]/1e6, 1))')
      echo "@@ round=$round len=$len $s $mb"
    done
  done
done
