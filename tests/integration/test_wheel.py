"""A pip wheel of ioaz carries the code alone (the matrices, the schema and the BPF object live
beside it in a checkout or in /usr/lib/ioaz): installed from one, each program says so and
stops with status 2, never a traceback. The Debian package and `make install` are the ways to
install ioaz (test_debian_package.py, test_ctl_install.py)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO


def test_a_wheel_install_says_what_is_missing(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                        "-w", str(tmp_path / "wheel"), str(REPO)],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        pytest.fail(f"pip wheel failed:\n{r.stderr[-2000:]}")
    (wheel,) = (tmp_path / "wheel").glob("ioaz-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    r = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-deps", str(wheel)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    policies = str(REPO / "decision_matrices" / "policies.yaml")
    for cmd in (["ioazctl", "matrix", "validate", policies],
                ["ioazctl", "observe", "--count", "1"], ["ioazd", "--check"],
                ["ioaz-lab", "sim", "list"]):
        r = subprocess.run([str(venv / "bin" / cmd[0]), *cmd[1:]], capture_output=True,
                           text=True, timeout=60, cwd=tmp_path)
        assert r.returncode == 2, (cmd, r.returncode, r.stdout, r.stderr)
        assert "data files are not beside its code" in r.stderr and "Traceback" not in r.stderr, \
            (cmd, r.stderr)
