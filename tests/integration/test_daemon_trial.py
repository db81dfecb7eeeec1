"""A runner-up trial (decide/trial.py) in a real ioazd, on a real loop device, under real fio.

The matrix is written here: every process count -> deadline, whose lead over kyber is 1 point
(a near tie, as derive writes it). fio reads at a fixed rate, so both schedulers move the
same bytes: the trial must measure that rate under each, find no gain, and give kyber back.
"""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import yaml
from conftest import REPO, fio_args, need_tool
from test_daemon_loop import Ioazd, active, write_config

IOAZCTL = str(Path(sys.executable).parent / "ioazctl")
SIZE_MB = 512
JOBS, RATE_MIB = 8, 1      # 8 readers at 1 MiB/s each: 8.4 MB/s whatever the scheduler

MATRIX = {
    "kind": "matrix", "name": "trial-test", "description": "a near tie for the trial test",
    "axes": ["processes"],
    "sources": {"test": {"cite": "written for tests/integration/test_daemon_trial.py",
                         "kind": "judgement"}},
    "default_source": "test",
    "goals": {"throughput": {k: {"policy": "deadline",
                                 "runner_up": {"policy": "kyber", "margin_points": 1.0}}
                             for k in ("1", "4", "8", "16+")}},
}


def trial_config(tmp: Path, dev: str) -> Path:
    (tmp / "m").mkdir()
    (tmp / "m" / "trial.yaml").write_text(yaml.safe_dump(MATRIX, sort_keys=False))
    return write_config(tmp, dev, goal="throughput", matrix_dir=str(tmp / "m"),
                        policies=str(REPO / "decision_matrices" / "policies.yaml"),
                        matrix_rules=[{"matrices": {"throughput": "trial.yaml"}}],
                        min_dwell_s=2, trial_after_windows=3, trial_windows=3,
                        trial_min_gain=0.3)


def test_a_trial_measures_the_runner_up_and_gives_it_back(make_loop, tmp_path):
    need_tool("fio")
    dev = make_loop(SIZE_MB)
    Path(f"/sys/block/{dev}/queue/rotational").write_text("1")
    Path(f"/sys/block/{dev}/queue/scheduler").write_text("none")
    d = Ioazd(trial_config(tmp_path, dev))
    fio = subprocess.Popen(fio_args(dev, rw="randread", jobs=JOBS, seconds=20, size_mb=SIZE_MB,
                                    extra=(f"--rate={RATE_MIB}m",)),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        d.wait_event("start", 30)
        _, first = d.wait_event("switch", 5)
        assert (first["policy"], first["reason"]) == ("deadline", "matrix"), first
        # settled 3 windows (after the dwell): the runner-up goes in, measured
        _, start = d.wait_event("switch", 8)
        assert (start["policy"], start["to"], start["reason"]) == ("kyber", "kyber", "trial")
        assert active(dev) == "kyber"
        base = float(re.search(r"against ([\d.]+) MB/s under deadline", start["why"])[1])
        rate = JOBS * RATE_MIB * 1048576 / 1e6
        assert 0.75 * rate <= base <= 1.25 * rate, (base, rate, start["why"])
        _, back = d.wait_event("switch", 8)
        assert (back["policy"], back["to"], back["reason"]) == \
            ("deadline", "mq-deadline", "trial"), back
        m = re.search(r"kyber moved ([\d.]+) MB/s over 3 windows .* \(([+-]\d+)%", back["why"])
        assert m, back["why"]
        assert 0.75 * rate <= float(m[1]) <= 1.25 * rate and abs(int(m[2])) < 30, back["why"]
        assert "back to deadline" in back["why"]
        # the journal says how the trial ended (a kept one switches nothing)
        _, ended = d.wait_event("trial", 3)
        assert (ended["outcome"], ended["candidate"], ended["base"]) == \
            ("given_back", "kyber", "deadline"), ended
        assert ended["gain"] is not None and abs(ended["gain"]) < 0.3, ended
        print(f"trial measured: {start['why']} || {back['why']}")
        assert active(dev) == "mq-deadline"
        # the operator sees it, and it is not tried again within the hour
        sock = ("--socket", str(tmp_path / "ioaz.sock"))
        r = subprocess.run([IOAZCTL, "explain", dev, "--json", *sock], capture_output=True,
                           text=True, timeout=10)
        assert r.returncode == 0, r.stderr
        [done] = json.loads(r.stdout)["trials"]["done"]
        assert (done["candidate"], done["base"], done["kept"]) == ("kyber", "deadline", False)
        human = subprocess.run([IOAZCTL, "explain", dev, *sock], capture_output=True,
                               text=True, timeout=10).stdout
        assert "cell 8: kyber given back" in human, human
        fio.wait(timeout=30)
        again = [e for e in d.drain() if e.get("event") == "switch"]
        assert not again, f"switched again after the trial: {again}"
    finally:
        if fio.poll() is None:
            fio.kill()
        rc = d.stop(signal.SIGTERM)
    assert rc == 0, "".join(d.lines)
    assert active(dev) == "none", "SIGTERM must restore the original scheduler"
