#!/bin/bash
# Runs inside the testbed guest (ioaz-lab testbed run), as root, after multi-user.target.
# ioazd as an operator runs it: the .deb (`make deb` on the host) installed with apt, configured
# and started by deploy/ansible's role, systemd's unit, a SATA disk, a workload change, a reload
# by the role's handler, kill -9, and the package purged while the restarted ioazd is running
# with its choice in force (the purge's stop restores). "@@ KEY VALUE" lines are read by the host test;
# the daemon's journal goes to the results share.
set -u
D=${IOAZ_DISK:-sda}
Q=/sys/block/$D/queue
OUT=/mnt/results
mark() { echo "@@ $1 $2"; }
active() { sed 's/.*\[\(.*\)\].*/\1/' "$Q/scheduler"; }
settings() {   # every value ioaz may change on this disk, one per line
    echo "scheduler=$(active)"   # the line itself grows when ioazd's unit loads bfq and kyber
    for f in nr_requests read_ahead_kb; do echo "$f=$(cat "$Q/$f")"; done
    echo "queue_depth=$(cat /sys/block/$D/device/queue_depth)"
    for f in "$Q"/iosched/*; do [ -f "$f" ] && echo "iosched/${f##*/}=$(cat "$f")"; done
}
wait_for() {   # wait_for SECONDS COMMAND...: until COMMAND succeeds
    local end=$((SECONDS + $1)); shift
    until "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 0.5; done
}
is_active() { [ "$(active)" = "$1" ]; }
fio_bg() { fio --name=w --filename=/dev/$D --direct=1 --ioengine=psync --time_based \
               --runtime=30 --output=/dev/null "$@" & FIO=$!; }
fio_stop() { kill "$FIO" 2>/dev/null; wait "$FIO" 2>/dev/null; }

mark kernel "$(uname -r)"
mark system "$(systemctl is-system-running)"
mark multi_user "$(systemctl is-active multi-user.target)"
mark pid1 "$(ps -o comm= -p 1)"
mark rotational "$(cat $Q/rotational)"
mark queue_depth "$(cat /sys/block/$D/device/queue_depth)"
insmod "/mnt/ioaz/kmod/build/$(uname -r)/ioaz_sched.ko"
mark elevators "$(cat $Q/scheduler | tr -d '[]' | tr ' ' ,)"
ORIG=$(active)
mark original "$ORIG"
settings > /tmp/before

# apt, offline: every Depends is in the image; the Recommends (python3-sklearn) is not and is
# skipped, as on a server without the model classifier
INSTALL_AT=$SECONDS
apt-get install -y /mnt/ioaz/build/deb/ioaz_*_amd64.deb > /tmp/install.log 2>&1
mark install $?
mark install_s $((SECONDS - INSTALL_AT))
mark installed_enabled "$(systemctl is-enabled ioazd 2>&1)"
mark installed_active "$(systemctl is-active ioazd)"
mark group "$(getent group ioaz | cut -d: -f1)"
mark default_config "$(/usr/sbin/ioazd --check 2>&1 | tail -1)"
mark completion "$(ls /usr/share/bash-completion/completions/ | grep -c '^ioaz')"
mark man_pages "$(ls /usr/share/man/man8/ioazd.8.gz /usr/share/man/man8/ioazctl.8.gz \
    /usr/share/man/man5/ioaz.yaml.5.gz 2>/dev/null | wc -l)"
# The rest of the set-up is deploy/ansible's role, run by Debian's ansible on the guest itself:
# the settings below and IOAZ's table for the disk model udev reports (the guest's disks are
# QEMU_HARDDISK; the root disk is virtio, vda), enabled and started.
DEB=$(ls /mnt/ioaz/build/deb/ioaz_*_amd64.deb)
M=/usr/lib/ioaz/decision_matrices
printf '[storage]\nlocalhost ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n' > /tmp/inventory
role_vars() {   # role_vars HYSTERESIS_WINDOWS
    cat <<EOF
ioaz_deb: $DEB
ioaz_config:
  devices: {include: ["udev:ID_MODEL=QEMU_HARDDISK*"], exclude: []}
  probe: bpf
  metrics: {listen: "0.0.0.0:19647"}
  decide: {hysteresis_windows: $1, min_dwell_s: 3, cooldown_s: 1}
ioaz_model_matrices:   # the goal in force only: each file is a few module runs, slow under TCG
  - udev: {ID_MODEL: "QEMU_HARDDISK*"}
    matrices: {mean: $M/ioaz-table3-mean.yaml}
EOF
}
play() {   # play VARS_FILE LOG: the role; its exit status and its recap's changed= count
    # pipelining: each task's module goes to python3 on its stdin, without the temporary files
    # and the three shells per task that cost seconds each under TCG
    ANSIBLE_NOCOLOR=1 ANSIBLE_PIPELINING=1 ansible-playbook -i /tmp/inventory -e "@$1" \
        /mnt/ioaz/deploy/ansible/site.yml > "$2" 2>&1
    local rc=$?
    echo "$rc $(sed -n 's/.*changed=\([0-9]*\).*/\1/p' "$2" | tail -1)"
}
role_vars 2 > /tmp/vars1.yml
mark udev_model "$(udevadm info --query=property --name=/dev/$D | sed -n 's/^ID_MODEL=//p')"
STARTING_AT=$SECONDS
mark role "$(play /tmp/vars1.yml "$OUT/role1.log")"
mark role_s $((SECONDS - STARTING_AT))
wait_for 120 systemctl -q is-active ioazd
mark start_s $((SECONDS - STARTING_AT))
mark started "$(systemctl is-active ioazd)"
mark enabled "$(systemctl is-enabled ioazd)"
mark role_rule "$(python3 -c 'import yaml; r = yaml.safe_load(open("/etc/ioaz/ioaz.yaml"))["decide"]["matrix_rules"][0]; print(r["match"]["udev"]["ID_MODEL"], r["matrices"]["mean"])')"
PID=$(systemctl show -p MainPID --value ioazd)

# One sequential reader, then eight random readers (IOAZ Table 3, goal mean: fcfs, then
# anticipatory, realised as none and bfq).
fio_bg --rw=read --bs=128k --numjobs=1
wait_for 20 is_active none
mark after_sequential "$(active)"
fio_stop
fio_bg --rw=randread --bs=4k --numjobs=8
wait_for 25 is_active bfq
mark after_random "$(active)"
/usr/bin/ioazctl explain $D > "$OUT/explain.txt" 2>&1
fio_stop
# A writer through the page cache: the daemon, in its unit's sandbox (ProtectKernelTunables
# leaves debugfs read-only, not hidden), reads the disk's dirty data (agent/ioaz/bdi.py)
# The most the daemon read while the writer ran: its last window's, or that of a switch it made
# since the writer started. The kernel's own count has been seen at 0 for a whole 20 s while the
# writer ran and the disk wrote 85 MB/s, after the daemon had read 0.5 at its switch (why the
# page cache held nothing dirty then is not known), so the last window alone can miss it.
dirty_fill() { /usr/bin/ioazctl --json explain $D | python3 -c '
import json, sys
e, since = json.load(sys.stdin), float(sys.argv[1])
seen = [(e.get("features") or {}).get("dirty_fill")]
seen += [(h.get("features") or {}).get("dirty_fill") for h in e.get("history") or []
         if h.get("time", 0) >= since]
seen = [v for v in seen if v is not None]
print(max(seen) if seen else None)' "$WRITER_START"; }
dirtied() { python3 -c 'import sys; v=sys.argv[1]; sys.exit(0 if v not in ("None", "") and float(v) > 0.05 else 1)' "$(dirty_fill)"; }
WRITER_START=$(date +%s.%N)
fio --name=b --filename=/dev/$D --rw=write --bs=1m --direct=0 --ioengine=psync --size=1g \
    --time_based --runtime=30 --output=/dev/null & FIO=$!
wait_for 20 dirtied
mark dirty_fill "$(dirty_fill)"
# what tells a miss's side: the kernel's own count for the disk (KiB), whether the writer still
# runs, and the age, reason and written bytes of the daemon's last window
mark dirty_kernel "$(awk '/^Bdi(Reclaimable|Writeback|DirtyThresh):/ {printf "%s%s ", $1, $2}' \
    /sys/kernel/debug/bdi/$(cat /sys/block/$D/dev)/stats 2>&1)"
mark dirty_writer "$(kill -0 $FIO 2>/dev/null && echo running || echo gone)"
/usr/bin/ioazctl --json explain $D > "$OUT/dirty_explain.json" 2>&1
mark dirty_window "$(python3 -c 'import json,sys; e = json.load(open(sys.argv[1])); f = e.get("features") or {}; print(e.get("decision_age_s"), e.get("last_reason"), f.get("write_bytes_per_s"))' "$OUT/dirty_explain.json" 2>&1 | tail -1)"
fio_stop
sync
mark probe_source "$(/usr/bin/ioazctl status --json | python3 -c \
    'import json,sys; print(json.load(sys.stdin).get("source"))')"

# The role again with one setting changed: only the file changes, and its handler reloads
# the running daemon. ExecReload only sends SIGHUP: the reload itself happens at the daemon's
# next window, which on a loaded emulated guest can be seconds away; wait for its journal entry.
# (The first run's handler reloaded the daemon it had just started: count from here.)
reloads() { journalctl -u ioazd -o cat --no-pager | grep -c '"event": "reload"'; }
RELOADS=$(reloads)
role_vars 3 > /tmp/vars2.yml
RELOAD_AT=$SECONDS
mark role_again "$(play /tmp/vars2.yml "$OUT/role2.log")"
mark role_again_s $((SECONDS - RELOAD_AT))
reloaded() { [ "$(reloads)" -gt "$RELOADS" ]; }
wait_for 60 reloaded
mark hysteresis "$(sed -n 's/^ *hysteresis_windows: //p' /etc/ioaz/ioaz.yaml)"
mark reload_s $((SECONDS - RELOAD_AT))
mark reloaded "$(systemctl is-active ioazd) $([ "$(systemctl show -p MainPID --value ioazd)" = "$PID" ] && echo same-pid || echo new-pid)"

kill -9 "$PID"
KILLED_AT=$SECONDS
restarted() { p=$(systemctl show -p MainPID --value ioazd); [ "$p" != 0 ] && [ "$p" != "$PID" ] &&
              systemctl -q is-active ioazd; }
# RestartSec=5, then a start under TCG (imports, BPF load, READY=1) that took 25+ s on a loaded CI
# machine: the wait is generous and the time taken is reported
wait_for 120 restarted
mark restart_s $((SECONDS - KILLED_AT))
mark after_kill "$(systemctl is-active ioazd) $([ "$(systemctl show -p MainPID --value ioazd)" != "$PID" ] && echo new-pid || echo same-pid)"
# Purged while the restarted daemon runs with bfq in force: the package's prerm stops it (the
# unit's ExecStop, as `systemctl stop`), which restores every setting. One stop serves both
# checks: each start of the daemon under TCG costs 20-30 s of the suite.
fio_bg --rw=randread --bs=4k --numjobs=8
wait_for 40 is_active bfq
mark before_purge "$(active)"
# the choice frozen as a udev rule, to be applied by the guest's udev once ioaz is gone
/usr/bin/ioazctl export --udev > /etc/udev/rules.d/60-ioaz.rules 2> /tmp/export.err
mark export $?
cp /etc/udev/rules.d/60-ioaz.rules /tmp/export.err "$OUT/"
EXPORTED_SETTINGS=$(grep -o 'ATTR{[^}]*}="[^"]*"' /etc/udev/rules.d/60-ioaz.rules | sed 's/ATTR{\(.*\)}="\(.*\)"/\1=\2/')
apt-get purge -y ioaz >> /tmp/install.log 2>&1
mark purge $?
fio_stop
mark after_purge "$(active)"
settings > /tmp/after_purge
if diff /tmp/before /tmp/after_purge > /tmp/purge.diff; then mark purge_restored yes
else mark purge_restored no; cat /tmp/purge.diff; fi
mark purge_left "$(ls -d /etc/ioaz/ioaz.yaml /usr/lib/ioaz /usr/sbin/ioazd \
    /lib/systemd/system/ioazd.service 2>/dev/null | tr '\n' ' ')"
mark purge_etc "$(ls /etc/ioaz 2>&1 | tr '\n' ' ')"   # what the role put there is the operator's
mark purge_unit "$(systemctl is-active ioazd)"
journalctl -u ioazd -o cat --no-pager > "$OUT/ioazd.journal"
# the restore after the kill is a warning, a switch is not: journald read their priorities
mark journal_warnings "$(journalctl -u ioazd -p warning -o cat --no-pager | grep -c -e restore_after_exit -e crash_recovery)"
mark journal_warning_switches "$(journalctl -u ioazd -p warning -o cat --no-pager | grep -c '"event": "switch"')"
# entries carry the disk as a field of their own: DEVICE= selects them, and only them
mark journal_device "$(journalctl -u ioazd DEVICE=$D -o cat --no-pager | grep -c "\"device\": \"$D\"")"
mark journal_device_other "$(journalctl -u ioazd DEVICE=$D -o cat --no-pager | grep -vc "\"device\": \"$D\"")"
mark journal_switch_events "$(journalctl -u ioazd IOAZ_EVENT=switch -o cat --no-pager | grep -c '"event": "switch"')"
udevadm control --reload
udevadm trigger --action=change --settle "/sys/block/$D"
wait_for 10 is_active bfq
mark udev_applied "$(active)"
mismatch=""
for kv in $EXPORTED_SETTINGS; do
    k=${kv%%=*}; v=${kv#*=}
    if [ "$k" = queue/scheduler ]; then now=$(active); else now=$(cat "/sys/block/$D/$k"); fi
    [ "$now" = "$v" ] || mismatch="$mismatch $k=$now(want $v)"
done
mark udev_settings "$(echo "$EXPORTED_SETTINGS" | wc -w) mismatched:${mismatch:- none}"
cp /tmp/install.log "$OUT/install.log"
mark done 1
