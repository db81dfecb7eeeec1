"""Trace replay: both formats, open-loop timing, per-process results, and a one-hour trace in
bounded memory."""
from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from dataclasses import astuple

import pytest
from ioaz.lab.main import main
from ioaz.sim.devices import FixedDevice, FixedParams, load_device
from ioaz.sim.engine import Simulator
from ioaz.sim.trace import TraceRecord, read_trace, write_trace_csv
from ioaz.sim.workloads import Workload

BLKPARSE = """\
  8,0    1        1     0.000000000  4162  Q  RS 1000 + 8 [fio]
  8,0    1        2     0.000001000  4162  G  RS 1000 + 8 [fio]
  8,0    1        3     0.000100000  4163  Q   W 5000 + 16 [kworker]
  8,0    1        4     0.000200000  4163  Q   D 9000 + 64 [fstrim]
  8,0    1        5     0.001000000  4162  C  RS 1000 + 8 [0]
  8,0    0        6     0.002000000  4164  Q  RA 20000 + 256 [cat]
CPU0 (sda):
 Reads Queued:           2,        132KiB
"""


def test_blkparse_text_queue_events_become_arrivals(tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "t.txt"
    p.write_text(BLKPARSE)
    recs = list(read_trace(p))
    # field by field: a compiled TraceRecord takes only a float for t, not pytest.approx
    assert [astuple(r) for r in recs] == [(0.0, 4162, 1000, 8, False, True),
                                          (pytest.approx(0.0001), 4163, 5000, 16, True, False),
                                          (pytest.approx(0.002), 4164, 20000, 256, False, True)]


def test_csv_roundtrip_and_errors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    recs = [TraceRecord(0.5, 1, 0, 8, False, True), TraceRecord(0.75, 2, 800, 16, True, False)]
    p = tmp_path / "t.csv"
    write_trace_csv(p, recs)
    got = list(read_trace(p))
    assert [(r.t, r.pid, r.sector, r.nsec, r.write, r.sync) for r in got] == \
        [(0.0, 1, 0, 8, False, True), (0.25, 2, 800, 16, True, False)]
    bad = tmp_path / "bad.csv"
    bad.write_text("time_s,pid,sector,sectors,op\n0.1,1,0,8,X\n")
    with pytest.raises(ValueError, match="bad.csv:2: op 'X'"):
        list(read_trace(bad))


def test_replay_is_open_loop_on_a_fixed_device() -> None:
    # ten requests 1 ms apart on a 2 ms device: the queue grows, the last one waits 9 ms
    recs = [TraceRecord(i * 0.001, 7, i * 1000, 8, False, True) for i in range(10)]
    sim = Simulator(FixedDevice(FixedParams(service_ms=2.0)), "fifo", Workload("t", []))
    sim.complete_log = []
    sim.replay(recs)
    res = sim.run()
    assert res.requests == 10 and sim.finished
    assert res.sim_s == pytest.approx(0.020)
    last = sim.complete_log[-1]
    assert last.complete - last.submit == pytest.approx(0.011)
    assert list(res.proc_mb_s) == ["7:trace-7"]


def test_cli_replays_a_trace(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "t.csv"
    write_trace_csv(p, [TraceRecord(i * 0.002, 1 + i % 3, (i * 7919 % 1000) * 2048, 8, False,
                                    True) for i in range(500)])
    assert main(["sim", "--trace", str(p), "-s", "fifo", "-s", "sstf", "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["requests"] for r in doc["results"]] == [500, 500]
    assert len(doc["results"][0]["proc_mb_s"]) == 3
    assert main(["sim", "--trace", str(tmp_path / "missing.csv")]) == 2


def test_one_hour_trace_replays_in_bounded_memory() -> None:
    """An hour at 5 requests/s (18,000 requests; tracemalloc makes more too slow for a unit
    test) read lazily: the peak is that of the requests in flight and one window, not of the
    trace."""
    def hour() -> Iterator[TraceRecord]:
        for i in range(3600 * 5):
            yield TraceRecord(i / 5, 1 + i % 8, (i * 104729 % 1_000_000) * 8, 8, i % 4 == 0,
                              i % 4 != 0)

    tracemalloc.start()
    sim = Simulator(load_device("ssd"), "deadline", Workload("hour", []), keep_windows=False)
    sim.replay(hour())
    res = sim.run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert res.requests == 18_000
    assert res.sim_s == pytest.approx(3599.8, abs=0.01)   # the last arrival plus its service
    assert peak < 500_000, f"peak {peak} bytes"
