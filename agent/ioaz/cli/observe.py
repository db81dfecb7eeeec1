"""`ioazctl observe`: a live, iostat-like view of each device's workload and IOAZ class.

Works without the daemon: it loads its own probe (or reads /proc/diskstats when it cannot).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TextIO

from ..classify.classes import ThresholdsError, load_thresholds
from ..classify.types import WindowFeatures
from ..observe import Observer
from ..probe import PROBE_CHOICES, open_source
from ..probe.sampler import DEFAULT_FRACTION, SamplePlan
from ..sysblock import BlockSysfs


class UsageError(ValueError):
    pass


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", "-d", action="append", metavar="DEV",
                   help="device to watch (e.g. sda, /dev/loop0); repeatable; default: every "
                        "disk with a scheduler")
    p.add_argument("--interval", "-i", default="1", metavar="S",
                   help="window length in seconds (default 1)")
    p.add_argument("--count", "-c", default=None, metavar="N",
                   help="stop after N windows (default: run until interrupted)")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                   help="one JSON line per device per window")
    p.add_argument("--sample", default=str(DEFAULT_FRACTION), metavar="F",
                   help="share of each interval the BPF probe counts when the disks are busy "
                        f"(default {DEFAULT_FRACTION}; 1: every request, dearer)")
    p.add_argument("--source", choices=PROBE_CHOICES, default="auto",
                   help="probe source (default: bpf, else bcc, else /proc/diskstats)")
    p.add_argument("--thresholds", metavar="FILE", help="class thresholds YAML "
                   "(default decision_matrices/thresholds.yaml)")


def parse_interval(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise UsageError(f"--interval {text!r}: not a number of seconds") from None
    if not 0.05 <= v <= 3600:
        raise UsageError(f"--interval {text!r}: must be between 0.05 and 3600 seconds")
    return v


def parse_sample(text: str, interval: float) -> SamplePlan:
    try:
        v = float(text)
    except ValueError:
        raise UsageError(f"--sample {text!r}: not a number") from None
    try:
        return SamplePlan.per_window(v, interval)
    except ValueError as e:
        raise UsageError(f"--sample {text!r}: {e}") from None


def parse_count(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        v = int(text)
    except ValueError:
        raise UsageError(f"--count {text!r}: not a whole number") from None
    if v < 1:
        raise UsageError(f"--count {text!r}: must be at least 1")
    return v


def parse_devices(names: list[str] | None, sysfs: BlockSysfs | None = None) -> list[str] | None:
    sysfs = sysfs or BlockSysfs()
    if not names:
        return None
    out = []
    for raw in names:
        name = raw.removeprefix("/dev/")
        if not name or "/" in name or not sysfs.exists(name):
            raise UsageError(f"--device {raw!r}: no such block device "
                             f"(see {sysfs.root / 'block'})")
        if name not in out:
            out.append(name)
    return out


def _fmt(v: float | None, scale: float = 1.0, digits: int = 1) -> str:
    return "-" if v is None else f"{v * scale:.{digits}f}"


HEADER = (f"{'device':<10} {'iops':>9} {'rMB/s':>8} {'wMB/s':>8} {'read%':>6} {'seq%':>5} "
          f"{'procs':>5} {'thrds':>5} {'depth':>6} {'sizeKiB':>7} {'p50ms':>7} {'p99ms':>7} "
          f"{'merge%':>6} class")


def format_row(f: WindowFeatures) -> str:
    cls = f.workload_class.full_key() if f.workload_class else "idle"
    if f.workload_class and f.workload_class.kept:
        cls += f" (kept: {f.workload_class.kept})"
    return (f"{f.device:<10} {f.iops:>9.0f} {f.read_bytes_per_s / 1e6:>8.1f} "
            f"{f.write_bytes_per_s / 1e6:>8.1f} {_fmt(f.read_ratio, 100, 0):>6} "
            f"{_fmt(f.seq_ratio, 100, 0):>5} {('-' if f.processes is None else f.processes):>5} "
            f"{('-' if f.threads is None else f.threads):>5} "
            f"{_fmt(f.avg_depth, 1, 1):>6} {_fmt(f.mean_size_bytes, 1 / 1024, 1):>7} "
            f"{_fmt(f.p50_latency_s, 1e3, 2):>7} {_fmt(f.p99_latency_s, 1e3, 2):>7} "
            f"{_fmt(f.merge_ratio, 100, 0):>6} {cls}")


def run(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    sysfs = BlockSysfs()
    try:
        interval = parse_interval(args.interval)
        count = parse_count(args.count)
        devices = parse_devices(args.device, sysfs)
        thresholds = load_thresholds(args.thresholds)
        sample = parse_sample(args.sample, interval)
    except (UsageError, ThresholdsError) as e:
        print(f"ioazctl observe: {e}", file=err)
        return 2
    try:
        source, why = open_source(args.source, sample, sysfs)
    except Exception as e:  # --source bpf and BPF unavailable
        print(f"ioazctl observe: {e}", file=err)
        return 1
    if why:
        print(f"ioazctl observe: warning: {why}", file=err)
    try:
        obs = Observer(source, thresholds, devices, sysfs)
        if not obs.start():
            print("ioazctl observe: no block device with a scheduler to watch", file=err)
            return 1
        n = 0
        next_t = time.monotonic() + interval
        while count is None or n < count:
            time.sleep(max(0.0, next_t - time.monotonic()))
            next_t += interval
            w = obs.step()
            for name in w.vanished:
                print(f"ioazctl observe: device {name} vanished; dropped", file=err)
            if devices is not None and not obs.watching:
                print("ioazctl observe: every requested device vanished", file=err)
                return 1
            if not args.json:
                print(f"\n{time.strftime('%H:%M:%S')}  source={source.name}", file=out)
                print(HEADER, file=out)
            for f in sorted(w.features, key=lambda x: x.device):
                print(json.dumps(f.observe_dict()) if args.json else format_row(f), file=out)
            out.flush()
            n += 1
    except KeyboardInterrupt:
        pass
    finally:
        source.close()
    return 0
