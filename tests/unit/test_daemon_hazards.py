"""Knob settings that are valid but known to harm a disk (ioaz/daemon/hazards.py): bfq's
low_latency=0, which ioazd writes just after a switch to bfq, when the disk is busy, and which
6.12's bfq then miscounts (docs/limits.md). `ioazd --check` says where it is set and passes."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ioaz.daemon.config import load_config
from ioaz.daemon.hazards import knob_warnings
from ioaz.decide.config import DecideConfig, DecideContext
from ioaz.decide.matrix import load_matrix
from ioaz.home import MATRICES

REPO = Path(__file__).resolve().parents[2]
CFQ = "  cfq:\n"
BFQ = "      - scheduler: bfq\n"


def _policies(tmp_path: Path, knob: str) -> tuple[Path, int]:
    """A copy of the shipped policies whose cfq policy sets bfq's `knob`, and its line."""
    text = (MATRICES / "policies.yaml").read_text()
    at = text.index(BFQ, text.index(CFQ)) + len(BFQ)
    text = text[:at] + f"        knobs:\n          {knob}\n" + text[at:]
    f = tmp_path / "policies.yaml"
    f.write_text(text)
    return f, text[:at].count("\n") + 2


def _config(tmp_path: Path, policies: Path | None = None) -> Path:
    f = tmp_path / "ioaz.yaml"
    f.write_text(f"state_dir: {tmp_path / 'run'}\nsocket: {tmp_path / 'run' / 'ioaz.sock'}\n"
                 "metrics: {listen: '127.0.0.1:0'}\n"
                 + (f"decide: {{policies: {policies}}}\n" if policies else ""))
    return f


def test_the_shipped_configuration_sets_nothing_known_to_harm(tmp_path: Path) -> None:
    assert knob_warnings(load_config(_config(tmp_path)).decide) == []
    assert knob_warnings(load_config(REPO / "deploy" / "ioaz.yaml").decide) == []


def test_bfq_low_latency_off_in_a_policy_is_named_at_its_line(tmp_path: Path) -> None:
    policies, line = _policies(tmp_path, "low_latency: 0")
    (found,) = knob_warnings(load_config(_config(tmp_path, policies)).decide)
    assert found.startswith(f"{policies}:{line}: policy cfq: bfq low_latency=0: turning bfq's "
                            "low_latency off on a busy disk"), found
    assert "bfq_end_wr" in found


def test_other_bfq_knobs_and_low_latency_on_are_not_warned_of(tmp_path: Path) -> None:
    for knob in ("low_latency: 1", "slice_idle: 0"):
        policies, _ = _policies(tmp_path, knob)
        assert knob_warnings(load_config(_config(tmp_path, policies)).decide) == [], knob


def test_a_matrix_tunable_that_turns_it_off_is_named_at_its_line(tmp_path: Path) -> None:
    shipped = MATRICES / "kernel" / "testbed-wd500-qd1-mean.yaml"
    text = shipped.read_text()
    at = text.index("tunables:\n") + len("tunables:\n")
    text = text[:at] + "  bfq:\n    low_latency: 0\n" + text[at:]
    f = tmp_path / shipped.name
    f.write_text(text)
    m = load_matrix(f)
    (found,) = knob_warnings(DecideContext(DecideConfig(), {f.name: m}, None))
    assert found.startswith(f"{f}:{text[:at].count(chr(10)) + 2}: tunables of {m.name}: "
                            "bfq low_latency=0:"), found


def test_ioazd_check_warns_and_passes(tmp_path: Path) -> None:
    policies, line = _policies(tmp_path, "low_latency: 0")
    f = _config(tmp_path, policies)
    for flag in ("--check", "--check-config"):
        r = subprocess.run([sys.executable, "-m", "ioaz.daemon.main", flag, "--config", str(f)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == f"ioazd: {f}: configuration OK"
        assert r.stderr.startswith(f"ioazd: warning: {policies}:{line}: policy cfq: bfq "
                                   "low_latency=0:"), r.stderr
        assert "Traceback" not in r.stderr


def test_a_start_logs_the_warning_and_runs(tmp_path: Path) -> None:
    policies, line = _policies(tmp_path, "low_latency: 0")
    f = _config(tmp_path, policies)
    f.write_text(f.read_text() + "dry_run: true\nprobe: diskstats\nwindow_s: 1\n")
    r = subprocess.run([sys.executable, "-m", "ioaz.daemon.main", "--config", str(f),
                        "--windows", "1"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert '"event": "config_warning"' in r.stderr
    assert f"{policies}:{line}: policy cfq: bfq low_latency=0" in r.stderr
