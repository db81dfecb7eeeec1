"""The depth over the elevator's expiry: requests it holds count toward the class's depth
although they complete windows later (classify/held.py)."""
from __future__ import annotations

import subprocess

import pytest
from fake_sysfs import fake_disks
from ioaz.classify.classes import Thresholds, classify
from ioaz.classify.held import KEPT_S, HeldDepth
from ioaz.classify.types import WindowFeatures
from ioaz.observe import Observer
from test_features import FakeSource, snap


def writers(avg_depth: float, held: float | None = None) -> WindowFeatures:
    """16 sequential writers of 512 KiB requests, avg_depth requests in flight."""
    f = WindowFeatures(device="sdx", window_s=1.0, iops=160.0, read_bytes_per_s=0.0,
                       write_bytes_per_s=80e6, read_ratio=0.0, seq_ratio=1.0, processes=1,
                       avg_depth=avg_depth, mean_size_bytes=512 * 1024.0, p50_latency_s=0.006,
                       p99_latency_s=10.0, merge_ratio=0.0, requests=160, read_depth=0.0,
                       class_processes=16)
    f.held_bios = held
    return f


def test_the_held_bios_count_for_the_class_only_where_they_are_more():
    t = Thresholds()   # deep from 3 bios a process
    # one writer served, fifteen waiting out their expiry: 2 requests complete in flight
    assert classify(writers(2.0), t).depth == "shallow"
    # over the expiry the fifteen's requests completed too: 64 bios in flight, 4 a process
    assert classify(writers(2.0, 64.0), t).depth == "deep"
    # the larger of the two: held bios below the window's do not make it shallow
    assert classify(writers(64.0, 2.0), t).depth == "deep"


def test_the_mean_is_over_the_expiry_and_the_windows_of_the_class_direction():
    h = HeldDepth()
    assert h.over(10.0, False) is None                  # nothing yet
    h.add(1.0, 100.0, 0.0, 100.0)
    assert h.over(10.0, False) is None                  # one window: its own depth is the mean
    for _ in range(9):
        h.add(1.0, 2.0, 0.0, 2.0)
    assert h.over(10.0, False) == pytest.approx(11.8)   # (100 + 9 * 2) / 10
    assert h.over(5.0, False) == pytest.approx(2.0)     # only the last five
    assert h.over(1.0, False) is None     # an expiry within the window holds nothing past it
    assert h.over(0.0, False) is None     # kyber, none: no expiry at all
    # the reads: no window had any, so they say nothing
    assert h.over(10.0, True) is None
    # windows of readers before the writers came do not dilute the writers' mean
    r = HeldDepth()
    for _ in range(5):
        r.add(1.0, 3.0, 3.0, 0.0)
    for bios in (60.0, 60.0, 8.0, 8.0):
        r.add(1.0, bios, 0.0, bios)
    assert r.over(10.0, False) == pytest.approx(34.0)   # the four writer windows
    assert r.over(10.0, True) == pytest.approx(3.0)     # the five reader windows
    # a direction's trickle (par-read's 0.03 bios of writes in flight) is not its window
    p = HeldDepth()
    for _ in range(4):
        p.add(1.0, 3.28, 3.25, 0.03)
    for bios in (60.6, 114.6, 112.1, 68.2, 7.7, 7.7):
        p.add(1.0, bios, 0.0, bios)
    assert p.over(10.6, False) == pytest.approx(371.0 / 6, rel=1e-3)
    # both directions: every window that had any
    assert r.over(10.0, None) == pytest.approx((5 * 3.0 + 136.0) / 9)
    # a source that cannot split the directions: the whole
    w = HeldDepth()
    w.add(1.0, 10.0)
    w.add(1.0, 20.0)
    assert w.over(5.0, False) == pytest.approx(15.0)
    # a window without a depth restarts the history
    w.add(1.0, None)
    w.add(1.0, 3.0)
    assert w.over(10.0, False) is None


def test_the_history_is_kept_for_a_minute_and_the_expiry_read_only_when_needed():
    h = HeldDepth()
    asked = []

    def expiry() -> float:
        asked.append(1)
        return 600.0

    h.add(1.0, 5.0, 0.0, 5.0)
    assert h.over(expiry, False) is None and asked == []    # one window: sysfs is not read
    for _ in range(200):
        h.add(1.0, 5.0, 0.0, 5.0)
    assert sum(w[0] for w in h.recent) == pytest.approx(KEPT_S)
    assert h.over(expiry, False) == pytest.approx(5.0) and asked == [1]


class Expiry:
    """A fake block sysfs's elevator expiry, counting the reads."""

    def __init__(self, sysfs, seconds: float):
        self.sysfs, self.seconds, self.reads = sysfs, seconds, 0

    def __call__(self, name: str) -> float:
        self.reads += 1
        return self.seconds


@pytest.fixture
def sixteen():
    """Sixteen live processes: the writers' ids, which the observer looks up in /proc."""
    procs = [subprocess.Popen(["sleep", "60"]) for _ in range(16)]
    yield [p.pid for p in procs]
    for p in procs:
        p.kill()
        p.wait()


def test_the_observer_keeps_sixteen_writers_deep_between_two_expiries(tmp_path, sixteen):
    """The hundred-and-nineteenth run's mix under mq-deadline: four windows of four readers
    (one read each in flight), two with all sixteen writers' requests completing (8 bios
    each in flight), then windows in which one writer's complete (2 bios in flight, the
    others held), and one in which the held requests expire and complete, 5 s late. With a
    10 s write_expire the class stays deep: the readers' windows do not dilute the writers'
    mean. With an elevator that holds nothing past a window it reads shallow but in the
    windows whose own completions are deep."""
    readers = sixteen[:4]
    cum = dict.fromkeys(sixteen, 0)
    snaps, lat, rlat = [], 0.0, 0.0

    def at(t: int, served: list[int], w_inflight: float, r_inflight: float):
        nonlocal lat, rlat
        for p in served:
            cum[p] += 50
        lat, rlat = lat + w_inflight + r_inflight, rlat + r_inflight
        s = snap(t, reads=100 * t, writes=160 * t, wbytes=160 * t * 512 * 1024,
                 bios=sum(cum.values()), seq=sum(cum.values()), lat_sum=int(lat * 1e9),
                 procs={p: n for p, n in cum.items() if n})
        s.lat_read_ns = int(rlat * 1e9)
        snaps.append({"sdx": s})

    at(1, readers, 0.0, 4.0)
    for t in (2, 3, 4):
        at(t, readers, 0.0, 4.0)
    for t in (5, 6):
        at(t, sixteen, 128.0, 0.0)
    for t in (7, 8):
        at(t, sixteen[:1], 2.0, 0.0)
    at(9, sixteen, 2.0 + 15 * 8 * 5.0, 0.0)   # the fifteen's 8 requests each, held 5 s
    at(10, sixteen[:1], 2.0, 0.0)

    def run(expiry_s: float) -> tuple[list[str], Expiry]:
        kernel = fake_disks(tmp_path / str(expiry_s), "sdx")
        obs = Observer(FakeSource(list(snaps)), Thresholds(), ["sdx"], kernel)
        obs.sysfs.expiry_s = Expiry(obs.sysfs, expiry_s)   # type: ignore[method-assign]
        obs.start()
        fs = [obs.step().features[0] for _ in range(9)]
        return [f"{f.workload_class.mode} {f.workload_class.depth}" for f in fs[3:]], \
            obs.sysfs.expiry_s

    deadline, reads = run(10.0)
    assert deadline == ["write deep"] * 6
    # asked only for the windows that read shallow alone with another window before them:
    # two of the readers' (whose mean over their own windows keeps them shallow), three of
    # the writers'
    assert reads.reads == 5
    assert run(0.25)[0] == ["write deep", "write deep", "write shallow", "write shallow",
                            "write deep", "write shallow"]


def test_requests_held_through_the_window_keep_the_writers_deep_after_a_switch(tmp_path,
                                                                              sixteen):
    """The hundred-and-twentieth run's second round: two deep windows of the sixteen writers,
    then mq-deadline holds all but one writer's requests and none of the held complete. The
    mean over the expiry falls window by window; the requests in flight at both ends of each
    window (probe/in_flight.py: 8 bios each of the fifteen held, as 512 KiB requests) keep the
    class deep. Under an elevator that holds nothing past a window they are not taken."""
    cum = dict.fromkeys(sixteen, 0)
    snaps, lat = [], 0.0

    def at(t: int, served: list[int], w_inflight: float, held: int | None):
        nonlocal lat
        for p in served:
            cum[p] += 50
        lat += w_inflight
        s = snap(t, reads=0, writes=160 * t, wbytes=160 * t * 512 * 1024,
                 bios=sum(cum.values()), seq=sum(cum.values()), lat_sum=int(lat * 1e9),
                 procs={p: n for p, n in cum.items() if n})
        s.lat_read_ns = 0
        s.in_flight = None if held is None else [0, held]
        snaps.append({"sdx": s})

    for t in (1, 2, 3):
        at(t, sixteen, 128.0, None)   # the counting not yet started (the sampler's first)
    for t in range(4, 12):
        at(t, sixteen[:1], 2.0, 15 * 8 + 2)

    def run(expiry_s: float) -> list[str]:
        kernel = fake_disks(tmp_path / str(len(list(tmp_path.iterdir()))), "sdx")
        obs = Observer(FakeSource(list(snaps)), Thresholds(), ["sdx"], kernel)
        obs.sysfs.expiry_s = Expiry(obs.sysfs, expiry_s)   # type: ignore[method-assign]
        obs.start()
        fs = [obs.step().features[0] for _ in range(len(snaps) - 1)]
        return [f.workload_class.depth for f in fs[2:]]

    assert run(10.0) == ["deep"] * 8
    assert run(0.25) == ["shallow"] * 8
    # without the count the mean over the expiry reads shallow from the fifth window on
    plain = [dict(s) for s in snaps]
    for s in plain:
        s["sdx"].in_flight = None
    snaps[:] = plain
    assert "shallow" in run(10.0)
