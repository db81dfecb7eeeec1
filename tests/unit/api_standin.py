"""A stand-in for the daemon behind the real API server, for test_api_server.py and
test_api_clients.py: it answers like the Daemon's control and view methods."""
from __future__ import annotations

import json
import socket
import threading

import pytest
from ioaz.api import server
from ioaz.daemon.core import ControlError


class StandIn:
    """Answers like the Daemon's control and view methods, and records what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def status(self):
        return {"source": "bpf", "fallback_reason": None, "dry_run": False, "window_s": 1.0,
                "windows": 3, "uptime_s": 3.0, "config": "/etc/ioaz/ioaz.yaml",
                "collector_up": True,
                "devices": [{"device": "sdz", "mode": "auto", "scheduler": "bfq",
                             "policy": "anticipatory", "goal": "mean",
                             "class": {"processes": "8", "pattern": "random", "mode": "read"},
                             "last_action": "hold", "last_reason": "matrix",
                             "decision_age_s": 0.4, "pin": None, "note": "", "errors": 0,
                             "last_error": None}]}

    def control_pin(self, device, policy, duration_s):
        self.calls.append(("pin", device, policy, duration_s))
        if device != "sdz":
            raise ControlError(f"unknown device {device!r} (managed: sdz)")
        return {"device": device, "mode": "pinned", "policy": policy, "for_s": duration_s}

    def control_reload(self):
        raise RuntimeError("boom")   # a bug in the daemon must not kill the server

    def history_list(self, device=None, limit=50):
        self.calls.append(("history", device, limit))
        return []


@pytest.fixture
def api(tmp_path):
    d = StandIn()
    srv = server.start_api_server(d, tmp_path / "run" / "ioaz.sock")
    yield d, srv
    srv.close()


def raw(path, data: bytes, timeout: float = 5.0) -> list[dict]:
    """Send `data`, then SHUT_WR, and read every answer line until the server closes. The
    sending is a thread of its own, so a request of many lines cannot stall both ends (each
    waiting for the other to read)."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        s.connect(str(path))

        def send():
            try:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
            except OSError:
                pass            # the server closed first (a refused line): its answer counts
        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        buf = b""
        while chunk := s.recv(65536):
            buf += chunk
        sender.join(timeout)
    return [json.loads(line) for line in buf.splitlines() if line]
