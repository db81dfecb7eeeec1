# one sequential writer (128 KiB, O_DIRECT, depth 1) on the raw wd500 at depth 1: three 8 s runs
# on a place never written, then three on another, each run starting where the last started
# (its second and third overwrite what the first wrote); then one reader the same way on what
# was written, and on a place never written
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
D=$(disk_by_serial 0)
set_queue $D 1 mq-deadline
OUT=/mnt/results
run() {  # run NAME RW OFFSET
  fio --name=$1 --filename=/dev/$D --rw=$2 --bs=128k --direct=1 --ioengine=psync \
      --offset=$3 --size=8G --runtime=8 --time_based=0 --output-format=json > $OUT/$1.json
  python3 -c "import json,sys; j=json.load(open('$OUT/$1.json'))['jobs'][0]; k='$2'.replace('write','write') ; s=j['write' if 'write' in k else 'read']; print('$1', round(s['bw_bytes']/1e6,2), 'MB/s')" | tee -a $OUT/summary.txt
}
for place in 20 120; do
  for rep in 0 1 2; do run w-${place}g-$rep write ${place}G; done
done
for rep in 0 1; do run r-20g-$rep read 20G; done
for rep in 0 1; do run r-300g-$rep read 300G; done
