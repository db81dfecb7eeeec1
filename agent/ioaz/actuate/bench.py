"""How long a scheduler switch stalls a busy queue: every ordered pair of none, mq-deadline, bfq,
kyber, under fio random O_DIRECT reads, on a loop device.

Writing queue/scheduler freezes the queue, waits for every request in flight to finish under the
old elevator, swaps elevators and unfreezes (IOAZ section 3.2 saw the same drain on 2.6.11 and
blamed it for IOAZ losing to a static AS under heavy load). The write(2) returns when the queue
runs again, so its duration is the stall every submitter sees; the actuator times exactly that
write and this benchmark collects those times.

    python -m ioaz.actuate.bench [--device loopN] [--rounds 5] [--json]

Without --device it makes its own loop device over a file in /dev/shm and removes it afterwards.
Needs root and fio.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from ioaz.actuate.actuator import Actuator
from ioaz.actuate.state import StateStore
from ioaz.realisation import Realisation
from ioaz.sysblock import NR_REQUESTS, READ_AHEAD_KB, SCHEDULER, BlockSysfs

SCHEDULERS = ("none", "mq-deadline", "bfq", "kyber")


@contextlib.contextmanager
def loop_device(size_mb: int = 256, directory: str = "/dev/shm",
                direct_io: bool = False) -> Iterator[str]:
    """A fresh loop device over a file; detached and deleted on exit. Yields "loopN".

    direct_io: the loop driver reads its file with O_DIRECT, so requests reach the disk under
    `directory` (not tmpfs) and take that disk's time: a slower queue with more to drain.
    """
    fd, backing = tempfile.mkstemp(prefix="ioaz-actuate-", suffix=".img", dir=directory)
    os.close(fd)
    os.truncate(backing, size_mb << 20)
    dev = None
    try:
        cmd = ["losetup", "-f", "--show"] + (["--direct-io=on"] if direct_io else []) + [backing]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
        dev = out.stdout.strip()
        # A loop device keeps its queue across detach and attach, so whatever the previous user
        # left (another scheduler, knobs) would still be there: start from the kernel's defaults.
        _reset_queue(os.path.basename(dev))
        # Random reads of a sparse file return zeros without touching memory: fill it once so
        # the reads are real page-cache copies, as on a file-backed loop device in use.
        subprocess.run(["dd", "if=/dev/zero", f"of={dev}", "bs=1M", f"count={size_mb}",
                        "oflag=direct", "status=none"], check=True)
        yield os.path.basename(dev)
    finally:
        if dev:
            _reset_queue(os.path.basename(dev))  # and leave it that way for the next user
            subprocess.run(["losetup", "-d", dev], check=False)
        os.unlink(backing)


def _reset_queue(device: str) -> None:
    """A loop device's defaults: no elevator, 128 requests, 128 KiB read-ahead."""
    s = BlockSysfs()
    for key, value in ((SCHEDULER, "none"), (NR_REQUESTS, "128"), (READ_AHEAD_KB, "128")):
        with contextlib.suppress(OSError):
            s.write(device, key, value)


@dataclass
class FioRun:
    proc: subprocess.Popen[str]
    read_iops: float | None = None   # from fio's own report when it stops


@contextlib.contextmanager
def fio_load(device: str, jobs: int = 2, iodepth: int = 32, bs: str = "4k") -> Iterator[FioRun]:
    """Random O_DIRECT reads on /dev/DEVICE until the block exits; then fio's IOPS."""
    cmd = ["fio", "--name=ioaz-stall", f"--filename=/dev/{device}", "--direct=1",
           "--rw=randread", f"--bs={bs}", "--ioengine=libaio", f"--iodepth={iodepth}",
           f"--numjobs={jobs}", "--time_based", "--runtime=3600", "--group_reporting",
           "--output-format=terse", "--terse-version=3"]
    run = FioRun(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True))
    try:
        time.sleep(1.0)  # let the jobs open the device and fill their queues
        if run.proc.poll() is not None:
            _, err = run.proc.communicate()
            raise RuntimeError(f"fio exited early ({run.proc.returncode}): {err.strip()}")
        yield run
    finally:
        run.proc.terminate()  # fio stops its jobs and prints its report on SIGTERM
        try:
            out, _ = run.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            run.proc.kill()
            out, _ = run.proc.communicate()
        # terse v3: version;fio;jobname;groupid;error;read_kb;read_bw;read_iops;...
        fields = out.strip().splitlines()[-1].split(";") if out.strip() else []
        if len(fields) > 7:
            try:
                run.read_iops = float(fields[7])
            except ValueError:
                pass


def inflight(sysfs: BlockSysfs, device: str) -> int:
    """Requests in flight now (reads + writes), to show the load was really there."""
    try:
        return sum(int(x) for x in sysfs.read(device, "inflight").split())
    except (OSError, ValueError):
        return -1


@dataclass
class PairStats:
    src: str
    dst: str
    stalls_s: list[float] = field(default_factory=list)
    inflight: list[int] = field(default_factory=list)

    @property
    def median_s(self) -> float:
        return statistics.median(self.stalls_s) if self.stalls_s else float("nan")

    @property
    def max_s(self) -> float:
        return max(self.stalls_s) if self.stalls_s else float("nan")


def measure(act: Actuator, device: str, rounds: int, settle_s: float,
            schedulers: tuple[str, ...] = SCHEDULERS) -> list[PairStats]:
    """Each ordered pair `rounds` times: get to src (not timed), settle, switch to dst (timed)."""
    stats = {(a, b): PairStats(a, b) for a in schedulers for b in schedulers if a != b}
    for _ in range(rounds):
        for (a, b), st in stats.items():
            if act.sysfs.scheduler(device).active != a:
                r = act.apply(device, Realisation(a))
                if not r.ok:
                    raise RuntimeError("; ".join(r.errors))
            time.sleep(settle_s)  # the new elevator fills up again before it is switched away
            st.inflight.append(inflight(act.sysfs, device))
            r = act.apply(device, Realisation(b))
            if not r.ok or r.stall_s is None:
                raise RuntimeError("; ".join(r.errors) or f"{a}->{b}: no switch happened")
            st.stalls_s.append(r.stall_s)
    return list(stats.values())


def table(title: str, stats: list[PairStats]) -> str:
    lines = [title, f"{'switch':<26}{'n':>4}{'median ms':>12}{'max ms':>10}{'inflight':>10}"]
    for st in stats:
        infl = statistics.median(st.inflight) if st.inflight else float("nan")
        lines.append(f"{st.src + ' -> ' + st.dst:<26}{len(st.stalls_s):>4}"
                     f"{st.median_s * 1e3:>12.2f}{st.max_s * 1e3:>10.2f}{infl:>10.0f}")
    every = [s for st in stats for s in st.stalls_s]
    if every:
        lines.append(f"{'all switches':<26}{len(every):>4}{statistics.median(every) * 1e3:>12.2f}"
                     f"{max(every) * 1e3:>10.2f}")
    return "\n".join(lines)


def run(device: str, rounds: int, settle_s: float, jobs: int, iodepth: int,
        idle: bool) -> tuple[dict[str, list[PairStats]], float | None]:
    state_dir = tempfile.mkdtemp(prefix="ioaz-bench-state-")
    act = Actuator(BlockSysfs(), StateStore(state_dir))
    out: dict[str, list[PairStats]] = {}
    try:
        if idle:
            out["idle"] = measure(act, device, rounds, settle_s)
        with fio_load(device, jobs=jobs, iodepth=iodepth) as fio:
            out["fio"] = measure(act, device, rounds, settle_s)
    finally:
        for r in act.restore_all():
            if not r.ok:
                print("restore failed: " + "; ".join(r.errors), file=sys.stderr)
        shutil.rmtree(state_dir, ignore_errors=True)
    return out, fio.read_iops


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ioaz.actuate.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", help="an existing block device (e.g. loop3); default: a new "
                    "loop device over /dev/shm")
    ap.add_argument("--size-mb", type=int, default=256)
    ap.add_argument("--dir", default="/dev/shm", help="where the loop device's file goes")
    ap.add_argument("--direct-io", action="store_true",
                    help="loop device reads its file with O_DIRECT (use with --dir on a disk)")
    ap.add_argument("--rounds", type=int, default=5, help="measurements per ordered pair")
    ap.add_argument("--settle", type=float, default=0.3, help="seconds on src before the switch")
    ap.add_argument("--jobs", type=int, default=2, help="fio jobs")
    ap.add_argument("--iodepth", type=int, default=32, help="fio iodepth per job")
    ap.add_argument("--no-idle", action="store_true", help="skip the no-load baseline")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if os.geteuid() != 0 or not shutil.which("fio"):
        print("needs root and fio", file=sys.stderr)
        return 2
    with contextlib.ExitStack() as stack:
        device = args.device or stack.enter_context(
            loop_device(args.size_mb, args.dir, args.direct_io))
        res, iops = run(device, args.rounds, args.settle, args.jobs, args.iodepth,
                        not args.no_idle)
    if args.json:
        print(json.dumps({"fio_read_iops": iops} | {load: [{"from": s.src, "to": s.dst,
                                  "stalls_s": s.stalls_s,
                                  "median_s": s.median_s, "max_s": s.max_s,
                                  "inflight": s.inflight} for s in stats]
                          for load, stats in res.items()}, indent=1))
    else:
        where = ("an existing device" if args.device else
                 f"a loop device over {args.dir}" + (" with direct I/O" if args.direct_io else ""))
        print(f"device {device} ({where}), kernel {os.uname().release}, {args.rounds} rounds "
              f"per pair, fio randread 4k O_DIRECT libaio {args.jobs}x{args.iodepth}")
        for load, stats in res.items():
            title = ("no load" if load == "idle" else
                     f"under fio load ({args.jobs} jobs x iodepth {args.iodepth}, "
                     f"{iops or float('nan'):.0f} read IOPS over the run)")
            print()
            print(table(f"queue stall of each switch, {title}:", stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())

