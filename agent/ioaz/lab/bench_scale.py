"""ioazd at scale and over time, on the real kernel (reliability.md sections 5 and 6).

scale: many loop devices under ioazd's own window loop (the daemon as compose.build makes it,
the BPF probe as ioazd loads it), a share of them busy, and every few windows some detached
and as many new ones attached. Per window: its wall time against the window's length; the
process's resident memory, descriptors and threads; at the end every device is put back.

soak: a few devices whose workload changes every PHASE seconds (random readers, one
sequential reader, one writer, idle, in turn), for as long as asked: memory, descriptors and
threads at the start against the end, switches made, everything put back.

Both measure the process they run in, which is the daemon's (the fio loads are children).
"""
from __future__ import annotations

import json
import logging
import os
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from array import array
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..sysblock import ROTATIONAL, SCHEDULER, BlockSysfs
from .loops import Loops


def _rss_kb(field: str = "VmRSS") -> int:
    """VmRSS, or its part RssAnon (the heap, what a leak grows) or RssFile (pages of the
    interpreter, libraries and mapped files, which grow as code runs for the first time)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _waited_s() -> float:
    """How long this thread has waited for a CPU while runnable (schedstat's run delay):
    what a window's wall time holds beyond its CPU when the machine is busier than its cores."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def _sample() -> dict[str, int]:
    return {"rss_kb": _rss_kb(), "anon_kb": _rss_kb("RssAnon"), "fds": _fds(),
            "threads": threading.active_count()}


def _fio(dev: str, rw: str, seconds: float, jobs: int = 1, bs: str = "4k",
         group: Path | None = None) -> subprocess.Popen:
    def enter() -> None:   # in the child, before fio starts: its jobs are born in the group
        if group is not None:
            (group / "cgroup.procs").write_text(str(os.getpid()))
    return subprocess.Popen(
        ["fio", "--name=load", f"--filename=/dev/{dev}", "--direct=1", f"--rw={rw}",
         f"--bs={bs}", "--ioengine=psync", f"--numjobs={jobs}", f"--runtime={seconds:g}",
         "--time_based", "--rate_iops=200"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=enter)


@contextmanager
def _load_group(wanted: bool) -> Iterator[Path | None]:
    """With `wanted`, a CPU cgroup of its own for the fio loads. Under systemd ioazd runs in
    ioazd.service's cgroup and the workload in others, and the kernel shares the CPU between
    the groups before the threads in them; run as a child of this process, every fio job
    competes with the daemon's one thread on its own. Without a CPU controller to use, this
    says so and runs the loads beside the daemon."""
    if not wanted:
        yield None
        return
    root = Path("/sys/fs/cgroup")
    base = root / "cpu" if (root / "cpu" / "cpu.shares").exists() else root   # v1, v2
    if base == root and "cpu" not in (root / "cgroup.subtree_control").read_text().split():
        raise SystemExit("ioaz-lab bench: --loads-cgroup needs the cpu controller "
                         f"(not in {root / 'cgroup.subtree_control'})")
    group = base / f"ioaz-bench-loads-{os.getpid()}"
    group.mkdir()
    try:
        yield group
    finally:
        # fio's job processes outlive a killed fio parent: the group names every one
        for _ in range(50):
            pids = (group / "cgroup.procs").read_text().split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)


class LogTally(logging.Handler):
    """What the daemon logged at WARNING or above: counts by level and by event (the JSON
    record's "event", or the logger's name for a plain-text record), the records that carried
    a traceback, and the first few messages (what 6.7 of reliability.md reads in the log)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.levels: dict[str, int] = {}
        self.events: dict[str, int] = {}
        self.tracebacks = 0
        self.first: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        self.levels[record.levelname] = self.levels.get(record.levelname, 0) + 1
        event = _event_of(msg) or record.name
        self.events[event] = self.events.get(event, 0) + 1
        self.tracebacks += bool(record.exc_info)
        if len(self.first) < 5:
            self.first.append(f"{record.levelname} {msg[:300]}")

    def summary(self) -> dict[str, Any]:
        return {"levels": dict(self.levels), "events": dict(self.events),
                "tracebacks": self.tracebacks, "first": list(self.first)}


def _event_of(msg: str) -> str | None:
    try:
        obj = json.loads(msg)
    except ValueError:
        return None
    return obj.get("event") if isinstance(obj, dict) else None


@contextmanager
def _daemon(devs: list[str], window_s: float, sample: float | None,
            out: dict[str, Any], decide: str = "",
            history: int | None = None) -> Iterator[Any]:
    """ioazd's daemon over these devices (name globs), with the BPF probe, in a state
    directory of its own; stopped on the way out, every device put back (what stop() said
    goes to out["stop"]). `decide`: more of its decide settings, "key: value, ...";
    `history`: the switches it keeps (its own default when None)."""
    from ..actuate import Actuator, StateStore
    from ..daemon.compose import build
    from ..daemon.config import load_config
    from ..probe.bpf_source import BpfSource
    from ..probe.sampler import DEFAULT_FRACTION, SamplePlan
    from ..sysblock import HELD_BY_DAEMON, BlockSysfs

    logging.getLogger("ioaz").setLevel(logging.WARNING)
    # on the root logger, where ioazd's own handler is (main.setup_logging): what its
    # log would hold, whichever logger wrote it
    root = logging.getLogger()
    tally = LogTally()
    root.addHandler(tally)
    with tempfile.TemporaryDirectory() as tmp:
        cfg_file = Path(tmp) / "ioaz.yaml"
        cfg_file.write_text(f"window_s: {window_s}\nstate_dir: {tmp}/state\n"
                            f"devices: {{include: [{', '.join(devs)}], exclude: []}}\n"
                            "decide: {hysteresis_windows: 2, min_dwell_s: 2, cooldown_s: 1"
                            f"{', ' + decide if decide else ''}}}\n"
                            + (f"history: {history}\n" if history else ""))
        cfg = load_config(cfg_file)
        sysfs = BlockSysfs(hold_open=HELD_BY_DAEMON)   # as ioazd reads
        src = BpfSource(sample=SamplePlan(DEFAULT_FRACTION if sample is None else sample)).open()
        daemon = build(cfg, src, Actuator(sysfs, StateStore(Path(tmp) / "state")), sysfs)
        try:
            daemon.start()
            yield daemon
        finally:
            out["stop"] = daemon.stop()
            src.close()
            sysfs.close()
            root.removeHandler(tally)
            out["log"] = tally.summary()


def _not_restored(stop: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What stop() could not put back on a device that is still there (a detached loop
    device's settings went with it)."""
    return [r for r in stop if not r.get("restored") and "manual" not in r.get("why", "")
            and BlockSysfs().exists(r["device"])]


def _originals(devs: list[str]) -> dict[str, str]:
    """Each device's scheduler line, as the kernel shows it (the active one in brackets)."""
    sysfs = BlockSysfs()
    return {d: sysfs.read(d, SCHEDULER) for d in devs}


def _attach(f: Path) -> str:
    return os.path.basename(subprocess.run(["losetup", "-f", "--show", str(f)], check=True,
                                           capture_output=True, text=True).stdout.strip())


def scale(n: int, windows: int, window_s: float = 1.0, busy_share: float = 0.3,
          churn_every: int = 5, churn: int = 0, sample: float | None = None,
          loads_cgroup: bool = False) -> dict[str, Any]:
    """n loop devices, busy_share of them read at random; every churn_every windows `churn`
    idle ones are detached and as many new ones attached (the kernel gives the new ones the
    names just freed: a name that comes back is another disk)."""
    churn = churn if churn else max(1, n // 5)
    rounds = windows // max(1, churn_every)
    files = []
    for i in range(churn * rounds):
        f = Path("/dev/shm") / f"ioaz-scale-{os.getpid()}-{i}.img"
        with open(f, "wb") as fh:
            fh.truncate(16 << 20)
        files.append(f)
    out: dict[str, Any] = {}
    new: list[str] = []
    try:
        with Loops(n, 64) as devs, _load_group(loads_cgroup) as group:
            originals = _originals(devs)
            busy = devs[:max(1, int(n * busy_share))]
            loads = [_fio(d, "randread", windows * window_s + 5, group=group) for d in busy]
            times: list[float] = []
            cpu: list[float] = []
            queued: list[float] = []
            samples: list[dict[str, int]] = []
            idle = [d for d in devs if d not in busy]
            attached = list(devs)
            detached = 0
            try:
                # by name, never loop*: other loop devices on this machine are not ours
                with _daemon(attached, window_s, sample, out) as daemon:
                    for w in range(windows):
                        t0 = time.monotonic()
                        c0, q0 = time.process_time(), _waited_s()
                        daemon.window()
                        times.append(time.monotonic() - t0)
                        cpu.append(time.process_time() - c0)
                        queued.append(_waited_s() - q0)
                        samples.append(_sample())
                        if churn_every and (w + 1) % churn_every == 0 and files:
                            gone, idle = idle[:churn], idle[churn:]
                            for d in gone:
                                subprocess.run(["losetup", "-d", f"/dev/{d}"],
                                               capture_output=True)
                                attached.remove(d)
                                detached += 1
                            for _ in range(min(len(gone), len(files))):   # as many back
                                d = _attach(files.pop(0))
                                new.append(d)
                                attached.append(d)
                                idle.append(d)
                                originals[d] = _originals([d])[d]
                            daemon.selection.update(attached, [])   # as a reload would
                        time.sleep(max(0.0, window_s - (time.monotonic() - t0)))
                    managed = len(daemon.devices)
            finally:
                for p in loads:
                    p.kill()
                    p.wait()
            there = [d for d in originals if BlockSysfs().exists(d)]
            not_back = sorted(d for d, now in _originals(there).items() if now != originals[d])
    finally:
        for d in new:
            subprocess.run(["losetup", "-d", f"/dev/{d}"], capture_output=True)
        for f in Path("/dev/shm").glob(f"ioaz-scale-{os.getpid()}-*.img"):
            f.unlink(missing_ok=True)
    return {"devices": n, "windows": windows, "window_s": window_s, "busy": len(busy),
            "busy_devices": busy,
            "detached": detached, "attached": len(new), "managed_at_end": managed,
            "window_ms_median": statistics.median(times) * 1e3,
            "window_ms_max": max(times) * 1e3,
            "windows_over_length": sum(t > window_s for t in times),
            "window_cpu_ms_median": statistics.median(cpu) * 1e3,
            "window_cpu_ms_max": max(cpu) * 1e3,
            "window_waited_ms_median": statistics.median(queued) * 1e3,
            "window_waited_ms_max": max(queued) * 1e3,
            "longest_window_cpu_waited_ms": [cpu[times.index(max(times))] * 1e3,
                                             queued[times.index(max(times))] * 1e3],
            "cores": os.cpu_count(), "loads_cgroup": loads_cgroup,
            "rss_kb_first_last": [samples[0]["rss_kb"], samples[-1]["rss_kb"]],
            "fds_first_last": [samples[0]["fds"], samples[-1]["fds"]],
            "threads_first_last": [samples[0]["threads"], samples[-1]["threads"]],
            "not_restored": _not_restored(out.get("stop", [])), "not_back": not_back,
            "log": out.get("log", {})}


PHASES = (("randread", 8, "4k"), ("read", 1, "128k"), ("write", 1, "128k"), (None, 0, ""))


def _soak_sample(daemon: Any) -> dict[str, int]:
    """The process's sample, the threads its probe holds (the probe's retirement at work) and
    the switches so far."""
    return {**_sample(), "probe_threads": getattr(daemon.observer.source, "threads_held", 0),
            "switches": sum(sum(r.switches.values()) for r in daemon.devices.values())}


class Marks:
    """A long run's samples: after its first window, at every tenth of it and at its end (11),
    and after its first phase (`warm`)."""

    def __init__(self, seconds: float, phase_s: float):
        self.t0 = time.monotonic()
        self.due = [seconds * i / 10 for i in range(10)]   # seconds into the run
        self.phase_s = phase_s
        self.tenths: list[dict[str, int]] = []
        self.warm: dict[str, int] | None = None

    def window(self, sample: Callable[[], dict[str, int]]) -> None:
        """After a window: a sample if a mark has come (one for each passed, if a window
        outlasted several)."""
        elapsed = time.monotonic() - self.t0
        taken = None
        while self.due and elapsed >= self.due[0]:
            self.due.pop(0)
            taken = taken or sample()
            self.tenths.append(taken)
        if self.warm is None and elapsed >= self.phase_s:
            self.warm = taken or sample()

    def end(self, sample: dict[str, int]) -> None:
        self.tenths += [sample] * (11 - len(self.tenths))   # a run cut short repeats its end

    def of(self, key: str) -> list[int]:
        return [s[key] for s in self.tenths]


LONG_WINDOWS_KEPT = 50


def _long_window(daemon: Any, at_s: float, length_s: float, wall0: float) -> dict[str, Any]:
    """A window over its length and the switches made in it, each with the time its device's
    queue was frozen (`stall_ms`): which switch, on which load, held the window up."""
    made = [h for h in daemon.history if h["time"] >= wall0]
    return {"at_s": round(at_s, 1), "ms": round(length_s * 1e3, 1),
            "switches": [{"device": h["device"], "from": h["from_scheduler"],
                          "to": h["to_scheduler"],
                          "stall_ms": None if h["stall_s"] is None else
                          round(h["stall_s"] * 1e3, 1)} for h in made]}


# The soak's switch budget: one a window, so that it never holds a device and the daemon
# switches for the whole run. At ioazd's default (12 an hour) 8 devices made their 96 switches
# in the first minutes of a 30-minute soak and were held by the budget for the rest, which left
# the memory of sustained switching (the history up to its bound) unmeasured.
SOAK_SWITCHES_PER_HOUR = 3600


def soak(n: int, seconds: float, phase_s: float = 20.0, window_s: float = 1.0,
         sample: float | None = None, loads_cgroup: bool = False,
         switches_per_hour: int = SOAK_SWITCHES_PER_HOUR,
         history: int | None = None) -> dict[str, Any]:
    """n loop devices whose workload changes every phase_s (PHASES in turn), for `seconds`,
    under a budget of switches_per_hour for each device, keeping `history` switches (ioazd's
    500 when None; fewer, to see the memory once the history is full within a short run)."""
    with Loops(n, 256) as devs, _load_group(loads_cgroup) as group:
        # loops over /dev/shm say they do not spin; as disks that do, they get IOAZ's tables,
        # whose cells differ from workload to workload (the soak is about switching)
        for d in devs:
            BlockSysfs().write(d, ROTATIONAL, "1")
        originals = _originals(devs)
        # The bench runs in the daemon's process, so what it keeps is in the RSS it reports:
        # samples only at the tenths and after the first phase (a dict a window was 0.5 MB in
        # 20 minutes), the windows' times as plain doubles.
        marks = Marks(seconds, phase_s)
        times, cpu = array("d"), array("d")
        over: list[dict[str, Any]] = []
        loads: list[subprocess.Popen] = []
        ending: list[subprocess.Popen] = []   # the last phase's loads, reaped as they end
        t_end = time.monotonic() + seconds
        phase = 0
        next_phase = time.monotonic()
        out: dict[str, Any] = {}
        try:
            with _daemon(devs, window_s, sample, out,
                         f"max_switches_per_hour: {switches_per_hour}", history) as daemon:
                while time.monotonic() < t_end:
                    t0 = time.monotonic()
                    if t0 >= next_phase:
                        # not waited for: the window loop keeps its pace, as ioazd's does
                        ending += loads
                        rw, jobs, bs = PHASES[phase % len(PHASES)]
                        left = min(phase_s, t_end - t0)
                        loads = [_fio(d, rw, left, jobs, bs, group) for d in devs] if rw \
                            else []
                        phase += 1
                        next_phase = t0 + phase_s
                    ending = [p for p in ending if p.poll() is None]
                    c0, p0, w0 = time.monotonic(), time.process_time(), time.time()
                    daemon.window()
                    times.append(time.monotonic() - c0)
                    cpu.append(time.process_time() - p0)
                    if times[-1] > window_s and len(over) < LONG_WINDOWS_KEPT:
                        over.append(_long_window(daemon, c0 - marks.t0, times[-1], w0))
                    marks.window(lambda: _soak_sample(daemon))
                    time.sleep(max(0.0, window_s - (time.monotonic() - t0)))
                errors = sum(r.errors for r in daemon.devices.values())
                kept = len(daemon.history)
                marks.end(_soak_sample(daemon))
        finally:
            for p in loads + ending:
                p.kill()
                p.wait()
        now = _originals(devs)
    warm, last = marks.warm or marks.tenths[0], marks.tenths[-1]
    return {"devices": n, "seconds": seconds, "phase_s": phase_s, "phases": phase,
            "loads_cgroup": loads_cgroup,
            "switches_per_hour": switches_per_hour,
            "windows": len(times), "switches": marks.of("switches")[-1], "errors": errors,
            # switching goes on through the run while these keep rising
            "switches_tenths": marks.of("switches"), "history_kept": kept,
            "cpu_ms_per_window": statistics.mean(cpu) * 1e3,
            "window_cpu_ms_max": max(cpu) * 1e3,
            "window_ms_median": statistics.median(times) * 1e3,
            "window_ms_max": max(times) * 1e3,
            "windows_over_length": sum(t > window_s for t in times),
            "long_windows": over,
            "rss_kb_warm_last": [warm["rss_kb"], last["rss_kb"]],
            "fds_warm_last": [warm["fds"], last["fds"]],
            "threads_warm_last": [warm["threads"], last["threads"]],
            # a leak grows with the run, a warming heap levels off: RSS every tenth of it
            "rss_kb_tenths": marks.of("rss_kb"),
            "anon_kb_tenths": marks.of("anon_kb"),
            # the threads that did I/O which the probe holds, until it retires them
            "probe_threads_tenths": marks.of("probe_threads"),
            "not_restored": _not_restored(out.get("stop", [])),
            "not_back": sorted(d for d in devs if now[d] != originals[d]),
            "log": out.get("log", {})}
