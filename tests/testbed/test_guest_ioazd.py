"""ioazd in the testbed guest, under Debian's systemd, on a SATA disk: one boot of the real image.

The guest script (guest_ioazd.sh) installs the .deb built here (`make deb`, build/deb/ on the
read-only share) with apt, configures and starts it with deploy/ansible's role (Debian's
ansible-core in the guest, run on the guest itself), changes the workload, reloads through the
role's handler, kills the daemon, purges the package while the restarted daemon runs, and prints
"@@ KEY VALUE" lines; the host scrapes the guest's metrics through the forwarded port while it runs.
"""
from __future__ import annotations

import re
import threading
import time
import urllib.request
from pathlib import Path

from guest_fixture import guest_image  # noqa: F401 (a fixture)
from ioaz.testbed import disks, image, vm


def marks(output: str) -> dict[str, str]:
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"^@@ (\S+) ?(.*)$", output, re.M)}


class Scraper(threading.Thread):
    """Polls the forwarded metrics port while the guest runs; keeps the best scrape."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.url = f"http://127.0.0.1:{port}/metrics"
        self.body = ""
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                with urllib.request.urlopen(self.url, timeout=3) as r:
                    text = r.read().decode()
                if 'device="sda"' in text:
                    self.body = text
            except OSError:
                pass
            self.stopping.wait(2)


def _text(path: Path) -> str:
    """A file the guest left in the results share, or what stands for it when there is none."""
    return path.read_text(errors="replace") if path.exists() else f"({path.name}: not written)"


def test_ioazd_under_guest_systemd(guest_image: image.Image,  # noqa: F811 (the fixture)
                                   debs: dict[str, Path], tmp_path: Path) -> None:
    port = vm.free_port()
    scraper = Scraper(port)
    scraper.start()
    t0 = time.monotonic()
    try:
        res = vm.run(["/mnt/ioaz/tests/testbed/guest_ioazd.sh"],
                     vm.Options(disks=disks.parse("file:2G"), results=tmp_path,
                                metrics_port=port, timeout_s=1500))
    finally:
        scraper.stopping.set()
        scraper.join()
    m = marks(res.output)
    journal = (tmp_path / "ioazd.journal").read_text() if (tmp_path / "ioazd.journal").exists() \
        else ""
    print(f"guest: boot {res.boot_s} s, whole run {time.monotonic() - t0:.0f} s; marks {m}")
    assert res.rc == 0 and m.get("done") == "1", f"the guest script failed:\n{res.output[-3000:]}"
    assert m["kernel"] == image.kernels()["6.12"]
    assert m["pid1"] == "systemd" and m["system"] == "running", m
    assert m["multi_user"] == "active", m
    assert m["rotational"] == "1" and m["queue_depth"] == "32", m
    assert {"fifo", "vr", "stream", "mq-deadline"} <= set(m["elevators"].split(",")), m
    assert m["install"] == "0", (tmp_path / "install.log").read_text()[-2000:]
    # the package leaves the service off until the operator enables it, and ships the rest
    assert m["installed_enabled"] == "disabled" and m["installed_active"] == "inactive", m
    assert m["group"] == "ioaz", m
    assert m["default_config"] == "ioazd: /etc/ioaz/ioaz.yaml: configuration OK", m
    assert m["completion"] == "2" and m["man_pages"] == "3", m
    # deploy/ansible's role, run by the guest's ansible: it installed nothing more (the same
    # .deb), wrote the config with a rule for the disk model first, enabled and started ioazd
    assert m["role"].split()[0] == "0", (tmp_path / "role1.log").read_text()[-3000:]
    assert m["role_rule"] == ("QEMU_HARDDISK* /etc/ioaz/matrices/ioaz-table3-mean.yaml"), m
    assert m["started"] == "active" and m["enabled"] == "enabled", m
    assert m["probe_source"] == "bpf", m
    # a buffered writer's dirty data, read from debugfs by the daemon in systemd's sandbox (the
    # most it read while the writer ran: its last window, or a switch it made meanwhile)
    assert m["dirty_fill"] not in ("None", "") and float(m["dirty_fill"]) > 0.05, (
        f"dirty_fill {m['dirty_fill']}: the kernel's bdi stats {m.get('dirty_kernel')}, the "
        f"writer {m.get('dirty_writer')}, the last window (age s, reason, written B/s) "
        f"{m.get('dirty_window')}; ioazctl explain then:\n"
        + _text(tmp_path / "dirty_explain.json")[-4000:])
    # the workload change is followed: none (fcfs: IOAZ's noop) for one sequential reader,
    # bfq for eight random readers (IOAZ Table 3, goal mean)
    assert m["after_sequential"] == "none", journal[-3000:]
    assert m["after_random"] == "bfq", journal[-3000:]
    # the matrix came by the rule that names the disk model udev reports
    explain = (tmp_path / "explain.txt").read_text()
    assert m["udev_model"] == "QEMU_HARDDISK", m
    assert "rule 1 (ID_MODEL=QEMU_HARDDISK*)" in explain, explain
    # the role again with one value changed: only the file and its handler's reload changed
    # (the package, the matrices and the service stood), and the daemon took it in place
    assert m["role_again"] == "0 2", (tmp_path / "role2.log").read_text()[-3000:]
    assert m["hysteresis"] == "3", m
    assert m["reloaded"] == "active same-pid" and '"event": "reload"' in journal, journal[-2000:]
    assert m["after_kill"] == "active new-pid", \
        f"not back {m.get('restart_s')} s after kill -9: {m}"
    # what the killed daemon had changed is put back from its state file: by the unit's
    # ExecStopPost at once, or by the restarted daemon's crash recovery
    assert re.search(r'"event": "(restore_after_exit|crash_recovery)", "device": "sda", '
                     r'"restored": true', journal), journal[-3000:]
    # journalctl -p warning shows the warnings and not the routine switches (priority prefixes)
    assert int(m["journal_warnings"]) >= 1 and m["journal_warning_switches"] == "0", m
    # journalctl DEVICE=sda and IOAZ_EVENT=switch select entries (journal.py's fields)
    assert int(m["journal_device"]) >= 2 and m["journal_device_other"] == "0", m
    assert int(m["journal_switch_events"]) >= 2, m
    # apt purge while the restarted ioazd runs with bfq in force: the package's prerm stops it
    # (the unit's stop, as systemctl's), every setting is back, nothing of the package is left
    assert m["before_purge"] == "bfq", journal[-2000:]
    assert m["purge"] == "0", (tmp_path / "install.log").read_text()[-2000:]
    assert m["after_purge"] == m["original"] and m["purge_restored"] == "yes", res.output[-2000:]
    assert m["purge_left"] == "" and m["purge_unit"] in ("inactive", "unknown"), m
    # the role's matrices are not the package's: dpkg leaves them, and nothing else
    assert m["purge_etc"] == "matrices", m
    # the choice frozen by `ioazctl export --udev`, applied by the guest's udev after the purge
    rule = (tmp_path / "60-ioaz.rules").read_text() if (tmp_path / "60-ioaz.rules").exists() \
        else (tmp_path / "export.err").read_text()
    assert m["export"] == "0" and 'ATTRS{model}=="' in rule, rule
    assert m["udev_applied"] == "bfq", rule
    assert m["udev_settings"].endswith("mismatched: none") and int(
        m["udev_settings"].split()[0]) >= 1, (m["udev_settings"], rule)
    # the host's view: the guest's metrics through the forwarded port
    assert "ioaz_" in scraper.body and 'device="sda"' in scraper.body, "no scrape from the host"
