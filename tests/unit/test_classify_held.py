"""The depth over the elevator's expiry: requests it holds count toward the class's depth
although they complete windows later (classify/held.py)."""
from __future__ import annotations

import pytest
from fake_sysfs import fake_disks
from ioaz.classify.classes import Thresholds, classify
from ioaz.classify.held import KEPT_S, HeldDepth
from ioaz.classify.types import WindowFeatures
from ioaz.observe import Observer
from test_features import FakeSource, snap


def writers(avg_depth: float, held: tuple[float, float | None] | None = None
            ) -> WindowFeatures:
    """16 sequential writers of 512 KiB requests, avg_depth requests in flight."""
    f = WindowFeatures(device="sdx", window_s=1.0, iops=160.0, read_bytes_per_s=0.0,
                       write_bytes_per_s=80e6, read_ratio=0.0, seq_ratio=1.0, processes=1,
                       avg_depth=avg_depth, mean_size_bytes=512 * 1024.0, p50_latency_s=0.006,
                       p99_latency_s=10.0, merge_ratio=0.0, requests=160, read_depth=0.0,
                       class_processes=16)
    if held is not None:
        f.held_depth, f.held_read_depth = held
    return f


def test_the_held_depth_counts_for_the_class_only_where_it_is_deeper():
    t = Thresholds()   # deep from 3 bios a process
    # one writer served, fifteen waiting out their expiry: 2 requests complete in flight
    assert classify(writers(2.0), t).depth == "shallow"
    # over the expiry the fifteen's requests completed too: 64 in flight, 4 a process
    assert classify(writers(2.0, (64.0, 0.0)), t).depth == "deep"
    # the larger of the two: a held depth below the window's does not make it shallow
    assert classify(writers(64.0, (2.0, 0.0)), t).depth == "deep"
    # the class's own direction: reads held beside the writers are not the writers' depth
    assert classify(writers(2.0, (64.0, 64.0)), t).depth == "shallow"


def test_the_mean_is_over_the_newest_windows_that_cover_the_expiry():
    h = HeldDepth()
    assert h.over(10.0) is None                     # nothing yet
    h.add(1.0, 100.0, 0.0)
    assert h.over(10.0) is None                     # one window: its own depth is the mean
    for _ in range(9):
        h.add(1.0, 2.0, 0.0)
    assert h.over(10.0) == (pytest.approx(11.8), 0.0)   # (100 + 9 * 2) / 10
    assert h.over(5.0) == (pytest.approx(2.0), 0.0)     # only the last five
    assert h.over(1.0) is None        # an expiry within the window holds nothing past it
    assert h.over(0.0) is None        # kyber, none: no expiry at all
    # reads unknown in a window of the span: the reads' part is unknown
    h.add(1.0, 2.0, None)
    assert h.over(3.0) == (pytest.approx(2.0), None)
    # a window without a depth restarts the history
    h.add(1.0, None, None)
    h.add(1.0, 3.0, 1.0)
    assert h.over(10.0) is None


def test_the_history_is_kept_for_a_minute_and_the_expiry_read_only_when_needed():
    h = HeldDepth()
    asked = []

    def expiry() -> float:
        asked.append(1)
        return 600.0

    h.add(1.0, 5.0, 0.0)
    assert h.over(expiry) is None and asked == []    # one window: sysfs is not read
    for _ in range(200):
        h.add(1.0, 5.0, 0.0)
    assert sum(s for s, _, _ in h.recent) == pytest.approx(KEPT_S)
    assert h.over(expiry) == (pytest.approx(5.0), 0.0) and asked == [1]


class Expiry:
    """A fake block sysfs's elevator expiry, counting the reads."""

    def __init__(self, sysfs, seconds: float):
        self.sysfs, self.seconds, self.reads = sysfs, seconds, 0

    def __call__(self, name: str) -> float:
        self.reads += 1
        return self.seconds


def test_the_observer_keeps_sixteen_writers_deep_between_two_expiries(tmp_path):
    """The hundred-and-eighteenth run's writers under mq-deadline: two windows with every
    writer's requests completing (deep), then windows in which one writer's requests complete
    (in flight: 2 requests, shallow alone). With mq-deadline's 10 s write_expire the class
    stays deep; with an elevator that holds nothing past a window it reads shallow."""
    pids = {100 + i: 0 for i in range(16)}

    def at(t: int, lat_s: float, served: list[int]):
        for p in served:
            pids[p] += 50
        s = snap(t, writes=160 * t, wbytes=160 * t * 512 * 1024, bios=sum(pids.values()),
                 seq=sum(pids.values()), lat_sum=int(lat_s * 1e9), procs=dict(pids))
        s.lat_read_ns = 0
        return {"sdx": s}

    everyone, one = list(pids), [100]
    snaps, lat = [], 0.0
    for t in range(1, 8):
        lat += 64.0 if t <= 3 else 2.0      # in flight: 64 requests, then 2
        snaps.append(at(t, lat, everyone if t <= 3 else one))

    def run(expiry_s: float) -> tuple[list[str], Expiry]:
        kernel = fake_disks(tmp_path / str(expiry_s), "sdx")
        obs = Observer(FakeSource(snaps), Thresholds(), ["sdx"], kernel)
        obs.sysfs.expiry_s = Expiry(obs.sysfs, expiry_s)   # type: ignore[method-assign]
        obs.start()
        return [obs.step().features[0].workload_class.depth for _ in range(6)], \
            obs.sysfs.expiry_s

    deadline, reads = run(10.0)
    assert deadline == ["deep"] * 6
    assert reads.reads == 4       # asked only for the four windows that read shallow alone
    assert run(0.25)[0] == ["deep", "deep", "shallow", "shallow", "shallow", "shallow"]
