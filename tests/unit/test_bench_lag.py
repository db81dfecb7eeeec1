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
    lines = ["0.50 x INFO {\"event\": \"start\"}", "2.00 @@ workload start"]
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
    assert a == {"phase": "seq-read-1", "windows": 10, "class": "1/sequential/read/shallow",
                 "verdict": "fcfs", "class_s": 1.0, "verdict_s": 1.0, "in_force_s": 1.0}
    assert b["class"] == "4/sequential/read/shallow" and b["verdict"] == "anticipatory"
    assert (b["class_s"], b["verdict_s"], b["in_force_s"]) == (4.0, 4.0, 7.0)
    # a phase whose verdict never came into force says so
    never = lag.phase_lags([w for w in wins if w.t <= 16], ("a", "b"), 10.0)[1]
    assert never["in_force_s"] is None and never["windows"] == 6
    assert lag.windows(tmp_path / "absent.log", "sdb") == []


def test_the_report_tables_each_rounds_lag(tmp_path: Path) -> None:
    lags = lag.phase_lags(lag.windows(_log(tmp_path), "sdb"), ("seq-read-1", "seq-read-4"),
                          10.0)
    rep = Report(tmp_path / "rep", "t")
    sec = rep.section("mixed workloads")
    bench_report._lag_table(sec, "ioazd", [lags, lags])
    text = "\n".join(sec.lines)
    assert "| seq-read-4 | 4/sequential/read/shallow | anticipatory | 4, 4 | 4, 4 | 7, 7 |" in text
