"""The metrics endpoint over HTTP: it serves the private registry, and no client, however
many connections it opens or holds idle, can keep a scrape out or take the descriptors a
window needs (reliability 2.9). The daemon behind it is metrics_standin's fake.
"""
from __future__ import annotations

import time
import urllib.request
from pathlib import Path

import pytest
from ioaz.metrics.http import parse_listen, start_metrics_server
from metrics_standin import fake_daemon, record


def test_http_endpoint_serves_the_private_registry():
    srv = start_metrics_server(fake_daemon(record()), "127.0.0.1:0")
    try:
        host, port = srv.address
        body = urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5).read()
        assert b'ioaz_device_scheduler{device="sdz",scheduler="bfq"} 1.0' in body
        assert b"python_gc" not in body     # a private registry: only ioaz families
    finally:
        srv.close()


def test_idle_and_excess_connections_cannot_hold_the_endpoint(monkeypatch):
    """Any local user can connect: connections beyond the cap are closed at once, and one that
    has not finished its request by the deadline is cut, so descriptors stay bounded and a
    scrape gets through again."""
    import socket

    from ioaz.metrics import http as mhttp
    monkeypatch.setattr(mhttp, "MAX_CONNECTIONS", 4)
    monkeypatch.setattr(mhttp, "REQUEST_DEADLINE_S", 0.5)
    srv = start_metrics_server(fake_daemon(record()), "127.0.0.1:0")
    idle = []
    try:
        host, port = srv.address
        idle = [socket.create_connection((host, port), timeout=5) for _ in range(4)]
        time.sleep(0.2)                              # the four hold every slot
        extra = socket.create_connection((host, port), timeout=5)
        assert extra.recv(1) == b""                  # refused at once, not queued
        extra.close()
        assert srv.httpd.refused >= 1
        for s in idle:                               # cut at the deadline
            assert s.recv(1) == b""
        body = urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5).read()
        assert b"ioaz_devices" in body
    finally:
        for s in idle:
            s.close()
        srv.close()


# The metrics endpoint in a process of its own whose descriptors are counted: it serves, then
# lowers its soft RLIMIT_NOFILE to its highest descriptor + SPARE, and answers "files N" on
# stdin with how many of N files it could hold open at once (what a window needs: sysfs files).
FD_CHILD = """
import os, resource, sys
sys.path.insert(0, sys.argv[1])
from ioaz.metrics import http
from metrics_standin import fake_daemon, record
http.REQUEST_DEADLINE_S = float(sys.argv[2])
# a listen backlog of 128, not socketserver's 5: the flood arrives at once instead of being
# slowed by the kernel's SYN retries (1 s each), which would only make the test long
http._Server.request_queue_size = 128
srv = http.start_metrics_server(fake_daemon(record()), "127.0.0.1:0")
top = max(int(fd) for fd in os.listdir("/proc/self/fd"))
resource.setrlimit(resource.RLIMIT_NOFILE,
                   (top + 1 + int(sys.argv[3]), resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
print(srv.address[1], flush=True)
for line in sys.stdin:
    held = []
    try:
        for _ in range(int(line.split()[1])):
            held.append(open("/proc/self/stat", "rb"))
    except OSError:
        pass
    print(len(held), flush=True)
    for f in held:
        f.close()
"""


class FdChild:
    def __init__(self, deadline_s: float, spare: int):
        import subprocess
        import sys
        self.proc = subprocess.Popen(
            [sys.executable, "-c", FD_CHILD, str(Path(__file__).parent), str(deadline_s),
             str(spare)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout and self.proc.stdin
        self.port = int(self.proc.stdout.readline())

    def files(self, n: int) -> int:
        assert self.proc.stdout and self.proc.stdin
        self.proc.stdin.write(f"files {n}\n")
        self.proc.stdin.flush()
        return int(self.proc.stdout.readline())

    def cpu_s(self) -> float:
        import os
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def test_out_of_descriptors_the_endpoint_backs_off_and_recovers():
    """Reliability 2.9: with every descriptor taken, accept() fails with EMFILE while the
    listening socket stays readable; without a pause the accept loop spun at full CPU (120%
    on 2026-11-23). It waits EMFILE_BACKOFF_S between tries, and serves again once the idle
    connections are cut at the deadline."""
    import socket
    child = FdChild(deadline_s=2.0, spare=3)
    held = []
    try:
        held = [socket.create_connection(("127.0.0.1", child.port), timeout=5)
                for _ in range(6)]                   # 3 accepted, the rest wait: EMFILE
        time.sleep(0.3)
        assert child.files(1) == 0                   # really out of descriptors
        cpu = child.cpu_s()
        time.sleep(1.0)
        spent = child.cpu_s() - cpu
        assert spent < 0.3, f"{spent:.2f} s of CPU in 1 s out of descriptors: spinning"
        for s in held:
            s.close()
        body = urllib.request.urlopen(f"http://127.0.0.1:{child.port}/metrics",
                                      timeout=10).read()
        assert b"ioaz_devices" in body
        assert child.files(1) == 1                   # the descriptors came back
    finally:
        for s in held:
            s.close()
        child.close()


def test_a_connection_flood_leaves_the_descriptors_a_window_needs():
    """Reliability 2.9: 300 idle connections (the report held 2,600) against a process with
    room for the 16 the endpoint serves plus 24: every window still finds its files,
    because what is beyond the cap is closed at once."""
    import socket
    child = FdChild(deadline_s=30.0, spare=16 + 24)
    held = []
    try:
        for _ in range(300):
            held.append(socket.create_connection(("127.0.0.1", child.port), timeout=5))
        time.sleep(0.3)
        assert child.files(20) == 20
    finally:
        for s in held:
            s.close()
        child.close()


def test_the_unit_lifts_the_descriptor_limit_above_systemds_soft_1024():
    """Reliability 2.9: the report's daemon ran at systemd's default soft limit of 1024."""
    unit = (Path(__file__).parents[2] / "deploy" / "systemd" / "ioazd.service").read_text()
    (line,) = [x for x in unit.splitlines() if x.startswith("LimitNOFILE=")]
    assert int(line.split("=")[1]) >= 65536, line


def test_listen_address_parsing():
    assert parse_listen("127.0.0.1:19647") == ("127.0.0.1", 19647)
    assert parse_listen("[::1]:9") == ("::1", 9)
    for bad in ("localhost", "127.0.0.1:http", "127.0.0.1:70000"):
        with pytest.raises(ValueError):
            parse_listen(bad)
