"""`ioaz-lab record` on a real device, and the recorded trace replayed by the simulator."""
from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import fio_args, fio_totals, need_tool

LAB = str(Path(sys.executable).parent / "ioaz-lab")


def test_record_every_bio_then_replay_it(make_loop, tmp_path):
    need_tool("fio")
    dev = make_loop(512)
    trace = tmp_path / "trace.csv"
    rec = subprocess.Popen([LAB, "record", dev, "--seconds", "4", "-o", str(trace)],
                           stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)   # the recorder is attached before the workload starts
    fio = subprocess.run(fio_args(dev, rw="randrw", jobs=2, seconds=1.5, size_mb=512,
                                  extra=("--rwmixread=60",)),
                         capture_output=True, text=True, timeout=60)
    assert fio.returncode == 0, fio.stderr
    _, err = rec.communicate(timeout=60)
    assert rec.returncode == 0, err
    totals = fio_totals(fio.stdout)
    rows = list(csv.DictReader(trace.open()))
    reads = sum(1 for r in rows if r["op"] == "R")
    writes = sum(1 for r in rows if r["op"] == "W")
    # Every bio fio submitted, none lost, none invented (4k O_DIRECT: one bio per I/O).
    assert reads == totals["read_ios"] and writes == totals["write_ios"], (reads, writes, totals)
    pids = {r["pid"] for r in rows}
    assert len(pids) == 2
    times = [float(r["time_s"]) for r in rows]
    assert times == sorted(times) and times[-1] <= 4.0
    assert all(int(r["sectors"]) == 8 for r in rows)

    sim = subprocess.run([LAB, "sim", "--trace", str(trace), "--device", "carroll-hp72",
                          "-s", "deadline", "--json", "-"], capture_output=True, text=True,
                         timeout=300)
    assert sim.returncode == 0, sim.stderr
    out = json.loads(sim.stdout[sim.stdout.index("{"):])
    assert json.dumps(out).count(str(len(rows))) >= 1, "the replay must serve every request"


def test_record_names_a_bad_device():
    r = subprocess.run([LAB, "record", "nosuchdisk9", "--seconds", "1"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode != 0 and "nosuchdisk9" in r.stderr


@pytest.mark.parametrize("secs", ["0", "-3"])
def test_record_refuses_a_bad_duration(secs):
    r = subprocess.run([LAB, "record", "loop0", "--seconds", secs], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and "--seconds" in r.stderr
