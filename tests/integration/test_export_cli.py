"""`ioazctl export` against a real ioazd on a real loop device: the udev rule and the TuneD
profile hold exactly what ioazd changed, with the values in force; once ioazd has stopped (and
put everything back) there is nothing to export. The rule applied by a real udev is
tests/testbed/test_guest_ioazd.py, in the guest."""
from __future__ import annotations

import configparser
import re
import signal
import subprocess
import sys
from pathlib import Path

from test_ctl_daemon import active, start_ioazd, wait_for

IOAZCTL = [str(Path(sys.executable).parent / "ioazctl")]


def export(config: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(IOAZCTL + ["export", "--config", str(config), *args],
                          capture_output=True, text=True, timeout=30)


def test_export_freezes_what_ioazd_set(make_loop, tmp_path: Path) -> None:
    d = start_ioazd(make_loop, tmp_path)
    dev = d.dev
    try:
        assert d.ctl("pin", dev, "deadline").returncode == 0
        wait_for("the pin to take effect", lambda: active(dev) == "mq-deadline", 5)
        rule = export(d.config, "--udev")
        tuned = export(d.config, "--tuned", f"/dev/{dev}")
        unknown = export(d.config, "--udev", "sdq9")
        queue = Path(f"/sys/block/{dev}")
        in_force = {}
        for m in re.finditer(r'ATTR\{([^}]+)\}="([^"]*)"', rule.stdout):
            in_force[m.group(1)] = m.group(2)
        now = {k: (active(dev) if k == "queue/scheduler" else (queue / k).read_text().strip())
               for k in in_force}
        # stopped, ioazd puts everything back: nothing is left to freeze
        d.proc.send_signal(signal.SIGTERM)
        d.proc.wait(15)
        after = export(d.config, "--udev")
    finally:
        d.stop()
    assert rule.returncode == 0, rule.stderr
    # a loop device has no model or WWN: matched by name, and the rule says why
    lines = [x for x in rule.stdout.splitlines() if x and not x.startswith("#")]
    assert len(lines) == 1 and f'KERNEL=="{dev}"' in lines[0], rule.stdout
    assert "may change across boots" in rule.stdout
    # the elevator first: writing it resets the old one's knobs
    assert re.search(r"ATTR\{([^}]+)\}", lines[0]).group(1) == "queue/scheduler"
    assert in_force["queue/scheduler"] == "mq-deadline" and in_force == now, (in_force, now)
    assert tuned.returncode == 0, tuned.stderr
    ini = configparser.ConfigParser(interpolation=None, delimiters=("=",))
    ini.optionxform = str   # sysfs paths keep their case
    ini.read_string(tuned.stdout)
    assert dict(ini["ioaz_disk0"]) == {"type": "disk", "devices": dev, "elevator": "mq-deadline"}
    sysfs_keys = {k.removeprefix(f"/sys/block/{dev}/"): v
                  for k, v in ini["ioaz_sysfs"].items() if k != "type"} \
        if ini.has_section("ioaz_sysfs") else {}
    assert sysfs_keys == {k: v for k, v in now.items() if k != "queue/scheduler"}
    assert unknown.returncode == 2 and "sdq9" in unknown.stderr
    assert after.returncode == 1 and "is it running?" in after.stderr, after.stderr
    assert "Traceback" not in rule.stderr + tuned.stderr + unknown.stderr + after.stderr
