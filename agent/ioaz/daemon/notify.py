"""Telling systemd how ioazd is doing (sd_notify's protocol: one datagram to $NOTIFY_SOCKET).

READY=1 after the first window (the probe attached, the devices read: the unit is Type=notify,
so `systemctl start` returns when ioazd really works) and, until then, EXTEND_TIMEOUT_USEC every
EXTEND_S / 2 of the wait for it (a window_s longer than the unit's start timeout, 90 s by
default, must not fail the start), WATCHDOG=1 after every window and every half WatchdogSec of
the wait between two (a window loop that hangs gets the daemon restarted; a window or a rest
longer than WatchdogSec must not), STOPPING=1 when it starts giving devices back. Outside
systemd ($NOTIFY_SOCKET unset) nothing is sent.
"""
from __future__ import annotations

import logging
import os
import socket

log = logging.getLogger("ioaz.daemon")

# Each EXTEND_TIMEOUT_USEC before READY=1 gives the start this long from then.
EXTEND_S = 30.0


class Notifier:
    def __init__(self, environ: dict[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        path = env.get("NOTIFY_SOCKET", "")
        # "@name": an abstract socket (a leading NUL on the wire)
        self.address = ("\0" + path[1:]) if path.startswith("@") else path
        usec = env.get("WATCHDOG_USEC", "")
        self.watchdog = usec.isdigit() and int(usec) > 0
        # how often a sign of life is due while waiting: half the watchdog's interval, as
        # sd_watchdog_enabled(3) advises, or of EXTEND_S while the start lasts (never more
        # often than every 10 ms: a WatchdogSec of microseconds must not spin the loop); None
        # outside systemd
        half = max(0.01, min(int(usec) / 2e6, EXTEND_S / 2)) if self.watchdog else EXTEND_S / 2
        self.every_s = half if self.address else None
        self.is_ready = False
        self.failed = False

    def send(self, message: str) -> bool:
        if not self.address:
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
                s.sendto(message.encode(), self.address)
            return True
        except OSError as e:
            if not self.failed:   # once: a broken notify socket must not flood the journal
                log.warning('{"event": "notify_failed", "error": "%s"}', e.strerror or e)
                self.failed = True
            return False

    def ready(self) -> None:
        self.is_ready = True
        self.send("READY=1")

    def alive(self) -> None:
        if not self.is_ready:
            self.send(f"EXTEND_TIMEOUT_USEC={int(EXTEND_S * 1e6)}")
        if self.watchdog:
            self.send("WATCHDOG=1")

    def stopping(self) -> None:
        self.send("STOPPING=1")
