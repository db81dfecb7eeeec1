"""`ioazd --check` finds what a valid configuration cannot start with, with the setting's
FILE:LINE: a taken or foreign metrics address, an unusable socket path, a state directory that
cannot be written. Real sockets and directories; nothing is changed by the check."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from ioaz.daemon.config import load_config
from ioaz.daemon.preflight import MAX_SOCKET_PATH, problems


def _config(tmp_path: Path, **settings: str) -> Path:
    base = {"state_dir": str(tmp_path / "run"), "socket": str(tmp_path / "run" / "ioaz.sock"),
            "metrics": "{listen: '127.0.0.1:0'}"}
    base.update(settings)
    f = tmp_path / "ioaz.yaml"
    f.write_text("window_s: 1\n" + "".join(f"{k}: {v}\n" for k, v in base.items()))
    return f


def test_a_usable_configuration_has_no_problems(tmp_path: Path) -> None:
    assert problems(load_config(_config(tmp_path))) == []


def test_a_taken_metrics_port_is_found_at_its_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        f = _config(tmp_path, metrics=f"{{listen: '127.0.0.1:{port}'}}")
        (found,) = problems(load_config(f))
    assert found.startswith(f"{f}:4: metrics.listen 127.0.0.1:{port}: cannot be bound: "
                            "the address is in use"), found


def test_an_address_not_on_this_machine_is_found(tmp_path: Path) -> None:
    f = _config(tmp_path, metrics="{listen: '192.0.2.7:19647'}")   # TEST-NET-1
    (found,) = problems(load_config(f))
    assert "not one of this machine's" in found and found.startswith(f"{f}:4:")


@pytest.mark.parametrize("host", ["256.1.1.1", "no-such-host.invalid"])
def test_a_host_that_does_not_resolve_is_found(tmp_path: Path, host: str) -> None:
    """Reliability 4.3: both were a gaierror traceback at start, after --check had passed."""
    f = _config(tmp_path, metrics=f"{{listen: '{host}:19647'}}")
    (found,) = problems(load_config(f))
    assert found.startswith(f"{f}:4: metrics.listen {host}:19647: cannot be bound: the host "
                            "does not resolve"), found


@pytest.mark.parametrize("port,why", [
    ("99999", "port 99999 is above 65535"),
    ("9" * 5000, "port of 5000 digits is above 65535"),
    ("1\u00b2", "expected HOST:PORT, got string '127.0.0.1:1\u00b2'"),  # isdigit, not int
], ids=["99999", "5000-digits", "superscript-2"])
def test_a_port_that_is_no_port_is_refused_at_its_line(tmp_path: Path, port: str,
                                                       why: str) -> None:
    """Reliability 4.3: port 99999 passed --check (getaddrinfo takes a port modulo 65536,
    so the check bound 34463) and the start ended in a ValueError traceback, exit 1."""
    f = _config(tmp_path, metrics=f"{{listen: '127.0.0.1:{port}'}}", dry_run="true",
                probe="diskstats")
    for args in (["--check"], ["--windows", "1"]) if port == "99999" else (["--check"],):
        r = subprocess.run([sys.executable, "-m", "ioaz.daemon.main", "--config", str(f),
                            *args], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2, r.stdout + r.stderr
        assert f"{f}:4: metrics.listen: {why}" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr


def test_socket_paths_that_cannot_be_a_socket(tmp_path: Path) -> None:
    long = tmp_path / ("d" * (MAX_SOCKET_PATH - len(str(tmp_path)))) / "ioaz.sock"
    (found,) = problems(load_config(_config(tmp_path, socket=str(long))))
    assert f"a Unix socket's path has at most {MAX_SOCKET_PATH}" in found
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "ioaz.sock").write_text("not a socket")
    (found,) = problems(load_config(_config(tmp_path)))
    assert found.endswith("a file that is not a socket is in its place (ioazd replaces only a "
                          "socket)")


def test_a_state_dir_under_a_regular_file_is_found(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("")
    f = _config(tmp_path, state_dir=str(tmp_path / "plain" / "ioaz"))
    (found,) = problems(load_config(f))
    assert found == (f"{f}:2: state_dir {tmp_path}/plain/ioaz: {tmp_path}/plain is a file, "
                     "not a directory")
    assert not (tmp_path / "run").exists()   # the check made nothing


def test_ioazd_check_exits_2_naming_the_line(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("")
    f = _config(tmp_path, socket=str(tmp_path / "plain" / "ioaz.sock"))
    r = subprocess.run([sys.executable, "-m", "ioaz.daemon.main", "--check", "--config", str(f)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{f}:3: socket {tmp_path}/plain/ioaz.sock: {tmp_path}/plain is a file" in r.stderr
    assert "Traceback" not in r.stderr


def test_check_config_passes_a_file_whose_address_a_running_daemon_holds(
        tmp_path: Path) -> None:
    """--check-config is for a file the running ioazd will reload: its metrics port is taken
    (by that daemon) and --check refuses it, --check-config does not; a file that is wrong in
    itself is refused by both, at its line."""
    def check(flag: str, f: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "ioaz.daemon.main", flag, "--config",
                               str(f)], capture_output=True, text=True, timeout=60)

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        f = _config(tmp_path, metrics=f"{{listen: '127.0.0.1:{port}'}}")
        full, file_only = check("--check", f), check("--check-config", f)
    assert full.returncode == 2 and "the address is in use" in full.stderr, full.stderr
    assert file_only.returncode == 0, file_only.stderr
    assert file_only.stdout.strip() == f"ioazd: {f}: configuration OK"
    bad = _config(tmp_path, window_s="-1")
    for flag in ("--check", "--check-config"):
        r = check(flag, bad)
        assert r.returncode == 2 and f"{bad}:" in r.stderr and "window_s" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr


def test_a_plain_start_refuses_what_check_finds_without_a_traceback(tmp_path: Path) -> None:
    """Started by hand (not by the unit, which runs --check first), ioazd finds the same."""
    (tmp_path / "plain").write_text("")
    f = _config(tmp_path, socket=str(tmp_path / "plain" / "ioaz.sock"), dry_run="true",
                probe="diskstats")
    r = subprocess.run([sys.executable, "-m", "ioaz.daemon.main", "--config", str(f),
                        "--windows", "1"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{f}:3: socket {tmp_path}/plain/ioaz.sock: {tmp_path}/plain is a file" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_state_directory_on_a_read_only_mount_is_refused_at_start(tmp_path: Path) -> None:
    """Reliability 3.11: a read-only state directory was a traceback from the socket bind."""
    if os.geteuid() != 0:
        pytest.skip("mounting a read-only tmpfs needs root")
    ro = tmp_path / "ro"
    ro.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,ro", "tmpfs", str(ro)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        # (not a dry run: a dry run never writes its state, and is not refused for it)
        f = _config(tmp_path, state_dir=str(ro / "state"), socket=str(tmp_path / "s.sock"),
                    probe="diskstats")
        for args in (["--check"], ["--windows", "1"]):
            r = subprocess.run([sys.executable, "-m", "ioaz.daemon.main", "--config", str(f),
                                *args], capture_output=True, text=True, timeout=60)
            assert r.returncode == 2, r.stdout + r.stderr
            assert f"{f}:2: state_dir {ro}/state: {ro} is on a read-only file system" in \
                r.stderr, r.stderr
            assert "Traceback" not in r.stderr
    finally:
        subprocess.run(["umount", str(ro)], check=False)
