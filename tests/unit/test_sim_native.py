"""Which simulator runs: the mypyc build only while it was built from exactly these sources."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import ioaz.sim as sim
import pytest
from ioaz.sim import native


def test_a_build_is_used_only_while_its_digest_matches_the_sources(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = tmp_path / "SOURCES"
    monkeypatch.setattr(sim, "MANIFEST", manifest)
    monkeypatch.delenv("IOAZ_SIM_INTERPRETED", raising=False)
    use, why = sim.native_status()
    assert not use and "no compiled build" in why
    manifest.write_text(sim.digest() + "\n")
    assert sim.native_status()[0]
    manifest.write_text("0" * 64 + "\n")
    use, why = sim.native_status()
    assert not use and "older than the sources" in why
    manifest.write_text(sim.digest() + "\n")
    monkeypatch.setenv("IOAZ_SIM_INTERPRETED", "1")
    use, why = sim.native_status()
    assert not use and "IOAZ_SIM_INTERPRETED" in why


def test_the_digest_covers_every_compiled_module_and_changes_with_any(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert {"engine.py", "results.py", "devices.py", "workloads.py", "schedulers/__init__.py",
            "schedulers/stream.py"} <= set(sim.MODULES)
    assert {f"schedulers/{p.name}" for p in (sim.PKG / "schedulers").glob("*.py")} <= set(
        sim.MODULES)
    for m in sim.MODULES:
        (tmp_path / m).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(sim.PKG / m, tmp_path / m)
    monkeypatch.setattr(sim, "PKG", tmp_path)
    before = sim.digest()
    for m in ("engine.py", "schedulers/cfq.py"):
        with (tmp_path / m).open("a") as f:
            f.write("\n")
        assert sim.digest() != before
        before = sim.digest()


def test_the_bench_says_which_simulator_ran() -> None:
    assert native.running().startswith("compiled") == sim.COMPILED
    env = {**os.environ, "IOAZ_SIM_INTERPRETED": "1"}
    out = subprocess.run([sys.executable, "-m", "ioaz.sim.native"], env=env, check=True,
                         capture_output=True, text=True).stdout
    assert out.splitlines() == ["interpreted (pure Python)",
                                "interpreted (IOAZ_SIM_INTERPRETED is set)"]
