"""The requests in flight, counted by the real probe on a device whose requests are held (root).

A request an elevator holds past a window counts in Little's law only when it completes; the
probe's in-flight count sees it before (agent/ioaz/probe/in_flight.py). Held for real here: a
loop device backed by a file on a frozen ext4 (fsfreeze) cannot complete a write, so fio's 16
writes stay in flight, exactly 16, until the file system thaws.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import need_root, need_schedulers, need_tool
from ioaz.classify.classes import bios_held_through, bios_in_flight
from ioaz.classify.features import compute_features
from ioaz.probe.bpf_source import BpfSource
from ioaz.probe.sampler import SamplePlan
from ioaz.probe.snapshot import DeviceSnapshot

pytestmark = pytest.mark.root
DEPTH = 16
RUNTIME_S = 5


@pytest.fixture
def frozen_disk(make_loop) -> Iterator[tuple[str, Path]]:
    """A loop device (mq-deadline) backed by a file on an ext4 of another loop device; yields
    (its name, the mount point fsfreeze freezes). Always thawed and taken apart after."""
    for tool in ("mkfs.ext4", "fsfreeze", "fio"):
        need_tool(tool)
    outer = make_loop(256)
    subprocess.run(["mkfs.ext4", "-q", f"/dev/{outer}"], check=True)
    mnt = Path(tempfile.mkdtemp(prefix="ioaz-freeze-"))
    subprocess.run(["mount", f"/dev/{outer}", str(mnt)], check=True)
    inner = None
    try:
        backing = mnt / "inner.img"
        with open(backing, "wb") as f:
            f.truncate(64 << 20)
        inner = subprocess.run(["losetup", "-f", "--show", str(backing)], check=True,
                               capture_output=True, text=True).stdout.strip()
        name = os.path.basename(inner)
        need_schedulers(name, "mq-deadline")
        Path(f"/sys/block/{name}/queue/scheduler").write_text("mq-deadline")
        yield name, mnt
    finally:
        subprocess.run(["fsfreeze", "-u", str(mnt)], capture_output=True)
        if inner:
            subprocess.run(["losetup", "-d", inner], capture_output=True)
        # the loop device lets go of its file a moment after it is last closed
        for _ in range(50):
            if subprocess.run(["umount", str(mnt)], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        else:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        mnt.rmdir()


def writer(dev: str, *extra: str) -> subprocess.Popen:
    """fio keeping DEPTH random 4 KiB writes in flight for RUNTIME_S. It ends by itself, once
    the file system has thawed: its job process leaves fio's session (setsid), so a kill of
    the fio started here would leave the job writing, and the device busy."""
    return subprocess.Popen(["fio", "--name=held", f"--filename=/dev/{dev}", "--rw=randwrite",
                             "--bs=4k", "--direct=1", "--ioengine=libaio", f"--iodepth={DEPTH}",
                             "--size=32m", "--time_based", f"--runtime={RUNTIME_S}", *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen) -> None:
    _, err = proc.communicate(timeout=RUNTIME_S + 30)
    assert proc.returncode == 0, f"fio failed: {err}"


def touch(dev: str) -> None:
    """One read, so the probe knows the device before the idle reads."""
    subprocess.run(["dd", f"if=/dev/{dev}", "of=/dev/null", "bs=4k", "count=1", "iflag=direct"],
                   check=True, capture_output=True)


def held_writes(src: BpfSource, dev: str, mnt: Path
                ) -> tuple[DeviceSnapshot, DeviceSnapshot]:
    """From an idle disk, fio's writes, then two snapshots 0.5 s apart while the file system
    under `dev` is frozen: both count the held writes, and nothing completed between them."""
    snap = lambda: src.read([dev])[dev]  # noqa: E731
    touch(dev)
    snap()
    assert snap().in_flight == [0, 0], "idle"
    proc = writer(dev)
    try:
        deadline = time.monotonic() + 15
        while snap().completed[1] < 1000 and time.monotonic() < deadline:
            assert proc.poll() is None, "fio ended before writing"
            time.sleep(0.1)
        subprocess.run(["fsfreeze", "-f", str(mnt)], check=True)
        try:
            time.sleep(0.5)   # the writes already in the loop worker complete, fio fills up
            a = snap()
            time.sleep(0.5)
            b = snap()
        finally:
            subprocess.run(["fsfreeze", "-u", str(mnt)], check=True)
    finally:
        finish(proc)
    assert b.completed[1] == a.completed[1], "the frozen file system completed a write"
    assert a.in_flight is not None and a.in_flight == b.in_flight
    # The 16 held, exactly (before the kernel's counts were read ahead of the maps, at times 32:
    # probe/in_flight.py)
    assert a.in_flight is not None and a.in_flight[0] == 0 and a.in_flight[1] == DEPTH, a
    return a, b


def test_requests_held_through_a_window_are_counted_before_they_complete(frozen_disk):
    need_root("loading BPF")
    dev, mnt = frozen_disk
    with BpfSource() as src:
        a, b = held_writes(src, dev, mnt)
        f = compute_features(a, b)
        assert a.in_flight is not None and f.in_flight == tuple(a.in_flight)
        # Little's law, the window's own depth: no completion, no depth; held through it, 16
        assert bios_in_flight(f, read=False) == 0
        assert bios_held_through(f, read=False) == a.in_flight[1]
        # Thawed, fio done: the held writes completed and were taken off
        after = src.read([dev])[dev].in_flight
        assert after == [0, 0], (a.in_flight, after)


def test_the_sampled_probe_counts_them_while_it_sees_every_request(frozen_disk):
    """As ioazd runs the probe: sampled, but every period full on a quiet machine."""
    need_root("loading BPF")
    dev, mnt = frozen_disk
    plan = SamplePlan(0.2, period_s=0.5, warmup_s=0.05, full_below_iops=1e9)
    with BpfSource(sample=plan) as src:
        time.sleep(1.2)   # the first period is sampled, then full ones count
        held_writes(src, dev, mnt)
        assert src.sampler is not None and src.sampler.error is None
        assert src.sampler.full_periods >= 2


def test_reads_taken_while_requests_complete_leave_no_phantom_in_flight(make_loop):
    """Read many times over while 16 requests complete at a time, then idle: none in flight.
    The kernel's completion counts were read after the probe's maps, so a burst completing
    between the two reads counted as missed, took the least count of the minute down, and the
    idle disk read that many in flight until it was forgotten (in_flight.py)."""
    need_root("loading BPF")
    need_tool("fio")
    dev = make_loop(64)
    with BpfSource() as src:
        touch(dev)
        src.read([dev])
        proc = subprocess.Popen(["fio", "--name=busy", f"--filename=/dev/{dev}",
                                 "--rw=randrw", "--bs=4k", "--direct=1", "--ioengine=libaio",
                                 f"--iodepth={DEPTH}", "--time_based", "--runtime=3"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        reads = 0
        try:
            while proc.poll() is None:
                src.read([dev])
                reads += 1
        finally:
            finish(proc)
        time.sleep(0.5)
        idle = src.read([dev])[dev]
    assert reads > 100, f"only {reads} reads while fio ran"
    assert idle.completed[0] > 1000 and idle.completed[1] > 1000, idle.completed
    assert idle.in_flight == [0, 0], (idle.in_flight, f"after {reads} reads")
