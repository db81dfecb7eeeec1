"""The switch-stall benchmark runs end to end under real fio load and reports every pair."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import need_schedulers

pytestmark = [pytest.mark.root, pytest.mark.slow]


def test_bench_reports_a_stall_for_each_of_the_twelve_switches() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to create a loop device and switch its scheduler")
    if not shutil.which("fio") or not shutil.which("losetup"):
        pytest.skip("needs fio and losetup")
    need_schedulers(None, "bfq", "kyber", "mq-deadline")   # the bench's four
    out = subprocess.run([sys.executable, "-m", "ioaz.actuate.bench", "--rounds", "1",
                          "--settle", "0.1", "--no-idle", "--size-mb", "64", "--json"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    pairs = {(p["from"], p["to"]): p for p in res["fio"]}
    assert len(pairs) == 12
    assert all(0 < p["max_s"] < 5 for p in pairs.values())
    assert res["fio_read_iops"] and res["fio_read_iops"] > 1000  # the load was real
