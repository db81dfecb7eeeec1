"""Clients of ioazd's socket for the slowloris test (reliability.md 2.7), run as a throw-away
user by the system's python3 (the project's venv may not be readable to that user), so the
standard library only.

    python3 slowloris.py trickle SOCKET CONNECTIONS SECONDS EVERY
    python3 slowloris.py poll SOCKET SECONDS STEP

Times are CLOCK_MONOTONIC, which every process on the machine shares, so the test can set them
beside its own.
"""
from __future__ import annotations

import json
import selectors
import socket
import sys
import time


def trickle(path: str, n: int, seconds: float, every: float) -> None:
    """`n` connections, each sending one byte every `every` s and never a whole request. Like
    slowloris, it replaces a connection the server dropped at its next tick (when that
    connection's next byte would fail); one told `busy` (a slot briefly taken by another
    client) it tries again at once. Prints `ready` once the first `n` are open, then a
    JSON line per connection: opened, closed (by the server; null if it was still open at the
    end), and whether it was told busy."""
    sel = selectors.DefaultSelector()
    conns: dict[socket.socket, dict] = {}
    done: list[dict] = []
    dropped = 0                  # connections the server closed, replaced at the next tick
    end = time.monotonic() + seconds
    tick = time.monotonic()
    ready = False

    def close(s: socket.socket, busy: bool) -> None:
        sel.unregister(s)
        s.close()
        done.append({**conns.pop(s), "closed": time.monotonic(), "busy": busy})

    while time.monotonic() < end:
        now = time.monotonic()
        if now >= tick:
            for s in list(conns):
                try:
                    s.send(b" ")
                except OSError:
                    close(s, False)
            tick += every
            dropped = 0
        while len(conns) + dropped < n:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            s.send(b"{")
            conns[s] = {"opened": time.monotonic()}
            sel.register(s, selectors.EVENT_READ)
        if not ready:
            print("ready", flush=True)
            ready = True
        for key, _ in sel.select(max(0.0, min(tick, end) - time.monotonic())):
            s = key.fileobj
            assert isinstance(s, socket.socket)
            got = s.recv(4096)
            busy = b'"busy"' in got
            if not busy:
                dropped += 1
            close(s, busy)
    for s in list(conns):
        sel.unregister(s)
        s.close()
        done.append({**conns.pop(s), "closed": None, "busy": False})
    for c in done:
        print(json.dumps(c))


def poll(path: str, seconds: float, step: float) -> None:
    """`status` every `step` s for `seconds`; a JSON line per call: when it was sent, how long
    the answer took, and its kind (`ok`, the error's kind, or what went wrong)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.monotonic()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(10)
                s.connect(path)
                try:
                    s.sendall(b'{"cmd": "status"}\n')
                except (BrokenPipeError, ConnectionResetError):
                    pass   # told busy and closed before the request: the answer is queued
                resp = json.loads(s.makefile("rb").readline())
            kind = "ok" if resp.get("ok") else str(resp.get("kind"))
        except (OSError, ValueError) as e:
            kind = f"failed: {e!r}"
        print(json.dumps({"t": t0, "took": time.monotonic() - t0, "kind": kind}), flush=True)
        time.sleep(step)


if __name__ == "__main__":
    if sys.argv[1] == "trickle":
        trickle(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]))
    else:
        poll(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
