D=$(basename $(readlink -f /dev/disk/by-id/ata-QEMU_HARDDISK_IOAZ0000))
mkdir -p /run/pb
cat > /run/pb/cfg.yaml <<Y
window_s: 1.0
probe: bpf
devices: {include: ["sd*"], exclude: []}
state_dir: /run/pb
socket: /run/pb/ioaz.sock
metrics: {listen: null}
thresholds: /mnt/ioaz/decision_matrices/thresholds.yaml
dry_run: true
decide: {matrix_dir: /mnt/ioaz/decision_matrices}
Y
sed "s/window_s: 1.0/window_s: 20.0\nprobe_sample: 1/" /run/pb/cfg.yaml > /run/pb/cfg20.yaml
export PYTHONDONTWRITEBYTECODE=1
R=/mnt/results
run() {  # $1 contender $2 round
  P=""
  case $1 in
    probe) (cd /mnt/ioaz/agent && exec python3 -m ioaz.daemon.main --config /run/pb/cfg20.yaml) 2> $R/ioazd.$1.$2.log & P=$!;;
    new) (cd /mnt/ioaz/agent && exec python3 -m ioaz.daemon.main --config /run/pb/cfg.yaml) 2> $R/ioazd.$1.$2.log & P=$!;;
  esac
  if [ -n "$P" ]; then for i in $(seq 90); do grep -q '"event": "start"' $R/ioazd.$1.$2.log && break; sleep 1; done; sleep 2; T0=$(awk '{print $14+$15}' /proc/$P/stat); fi
  sync; echo 3 > /proc/sys/vm/drop_caches
  fio --name=pr --filename=/dev/$D --direct=1 --rw=read --bs=4k --ioengine=psync --numjobs=4 --offset=10g --offset_increment=50g --size=1g --time_based --runtime=20 --group_reporting --output-format=json > $R/fio.$1.$2.json
  T=0; if [ -n "$P" ]; then T1=$(awk '{print $14+$15}' /proc/$P/stat); T=$((T1-T0)); kill $P; wait $P; fi
  BW=$(python3 -c "import json,sys; print(json.load(open('$R/fio.$1.$2.json'))['jobs'][0]['read']['bw'])")
  echo "$2 $1 kBps=$BW daemon_ticks=$T" | tee -a $R/res.txt
}
for round in 1 2 3 4 5 6; do
  if [ $((round % 2)) = 1 ]; then order="none probe new"; else order="new probe none"; fi
  for c in $order; do run $c $round; done
done
