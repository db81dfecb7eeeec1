"""A calibration killed mid-run leaves its device changed; the next run puts it back first.

Calibration writes through the actuator with a state file, so SIGKILL is handled as a daemon
crash is: the originals are on disk before the first write, and the next `ioaz-lab calibrate`
restores them through the same recover() ioazd runs at start-up.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import need_tool
from ioaz.sysblock import BlockSysfs

BIN = Path(sys.executable).parent
SYSFS = BlockSysfs()


def calibrate(dev: str, state: Path, out: Path, *extra: str) -> list[str]:
    return [str(BIN / "ioaz-lab"), "calibrate", "--device", dev, "--quick", "--destructive",
            "--probe", "diskstats", "--state-dir", str(state), "--out", str(out), *extra]


def test_a_killed_calibration_is_restored_by_the_next_run(make_loop, tmp_path):
    need_tool("fio")
    dev = make_loop(128)
    # Originals a calibration must give back: a scheduler no candidate uses, and a knob of it.
    SYSFS.write(dev, "queue/scheduler", "kyber")
    SYSFS.write(dev, "queue/iosched/read_lat_nsec", "1234567")
    state = tmp_path / "state"
    run = subprocess.Popen(calibrate(dev, state, tmp_path / "a.csv", "--candidates", "deadline",
                                     "--seconds", "30"),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)   # its fio dies with it, as in a crash
    try:
        deadline = time.monotonic() + 120
        while SYSFS.scheduler(dev).active != "mq-deadline":
            assert run.poll() is None, run.stdout.read() if run.stdout else ""
            assert time.monotonic() < deadline, "calibration never switched the device"
            time.sleep(0.1)
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait(timeout=10)
    assert SYSFS.scheduler(dev).active == "mq-deadline"          # the crash left it changed
    saved = json.loads((state / "actuate-state.json").read_text())["devices"][dev]
    assert saved["scheduler"] == "kyber"
    assert saved["knobs"]["queue/iosched/read_lat_nsec"] == "1234567"

    nxt = subprocess.run(calibrate(dev, state, tmp_path / "b.csv", "--candidates", "nosuch"),
                         capture_output=True, text=True, timeout=120)
    assert f"{dev}: restored the settings a killed calibration left" in nxt.stderr, nxt.stderr
    assert SYSFS.scheduler(dev).active == "kyber"
    assert SYSFS.read(dev, "queue/iosched/read_lat_nsec") == "1234567"
    assert not (state / "actuate-state.json").exists()
    # then it went on as asked, and refused the candidate it was given
    assert nxt.returncode == 2 and "--candidates: nosuch: no such policy" in nxt.stderr
