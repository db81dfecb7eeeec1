"""Safety: switch a busy device among fifo, vr, stream, mq-deadline and none for 40 s.

The VM (2 vCPUs, null_blk with two hardware queues of depth 2) runs random 4 KiB I/O with
32 in flight, a synchronous sequential reader and a synchronous random reader while the
scheduler changes every 150 ms and knobs are rewritten; rmmod is tried while vr is in use.
"""
from __future__ import annotations

import re

import pytest
import vmharness

pytestmark = pytest.mark.slow


def test_no_warning_bug_or_splat_in_dmesg(safety_boot: vmharness.Boot) -> None:
    assert safety_boot.finished, safety_boot.console[-3000:]
    for line in safety_boot.dmesg_excused():
        print(f"the emulator's own splat, not ioaz's (vmharness.EMULATOR_SPLAT): {line}")
    assert safety_boot.dmesg_problems() == []


def test_every_submitted_request_completed(safety_boot: vmharness.Boot) -> None:
    loads = safety_boot.values("loads")
    rand = dict(re.findall(r"(\w+) (\d+)", loads["rand:"]))
    assert int(rand["submitted"]) > 1000
    assert rand["submitted"] == rand["completed"] and rand["errors"] == "0", loads
    assert int(dict(re.findall(r"(\w+) (\d+)", loads["seq:"]))["reads"]) > 100
    assert int(dict(re.findall(r"(\w+) (\d+)", loads["randsync:"]))["reads"]) > 100
    assert loads["inflight"].split() == ["0", "0"]


def test_schedulers_switched_many_times(safety_boot: vmharness.Boot) -> None:
    sw = safety_boot.values("switching")
    assert int(sw["rounds"]) >= 13, sw     # 5 switches a round, 0.15 s apart
    assert not any("failed" in line for line in safety_boot.section("switching"))


def test_rmmod_refused_while_in_use_and_works_after(safety_boot: vmharness.Boot) -> None:
    assert safety_boot.values("switching")["busy_rmmod"] == "refused"
    unload = safety_boot.values("unload")
    assert unload["rmmod"] == "0" and unload["loaded"] == "no", unload
