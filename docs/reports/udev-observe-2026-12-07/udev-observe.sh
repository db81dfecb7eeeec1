# ioazd's side of udev's worker (e662fa2): `ioazctl observe` on the raw disk while one fio
# writer (128 KiB, sequential, O_DIRECT, 8 deep) runs 14 s, udev's watch on as shipped;
# the same with the code before (udev's worker may become a member), 3 rounds each, alternated
set -x
source /mnt/ioaz/agent/ioaz/testbed/guest/lib.sh
load_elevators
A=$(disk_by_serial 0)
set_queue $A 1 mq-deadline
# the code before: a copy of the checkout (its agent, data files and built probe) with the
# one change taken out
rm -rf /tmp/old && mkdir /tmp/old && cp -r /mnt/ioaz/agent /mnt/ioaz/decision_matrices /mnt/ioaz/bpf /tmp/old/
sed -i 's/ or udev_worker(tid)//' /tmp/old/agent/ioaz/observe.py
grep -c "udev_worker(tid)" /mnt/ioaz/agent/ioaz/observe.py /tmp/old/agent/ioaz/observe.py
for round in 1 2 3; do
  for code in new old; do
    dir=/mnt/ioaz/agent; [ $code = old ] && dir=/tmp/old/agent
    (cd $dir && python3 -m ioaz.cli.ioazctl observe -d $A --json --count 26 --sample 1 \
        > /mnt/results/obs-$code-$round.jsonl 2>/mnt/results/obs-$code-$round.err) &
    obs=$!
    sleep 4
    fio --name=w --filename=/dev/$A --rw=write --bs=128k --direct=1 --ioengine=libaio \
        --iodepth=8 --runtime=14 --time_based --offset=1g --output=/dev/null
    wait $obs
    python3 -c "
import json, sys
rows = [json.loads(l) for l in open('/mnt/results/obs-$code-$round.jsonl')]
print('$code $round', ' '.join(str(r.get('class_processes')) for r in rows))
print('$code $round', ' '.join(str(r.get('processes')) for r in rows))"
    sleep 12
  done
done
