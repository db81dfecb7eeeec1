"""Sampled probing: the bio-side programs attached for only part of every period.

Why: on a fast device the probe's two programs per request cost ~4% of the I/O rate (README,
Performance). A tracepoint with no program attached costs nothing, so the bio-side program
(block_bio_queue) is attached for `fraction` of each period and detached for the rest. What
the probe then measures is a ratio or a distribution (sequentiality, the submitting processes,
request sizes, latency percentiles), which a sample estimates; the counts (requests, bytes,
merges, time in queue) come exact from the kernel's own /proc/diskstats.

One period, with the globals of bpf/ioaz.bpf.c:

    attach | warm-up: counting=0 | counted: counting=1 | detach ...... | next period
             (stream table filled)   [lat_from, lat_until) of this slot

The warm-up fills each CPU's stream table, so a stream's first bio after the gap is judged by
the head its previous bio left, not called random for want of one. block_rq_complete (with
block_getrq, which counts the requests a counted period starts) is attached when the counted
part begins and records a request only if it was submitted in one of the last two counted
periods: an unbiased sample by submission time, whatever its latency. It rests only once every
request those periods started has completed (per-CPU slot counters), so none is missed. A
period is full instead (every bio counted, nothing detached) while the machine's disks are
quiet: see SamplePlan.full_below_iops.
"""
from __future__ import annotations

import ctypes
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..sysblock import BlockSysfs
from . import libbpf
from .bpf_object import ProbeObject
from .diskstats_source import read_diskstats

log = logging.getLogger("ioaz.probe")

# ioazd's default: 100 ms of every second counted (150 ms attached with the warm-up), at least
# 2,000 requests a window on a machine busy enough to be sampled. It halves the programs' time
# per request against 0.2 (kernel accounting, 44 against 81-86 ns); README, Performance.
DEFAULT_FRACTION = 0.1
# Toggled each period. The merge tracepoints stay detached when sampling: /proc/diskstats
# counts merges exactly, and every attach or detach patches the kernel's text (on all CPUs).
BIO_SIDE = ("on_bio_queue",)
# Attached in sampled periods: counts the requests each period starts; in full periods,
# with RQ_MERGE, the requests in flight (in_flight.py).
GETRQ = "on_getrq"
RQ_MERGE = "on_rq_merge"
# Attached while requests of a counted period may still complete; in a sampled period it is
# detached as soon as they all have (a tracepoint's program costs ~1% here even when it returns
# at once: README, Performance).
COMPLETE = "on_rq_complete"
U64_MAX = (1 << 64) - 1


@dataclass(frozen=True)
class SamplePlan:
    fraction: float          # of every period counted (1: always on, no sampling)
    period_s: float = 1.0
    warmup_s: float = 0.05   # longer than the gap between two bios of any stream worth seeing
    # Below this many requests per second (all disks together, the last period) every bio is
    # seen: there the probe costs under ~0.5% of one CPU, and a slow disk's few requests are
    # all its latency percentiles have.
    full_below_iops: float = 20000.0

    def __post_init__(self) -> None:
        if not 0 < self.fraction <= 1:
            raise ValueError(f"sample fraction {self.fraction}: expected 0 < fraction <= 1")
        if not 0.01 <= self.period_s <= 3600:
            raise ValueError(f"sample period {self.period_s} s: expected 0.01..3600")
        if self.fraction < 1 and self.counted_s + self.warmup_s > self.period_s:
            raise ValueError(f"sample fraction {self.fraction} of {self.period_s} s plus the "
                             f"{self.warmup_s} s warm-up does not fit in the period")
        if self.full_below_iops < 0:
            raise ValueError(f"full_below_iops {self.full_below_iops}: expected >= 0")

    @classmethod
    def per_window(cls, fraction: float, window_s: float) -> SamplePlan:
        """One period a window; a short window gets a quarter of itself as the warm-up."""
        return cls(fraction, period_s=window_s, warmup_s=min(0.05, window_s / 4))

    @property
    def sampled(self) -> bool:
        return self.fraction < 1

    @property
    def counted_s(self) -> float:
        return self.fraction * self.period_s


def completed_requests(path: str = "/proc/diskstats", sysfs: BlockSysfs | None = None) -> int:
    """Reads and writes completed so far on all whole disks (partitions are inside them).
    Read once a period by the sampler's thread, so it builds no snapshots: parsing whole ones
    made it most of what the sampler cost, more than ioazd's windows at rest (2026-11-28)."""
    names = set((sysfs or BlockSysfs()).devices())
    return sum(n for n, _, _ in read_diskstats(path, names).values())


class SlotCounts:
    """The requests each sampled period started and completed (map `slots`, per CPU)."""

    def __init__(self, obj: ProbeObject):
        self.fd = obj.map_fd("slots")
        self.ncpu = libbpf.check_int(libbpf.lib().libbpf_num_possible_cpus(), "possible CPUs")
        self._buf = ctypes.create_string_buffer(16 * self.ncpu)

    def reset(self, slot: int) -> None:
        key = ctypes.c_uint32(slot)
        zeros = ctypes.create_string_buffer(16 * self.ncpu)
        libbpf.check_int(libbpf.lib().bpf_map_update_elem(self.fd, ctypes.byref(key), zeros, 0),
                         f"reset slot {slot}")

    def drained(self, slot: int) -> bool:
        key = ctypes.c_uint32(slot)
        libbpf.check_int(libbpf.lib().bpf_map_lookup_elem(self.fd, ctypes.byref(key),
                                                          self._buf), f"read slot {slot}")
        v = memoryview(self._buf.raw).cast("Q")
        return sum(v[1::2]) >= sum(v[0::2])  # done >= started


def set_always_on(obj: ProbeObject) -> None:
    """Every bio counted, every completion recorded (the object's own defaults)."""
    obj.set_global("lat_from", 0, 0)
    obj.set_global("lat_until", U64_MAX, 0)
    obj.set_global("lat_from", 0, 1)
    obj.set_global("lat_until", 0, 1)
    obj.set_global("counting", 1)
    obj.set_global("track_slots", 0)
    obj.attach([COMPLETE, *BIO_SIDE, GETRQ, RQ_MERGE])
    obj.set_global("track_made", 1)   # after block_rq_complete: no request made uncompleted


def set_paused(obj: ProbeObject) -> None:
    """Nothing counted or recorded until the sampler's first counted period."""
    obj.set_global("counting", 0)
    obj.set_global("track_made", 0)
    for slot in (0, 1):
        obj.set_global("lat_until", 0, slot)
        obj.set_global("lat_from", 0, slot)


class Sampler:
    """Runs SamplePlan's periods on a thread until stop(). A period is sampled when the disks
    were busy in the last one, full (every bio counted) when they were not. On any error it
    falls back to always-on (exact, and dearer) and says so: a sampler that stopped silently
    would leave ioaz with no sequentiality, processes or latency at all."""

    def __init__(self, obj: ProbeObject, plan: SamplePlan,
                 clock: Callable[[], int] = time.monotonic_ns,
                 requests: Callable[[], int] = completed_requests,
                 slots: SlotCounts | None = None):
        self.obj, self.plan, self.clock, self.requests = obj, plan, clock, requests
        self.slots = slots if slots is not None else SlotCounts(obj)
        self.error: str | None = None
        self.periods = 0
        self.full_periods = 0
        self.drained_periods = 0   # sampled periods after which block_rq_complete rested
        # The requests in flight are counted in full periods only: a sampled one detaches
        # block_rq_complete, and a request made before and completed then is never taken off.
        # Odd while counting, moved on at every start and stop (in_flight.py).
        self.made_epoch = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ioaz-sampler", daemon=True)

    def start(self) -> Sampler:
        set_paused(self.obj)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _wait_until(self, t_ns: int) -> bool:
        """Sleep until the monotonic time t_ns; False when asked to stop."""
        return not self._stop.wait(max(0.0, (t_ns - self.clock()) / 1e9))

    def _run(self) -> None:
        try:
            self._periods()
        except Exception as e:  # noqa: BLE001 - any failure falls back, loudly
            self.error = f"{type(e).__name__}: {e}"
            log.warning("probe sampler failed (%s); the probe now runs always on", self.error)
            self.made_epoch += self.made_epoch % 2   # even: whatever was counted ends
            try:
                set_always_on(self.obj)
                self.made_epoch += 1   # counting every request from here
            except Exception as e2:  # noqa: BLE001
                log.error("probe: could not fall back to always on: %s", e2)

    def _count_made(self, on: bool) -> None:
        """Start or stop counting the requests in flight. Started, block_rq_complete is
        attached before block_getrq counts: a request counted as made must be seen to
        complete. Stopped, the epoch moves on before the count stops, so a reader that
        saw the same odd epoch around its read knows the count ran throughout."""
        if on == (self.made_epoch % 2 == 1):
            return
        if on:
            self.obj.attach([COMPLETE, GETRQ, RQ_MERGE])
            self.obj.set_global("track_made", 1)
            self.made_epoch += 1
        else:
            self.made_epoch += 1
            self.obj.set_global("track_made", 0)
            self.obj.detach([RQ_MERGE])

    def _periods(self) -> None:
        p, g = self.plan, self.obj.set_global
        period, warm, counted = (int(x * 1e9) for x in (p.period_s, p.warmup_s, p.counted_s))
        start = self.clock()
        slot = 0
        last_n, last_t = self.requests(), start
        warm_table = False   # bio-side programs attached since the last period
        # A slot is tracked while its requests are known by count (a sampled period), so
        # the rest can wait for them. set_paused() closed both latency windows, so neither
        # slot holds a request yet: zero counts make both tracked from the first period.
        # (Left untracked, the first period could not rest, and a sampler started for a
        # short while, as ioaz-lab bench's 1 s blocks do, would keep block_rq_complete
        # attached the whole time.)
        for s in (0, 1):
            self.slots.reset(s)
        tracked = [True, True]   # False after a full period: its requests were not counted
        g("track_slots", 1)
        while not self._stop.is_set():
            t0 = start + self.periods * period
            n, now = self.requests(), self.clock()
            rate = (n - last_n) / max((now - last_t) / 1e9, 1e-9)
            last_n, last_t = n, now
            full = self.periods > 0 and rate < p.full_below_iops
            self._count_made(full)
            self.obj.attach(BIO_SIDE)
            if not warm_table and not self._wait_until(t0 + warm):
                break
            # Open this slot's latency window; the other slot keeps the previous period's
            # requests still in flight. block_getrq first: a request it misses is one
            # allocated before lat_from, which the slot does not hold either.
            self.obj.attach([COMPLETE] if full else [COMPLETE, GETRQ])
            g("lat_until", 0, slot)
            self.slots.reset(slot)
            tracked[slot] = not full
            g("lat_from", self.clock(), slot)
            g("lat_until", U64_MAX, slot)
            g("counting", 1)
            stopping = not self._wait_until(t0 + period if full else t0 + warm + counted)
            if stopping:
                self._count_made(False)
            if not full or stopping:
                g("counting", 0)
                self.obj.detach((*BIO_SIDE, GETRQ))
            g("lat_until", self.clock(), slot)
            warm_table = full and not stopping
            slot ^= 1
            self.periods += 1
            self.full_periods += full
            if stopping:
                break
            behind = (self.clock() - start) // period - self.periods
            if behind > 0:  # a stalled thread skips periods, never bursts to catch up
                self.periods += behind
            if full:
                continue
            next_t = start + self.periods * period
            if tracked[0] and tracked[1] and self._drain(next_t):
                self.obj.detach([COMPLETE])
                self.drained_periods += 1
            if not self._wait_until(next_t):
                break

    def _drain(self, until_ns: int) -> bool:
        """Wait, polling ever less often, until every request of both periods has completed
        (True), or until `until_ns` or stop() (False)."""
        pause = 0.001
        while not (self.slots.drained(0) and self.slots.drained(1)):
            if self.clock() + pause * 1e9 >= until_ns or self._stop.wait(pause):
                return False
            pause = min(pause * 2, 0.05)
        return True
