"""ioazd's rest: a longer window while nothing is under way on any device.

Every window costs ioazd the same CPU (the probe's maps, the features, the decision), whether
or not it can change anything. On a disk that has settled with its cell's policy, tried what
the cell wants tried, or sits idle, a window a second buys nothing, and the CPU it takes comes
out of the workload where the machine is CPU-bound (the testbed's S runs, docs/testbed.md).
So after CALM_WINDOWS windows in which every device's decision was calm (damping's
Decision.calm: no switch being confirmed, no trial running or due, or the administrator's
mode), the daemon waits rest_window_s between windows instead of window_s. The first window
that is not calm ends the rest, as does any ioazctl command, and a new workload is confirmed
in ordinary windows. The rates a window gives are per second, so they do not change with its
length; what counts windows does: the class's process horizon is kept in seconds
(classify/horizon.py), and a rest window resets a trial's count of settled windows
(decide/transitions.after_rest_window).

A phase change should not wait out a whole rest window, so at rest the daemon reads
/proc/diskstats every window_s (Pulse: one file, none of the probe's maps) and ends the rest
when two readings in a row put a disk's requests or bytes a second off the last window's by
more than PULSE_FACTOR the same way, or its share of reads by more than PULSE_SHARE. A change
the pulse does not see waits for the next rest window.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

# Calm windows in a row before the rest: the hysteresis and a switch's cooldown and first
# settled windows all pass within this many ordinary windows.
CALM_WINDOWS = 10
# Ordinary windows after the pulse ended a rest, before the next rest if they are all calm:
# enough for a new workload's class to show (it then ends the calm), few where the pulse
# took a workload's own swing for a new one (S's readers under bfq fell from 117-254 to
# 27-82 requests a second for two seconds every 17-30 s in the testbed, 2026-11-28).
AFTER_PULSE = 3
# What ends a rest early (Pulse): a disk's rate of requests or bytes off the last window's
# by this factor, or its share of reads by this much, in two readings in a row, where it moved
# at least PULSE_MIN_OPS requests a second. One second against the next was not enough: S's
# ten readers under bfq in the testbed moved between 81 and 283 requests a second from one
# second to the next while one workload ran, which ended the rest every 12-30 s (2026-11-28).
PULSE_FACTOR = 2.0
PULSE_SHARE = 0.3
PULSE_MIN_OPS = 10.0


class Rest:
    def __init__(self, window_s: float, rest_window_s: float) -> None:
        self.window_s = window_s
        # 0, or not longer than the window: never rest
        self.rest_window_s = rest_window_s if rest_window_s > window_s else 0.0
        self.calm = 0            # windows in a row in which every device was calm
        self.woken = threading.Event()   # set by a command: the loop plans its wait again
        self.woke: str | None = None     # why the last rest ended early (Pulse.moved)

    @property
    def resting(self) -> bool:
        return bool(self.rest_window_s) and self.calm >= CALM_WINDOWS

    def next_window_s(self) -> float:
        """How long the next window is to be."""
        return self.rest_window_s if self.resting else self.window_s

    def observe(self, calm: Iterable[bool], complete: bool = True) -> None:
        """One window's decisions (calm or not, one for each device). `complete`: every
        device decided (none failed, the probe was read)."""
        if complete and all(calm):
            self.calm += 1
        else:
            self.calm = 0

    def wait(self, stop: threading.Event, since: float,
             pulse: Callable[[], str | None] | None = None) -> float | None:
        """Wait out the window that began at `since` (time.monotonic()); a command that ends
        the rest shortens the wait to an ordinary window's. At rest, `pulse` is asked every
        window_s whether the disks moved (Pulse.moved): if so the rest ends and the window
        with it. Returns when the window ends (the next one's start), or None once `stop` is
        set (whoever sets it sets `woken`)."""
        tick = since      # the rest's first reading at once: its first rate a window_s later
        while not stop.is_set():
            due = since + self.next_window_s()
            now = time.monotonic()
            if due <= now:
                return due
            if not (self.resting and pulse):
                self.woken.wait(due - now)
                self.woken.clear()
                continue
            if tick <= now:
                tick = now + self.window_s
                why = pulse()
                if why:
                    self.calm = CALM_WINDOWS - AFTER_PULSE
                    self.woke = why
                    return now
                continue
            self.woken.wait(min(due, tick) - now)
            self.woken.clear()
        return None

    def disturb(self) -> None:
        """An administrator's command: ordinary windows again, from now."""
        self.calm = 0
        self.woken.set()


@dataclass(frozen=True)
class Reading:
    t: float                     # time.monotonic()
    ops: int                     # requests completed, read and written
    reads: int
    bytes: int


def read_diskstats(path: str, names: set[str]) -> dict[str, tuple[int, int, int]]:
    """(requests, reads, bytes) completed so far of each named disk in /proc/diskstats."""
    out = {}
    with open(path) as f:
        for line in f:
            parts = line.split(None, 10)
            if len(parts) > 9 and parts[2] in names:
                reads, writes = int(parts[3]), int(parts[7])
                out[parts[2]] = (reads + writes, reads, (int(parts[5]) + int(parts[9])) * 512)
    return out


Rate = tuple[float, float, float]   # requests a second, share of reads, bytes a second


class Pulse:
    """The disks' rates between readings of /proc/diskstats, at rest: moved() says which disk
    changed pace against the last window (`before`: the window's rates), seen in two readings
    in a row. None: none did, or nothing to compare yet."""

    def __init__(self, path: str = "/proc/diskstats",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self.clock = clock
        self.last: dict[str, Reading] = {}
        self.off: dict[str, str] = {}      # how the disk's last reading was off its window

    def forget(self) -> None:
        """Out of the rest: the next rest takes its own readings."""
        self.last, self.off = {}, {}

    def moved(self, names: Iterable[str], before: dict[str, Rate]) -> str | None:
        try:
            counts = read_diskstats(self.path, set(names))
        except (OSError, ValueError):   # unreadable: the rest windows alone judge
            return None
        now = self.clock()
        why = None
        for name, (ops, reads, nbytes) in counts.items():
            was = self.last.get(name)
            self.last[name] = Reading(now, ops, reads, nbytes)
            ref = before.get(name)
            if was is None or now <= was.t or ref is None:
                continue
            dt = now - was.t
            d_ops = ops - was.ops
            rate = (d_ops / dt, (reads - was.reads) / d_ops if d_ops > 0 else 0.0,
                    (nbytes - was.bytes) / dt)
            off = _off(ref, rate)
            again = off is not None and self.off.get(name, "").split(":")[0] == off.split(":")[0]
            self.off[name] = off or ""
            if again and why is None:
                assert off is not None
                why = f"{name}: {off.split(':', 1)[1]} in two readings"
        return why


def _off(ref: Rate, now: Rate) -> str | None:
    """How one reading is off the window's rates, as "KIND:text" (KIND: what moved and which
    way), None when it is within them."""
    if max(ref[0], now[0]) < PULSE_MIN_OPS:
        return None
    for what, x, y in (("requests", ref[0], now[0]), ("bytes", ref[2], now[2])):
        if y > PULSE_FACTOR * x or x > PULSE_FACTOR * y:
            way = "up" if y > x else "down"
            return f"{what}-{way}:{what} a second {y:.4g} against {x:.4g} in the last window"
    if min(ref[0], now[0]) >= PULSE_MIN_OPS and abs(ref[1] - now[1]) > PULSE_SHARE:
        way = "up" if now[1] > ref[1] else "down"
        return f"share-{way}:a share of reads {now[1]:.2f} against {ref[1]:.2f} in the last window"
    return None


__all__ = ["CALM_WINDOWS", "Pulse", "Rest", "read_diskstats"]
