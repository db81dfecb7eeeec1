"""The switch lag of a mix read back from ioazd's --verbose log: when the class, the verdict and
the policy in force caught up with each phase."""
from __future__ import annotations

import json
from pathlib import Path

from ioaz.lab.report import Report
from ioaz.lab.testbench import bench_report, lag


def _log(tmp_path: Path) -> Path:
    """Two 10 s phases on sdb: the class follows 3 s into the second, the verdict with it,
    the policy 3 windows later (hysteresis); sda's windows and a switch line are noise."""
    lines = ["0.50 x INFO {\"event\": \"start\"}", "2.00 @@ workload start wall=1000.000"]
    for s in range(1, 21):
        second = s > 13
        klass = {"processes": "4" if second else "1", "pattern": "sequential",
                 "mode": "read", "depth": "shallow"}
        verdict = "anticipatory" if second else "fcfs"
        policy = "anticipatory" if s > 16 else "fcfs"
        for dev in ("sda", "sdb"):
            ev = {"event": "window", "device": dev, "class": klass if dev == "sdb" else {},
                  "verdict": verdict, "policy": policy, "action": "hold", "reason": "x"}
            lines.append(f"{2 + s:.2f} x DEBUG {json.dumps(ev)}")
    lines.append('19.00 x INFO {"event": "switch", "device": "sdb", "to": "bfq"}')
    p = tmp_path / "x.ioazd.log"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_phase_lags_split_the_delay_into_class_verdict_and_damping(tmp_path: Path) -> None:
    wins = lag.windows(_log(tmp_path), "sdb")
    assert len(wins) == 20 and wins[0].t == 1.0 and wins[0].klass == "1/sequential/read/shallow"
    a, b = lag.phase_lags(wins, ("seq-read-1", "seq-read-4"), 10.0)
    assert a == {"phase": "seq-read-1", "start_s": 0.0, "windows": 10,
                 "class": "1/sequential/read/shallow", "verdict": "fcfs", "class_s": 1.0,
                 "verdict_s": 1.0, "in_force_s": 1.0}
    assert b["class"] == "4/sequential/read/shallow" and b["verdict"] == "anticipatory"
    assert (b["class_s"], b["verdict_s"], b["in_force_s"]) == (4.0, 4.0, 7.0)
    # a phase whose verdict never came into force says so
    never = lag.phase_lags([w for w in wins if w.t <= 16], ("a", "b"), 10.0)[1]
    assert never["in_force_s"] is None and never["windows"] == 6
    assert lag.windows(tmp_path / "absent.log", "sdb") == []


def test_the_phases_real_starts_come_from_the_mixs_date_stamps(tmp_path: Path) -> None:
    """fio began the second phase 2.5 s late (its first group's jobs had to exit): with the
    stamps, its lags count from then, and its windows are the ones after it."""
    log = _log(tmp_path)
    stamps = tmp_path / "x.out.starts"
    stamps.write_text("seq-read-1 1000.100\nseq-read-4 1012.500\n")
    starts = lag.phase_starts(log, stamps)
    assert starts == [0.1, 12.5]
    a, b = lag.phase_lags(lag.windows(log, "sdb"), ("seq-read-1", "seq-read-4"), 10.0, starts)
    assert a["windows"] == 12 and a["class"] == "1/sequential/read/shallow"
    assert (b["start_s"], b["windows"]) == (12.5, 8)
    assert (b["class_s"], b["verdict_s"], b["in_force_s"]) == (1.5, 1.5, 4.5)
    # an older run: no wall clock on the mark, or no stamps
    assert lag.phase_starts(log, tmp_path / "none.starts") is None
    old = tmp_path / "old.log"
    old.write_text(log.read_text().replace(" wall=1000.000", ""))
    assert lag.phase_starts(old, stamps) is None


def test_the_report_tables_each_rounds_lag(tmp_path: Path) -> None:
    lags = lag.phase_lags(lag.windows(_log(tmp_path), "sdb"), ("seq-read-1", "seq-read-4"),
                          10.0)
    rep = Report(tmp_path / "rep", "t")
    sec = rep.section("mixed workloads")
    bench_report._lag_table(sec, "ioazd", [lags, lags])
    text = "\n".join(sec.lines)
    assert ("| seq-read-4 | 10, 10 | 4/sequential/read/shallow | anticipatory | 4, 4 | 4, 4 | "
            "7, 7 |") in text
