"""`ioaz-lab testbed run` stopped by SIGTERM (kill, a CI job's timeout) stops what it started:
the guest's qemu and the model disks' servers, and their sockets go. Before, Python's default
ended ioaz-lab at once and left all three running (docs/testbed.md, seventy-second run).

The qemu here is a stand-in on PATH that only sleeps, so no guest boots: what is tested is
ioaz-lab's own clean-up around a running qemu; the model disks are the real servers.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ioaz.testbed import image
from ioaz.testbed.errors import TestbedError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def built_image() -> image.Image:
    """The image only: no guest boots here, so neither the elevators nor the probe are built."""
    if os.geteuid() != 0:
        pytest.skip("needs root for the testbed image (mmdebstrap) and its disks: run "
                    "`make test` as root")
    try:
        return image.build()
    except TestbedError as e:
        pytest.fail(str(e))


def children(pid: int) -> set[int]:
    out = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(d.name))
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def socket_of(pid: int) -> Path | None:
    """A model disk server's socket, from its command line (--socket PATH)."""
    args = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    return Path(args[args.index("--socket") + 1]) if "--socket" in args else None


def test_sigterm_stops_the_guest_and_its_model_disks(
        built_image: image.Image, tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    qemu_pid = tmp_path / "qemu.pid"
    (fake / "qemu-system-x86_64").write_text(f"#!/bin/sh\necho $$ > {qemu_pid}\nexec sleep 300\n")
    (fake / "qemu-system-x86_64").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}",
           "PYTHONPATH": str(REPO / "agent")}
    lab = subprocess.Popen(
        [sys.executable, "-m", "ioaz.lab.main", "testbed", "run", "--disks", "model:wd500",
         "--path-credit-us", "350", "--results", str(tmp_path / "results"), "--timeout", "120",
         "--quiet", "--", "true"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    disks: set[int] = set()
    qemu = -1
    try:
        end = time.monotonic() + 60
        while not qemu_pid.exists() and lab.poll() is None and time.monotonic() < end:
            time.sleep(0.1)
        assert qemu_pid.exists(), f"the stand-in qemu never ran: {lab.communicate()}"
        time.sleep(0.5)
        qemu = int(qemu_pid.read_text())
        disks = children(lab.pid) - {qemu}
        assert disks, "no model disk server was running beside qemu"
        sockets = [socket_of(p) for p in disks]
        assert all(s is not None and s.exists() for s in sockets), sockets
        lab.send_signal(signal.SIGTERM)
        out, err = lab.communicate(timeout=60)
    finally:
        if lab.poll() is None:
            lab.kill()
        leftover = [p for p in {*disks, qemu} if alive(p)]
        for p in leftover:   # a failing run must not leave them to the next test
            os.kill(p, signal.SIGKILL)
    assert lab.returncode == 128 + signal.SIGTERM, (lab.returncode, out, err)
    assert "SIGTERM received, stopping" in err and "Traceback" not in err, err
    assert qemu not in leftover, "qemu still ran after ioaz-lab stopped"
    assert not [p for p in disks if p in leftover], "a model disk server still ran"
    assert not [s for s in sockets if s is not None and s.exists()], sockets
