# Why bfq leads the mix's last phase (4 sequential 128 KiB psync readers 1.2 GB apart: 54 MB/s
# against 26 for mq-deadline in the fifth testbed run) when the same readers alone tie, and
# gain nothing when ioazd switches to bfq in the middle of the phase: does bfq need to have
# served the mix's fast writer first? Each case starts from a scheduler just set (a fresh
# instance); three rounds, the cases' order reversed every other round. The last case asks
# whether a fixed bfq max_budget (65536 sectors, 32 MiB; 0 = autotuned from the measured peak
# rate) does alone what the writer does.
#   ioaz-lab testbed run --disks model:wd500 --path-credit-us 250 --results DIR -- bash /mnt/results/guest.sh
set -u
modprobe bfq
D=$(basename $(readlink -f /dev/disk/by-id/ata-QEMU_HARDDISK_IOAZ0000))
Q=/sys/block/$D/queue
mbs() { python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print(round((j["read"]["bw_bytes"]+j["write"]["bw_bytes"])/1e6, 1))'; }
readers() { fio --name=r --filename=/dev/$D --direct=1 --rw=read --bs=128k --ioengine=psync \
    --numjobs=4 --offset=1g --offset_increment=1200m --size=1g --runtime=15 --time_based \
    --group_reporting --output-format=json | mbs; }
writer() { fio --name=w --filename=/dev/$D --direct=1 --rw=write --bs=128k --ioengine=libaio \
    --iodepth=8 --offset=1g --size=1g --runtime=10 --time_based --output-format=json | mbs; }
fresh() { echo none > $Q/scheduler; echo "$1" > $Q/scheduler; echo 3 > /proc/sys/vm/drop_caches; }
case_run() {
    case $1 in
    bfq-alone) fresh bfq; echo "@@ round=$2 $1 readers $(readers)";;
    bfq-after-writer) fresh bfq; w=$(writer); echo "@@ round=$2 $1 writer $w readers $(readers)";;
    deadline-after-writer) fresh mq-deadline; w=$(writer); echo "@@ round=$2 $1 writer $w readers $(readers)";;
    bfq-switched-after-writer) fresh mq-deadline; w=$(writer); echo bfq > $Q/scheduler
        echo "@@ round=$2 $1 writer $w readers $(readers)";;
    bfq-alone-max-budget) fresh bfq; echo 65536 > $Q/iosched/max_budget
        echo "@@ round=$2 $1 readers $(readers)";;
    esac
}
CASES="bfq-alone bfq-after-writer deadline-after-writer bfq-switched-after-writer bfq-alone-max-budget"
for round in 1 2 3; do
    order=$CASES
    [ $((round % 2)) = 0 ] && order=$(echo $CASES | tr ' ' '\n' | tac | tr '\n' ' ')
    for c in $order; do case_run $c $round; done
done
fresh bfq; grep . $Q/iosched/* | sed 's|.*/||' | tr '\n' ' ' | sed 's/^/@@ bfq knobs: /'; echo
