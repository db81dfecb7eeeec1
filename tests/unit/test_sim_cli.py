"""`ioaz-lab sim` as a user runs it."""
from __future__ import annotations

import json

from ioaz.lab.main import main


def test_sim_compares_schedulers_and_writes_json(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "r.json"
    rc = main(["sim", "par-read", "--device", "wd500", "-s", "deadline", "-s", "stream",
               "--duration", "2", "--json", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "per process MB/s: min" in text and "p99" in text and "x deadline" in text
    doc = json.loads(out.read_text())
    a, b = doc["results"]
    assert a["scheduler"] == "deadline" and b["scheduler"] == "stream"
    assert b["throughput_mb_s"] > a["throughput_mb_s"]
    assert set(a) >= {"proc_min_mb_s", "proc_max_mb_s", "proc_mean_mb_s", "p50_latency_s",
                      "p99_latency_s"}


def test_sim_tunables_and_windows(capsys) -> None:  # type: ignore[no-untyped-def]
    rc = main(["sim", "ioaz-4-rand-read", "-s", "vr", "-t", "rev_penalty=1", "--duration", "2",
               "--json", "-", "--windows"])
    assert rc == 0
    text = capsys.readouterr().out
    doc = json.loads(text)
    w = doc["results"][0]["windows"][0]
    assert w["source"] == "sim" and w["processes"] == 4
    assert doc["tunables"] == {"rev_penalty": 1}


def test_sim_bad_names_exit_2(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["sim", "no-such-workload", "--duration", "1"]) == 2
    assert "unknown workload" in capsys.readouterr().err
    assert main(["sim", "par-read", "-s", "nope", "--duration", "1"]) == 2
    assert main(["sim", "par-read", "-t", "rev_penalty", "--duration", "1"]) == 2


def test_sim_list(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["sim", "--list"]) == 0
    text = capsys.readouterr().out
    assert "par-read" in text and "wd500" in text and "stream" in text


def test_sim_adaptive_runs_the_decision_code(capsys) -> None:  # type: ignore[no-untyped-def]
    from ioaz.decide import ValidationError
    from ioaz.sim.adaptive import AgentChooser

    try:
        AgentChooser()
    except (ValidationError, OSError) as e:  # the matrices are not there or not valid
        import pytest
        pytest.skip(f"decide code cannot load its matrices: {e}")
    rc = main(["sim", "phases", "--duration", "8", "--adaptive", "--goal", "mean",
               "--json", "-"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    _static, adaptive = doc["results"]
    assert adaptive["scheduler"] == "adaptive"
    # the phases change class (4 seq readers, 16 random readers, 1 writer, 4 seq readers):
    # the matrices move off deadline at least once, and every switch drained first
    assert len(adaptive["switches"]) >= 1
    assert all(s["drain_s"] >= 0 for s in adaptive["switches"])


def test_sim_adaptive_with_matrices_derived_elsewhere(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """--matrices DIR/NAME: the agent with matrices `ioaz-lab derive` wrote, here copies of
    the wd500 ones under another name with the 16 random readers' cell turned to fcfs; a
    missing set is refused with what was expected."""
    import re
    import shutil

    from ioaz.lab.simsuites.adaptive import CALIBRATED_DIR

    for f in CALIBRATED_DIR.glob("wd500-*.yaml"):
        text = f.read_text()
        if f.name == "wd500-throughput.yaml":
            text = re.sub(r"(16\+/random/read/shallow:\n\s+policy: )\w+", r"\1fcfs", text)
        shutil.copy(f, tmp_path / f.name.replace("wd500", "other"))
        (tmp_path / f.name.replace("wd500", "other")).write_text(text)
    rc = main(["sim", "ioaz-16-rand-read", "--duration", "4", "--adaptive", "--goal",
               "throughput", "--matrices", str(tmp_path / "other"), "--json", "-"])
    assert rc == 0
    adaptive = json.loads(capsys.readouterr().out)["results"][1]
    assert [s["to"] for s in adaptive["switches"]] == ["fcfs"]
    assert main(["sim", "par-read", "--adaptive", "--matrices", str(tmp_path / "none")]) == 2
    assert f"--matrices {tmp_path / 'none'}: expected" in capsys.readouterr().err
