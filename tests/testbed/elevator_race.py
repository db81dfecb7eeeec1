"""Run in the guest: ioaz's actuator switches a disk's scheduler again and again while a second
writer switches the same disk between mq-deadline and none. Since kernel 7.2 (4ff58d6bc9dd) a
write to queue/scheduler fails with EBUSY while another writer holds the queue; the actuator
retries it with backoff.

Two racers, one after the other:
  udev      writes every 50-250 ms, as udev rules setting the scheduler on add/change events do
            on a busy host: the actuator's retries must absorb every refusal;
  hostile   writes back to back, holding the queue's lock nearly all the time: writes may fail,
            but each says why and the disk's original scheduler is put back at the end.
Prints one JSON line per racer.

usage: python3 elevator_race.py DEVICE SWITCHES
"""
from __future__ import annotations

import collections
import json
import subprocess
import sys
import tempfile

from ioaz.actuate.actuator import Actuator
from ioaz.actuate.state import StateStore
from ioaz.quantile import of_sorted
from ioaz.realisation import Realisation

CYCLE = ("fifo", "vr", "stream", "bfq", "kyber")
PAUSE = {"udev": 'sleep 0.$(( RANDOM % 21 + 5 ))', "hostile": ":"}


def racer(path: str, pause: str) -> subprocess.Popen[str]:
    """A shell loop writing the scheduler; on TERM it prints its writes, EBUSY refusals and
    other errors."""
    return subprocess.Popen(["bash", "-c", f"""
n=0; busy=0; other=0
trap 'echo "$n $busy $other"; exit 0' TERM
while :; do
  for s in mq-deadline none; do
    {pause}
    err=$( {{ echo $s > {path}; }} 2>&1 )
    n=$((n+1))
    case $err in
      "") ;;
      *busy*) busy=$((busy+1)) ;;
      *) other=$((other+1)) ;;
    esac
  done
done"""], stdout=subprocess.PIPE, text=True)


def stop(racer_proc: subprocess.Popen[str], tries: int = 6, wait_s: float = 10) -> str:
    """TERM the racer until it prints its counts. bash runs the trap only between commands,
    and in CI one racer did not answer a single TERM within 30 s (the unit tests running beside
    the guest, 2026-11-28); a TERM again is what an operator would send."""
    for _ in range(tries):
        racer_proc.terminate()
        try:
            out, _ = racer_proc.communicate(timeout=wait_s)
            return out
        except subprocess.TimeoutExpired:
            continue
    racer_proc.kill()
    racer_proc.communicate()
    raise RuntimeError(f"the racer did not stop after {tries} TERMs over {tries * wait_s:g} s")


def race(dev: str, switches: int, kind: str) -> dict:
    path = f"/sys/block/{dev}/queue/scheduler"
    with open(path) as f:
        before = f.read().split("[")[1].split("]")[0]
    attempts: collections.Counter[int] = collections.Counter()
    failed: list[str] = []
    stalls: list[float] = []
    other = racer(path, PAUSE[kind])
    with tempfile.TemporaryDirectory() as state:
        act = Actuator(state=StateStore(state))
        for i in range(switches):
            res = act.apply(dev, Realisation(scheduler=CYCLE[i % len(CYCLE)]))
            for step in res.steps:
                if step.key.endswith("scheduler"):
                    attempts[step.attempts] += 1
                    if step.ok:
                        stalls.append(step.elapsed_s)
                    else:
                        failed.append(step.message())
        out = stop(other)
        restored = act.restore(dev)
    with open(path) as f:
        after = f.read().split("[")[1].split("]")[0]
    n, busy, errors = (int(x) for x in out.split())
    return {"racer": kind, "switches": switches, "attempts": dict(sorted(attempts.items())),
            "failed_count": len(failed), "failed": failed[:5],
            "stall_ms_p50": round(1e3 * (of_sorted(sorted(stalls), 0.5) or 0), 1),
            "stall_ms_max": round(1e3 * max(stalls), 1) if stalls else None,
            "racer_writes": n, "racer_busy": busy, "racer_other_errors": errors,
            "restored": restored.ok, "scheduler_before": before, "scheduler_after": after}


def main() -> int:
    dev, switches = sys.argv[1], int(sys.argv[2])
    for kind in ("udev", "hostile"):
        print(json.dumps(race(dev, switches, kind)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
