#!/bin/bash
# The guest side of blktests' scheduler tests with ioaz's elevators loaded (issue 18 item 6).
#
#   bash blktests_guest.sh SRC [TIMEOUT]
#
# SRC is a blktests tree the guest can read (linux-blktests/blktests, not part of this project);
# it is copied to /tmp/blktests, since blktests writes into its own directory. TIMEOUT, if given,
# is blktests' TIMEOUT (fio's --runtime in block/005, the switching time of block/047); empty
# keeps blktests' defaults (block/005 reads its whole size, block/047 switches for 30 s).
#
# With ioaz_sched.ko inserted and bfq and kyber loaded, queue/scheduler offers none, mq-deadline,
# kyber, bfq, fifo, vr and stream, and blktests switches among all it offers:
#   block/005 on the SATA disk (ata-QEMU_HARDDISK_IOAZ0000) and on null_blk's nullb0,
#   block/047 on the null_blk device it makes itself (nullb1).
# The function tracer counts each elevator's init during each test (what was switched in).
# Reports "@@ " lines; leaves blktests' results, the traced counts and dmesg under OUT.
set -u
SRC=${1:?usage: blktests_guest.sh SRC [TIMEOUT]}
TIMEOUT_S=${2:-}
OUT=${OUT:-/mnt/results}
B=/tmp/blktests
KO=/mnt/ioaz/kmod/build/$(uname -r)/ioaz_sched.ko

echo "@@ kernel $(uname -r)"
# Debian packages blktests would like that the image lacks (gawk, bsdextrautils for column),
# if the host put their .deb files in $DEBS: the root disk is a snapshot, nothing stays.
if [ -n "${DEBS:-}" ] && ls "$DEBS"/*.deb >/dev/null 2>&1; then
  # libraries first: gawk pre-depends on libsigsegv2
  dpkg -i "$DEBS"/lib*.deb > /tmp/dpkg.log 2>&1
  dpkg -i "$DEBS"/*.deb >> /tmp/dpkg.log 2>&1 \
    && echo "@@ debs $(cd "$DEBS" && ls ./*.deb | tr '\n' ' ')"
fi
missing=""
for c in bash gawk column dd blockdev fio udevadm getconf modprobe diff; do
  command -v "$c" >/dev/null 2>&1 || missing="$missing $c"
done
echo "@@ missing${missing:- none}"

insmod "$KO" && echo "@@ insmod ok" || { echo "@@ insmod failed"; exit 1; }
modprobe bfq; modprobe kyber-iosched
modprobe null_blk nr_devices=1 && udevadm settle
D=$(basename "$(readlink -f /dev/disk/by-id/ata-QEMU_HARDDISK_IOAZ0000)")
echo "@@ disk $D rotational=$(cat /sys/block/$D/queue/rotational)"
echo "@@ offered_$D $(tr -d '[]' < /sys/block/$D/queue/scheduler)"
echo "@@ offered_nullb0 $(tr -d '[]' < /sys/block/nullb0/queue/scheduler)"

rm -rf "$B" && cp -a "$SRC" "$B" && rm -rf "$B/results" || exit 1
config() {   # blktests' config: the test devices given, and TIMEOUT if set
  echo "TEST_DEVS=($*)" > "$B/config"
  [ -n "$TIMEOUT_S" ] && echo "TIMEOUT=$TIMEOUT_S" >> "$B/config"
}

# What was switched in, exactly: the function tracer on each elevator's init (and ioaz's exits),
# counted per check invocation. "none" has no init; elevator_disable is its switch.
T=/sys/kernel/tracing
FUNCS="fifo_init_sched vr_init_sched stream_init_sched dd_init_sched kyber_init_sched
       bfq_init_queue elevator_disable fifo_exit_sched vr_exit_sched stream_exit_sched"
mountpoint -q $T || mount -t tracefs none $T
trace_start() {
  echo 0 > $T/tracing_on; echo nop > $T/current_tracer; : > $T/set_ftrace_filter
  for f in $FUNCS; do echo "$f" >> $T/set_ftrace_filter 2>/dev/null || echo "@@ untraceable $f"; done
  echo 8192 > $T/buffer_size_kb; echo function > $T/current_tracer; : > $T/trace
  echo 1 > $T/tracing_on
}
trace_stop() {   # "test function count" lines, and the buffer's written/kept entries
  echo 0 > $T/tracing_on
  grep -m1 'entries-in-buffer' $T/trace | sed "s|^#|$1 buffer|" >> /tmp/sched_counts
  grep -oE ': [a-z_]+ <-' $T/trace | awk -v t="$1" '{n[$2]++} END {for (f in n) print t, f, n[f]}' \
    | sort >> /tmp/sched_counts
  echo nop > $T/current_tracer
}
cd "$B" || exit 1
run_check() {   # a check invocation, traced: its console output, exit status and run time
  local t0=$SECONDS rc name=${1//\//_}
  trace_start
  ./check "$@" > "/tmp/check-$name.log" 2>&1
  rc=$?
  trace_stop "$name"
  echo "@@ check_rc_$name $rc $((SECONDS - t0))"
}
config "/dev/$D" /dev/nullb0
run_check block/005
cp "$B/config" /tmp/config-005
modprobe -r null_blk        # block/047 makes its own null_blk device (check wants every TEST_DEV)
config "/dev/$D"
run_check block/047

# blktests' verdict per test and device: results/<dev>/block/NNN holds "key<TAB>value" lines.
for f in results/*/block/[0-9][0-9][0-9]; do
  dev=$(basename "$(dirname "$(dirname "$f")")")
  st=$(awk -F'\t' '$1=="status"{print $2}' "$f")
  rt=$(awk -F'\t' '$1=="runtime"{print $2}' "$f")
  rs=$(awk -F'\t' '$1=="reason"{print $2}' "$f")
  echo "@@ result $(basename "$f") $dev ${st// /_} ${rt:-none} ${rs:-none}"
done
echo "@@ active_now $D $(cat /sys/block/$D/queue/scheduler)"
while read -r line; do echo "@@ traced $line"; done < /tmp/sched_counts

# ioaz's elevators unregister once no queue uses them.
if rmmod ioaz_sched; then echo "@@ rmmod ok"; else echo "@@ rmmod failed"; fi

mkdir -p "$OUT/blktests-results"
cp -a results/. "$OUT/blktests-results/"
cp /tmp/check-*.log /tmp/sched_counts /tmp/config-005 "$OUT/blktests-results/"
cp "$B/config" "$OUT/blktests-results/config-047"
dmesg > "$OUT/dmesg.txt"
bad=$(grep -c -e 'BUG:' -e 'WARNING:' -e 'Oops:' -e 'Call Trace:' -e 'hung' -e 'blocked for' \
      "$OUT/dmesg.txt")
echo "@@ dmesg_bad $bad"
exit 0
