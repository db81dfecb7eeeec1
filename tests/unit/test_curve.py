"""The distance-to-service-time curve: measured on a device, and the same reads on a model."""
from __future__ import annotations

import json
from pathlib import Path

from ioaz.learn import curve
from ioaz.sim.devices import load_device


def test_the_same_reads_on_a_model_show_its_cache_seeks_and_rotation() -> None:
    dev = load_device("wd500")
    c = curve.simulate(dev, "wd500", points=16, samples=5)
    assert c.distances == curve.distances(dev.capacity_sectors, 16)
    t = dict(zip(c.distances, c.service_s, strict=True))
    # the block just read comes back from the drive's cache: command overhead and transfer
    assert t[0] < 0.0002
    # past the read-ahead the head turns: half a rotation (4.2 ms at 7200 rpm) at least
    far = [s for d, s in t.items() if d > 2000]
    assert all(s > 1 / 120 / 2 for s in far)
    # and the seek grows with distance: the full stroke costs far more than a short one
    assert max(far) == far[-1] > 2 * far[0]


def test_the_reads_go_to_the_same_places_on_a_device_of_the_same_size(tmp_path: Path) -> None:
    # the guest's disk may be a few sectors smaller than the model: the origins are taken
    # from the size the measured device showed, not the model's
    dev = load_device("wd500")
    cap = dev.capacity_sectors - 7
    o = [curve.origin(di, s, d, cap) for di, d in enumerate(curve.distances(cap, 8))
         for s in range(3)]
    assert all(x % 8 == 0 and 0 <= x < cap for x in o)
    assert len(set(o)) > len(o) // 2
    a = curve.simulate(load_device("wd500"), "wd500", 8, 3, capacity_sectors=cap)
    b = curve.simulate(load_device("wd500"), "wd500", 8, 3, capacity_sectors=cap)
    assert a.service_s == b.service_s


def test_the_command_line_refuses_a_missing_device_with_its_name(capsys) -> None:
    assert curve.main(["/dev/ioaz-no-such-disk"]) == 2
    assert "/dev/ioaz-no-such-disk" in capsys.readouterr().err


def test_the_written_document_carries_the_fitted_tunables(tmp_path: Path) -> None:
    c = curve.simulate(load_device("wd500"), "wd500", 8, 3)
    doc = curve.write(c, tmp_path / "c.json")
    assert json.loads((tmp_path / "c.json").read_text()) == doc
    st = doc["stream_tunables"]
    assert 0 < st["svc_min_us"] < st["svc_max_us"]
