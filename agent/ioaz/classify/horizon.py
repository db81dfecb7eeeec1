"""The processes that drive a device over a few windows: the process count of its class.

Why not one window's count: a scheduler that serves one stream for a long slice (stream,
anticipatory, cfq's idling) leaves the other readers blocked, submitting nothing, for most of
a window. Under stream, a window of 16 sequential readers on the simulator's wd500 disk
counted 5 of them, which put the workload in the 4-process class and kept stream in force
(README, Known limits). How many processes drive a disk is a property of the workload, not of
who the scheduler serves this second, so the class counts the processes that submitted over
the last `process_horizon_s` (thresholds.yaml) and are still alive: a process that exited
leaves the count at once, so a phase change is not held back by the processes of the last.

A horizon is not always enough. mq-deadline serves sixteen sequential writers in sector order:
one writer keeps the disk, and the others' requests wait until they expire (write_expire, 5 s),
so for whole horizons they submit nothing and drop out; bfq, serving each writer a slice in
turn, lets half of them through in a second. The count then follows the scheduler in force
and the class with it (16 writers seen as 8 under bfq, as 1 under mq-deadline), and the
matrix's verdict changes with the scheduler it chose. So a process that has once counted
stays a member of the class while it lives, for `process_membership_s` after the last horizon
it submitted in: longer than mq-deadline's write expiry and a horizon, short enough that a
process that lives on without I/O leaves within seconds. A member is kept by any I/O, not by
the share that made it one: a writer mq-deadline serves once in a round of expiries submits
a few bios against the hundreds of the writer that keeps the disk, under min_process_share of
the horizon. And a scheduler may hold a queued request longer than the membership (ioazd
sets mq-deadline's write_expire to twice the p99 latency, 10-40 s on a busy disk): the caller
says how long (the `*expire` knobs of the elevator in force), and membership lasts at least
that. Kernel threads never become members:
the flusher's workers take turns writing a disk's dirty pages, each a submitter for a moment,
and as members they would add up to processes the workload does not have (ioaz.observe says
which threads are the kernel's). Nor do udev's workers, which read a disk's labels when a
writer of the whole disk closes it, then idle for minutes.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

from .classes import Thresholds
from .types import WindowFeatures


class ProcessHorizon:
    """One device's per-window bios by process over the last `windows` windows, or, given
    `horizon_s` and each window's length, over the windows that make up horizon_s: ioazd
    lengthens its window at rest (daemon/rest.py), and a horizon of four windows would then
    reach back four long ones."""

    def __init__(self, windows: int, min_share: float, horizon_s: float | None = None,
                 membership_s: float | None = None, window_s: float = 1.0):
        if windows < 1:
            raise ValueError(f"process horizon of {windows} windows: expected at least 1")
        self.windows = windows
        self.horizon_s = horizon_s
        self.recent: deque[tuple[float | None, dict[int, int]]] = deque()
        self.min_share = min_share
        # pid -> when it last counted (the windows' lengths summed; window_s when add is
        # given none, as the simulator's windows are all one length)
        self.membership_s = membership_s
        self.members: dict[int, float] = {}
        self.window_s = window_s
        self.clock = 0.0

    def pids(self) -> set[int]:
        """Every process that submitted in the horizon, and every member (whose liveness the
        next add needs)."""
        return {p for _, w in self.recent for p, n in w.items() if n > 0} | set(self.members)

    def _trim(self) -> None:
        """Keep the newest window, and older ones while the horizon reaches at least half
        into them (the rounding windows_for does for windows of one length)."""
        lengths = [s for s, _ in self.recent]
        if self.horizon_s is None or None in lengths:
            while len(self.recent) > self.windows:
                self.recent.popleft()
            return
        keep, span = 0, 0.0
        for s in reversed(lengths):
            assert s is not None
            if keep and span + s / 2 >= self.horizon_s:
                break
            keep, span = keep + 1, span + s
        while len(self.recent) > keep:
            self.recent.popleft()

    def add(self, window_bios: dict[int, int], alive: Iterable[int] = (),
            window_s: float | None = None,
            may_join: Callable[[int], bool] | None = None,
            wait_s: float | Callable[[], float] = 0.0) -> int:
        """Add one window and return the horizon's process count.

        window_bios: this window's bios per process; a process listed with 0 is alive but
        idle (the simulator lists every live process). alive: more processes of the horizon
        that submitted nothing this window but still exist (ioaz.observe checks /proc for
        them). Any other process of the horizon has exited and is not counted. A process
        counts when it submitted at least min_share of the bios the live processes submitted
        over the horizon, as one window's count does (features.active_processes). window_s:
        this window's length, for a horizon in seconds. With a membership, a live process
        that counted within membership_s counts still (the module's docstring says why);
        may_join: which counted processes may become members (default: all). wait_s: the
        longest the scheduler in force may keep a request queued (its expiry); membership lasts
        at least that long. A callable is asked only when a member would lapse without it
        (ioazd reads it from sysfs: not every window for every disk)."""
        self.recent.append((window_s, {p: n for p, n in window_bios.items() if n > 0}))
        self._trim()
        self.clock += window_s if window_s is not None else self.window_s
        live = set(window_bios) | set(alive)
        total: dict[int, int] = {}
        for _, w in self.recent:
            for p, n in w.items():
                if p in live:
                    total[p] = total.get(p, 0) + n
        bios = sum(total.values())
        counted = {p for p, n in total.items() if n > 0 and n >= self.min_share * bios}
        if not self.membership_s:
            return len(counted)
        for p in counted:
            if p not in self.members and (may_join is None or may_join(p)):
                self.members[p] = self.clock
        for p in self.members.keys() & total.keys():   # any I/O in the horizon keeps a member
            self.members[p] = self.clock
        lasts = self.membership_s
        if any(self.clock - t > lasts for t in self.members.values()):
            lasts = max(lasts, wait_s() if callable(wait_s) else wait_s)
        self.members = {p: t for p, t in self.members.items()
                        if p in live and self.clock - t <= lasts}
        return len(counted | set(self.members))

    @classmethod
    def of(cls, t: Thresholds, window_s: float) -> ProcessHorizon:
        """The horizon thresholds.yaml asks for, in windows of window_s."""
        return cls(cls.windows_for(t.process_horizon_s, window_s), t.min_process_share,
                   horizon_s=t.process_horizon_s, membership_s=t.process_membership_s,
                   window_s=window_s)

    @staticmethod
    def windows_for(horizon_s: float, window_s: float) -> int:
        """How many windows of window_s make a horizon of horizon_s (at least one)."""
        return max(1, round(horizon_s / window_s)) if window_s > 0 else 1


def fill_class_processes(windows: list[WindowFeatures], t: Thresholds) -> None:
    """Set class_processes on a run's windows, in order, where the source left it unset (the
    simulator's windows; ioaz.observe sets it itself): what the agent would have counted."""
    h: ProcessHorizon | None = None
    for w in windows:
        if w.class_processes is not None or w.processes is None:
            continue
        if h is None:
            h = ProcessHorizon.of(t, w.window_s)
        w.class_processes = h.add(w.process_bios)
