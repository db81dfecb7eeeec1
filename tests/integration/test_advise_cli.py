"""`ioazctl advise` as an operator runs it: a real loop device under real fio load, the real
probe, the shipped configuration; it says what ioaz would set and writes nothing."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import fio_args, need_tool

IOAZCTL = [str(Path(sys.executable).parent / "ioazctl")]


def _sysfs(dev: str) -> dict[str, str]:
    q = Path(f"/sys/block/{dev}/queue")
    return {p.name: p.read_text() for p in (q / "scheduler", q / "read_ahead_kb",
                                            q / "nr_requests")}


def test_advise_names_the_cell_and_writes_nothing(make_loop, tmp_path: Path) -> None:
    need_tool("fio")
    dev = make_loop(512)
    before = _sysfs(dev)
    fio = subprocess.Popen(fio_args(dev, rw="randread", jobs=4, seconds=8, size_mb=512),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        r = subprocess.run(IOAZCTL + ["--json", "advise", dev, "--windows", "4"],
                           capture_output=True, text=True, timeout=60)
        text = subprocess.run(IOAZCTL + ["advise", f"/dev/{dev}", "-n", "2"],
                              capture_output=True, text=True, timeout=60)
    finally:
        fio.wait(timeout=60)
    assert r.returncode == 0, r.stderr
    (a,) = [json.loads(x) for x in r.stdout.splitlines()]
    assert a["device"] == dev and a["class"] == "4/random/read/shallow/small", a
    assert a["advice"]["scheduler"] in before["scheduler"]   # offered by this kernel
    matrix = Path(a["matrix"]).read_text().splitlines()
    assert a["cell"] in matrix[a["line"] - 1]             # the line is the cell's
    assert a["id"].startswith("ioaz-") and a["identity"].startswith("diskseq:")
    assert text.returncode == 0, text.stderr
    assert "nothing was written" in text.stdout and f"\n{dev}: " in text.stdout
    assert _sysfs(dev) == before                          # nothing written
    assert not Path("/run/ioaz/actuate-state.json").exists() or "loop" not in Path(
        "/run/ioaz/actuate-state.json").read_text()


def test_advise_refuses_what_it_cannot_use(tmp_path: Path) -> None:
    r = subprocess.run(IOAZCTL + ["advise", "nosuchdisk9"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 2 and "nosuchdisk9" in r.stderr and "Traceback" not in r.stderr
    bad = tmp_path / "ioaz.yaml"
    bad.write_text("window_s: 1\nwindow_s: 2\n")
    r = subprocess.run(IOAZCTL + ["advise", "--config", str(bad)], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and f"{bad}:2: " in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run(IOAZCTL + ["advise", "-n", "0"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 2 and "--windows '0'" in r.stderr
