"""`make install` into a temporary prefix, and the installed pieces checked as a machine would:
the daemon and ioazctl run on Debian's /usr/bin/python3, the config loads, and
`systemd-analyze verify` accepts the unit (its ExecStart must exist, so it is the installed one).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, need_tool

SYSPY = "/usr/bin/python3"


def make_install(*args: str) -> subprocess.CompletedProcess:
    if not (REPO / "bpf" / "build" / "ioaz.bpf.o").exists():
        pytest.skip("bpf/build/ioaz.bpf.o is not built (`make bpf`)")
    # -o: the BPF object and the Debian packages are the business of `make bpf`/`make deps`;
    # here only the install recipe is under test.
    return subprocess.run(["make", "-s", "-C", str(REPO), "-o", "bpf", "-o", "install-deps",
                           "install", *args], capture_output=True, text=True, check=False)


@pytest.fixture
def installed(tmp_path):
    need_tool("make")
    if not Path(SYSPY).exists():
        pytest.skip(f"{SYSPY} (Debian's python3) is missing")
    r = subprocess.run([SYSPY, "-c", "import yaml, prometheus_client"], capture_output=True,
                       text=True, check=False)
    if r.returncode != 0:
        pytest.skip("python3-yaml / python3-prometheus-client missing (`make deps`)")
    t = tmp_path
    r = make_install(f"PREFIX={t}/p", f"SYSCONFDIR={t}/etc", f"UNITDIR={t}/unit",
                     "POSTINSTALL=no")
    assert r.returncode == 0, r.stdout + r.stderr
    return t


def test_installed_daemon_and_ctl_run_on_system_python(installed):
    t = installed
    cfg = t / "etc" / "ioaz" / "ioaz.yaml"
    r = subprocess.run([str(t / "p" / "sbin" / "ioazd"), "--config", str(cfg), "--check"],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0 and "configuration OK" in r.stdout, r.stderr
    assert (t / "p" / "sbin" / "ioazd").read_text().startswith(f"#!{SYSPY} -I\n")
    # installed, there is no checkout beside the code: with no --config it reads /etc/ioaz
    r = subprocess.run([str(t / "p" / "sbin" / "ioazd"), "--help"], capture_output=True,
                       text=True, check=False)
    assert "(default /etc/ioaz/ioaz.yaml)" in " ".join(r.stdout.split()), r.stdout
    assert (t / "p" / "lib" / "ioaz" / "bpf" / "build" / "ioaz.bpf.o").stat().st_size > 0
    assert '"127.0.0.1:19647"' in cfg.read_text()
    assert f"{t}/p/lib/ioaz/decision_matrices" in cfg.read_text()
    r = subprocess.run([str(t / "p" / "bin" / "ioazctl"), "matrix", "validate",
                        str(t / "p" / "lib" / "ioaz" / "decision_matrices" / "policies.yaml")],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr
    r = subprocess.run([str(t / "p" / "bin" / "ioazctl"), "status", "--socket",
                        str(t / "none.sock")], capture_output=True, text=True, check=False)
    assert r.returncode == 1 and "no such socket" in r.stderr
    assert (t / "p" / "lib" / "tmpfiles.d" / "ioaz.conf").read_text().count("/run/ioaz")
    assert "g ioaz" in (t / "p" / "lib" / "sysusers.d" / "ioaz.conf").read_text()


def test_reinstall_keeps_the_admins_config(installed):
    t = installed
    cfg = t / "etc" / "ioaz" / "ioaz.yaml"
    cfg.write_text(cfg.read_text().replace("window_s: 1.0", "window_s: 2.0"))
    r = make_install(f"PREFIX={t}/p", f"SYSCONFDIR={t}/etc", f"UNITDIR={t}/unit",
                     "POSTINSTALL=no")
    assert r.returncode == 0 and "kept" in r.stdout
    assert "window_s: 2.0" in cfg.read_text()
    assert (t / "etc" / "ioaz" / "ioaz.yaml.dist").exists()


def test_systemd_analyze_verifies_the_unit(installed):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed; nearest check: the unit parses as INI")
    unit = installed / "unit" / "ioazd.service"
    text = unit.read_text()
    assert f"ExecStart={installed}/p/sbin/ioazd --config {installed}/etc/ioaz/ioaz.yaml" in text
    for must in ("NoNewPrivileges=yes", "ProtectSystem=strict", "RuntimeDirectory=ioaz",
                 "CapabilityBoundingSet=CAP_BPF CAP_PERFMON CAP_SYS_ADMIN CAP_SYS_RESOURCE"):
        assert must in text
    # verify also runs `man` for each Documentation= page: the installed ones must be found
    man_env = {**os.environ, "MANPATH": str(installed / "p" / "share" / "man")}
    r = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                       text=True, check=False, env=man_env)
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr
    # And it can fail: a broken copy is refused.
    bad = installed / "unit" / "ioazd-broken.service"
    bad.write_text(text.replace(f"ExecStart={installed}/p/sbin/ioazd",
                                "ExecStart=/nonexistent/ioazd"))
    r = subprocess.run(["systemd-analyze", "verify", str(bad)], capture_output=True,
                       text=True, check=False, env=man_env)
    assert r.returncode != 0 and "/nonexistent/ioazd" in r.stderr


def test_destdir_stages_without_touching_the_system(tmp_path):
    r = make_install(f"DESTDIR={tmp_path}/stage")
    assert r.returncode == 0, r.stdout + r.stderr
    s = tmp_path / "stage"
    for p in ("usr/local/sbin/ioazd", "usr/local/bin/ioazctl", "etc/ioaz/ioaz.yaml",
              "usr/local/share/man/man8/ioazd.8", "usr/local/share/man/man8/ioazctl.8",
              "usr/local/share/man/man5/ioaz.yaml.5",
              "usr/local/share/bash-completion/completions/ioazctl",
              "usr/local/share/bash-completion/completions/ioazd",
              "usr/local/lib/systemd/system/ioazd.service",
              "usr/local/lib/ioaz/bpf/build/ioaz.bpf.o",
              "usr/local/lib/ioaz/agent/ioaz/daemon/main.py",
              "usr/local/share/ioaz/grafana/ioaz-dashboard.json"):
        assert (s / p).exists(), p
    assert os.access(s / "usr/local/sbin/ioazd", os.X_OK)
    assert "ExecStart=/usr/local/sbin/ioazd --config /etc/ioaz/ioaz.yaml" in (
        s / "usr/local/lib/systemd/system/ioazd.service").read_text()
    assert not list(s.rglob("__pycache__"))
