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
when two readings in a row put a disk's requests or bytes a second outside what the calm
windows showed (every calm window since the last that was not) by more than PULSE_FACTOR the
same way, or its share of reads by more than PULSE_SHARE. A pace the decision has already seen
while it stayed calm is not news: a workload that swings (S's readers under bfq dip for two
seconds) wakes the rest once, and the windows after that wake hold the swing. But the calm
windows of another workload are no reference: when a disk's class changes and the new one
holds for PULSE_NEW_CLASS calm windows in a row, its rates start afresh from those windows
(a mix whose random readers, then writer, were both calm spanned every pace the next phase's
readers could show, and the rest slept through them: docs/testbed.md, "Ninety-ninth run").
A change the pulse does not see waits for the next rest window.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..probe.diskstats_source import read_diskstats

# Calm windows in a row before the rest: the hysteresis and a switch's cooldown and first
# settled windows all pass within this many ordinary windows.
CALM_WINDOWS = 10
# Ordinary windows after the pulse ended a rest, before the next rest if they are all calm:
# enough for a new workload's class to show (it then ends the calm), few where the pulse
# took a workload's own swing for a new one (S's readers under bfq fell from 117-254 to
# 27-82 requests a second for two seconds every 17-30 s in the testbed, 2026-11-28).
AFTER_PULSE = 3
# What ends a rest early (Pulse): a disk's rate of requests or bytes outside the calm
# windows' by this factor, or its share of reads by this much, in two readings in a row, where
# it moved at least PULSE_MIN_OPS requests a second. One second against the next was not
# enough: S's ten readers under bfq in the testbed moved between 81 and 283 requests a second
# from one second to the next while one workload ran, which ended the rest every 12-30 s; and
# against the last window alone, a rest entered after a dip woke when the readers came back
# (2026-11-28).
PULSE_FACTOR = 2.0
PULSE_SHARE = 0.3
PULSE_MIN_OPS = 10.0
# Calm windows in a row of a class other than the one a disk's rates describe before they
# describe it instead: two, as the pulse wants two readings; one window of another class is
# a flicker of the same workload (S's ten readers read as 8 and as 16+ processes).
PULSE_NEW_CLASS = 2


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
             pulse: Callable[[], str | None] | None = None,
             alive: tuple[Callable[[], None], float] | None = None) -> float | None:
        """Wait out the window that began at `since` (time.monotonic()); a command that ends
        the rest shortens the wait to an ordinary window's. At rest, `pulse` is asked every
        window_s whether the disks moved (Pulse.moved): if so the rest ends and the window
        with it. `alive`: (send, every_s), a sign of life sent at least every every_s while
        waiting (systemd's watchdog, whose WatchdogSec a rest window may outlast). Returns
        when the window ends (the next one's start), or None once `stop` is set (whoever sets
        it sets `woken`)."""
        tick = since      # the rest's first reading at once: its first rate a window_s later
        while not stop.is_set():
            due = since + self.next_window_s()
            now = time.monotonic()
            if due <= now:
                return due
            if not (self.resting and pulse):
                self._sleep(due - now, alive)
                continue
            if tick <= now:
                tick = now + self.window_s
                why = pulse()
                if why:
                    self.calm = CALM_WINDOWS - AFTER_PULSE
                    self.woke = why
                    return now
                continue
            self._sleep(min(due, tick) - now, alive)
        return None

    def _sleep(self, s: float, alive: tuple[Callable[[], None], float] | None) -> None:
        """Up to s seconds, less when a command wakes the loop or a sign of life is due."""
        if alive is not None:
            s = min(s, alive[1])
        self.woken.wait(s)
        self.woken.clear()
        if alive is not None:
            alive[0]()

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


Rate = tuple[float, float, float]   # requests a second, share of reads, bytes a second
Key = str | None                     # a window's class (WorkloadClass.full_key()), None: none


@dataclass(frozen=True)
class Envelope:
    """The lowest and highest of each rate over a disk's calm windows. The share of reads only
    from windows with PULSE_MIN_OPS requests a second or more (None before one): an idle
    window's share says nothing."""
    ops: tuple[float, float]
    nbytes: tuple[float, float]
    share: tuple[float, float] | None

    @classmethod
    def of(cls, rate: Rate) -> Envelope:
        share = (rate[1], rate[1]) if rate[0] >= PULSE_MIN_OPS else None
        return cls((rate[0], rate[0]), (rate[2], rate[2]), share)

    def widen(self, rate: Rate) -> Envelope:
        new = Envelope.of(rate)
        if self.share is None or new.share is None:
            share = self.share or new.share
        else:
            share = (min(self.share[0], rate[1]), max(self.share[1], rate[1]))
        return Envelope(_span(self.ops, rate[0]), _span(self.nbytes, rate[2]), share)


def _span(r: tuple[float, float], x: float) -> tuple[float, float]:
    return min(r[0], x), max(r[1], x)


class Pulse:
    """The disks' rates between readings of /proc/diskstats, at rest: moved() says which disk
    changed pace against its calm windows (calm_window(); unsettled() when a window was not
    calm), seen in two readings in a row. None: none did, or nothing to compare yet."""

    def __init__(self, path: str = "/proc/diskstats",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self.clock = clock
        self.last: dict[str, Reading] = {}
        self.off: dict[str, str] = {}      # how the disk's last reading was off its windows
        self.seen: dict[str, Envelope] = {}   # each disk's calm windows' rates
        self.seen_class: dict[str, Key] = {}  # ... and the class they were of
        # calm windows in a row of another class, and their rates: the disk's next envelope
        self.other: dict[str, tuple[Key, int, Envelope]] = {}

    def calm_window(self, rates: dict[str, Rate], classes: dict[str, Key] | None = None) -> None:
        """A window in which every disk was calm, with each disk's rates (and class: None, or
        a disk left out, is a window with none)."""
        for name, rate in rates.items():
            key = (classes or {}).get(name)
            was = self.seen.get(name)
            if was is None:
                self.seen[name], self.seen_class[name] = Envelope.of(rate), key
                continue
            self.seen[name] = was.widen(rate)
            if key == self.seen_class.get(name):
                self.other.pop(name, None)
                continue
            o = self.other.get(name)
            n, env = (o[1] + 1, o[2].widen(rate)) if o and o[0] == key else (1, Envelope.of(rate))
            if n >= PULSE_NEW_CLASS:    # another workload: its own windows are the reference
                self.seen[name], self.seen_class[name] = env, key
                self.other.pop(name, None)
            else:
                self.other[name] = (key, n, env)

    def unsettled(self) -> None:
        """A window that was not calm: what the windows before it showed is no reference."""
        self.seen, self.seen_class, self.other = {}, {}, {}

    def forget(self) -> None:
        """Out of the rest: the next rest takes its own readings."""
        self.last, self.off = {}, {}

    def moved(self, names: Iterable[str]) -> str | None:
        try:
            counts = read_diskstats(self.path, set(names))
        except (OSError, ValueError):   # unreadable: the rest windows alone judge
            return None
        now = self.clock()
        why = None
        for name, (ops, reads, nbytes) in counts.items():
            was = self.last.get(name)
            self.last[name] = Reading(now, ops, reads, nbytes)
            ref = self.seen.get(name)
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


def _off(ref: Envelope, now: Rate) -> str | None:
    """How one reading is off the calm windows' rates, as "KIND:text" (KIND: what moved and
    which way), None when it is within them."""
    if max(ref.ops[1], now[0]) < PULSE_MIN_OPS:
        return None
    for what, (lo, hi), y in (("requests", ref.ops, now[0]), ("bytes", ref.nbytes, now[2])):
        if y > PULSE_FACTOR * hi or lo > PULSE_FACTOR * y:
            way, x = ("up", hi) if y > hi else ("down", lo)
            return f"{what}-{way}:{what} a second {y:.4g} against {x:.4g} in the calm windows"
    if ref.share is not None and now[0] >= PULSE_MIN_OPS:
        lo, hi = ref.share
        if not lo - PULSE_SHARE <= now[1] <= hi + PULSE_SHARE:
            way, x = ("up", hi) if now[1] > hi else ("down", lo)
            return (f"share-{way}:a share of reads {now[1]:.2f} against {x:.2f} in the calm "
                    "windows")
    return None


__all__ = ["CALM_WINDOWS", "Envelope", "Pulse", "Rest", "read_diskstats"]
