"""Device models against service times worked out by hand.

The test disk: 6000 RPM (a turn is 10 ms, the expected rotational delay 5 ms), one head, one zone
of 1000 sectors per track (51.2 MB/s: 8 sectors take 0.08 ms), 3000 cylinders, seeks of 1 ms
(one cylinder), 5 ms (a third of the stroke, 1000 cylinders) and 9 ms (full stroke), 0.1 ms
command overhead. Short seeks are a + b*sqrt(d) through (1, 1 ms) and (1000, 5 ms):
b = 4 / (sqrt(1000) - 1) = 0.130622 ms, a = 0.869378 ms.
"""
from __future__ import annotations

import pytest
from ioaz.sim.devices import (
    HDD,
    RAID,
    SSD,
    FixedDevice,
    FixedParams,
    HDDParams,
    RAIDParams,
    SSDParams,
    load_device,
    model_names,
)
from ioaz.sim.request import Request

MS = 1e-3


def disk(**kw: object) -> HDD:
    p = {"capacity_gb": 1.536, "rpm": 6000, "heads": 1, "zones": 1, "rate_outer_mb_s": 51.2,
             "rate_inner_mb_s": 51.2, "seek_t2t_ms": 1.0, "seek_avg_ms": 5.0, "seek_full_ms": 9.0,
             "overhead_ms": 0.1, "iface_mb_s": 409.6, "queue_depth": 1, "cache_segments": 0}
    p.update(kw)
    return HDD(HDDParams(**p))  # type: ignore[arg-type]


def rd(sector: int, nsec: int = 8, write: bool = False) -> Request:
    return Request("r", 1, sector, nsec, write, True, 0.0)


def test_geometry_of_the_test_disk() -> None:
    d = disk()
    assert d.cylinders == 3000
    assert d.spt == [1000]
    assert d.capacity_sectors == 3_000_000
    assert d.cylinder_of(100_000) == 100


def test_seek_curve_points() -> None:
    d = disk()
    assert d.seek_time(0) == 0.0
    assert d.seek_time(1) == pytest.approx(1.0 * MS)
    assert d.seek_time(100) == pytest.approx(2.175596 * MS, abs=1e-9)   # 0.869378 + 0.130622*10
    assert d.seek_time(1000) == pytest.approx(5.0 * MS)
    assert d.seek_time(2000) == pytest.approx(7.001 * MS, abs=1e-6)     # 5 + 4*1000/1999
    assert d.seek_time(2999) == pytest.approx(9.0 * MS)


def test_random_then_sequential_then_long_access() -> None:
    d = disk()
    # head at sector 0 (cylinder 0); 100 cylinders away: 0.1 + 2.175596 + 5 + 0.08 ms
    assert d.access(rd(100_000), 0.0) == pytest.approx(7.355596 * MS, abs=1e-9)
    # continues exactly where the head stopped: overhead and transfer only
    assert d.access(rd(100_008), 0.01) == pytest.approx(0.18 * MS, abs=1e-9)
    # cylinder 100 -> 2999: 2899 cylinders, seek 5 + 4*1899/1999 = 8.7999 ms
    assert d.access(rd(2_999_000), 0.02) == pytest.approx(13.979900 * MS, abs=1e-9)


def test_zoned_transfer_rate() -> None:
    # two zones: 1000 then 500 sectors per track (51.2 and 25.6 MB/s)
    d = disk(zones=2, rate_inner_mb_s=25.6, capacity_gb=1.152)
    assert d.spt == [1000, 500]
    assert d.transfer_time(0, 100) == pytest.approx(1.0 * MS)          # 100 / (1000 * 100/s)
    assert d.transfer_time(d.zone_lba[1], 100) == pytest.approx(2.0 * MS)
    assert d.sectors_per_s(d.capacity_sectors - 1) == pytest.approx(50_000)


def test_read_cache_hit_and_minimum_prefetch() -> None:
    d = disk(cache_segments=2, min_prefetch_kb=64, max_prefetch_kb=64)
    t1 = d.access(rd(100_000), 0.0)
    # 8 sectors further are inside the 128-sector minimum prefetch: from cache, 0.1 ms
    # overhead + 4096 B at 409.6 MB/s (0.01 ms), no matter that time has passed
    assert d.access(rd(100_008), 1.0) == pytest.approx(0.11 * MS)
    # a read elsewhere must first wait for the prefetch (128 sectors = 1.28 ms) to finish
    t3 = d.access(rd(100_000 + 300_000), t1)
    assert t3 == pytest.approx(1.28 * MS + 0.1 * MS + d.seek_time(300) + 5 * MS + 0.08 * MS)
    assert d.cache_hits == 1


def test_a_segment_keeps_only_a_streams_newest_data() -> None:
    # One reader streams 2 MiB through a 1 MiB segment in 64 KiB reads, then reads the
    # stream's last 64 KiB and its first again: the last is still in the segment, the first
    # was overwritten and comes from the media (a seek back and a rotation), as on a drive
    # whose segments are its cache divided, not a cache that holds every stream whole.
    d = disk(cache_segments=4, segment_kb=1024, min_prefetch_kb=64, max_prefetch_kb=64)
    t = 0.0
    for i in range(32):
        t += d.access(rd(100_000 + i * 128, 128), t)
    t += 0.01
    assert d.access(rd(100_000 + 31 * 128, 128), t) == pytest.approx(0.1 * MS + 0.16 * MS)
    t += 0.01
    assert d.access(rd(100_000, 128), t) > 5 * MS


def test_writes_never_hit_the_cache() -> None:
    d = disk(cache_segments=2, min_prefetch_kb=64)
    d.access(rd(100_000), 0.0)
    t = d.access(rd(100_000, write=True), 1.0)
    assert t > 5 * MS   # seek back plus rotation: the drive's write cache is off (Carroll 4.4)


def test_command_queue_serves_shortest_seek_first() -> None:
    d = disk(queue_depth=4)
    done: list[str] = []
    events: list[tuple[float, object, object]] = []
    d.bind(lambda t, fn, arg: events.append((t, fn, arg)), lambda rq, t: done.append(rq.id))
    for rid, sector in (("far", 2_900_000), ("near", 10_000), ("mid", 1_000_000)):
        d.submit(Request(rid, 1, sector, 8, False, True, 0.0), 0.0)
    while events:
        events.sort(key=lambda e: e[0])
        t, fn, arg = events.pop(0)
        fn(t, arg)  # type: ignore[operator]
    # "far" was alone when it arrived and started at once; then nearest first from cylinder 2900
    assert done == ["far", "mid", "near"]


def test_ssd_service_time() -> None:
    s = SSD(SSDParams(read_us=80, write_us=30, channel_mb_s=250))
    assert s.service(rd(0, 8)) == pytest.approx(80e-6 + 4096 / 250e6)
    assert s.service(rd(0, 256, write=True)) == pytest.approx(30e-6 + 131072 / 250e6)


def test_raid0_mapping() -> None:
    r = RAID(RAIDParams(level="0", disks=4, stripe_kb=128, member={"capacity_gb": 1.0}))
    # unit 256 sectors: sector 5*256+10 is in unit 5 -> disk 1, stripe 1 -> 256 + 10 there
    assert r.plan(rd(5 * 256 + 10)) == [[(1, 256 + 10, 8, False)]]
    # 16 sectors across the unit boundary at 256: two pieces on disks 0 and 1
    assert r.plan(rd(248, 16)) == [[(0, 248, 8, False), (1, 0, 8, False)]]


def test_raid5_left_symmetric_parity_and_read_modify_write() -> None:
    r = RAID(RAIDParams(level="5", disks=4, stripe_kb=64, member={"capacity_gb": 1.0}))
    u = 128
    assert [r.parity_disk(s) for s in range(4)] == [3, 2, 1, 0]
    assert r.locate(0) == (0, 0) and r.locate(2) == (2, 0)
    assert r.locate(3) == (3, u)            # stripe 1: parity on 2, data starts on 3
    # a small write reads old data and parity, then writes both
    assert r.plan(rd(0, 8, write=True)) == [[(0, 0, 8, False), (3, 0, 8, False)],
                                            [(0, 0, 8, True), (3, 0, 8, True)]]
    # a full-stripe write needs no reads: three data units and the parity
    full = r.plan(rd(0, 3 * u, write=True))
    assert len(full) == 1 and sorted(d for d, *_ in full[0]) == [0, 1, 2, 3]


def test_raid10_writes_both_mirrors_reads_one() -> None:
    r = RAID(RAIDParams(level="1+0", disks=4, stripe_kb=128, member={"capacity_gb": 1.0}))
    assert r.plan(rd(256, 8, write=True)) == [[(2, 0, 8, True), (3, 0, 8, True)]]
    assert len(r.plan(rd(256, 8))[0]) == 1


def test_raid_completes_when_the_last_member_does() -> None:
    r = RAID(RAIDParams(level="0", disks=2, stripe_kb=4, member={"capacity_gb": 1.0}))
    events: list[tuple[float, object, object]] = []
    done: list[float] = []
    r.bind(lambda t, fn, arg: events.append((t, fn, arg)), lambda rq, t: done.append(t))
    r.submit(rd(0, 16), 0.0)  # 8 sectors on each disk, both start at sector 0
    assert len(events) == 2
    while events:
        events.sort(key=lambda e: e[0])
        t, fn, arg = events.pop(0)
        fn(t, arg)  # type: ignore[operator]
    assert len(done) == 1 and r.inflight == 0


def test_every_shipped_model_loads() -> None:
    names = model_names()
    assert {"carroll-hp72", "maxtor40", "wd500", "ssd", "raid0-carroll", "raid5-carroll",
            "raid10-carroll"} <= set(names)
    for n in names:
        assert load_device(n).capacity_sectors > 0
    assert isinstance(load_device("ssd"), SSD)
    assert load_device("raid5-carroll").members[0].p.rpm == 10000  # type: ignore[attr-defined]


def test_bad_parameters_fail_loudly() -> None:
    with pytest.raises(ValueError, match="unknown parameter"):
        load_device("wd500", spin=1)
    with pytest.raises(ValueError, match="not found"):
        load_device("no-such-disk")
    with pytest.raises(ValueError, match="RAID level"):
        RAID(RAIDParams(level="6"))


def test_fixed_device_takes_its_service_time() -> None:
    f = FixedDevice(FixedParams(service_ms=2.5))
    assert f.estimate(123) == pytest.approx(2.5 * MS)
