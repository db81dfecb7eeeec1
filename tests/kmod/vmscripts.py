"""The shell scripts the test VM runs, and the vector files they need.

Kept apart from the pytest files so bench.py and the tests build the same VM runs.
"""
from __future__ import annotations

import json
from pathlib import Path

VECTORS = Path(__file__).resolve().parents[1] / "vectors"

# null_blk settings: one request on the device at a time, completions by timer
NULLB_VECTORS = "nr_devices=1 queue_mode=2 hw_queue_depth=1 irqmode=2 completion_nsec=50000000 gb=1"
NULLB_STREAM = "nr_devices=1 queue_mode=2 hw_queue_depth=1 irqmode=2 completion_nsec=1000000 gb=64"
# busy device: two hardware queues, depth 2 each, fast timer completions
NULLB_SAFETY = ("nr_devices=1 queue_mode=2 submit_queues=2 hw_queue_depth=2 irqmode=2 "
                "completion_nsec=200000 gb=16")
# benchmark: no timer delay, completions inline
NULLB_BENCH = "nr_devices=1 queue_mode=2 hw_queue_depth=64 irqmode=0 gb=16"

PRIMING_SECTORS = 8


def load_vectors() -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(VECTORS.glob("*.json"))]


def vector_spec(v: dict) -> str:
    """iotool's spec: the priming request ending at the head, then the requests."""
    head = v["head"]["sector"]
    lines = [f"P {head - PRIMING_SECTORS} {PRIMING_SECTORS} r"]
    for r in v["requests"]:
        op = "w" if r["op"] == "write" else "r"
        lines.append(f"R {r['id']} {r['sector']} {r['sectors']} {op} {r['arrive_ms']}")
    return "\n".join(lines) + "\n"


def knob_writes(tunables: dict) -> str:
    out = []
    for key, value in tunables.items():
        knob = key[:-3] if key.endswith("_ms") else key
        out.append(f"echo {value} > $Q/iosched/{knob} || echo 'knob {knob} refused'")
    return "\n".join(out)


def vector_run(tag: str, sched: str, tunables: dict, spec_path: str) -> str:
    """One run of a vector; insert and complete are traced too, so the test can see whether the
    VM kept the vector's clock (vmharness.clock_error)."""
    return f"""
sched none; sched {sched}
{knob_writes(tunables)}
trace_on
echo 1 > $T/events/block/block_rq_insert/enable; echo 1 > $T/events/block/block_rq_complete/enable
iotool vector /dev/nullb0 {spec_path} > /tmp/out 2>&1
trace_off
echo 0 > $T/events/block/block_rq_insert/enable; echo 0 > $T/events/block/block_rq_complete/enable
begin {tag}
cat /tmp/out
grep -E 'block_rq_(insert|issue|complete):' $T/trace
for c in merged expired dispatched inserted waits_paid waits_timeout; do
  [ -f $S/$c ] && echo "counter_$c $(cat $S/$c)"
done
end {tag}
"""


def vector_tags(v: dict) -> list[str]:
    """The sections of a vector's runs, first run first."""
    return [f"vector:{v['name']}", f"vector:{v['name']}#2"]


def functional_script(vectors: list[dict]) -> tuple[str, dict[str, bytes]]:
    files: dict[str, bytes] = {}
    parts = [f"nullb {NULLB_VECTORS}", AUTOLOAD]
    for v in vectors:
        spec = f"vec/{v['name']}.spec"
        files[spec] = vector_spec(v).encode()
        # a second run, used only when the first did not keep the vector's clock (a loaded host)
        for tag in vector_tags(v):
            parts.append(vector_run(tag, v["scheduler"], v["tunables"], "/" + spec))
    # the same adjacent requests through vr, which does merge: the contrast to fifo
    adj = next((v for v in vectors if v["name"] == "fifo_adjacent_no_merge"), None)
    if adj is not None:
        parts.append(vector_run("vr_merges_adjacent", "vr", {},
                                f"/vec/{adj['name']}.spec"))
    parts.append(TUNABLES)
    parts.append(STREAM_VS_DEADLINE)
    return "\n".join(parts), files


AUTOLOAD = r"""
begin autoload
echo fifo > $Q/scheduler && echo "write_rc 0" || echo "write_rc 1"
echo "scheduler $(cat $Q/scheduler)"
grep -q '^ioaz_sched ' /proc/modules && echo "loaded yes" || echo "loaded no"
end autoload
grep -q '^ioaz_sched ' /proc/modules || insmod /lib/modules/$(uname -r)/extra/ioaz_sched.ko
"""

# Each bad write must fail and leave the old value; each good write must stick.
TUNABLES = r"""
begin tunables
try() {  # sched knob value
  echo none > $Q/scheduler; echo $1 > $Q/scheduler
  before=$(cat $Q/iosched/$2)
  if echo "$3" > $Q/iosched/$2 2>/dev/null; then rc=0; else rc=1; fi
  echo "$1/$2=$3 rc=$rc before=$before after=$(cat $Q/iosched/$2)"
}
try vr rev_penalty abc
try vr rev_penalty -1
try vr rev_penalty 7
try vr fifo_batch 0
try vr fifo_batch 32
try vr deadlines 2
try vr sync_expire 0
try vr sync_expire 250
try vr async_expire 99999999999
try stream stream_threshold 0
try stream stream_threshold 6
try stream stream_time_slice 60001
try stream stream_time_slice 200
try stream backseek_penalty 99
try stream svc_max_us 8000
try stream rev_penalty 1x
try stream max_inflight 1
try stream max_inflight 4097
end tunables
begin places
for s in fifo vr stream; do
  sched none; sched $s
  echo "iosched_$s $(ls $Q/iosched 2>/dev/null | tr '\n' ' ')"
  echo "debugfs_$s $(ls $S 2>/dev/null | tr '\n' ' ')"
done
end places
"""

# Two synchronous sequential readers far apart and one random reader, 4 s per scheduler.
# awk counts region switches in the issue order: region A = [0, 2^24), B = [2^26, 2^26+2^24),
# anything else R (the random reader).
STREAM_VS_DEADLINE = r"""
nullb """ + NULLB_STREAM + r"""
for s in mq-deadline stream; do
  sched none; sched $s
  if [ $s = stream ]; then
    echo 134217728 > $Q/iosched/svc_full_sectors
    echo 30000 > $Q/iosched/svc_max_us
    echo 100 > $Q/iosched/sync_expire
  fi
  trace_on
  echo 1 > $T/events/block/block_rq_insert/enable
  iotool seq /dev/nullb0 0 4 > /tmp/a.out &
  iotool seq /dev/nullb0 67108864 4 > /tmp/b.out &
  iotool randsync /dev/nullb0 4 3 > /tmp/r.out &
  wait
  trace_off
  begin stream:$s
  echo "a_$(grep reads /tmp/a.out)"; echo "a_$(grep max_latency /tmp/a.out)"
  echo "b_$(grep reads /tmp/b.out)"; echo "b_$(grep max_latency /tmp/b.out)"
  echo "r_$(grep reads /tmp/r.out)"; echo "r_$(grep max_latency /tmp/r.out)"
  echo 0 > $T/events/block/block_rq_insert/enable
  grep -E 'block_rq_(insert|issue)' $T/trace | awk '
    { for (i = 1; i <= NF; i++) {
        if ($i == "+") { s = $(i-1); n = $(i+1) }
        if ($i ~ /^block_rq_/) { ev = $i; ts = $(i-1); sub(":", "", ts) } } }
    ev == "block_rq_insert:" { ins[s] = ts; next }
    { r = "R"; if (s < 16777216) r = "A"; else if (s >= 67108864 && s < 83886080) r = "B" }
    { total++; if (prev != "" && r != prev) sw++; if (s != pend) seeks++; prev = r; pend = s + n }
    { if (s in ins) { d = ts - ins[s]; if (d > held) held = d; delete ins[s] } }
    END { print "issued", total; print "switches", sw + 0; print "seeks", seeks + 0;
          printf "max_held_us %d\n", held * 1000000 }'
  for c in waits waits_paid waits_timeout waits_cut expired; do
    [ -f $S/$c ] && echo "counter_$c $(cat $S/$c)"
  done
  end stream:$s
done
"""


def safety_script(seconds: int = 60) -> str:
    """Switch a busy device among the schedulers for `seconds`, then rmmod."""
    return f"""
nullb {NULLB_SAFETY}
insmod /lib/modules/$(uname -r)/extra/ioaz_sched.ko
sched stream
iotool rand /dev/nullb0 {seconds} 32 30 7 > /tmp/rand.out 2>&1 &
iotool seq /dev/nullb0 0 {seconds} > /tmp/seq.out 2>&1 &
iotool randsync /dev/nullb0 {seconds} 5 > /tmp/rs.out 2>&1 &
begin switching
end_at=$(( $(date +%s) + {seconds} ))
n=0; busy_rmmod=skip
while [ $(date +%s) -lt $end_at ]; do
  for s in fifo vr stream mq-deadline none; do
    echo $s > $Q/scheduler || echo "switch to $s failed"
    case $s in
      vr) echo $((n % 3)) > $Q/iosched/rev_penalty; echo $((n % 2)) > $Q/iosched/deadlines ;;
      stream) echo $((n % 5 + 1)) > $Q/iosched/stream_threshold ;;
    esac
    if [ $n -eq 3 ] && [ $s = vr ]; then
      if rmmod ioaz_sched 2>/dev/null; then busy_rmmod=unloaded; else busy_rmmod=refused; fi
    fi
    usleep 150000
  done
  n=$((n+1))
done
echo "rounds $n"
echo "busy_rmmod $busy_rmmod"
end switching
wait
begin loads
echo "rand: $(tr '\\n' ' ' < /tmp/rand.out)"
echo "seq: $(tr '\\n' ' ' < /tmp/seq.out)"
echo "randsync: $(tr '\\n' ' ' < /tmp/rs.out)"
echo "inflight $(cat /sys/block/nullb0/inflight)"
end loads
begin unload
echo none > $Q/scheduler
if rmmod ioaz_sched; then echo "rmmod 0"; else echo "rmmod 1"; fi
grep -q '^ioaz_sched ' /proc/modules && echo "loaded yes" || echo "loaded no"
end unload
"""


def bench_script(scheds: list[str], seconds: int, rounds: int) -> str:
    lines = [f"nullb {NULLB_BENCH}", "insmod /lib/modules/$(uname -r)/extra/ioaz_sched.ko",
             "begin bench"]
    for rnd in range(rounds):
        for s in scheds:
            lines.append(f"sched none; sched {s}")
            lines.append(f"echo \"{s} {rnd} $(iotool rand /dev/nullb0 {seconds} 32 0 {rnd + 1}"
                         " | grep iops)\"")
    lines.append("end bench")
    return "\n".join(lines) + "\n"


NULLB_PROBE = "nr_devices=1 queue_mode=2 hw_queue_depth=32 irqmode=0 gb=16"

# The probe on this kernel: two interleaved sequential readers with no scheduler, then one
# random reader 32 deep under mq-deadline, each under its own load of the object.
PROBE_SCRIPT = r"""
chmod +x /bin/probeload
nullb """ + NULLB_PROBE + r"""
begin probe:env
echo "devt $(cat /sys/block/nullb0/dev)"
[ -e /sys/kernel/btf/vmlinux ] && echo "btf 1" || echo "btf 0"
end probe:env
sched none
begin probe:seq
probeload /ioaz.bpf.o -- sh -c 'iotool seq /dev/nullb0 0 2 > /tmp/a.out &
  iotool seq /dev/nullb0 16777216 2 > /tmp/b.out & wait'
echo "a_$(grep reads /tmp/a.out)"; echo "b_$(grep reads /tmp/b.out)"
end probe:seq
sched mq-deadline
begin probe:rand
probeload /ioaz.bpf.o -- sh -c 'iotool rand /dev/nullb0 2 32 0 9 > /tmp/r.out'
sed 's/^/r_/' /tmp/r.out
end probe:rand
"""
