"""One window at a time: read the probe, compute each device's features and class.

Shared by `ioazctl observe` and the daemon. Devices come and go (hot-plug, loop detach): a
device that vanished is reported once and dropped, never fatal.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, partial

from .bdi import DirtyReader
from .classify.classes import Thresholds, bios_held_through, bios_in_flight, classify
from .classify.features import compute_features
from .classify.held import HeldDepth
from .classify.horizon import ProcessHorizon
from .classify.types import WindowFeatures, WorkloadClass
from .probe import Source
from .probe.snapshot import DeviceSnapshot, Snapshot
from .sysblock import BlockSysfs

PF_KTHREAD = 0x00200000   # include/linux/sched.h


def kernel_thread(tid: int) -> bool:
    """Whether a thread is the kernel's: PF_KTHREAD in its flags, the ninth field of
    /proc/TID/stat (counted after the command's closing parenthesis: a name may hold spaces).
    False for a thread that is gone."""
    try:
        with open(f"/proc/{tid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    fields = stat[stat.rfind(b")") + 1:].split()
    return len(fields) > 6 and int(fields[6]) & PF_KTHREAD != 0


# udev's workers: when a program that had a whole disk open for writing closes it, udev's
# watch rule has one of them read the disk's labels (blkid, about 40 reads). The worker then
# lives on idle, and as a member it would add a process to the writer's class for
# process_membership_s (docs/reports/calibration-maxtor40-2026-12-07/who.txt: a 1-process fio
# writer read as 3). systemd-udevd named its workers after itself before systemd 251.
UDEV_COMMANDS = ("(udev-worker)", "systemd-udevd")


def udev_worker(tid: int) -> bool:
    """Whether a thread is udev's (its command name, /proc/TID/comm). False for one gone."""
    try:
        with open(f"/proc/{tid}/comm", encoding="utf-8", errors="replace") as f:
            return f.read().rstrip("\n") in UDEV_COMMANDS
    except OSError:
        return False


@dataclass
class Window:
    features: list[WindowFeatures] = field(default_factory=list)
    vanished: list[str] = field(default_factory=list)
    appeared: list[str] = field(default_factory=list)


def _empty(name: str, t_ns: int, source: str, sysfs: BlockSysfs) -> DeviceSnapshot | None:
    """A device the probe has not seen any I/O on yet: all counters zero."""
    devt = sysfs.devt(name)
    if devt is None:
        return None
    snap = DeviceSnapshot(name=name, major=devt[0], minor=devt[1], t_ns=t_ns, source=source)
    snap.lat_read_ns = 0
    if source == "bpf":
        snap.bios, snap.bios_seq, snap.procs, snap.threads = 0, 0, {}, {}
    else:
        snap.time_in_queue_ms = 0
    return snap


class Observer:
    """Turns successive snapshots of a source into per-device windows.

    devices: the names to watch, or None for every disk with a scheduler (rescanned each window);
    a callable is asked each window (the daemon's managed disks).
    sysfs: the block sysfs door devices are looked up through.
    dirty: where each disk's dirty data is read (bdi.py); debugfs by default.
    """

    def __init__(self, source: Source, thresholds: Thresholds,
                 devices: list[str] | Callable[[], list[str]] | None = None,
                 sysfs: BlockSysfs | None = None, dirty: DirtyReader | None = None):
        self.source = source
        self.dirty = dirty or DirtyReader()
        # the kind of snapshot it gives: both BPF loaders (bpf, bcc) give the probe's counters
        self._kind = "diskstats" if source.name == "diskstats" else "bpf"
        self.thresholds = thresholds
        self.sysfs = sysfs or BlockSysfs()
        self.fixed = list(devices) if isinstance(devices, list) else None
        self.scan = devices if callable(devices) else None
        self.prev: Snapshot = {}
        self.watching: list[str] = []
        self.horizons: dict[str, ProcessHorizon] = {}   # device -> its class's processes
        self.held: dict[str, HeldDepth] = {}   # device -> its depth over recent windows
        self.kthreads: dict[int, bool] = {}   # thread -> the kernel's or udev's (_may_join)
        # device -> its last judged class: near a ratio threshold the next window keeps its
        # side (Thresholds.boundary_band)
        self.classes: dict[str, WorkloadClass] = {}
        # device -> the disk it was (sysblock.identity): a name another disk takes between two
        # windows is that disk's, not a continuation of the one before
        self.identities: dict[str, str | None] = {}

    def set_thresholds(self, thresholds: Thresholds) -> None:
        """New cuts (a reload); the process horizons are rebuilt from them as devices appear."""
        self.thresholds = thresholds
        self.horizons.clear()

    def _wanted(self) -> list[str]:
        if self.scan is not None:
            return self.scan()
        if self.fixed is not None:
            return [d for d in self.fixed if self.sysfs.exists(d)]
        return self.sysfs.scheduled_disks()

    def _complete(self, snap: Snapshot, names: list[str]) -> Snapshot:
        out: Snapshot = {}
        t_ns = next(iter(snap.values())).t_ns if snap else 0
        if not t_ns:
            import time
            t_ns = time.monotonic_ns()
        for name in names:
            s = snap.get(name) or _empty(name, t_ns, self._kind, self.sysfs)
            if s is not None:
                s.t_ns = t_ns
                out[name] = s
        return out

    def _horizon(self, name: str, window_s: float) -> ProcessHorizon:
        h = self.horizons.get(name)
        if h is None:
            h = self.horizons[name] = ProcessHorizon.of(self.thresholds, window_s)
        return h

    def _alive(self, name: str, submitted: dict[int, int]) -> list[int]:
        """Submitters of the device's horizon silent this window that still exist (a thread's
        id, as a process's, has a /proc entry while it lives)."""
        h = self.horizons.get(name)
        if h is None:
            return []
        return [p for p in h.pids() - set(submitted) if os.path.exists(f"/proc/{p}")]

    def _may_join(self, tid: int) -> bool:
        """Neither a kernel thread nor udev's worker: what may become a member of a class
        (classify/horizon.py). Asked once per thread while it stays in some horizon."""
        known = self.kthreads.get(tid)
        if known is None:
            if len(self.kthreads) > 4096:
                live = {t for h in self.horizons.values() for t in h.pids()}
                self.kthreads = {t: k for t, k in self.kthreads.items() if t in live}
            known = self.kthreads[tid] = kernel_thread(tid) or udev_worker(tid)
        return not known

    def _classify(self, name: str, f: WindowFeatures,
                  expiry: Callable[[], float]) -> WorkloadClass | None:
        """The window's class; a shallow one is judged again with the depth over the
        elevator's expiry (classify/held.py), read from sysfs only then."""
        held = self.held.setdefault(name, HeldDepth())
        split = f.read_depth is not None
        held.add(f.window_s, bios_in_flight(f), bios_in_flight(f, True) if split else None,
                 bios_in_flight(f, False) if split else None)
        previous = self.classes.get(name)
        c = classify(f, self.thresholds, previous)
        if c is None or c.depth != "shallow" or f.submitters is None:
            return c
        # Where the elevator holds a request longer than a window: the depth over its expiry,
        # and the requests held through the window (in flight at both its ends). Not under
        # the others: the in-flight count can read high for a minute (probe/in_flight.py).
        read = c.mode == "read"
        f.held_bios = held.over(expiry, read)
        through = bios_held_through(f, read)
        if through is not None and expiry() > f.window_s:
            f.held_bios = max(f.held_bios or 0.0, through)
        if f.held_bios is None:
            return c
        return classify(f, self.thresholds, previous)

    def _replaced(self, name: str) -> bool:
        was = self.identities.get(name)
        now = self.sysfs.identity(name)
        return was is not None and now is not None and now != was

    def start(self) -> list[str]:
        """Take the first snapshot; returns the devices watched."""
        names = self._wanted()
        self.prev = self._complete(self.source.read(names), names)
        self.watching = list(self.prev)
        self.identities = {name: self.sysfs.identity(name) for name in self.watching}
        return self.watching

    def step(self) -> Window:
        """The window since the previous call (or start())."""
        names = self._wanted()
        cur = self._complete(self.source.read(names), names)
        w = Window()
        for name in self.watching:
            if name not in cur:
                w.vanished.append(name)
        for name, snap in list(cur.items()):
            old = self.prev.get(name)
            if old is not None and self._replaced(name):
                w.vanished.append(name)
                old = None
            if old is None and not (self.sysfs.size_bytes(name) or 0):
                # no medium: a detached loop device keeps its name with a new diskseq and size
                # 0, and the daemon's scan may not have read its size again yet
                del cur[name]
                continue
            if old is None:
                w.appeared.append(name)
                self.identities[name] = self.sysfs.identity(name)
                self.horizons.pop(name, None)
                self.held.pop(name, None)
                self.classes.pop(name, None)
                continue  # first sight: its first window is the next one
            f = compute_features(old, snap, self.thresholds.min_process_share)
            f.dirty_fill = self.dirty.fill(snap.major, snap.minor)
            # the class counts submitters: threads where the probe tells them apart
            submitted = f.thread_bios if f.threads is not None else f.process_bios
            # the elevator's expiry, read from sysfs at most once a window and only if asked
            expiry = cache(partial(self.sysfs.expiry_s, name))
            if f.submitters is not None:
                f.class_processes = self._horizon(name, f.window_s).add(
                    submitted, alive=self._alive(name, submitted), window_s=f.window_s,
                    may_join=self._may_join, wait_s=expiry)
            f.workload_class = self._classify(name, f, expiry)
            if f.workload_class is not None:
                self.classes[name] = f.workload_class
            w.features.append(f)
        for name in set(self.horizons) - set(cur):
            del self.horizons[name]
        for name in set(self.held) - set(cur):
            del self.held[name]
        for name in set(self.classes) - set(cur):
            del self.classes[name]
        for name in set(self.identities) - set(cur):
            del self.identities[name]
        self.prev = cur
        self.watching = list(cur)
        return w
