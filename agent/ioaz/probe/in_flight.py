"""The read and write requests in flight on each disk, from the probe's in_flight counters.

Why: a window's depth is Little's law over the requests that completed in it, and a request
an elevator holds (mq-deadline's starved writes wait out their write_expire) counts only in
the window it completes in; until then the class reads shallow (classify/held.py). The probe
counts each request as it is made (block_getrq) and again, negatively, as it is merged away
or completes, so the sum is the number in flight at the instant of the read.

The sum drifts from the truth:
 - the requests in flight when counting began complete uncounted as made: it starts below
   zero by as many;
 - a completion the program does not see leaves a request in flight for good. The kernel's
   own counts of completed reads and writes (/proc/diskstats) say how many: where they run
   ahead of the probe's, the count is taken down by as many (unsampled only: BpfSource.read
   says why). They are read before the maps (the kernel counts a completion after the
   tracepoint), so they run ahead only by real misses. (They run behind where the probe sees
   a request twice, a write through the flush machinery, or none at all, with queue/iostats
   0: never taken up.)
 - a sampled probe counts only in full periods (sampler.py), and a request made in one and
   completed in a sampled one is never taken off.
A disk's count is its sum less the least sum read over the last HORIZON_S: exact when the
disk was idle at some read in that span, low when it was not (a queue that never drained is
then not counted, and the window's own depth stands); a lost completion the kernel did not
count reads high until the read before it is older than the span. The sampled probe's stops
and starts are an epoch (BpfSource.made_epoch): at a new one, a device number that changed or
kernel counts that went back (a device made again), the count starts again and the first
read is None.

Read after the maps, the kernel's counts took in the requests completed while the maps were
parsed, which the count then took as missed: the least of the minute fell by as many, and the
count read that much high for a minute after. On this project's host, 2,000-3,300 phantom
requests on an idle loop device after 3 s of 16-deep I/O read 10,000 times
(tests/integration/test_probe_in_flight.py), and before the cause was found, 45-61 reads beside
4 psync readers and 32 held writes where fio kept 16. The class still takes the count only
where the elevator holds requests past a window (observe.py), as a bound beside the depth over
its expiry, never as a depth of its own.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Hashable

from .snapshot import DeviceSnapshot

U64 = 1 << 64
# Longer than an elevator holds a request (ioazd's write_expire reached 40 s on a busy disk,
# docs/testbed.md), short enough that a lost completion is soon forgotten; the span the class's
# held depth averages over too (classify/held.py, KEPT_S).
HORIZON_S = 60.0


def _signed(v: int) -> int:
    """A sum of per-CPU u64 counters as the signed number it stands for."""
    v %= U64
    return v - U64 if v >= U64 // 2 else v


class _Seen:
    """One disk's reads under one epoch: for each direction, the counts that may yet be the
    least of the horizon, (t_ns, count) in rising order of both, and how far the kernel's
    completions were ahead of the probe's at the first read (None: not known)."""

    def __init__(self, epoch: Hashable, devno: tuple[int, int], lag: list[int] | None) -> None:
        self.epoch, self.devno, self.lag = epoch, devno, lag
        self.kernel_done: list[int] | None = None   # the kernel's count at the last read
        self.lows: tuple[deque[tuple[int, int]], deque[tuple[int, int]]] = (deque(), deque())


class InFlight:
    def __init__(self, horizon_s: float = HORIZON_S) -> None:
        self.horizon_ns = int(horizon_s * 1e9)
        self._seen: dict[str, _Seen] = {}

    def count(self, snaps: dict[str, DeviceSnapshot], epoch: Hashable | None,
              kernel: dict[str, DeviceSnapshot] | None = None) -> None:
        """Replace each snapshot's raw in_flight by the requests in flight, or None.
        epoch: the counting's epoch, the same before and after the maps were read; None
        when it changed during the read or the counting is off. kernel: the disks'
        /proc/diskstats read with the maps, whose completions the probe's must keep up with."""
        for name, s in snaps.items():
            raw = None if s.in_flight is None else [_signed(v) for v in s.in_flight]
            s.in_flight = None
            if raw is None or epoch is None:
                self._seen.pop(name, None)
                continue
            k = (kernel or {}).get(name)
            lag = None if k is None else [k.completed[d] - s.completed[d] for d in (0, 1)]
            seen = self._seen.get(name)
            # a device made again under the same number keeps the probe's
            # counters, not the kernel's: its counts going back say so
            fresh = seen is None or seen.epoch != epoch or seen.devno != (s.major, s.minor) \
                or (k is not None and seen.kernel_done is not None
                    and any(k.completed[d] < seen.kernel_done[d] for d in (0, 1)))
            if seen is None or fresh:
                seen = self._seen[name] = _Seen(epoch, (s.major, s.minor), lag)
            seen.kernel_done = None if k is None else k.completed[:2]
            if lag is not None and seen.lag is not None:
                # completions the kernel counted and the probe did not: no longer in flight
                raw = [n - max(0, now - then) for n, now, then in zip(raw, lag, seen.lag,
                                                                       strict=True)]
            for lows, n in zip(seen.lows, raw, strict=True):
                while lows and lows[-1][1] >= n:
                    lows.pop()
                lows.append((s.t_ns, n))
                while lows[0][0] < s.t_ns - self.horizon_ns:
                    lows.popleft()
            if not fresh:
                s.in_flight = [n - lows[0][1] for lows, n in zip(seen.lows, raw, strict=True)]
        for gone in set(self._seen) - set(snaps):
            del self._seen[gone]
