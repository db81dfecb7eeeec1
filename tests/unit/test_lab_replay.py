"""ioaz-lab replay: a model's names for the windows an ioazd --verbose log holds."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from ioaz.lab.main import main as lab
from ioaz.model.file import load

MODEL = Path(__file__).resolve().parents[2] / \
    "decision_matrices/kernel/testbed-wd500-qd1-mean.model.json"
READERS = {"iops": 280.0, "read_bytes_per_s": 7.4e7, "write_bytes_per_s": 5.3e6,
           "read_ratio": 0.98, "seq_ratio": 0.97, "avg_depth": 9.8, "read_depth": 5.4,
           "mean_size_bytes": 294000.0, "p50_latency_s": 0.02, "p99_latency_s": 0.84,
           "merge_ratio": 0.06, "class_processes": 5}
RANDOM = {**READERS, "iops": 120.0, "read_bytes_per_s": 4.9e5, "write_bytes_per_s": 0.0,
          "read_ratio": 1.0, "seq_ratio": 0.0, "mean_size_bytes": 4096.0, "merge_ratio": 0.0,
          "class_processes": 16}
CLASS = {"processes": "4", "pattern": "sequential", "mode": "read", "depth": "shallow"}


def line(device: str, feats: dict | None, klass: dict | None = CLASS) -> str:
    event = {"event": "window", "device": device, "processes": 5, "class": klass,
             "verdict": None, "action": "hold", "reason": "model", "why": "-"}
    if feats is not None:
        event["features"] = feats
    return f"7.76 2026-12-04 23:37:20,990 DEBUG {json.dumps(event)}"


def test_replay_counts_what_the_model_names_on_the_classified_windows(tmp_path, capsys):
    log = tmp_path / "a.ioazd.log"
    log.write_text("\n".join([
        "7.34 @@ workload start wall=1796415182.911",        # the bench's marker: skipped
        line("sda", {**READERS, "iops": 0.0}, klass=None),   # idle, not classified: skipped
        line("sda", READERS), line("sda", READERS), line("sdb", RANDOM)]) + "\n")
    model = load(MODEL)
    want_a = model.predict_proba(model.vector_of({**READERS, "processes": 5}))[0][0]
    want_b = model.predict_proba(model.vector_of({**RANDOM, "processes": 5}))[0][0]
    assert lab(["replay", str(log), "--model", str(MODEL), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["windows"] == 3
    expect: dict[str, int] = {}
    for p in (want_a, want_a, want_b):
        expect[p] = expect.get(p, 0) + 1
    assert out["named"] == expect and 0 < out["median_top_score"] <= 1
    assert lab(["replay", str(log), "--model", str(MODEL), "--device", "sdb"]) == 0
    text = capsys.readouterr().out
    kind = "share of best" if model.output == "share" else "probability"   # as shipped
    assert f"1 windows; {model.name} names {want_b} 1; median top {kind}" in text


def test_replay_says_what_it_cannot_read(tmp_path, capsys):
    old = tmp_path / "old.ioazd.log"
    old.write_text(line("sda", None) + "\n")
    good = tmp_path / "good.ioazd.log"
    good.write_text(line("sda", READERS) + "\n")
    # an old log is named and skipped; the others are still replayed; the exit says so
    assert lab(["replay", str(old), str(good), "--model", str(MODEL)]) == 2
    out, err = capsys.readouterr()
    assert "old.ioazd.log: window lines without their features" in err
    assert "good.ioazd.log: 1 windows" in out
    assert lab(["replay", str(tmp_path / "none.log"), "--model", str(MODEL)]) == 2
    assert "none.log: No such file or directory" in capsys.readouterr().err
    bad = tmp_path / "bad.model.json"
    bad.write_text("{")
    assert lab(["replay", str(good), "--model", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.model.json" in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [["replay", "--model", "m.json"], ["replay", "x.log"]])
def test_replay_wants_a_log_and_a_model(argv, capsys):
    with pytest.raises(SystemExit) as e:
        lab(argv)
    assert e.value.code == 2
