"""The device's distance-to-service-time curve (Xu & Jiang, section 3.2) and the
stream scheduler's tunables fitted to it.

Xu & Jiang's calculate_service_time() predicts how long the disk takes to serve a request
`distance` sectors from the previous one; they fit it to measurements of their disk. We measure
it the same way: on a simulator model from the model itself (Device.estimate), on a real device
by timing O_DIRECT reads of 4 KiB at increasing distances from a just-read block. The kernel
module's stream flavour (kmod/ioaz_stream.c, sim stream-vr) uses a square-root curve with three
tunables, svc_min_us, svc_max_us and svc_full_sectors; `fit_sqrt` chooses them.
"""
from __future__ import annotations

import json
import math
import mmap
import os
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

SECTOR = 512


@dataclass
class Curve:
    device: str
    source: str                          # "model" | "measured"
    distances: list[int]                 # sectors
    service_s: list[float]               # median service time at each distance

    def to_dict(self) -> dict:
        return asdict(self)


def distances(capacity_sectors: int, points: int = 24) -> list[int]:
    """0, then log-spaced distances from 8 sectors to most of the device."""
    top = max(16, int(capacity_sectors * 0.9))
    out = [0]
    for i in range(points):
        d = int(round(8 * (top / 8) ** (i / max(1, points - 1))))
        d -= d % 8
        if d > out[-1]:
            out.append(d)
    return out


def from_model(device, name: str, points: int = 24) -> Curve:   # device: ioaz.sim Device
    ds = distances(device.capacity_sectors, points)
    return Curve(name, "model", ds, [float(device.estimate(d, 8)) for d in ds])


def origin(di: int, s: int, d: int, capacity_sectors: int) -> int:
    """Where sample `s` of distance number `di` starts: spread over the device, so that no
    sample's reads are in the cache an earlier one filled."""
    room = max(1, capacity_sectors - 16 - d)
    o = ((di * 7919 + s * 104729) * 4096) % room
    return o - o % 8


def measure(dev_path: str, capacity_sectors: int, points: int = 16, samples: int = 5,
            max_s: float = 20.0) -> Curve:
    """Time 4 KiB O_DIRECT reads `d` sectors after a read of their origin (so the head, or the
    device's state, starts from a known place). Origins move across the device so caches do
    not serve the second read; the median of `samples` per distance."""
    ds = distances(capacity_sectors, points)
    buf = mmap.mmap(-1, 4096)            # page-aligned, as O_DIRECT wants
    fd = os.open(dev_path, os.O_RDONLY | os.O_DIRECT)
    times: list[float] = []
    deadline = time.monotonic() + max_s
    try:
        for di, d in enumerate(ds):
            got: list[float] = []
            for s in range(samples):
                if time.monotonic() > deadline and got:
                    break
                o = origin(di, s, d, capacity_sectors)
                os.preadv(fd, [buf], o * SECTOR)
                t0 = time.perf_counter()
                os.preadv(fd, [buf], (o + d) * SECTOR)
                got.append(time.perf_counter() - t0)
            times.append(statistics.median(got))
    finally:
        os.close(fd)
        buf.close()
    return Curve(os.path.basename(dev_path), "measured", ds, times)


def simulate(device, name: str, points: int = 16, samples: int = 5,
             capacity_sectors: int | None = None) -> Curve:
    """`measure`'s reads on a simulator device model (ioaz.sim), one after the other with
    nothing between them: what the model says that measurement finds, read-ahead and cache
    included (`from_model` is the bare seek-and-rotation estimate). `capacity_sectors`: the
    size the measured device showed, so that both read at the same places."""
    from ..sim.request import Request
    cap = capacity_sectors or device.capacity_sectors
    ds = distances(cap, points)
    now = 0.0
    times: list[float] = []
    for di, d in enumerate(ds):
        got: list[float] = []
        for s in range(samples):
            o = origin(di, s, d, cap)
            now += device.access(Request(0, 1, o, 8, False, True, now), now)
            took = device.access(Request(1, 1, o + d, 8, False, True, now), now)
            now += took
            got.append(took)
        times.append(statistics.median(got))
    return Curve(name, "simulated measurement", ds, times)


def fit_sqrt(c: Curve) -> dict[str, int]:
    """svc_min_us, svc_max_us, svc_full_sectors of the kernel module's curve
    t(d) = min + (max - min) * sqrt(d / full) for d < full, max beyond, by least squares over
    the measured points (full searched among the measured distances)."""
    pts = [(d, t) for d, t in zip(c.distances, c.service_s, strict=True) if d > 0]
    if not pts:
        return {"svc_min_us": 0, "svc_max_us": 0, "svc_full_sectors": 1}
    t_min = min(t for _, t in pts)
    t_max = max(t for _, t in pts)
    best = (math.inf, pts[-1][0])
    for full, _ in pts:
        err = 0.0
        for d, t in pts:
            pred = t_max if d >= full else t_min + (t_max - t_min) * math.sqrt(d / full)
            err += (pred - t) ** 2
        best = min(best, (err, full))
    return {"svc_min_us": max(1, int(round(t_min * 1e6))),
            "svc_max_us": max(1, int(round(t_max * 1e6))),
            "svc_full_sectors": int(best[1])}


def write(c: Curve, path: str | Path) -> dict:
    """The curve and the fitted stream tunables as JSON (what `ioaz-lab calibrate` writes next
    to the dataset); returns the document."""
    doc = {"curve": c.to_dict(), "stream_tunables": fit_sqrt(c),
           "cite": "Xu & Jiang, Stream Scheduling, section 3.2"}
    Path(path).write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def tunables_beside(dataset: str | Path) -> dict[str, dict[str, int]]:
    """{"stream": its fitted tunables} from the curve file `ioaz-lab calibrate` wrote next to
    the dataset (DATASET.curve.json); {} when there is none or it has no fit (a model's curve
    with no distances). A curve file that cannot be read is an error, not silently nothing."""
    path = Path(f"{dataset}.curve.json")
    if not path.exists():
        return {}
    try:
        fit = json.loads(path.read_text())["stream_tunables"]
        knobs = {k: int(fit[k]) for k in ("svc_min_us", "svc_max_us", "svc_full_sectors")}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: not a curve file of ioaz-lab calibrate "
                         f"({type(e).__name__}: {e})") from e
    return {"stream": knobs} if knobs["svc_max_us"] > 0 else {}


def main(argv: list[str] | None = None) -> int:
    """`python -m ioaz.learn.curve /dev/sdX`: the measured curve as JSON on stdout, with the
    device's size (what the testbed's disk check compares with the simulator)."""
    import argparse
    import sys
    p = argparse.ArgumentParser(prog="python -m ioaz.learn.curve", description=main.__doc__)
    p.add_argument("device", help="a block device to read (read only, O_DIRECT)")
    p.add_argument("--points", type=int, default=16, help="distances (default 16)")
    p.add_argument("--samples", type=int, default=5, help="reads per distance (default 5)")
    p.add_argument("--max-s", type=float, default=300.0, help="time limit (default 300 s)")
    a = p.parse_args(argv)
    name = os.path.basename(os.path.realpath(a.device))
    try:
        with open(f"/sys/class/block/{name}/size") as f:
            n = int(f.read())
        c = measure(a.device, n, a.points, a.samples, a.max_s)
    except (OSError, ValueError) as e:
        print(f"curve: {a.device}: {e}", file=sys.stderr)
        return 2
    print(json.dumps({"capacity_sectors": n, **c.to_dict()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
