"""ioazd: the daemon. The composition root: builds the probe, the actuator and the daemon
from the configuration, recovers from a previous crash, serves the API and the metrics, runs
one window per period, and restores every device on SIGTERM/SIGINT (SIGHUP reloads).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from .. import __version__, home
from ..actuate import Actuator, RestoreResult, StateStore
from ..actuate.recover import recover
from ..probe import open_source
from ..sysblock import HELD_BY_DAEMON, BlockSysfs
from . import journal
from .compose import build
from .config import DEFAULT_CONFIG, ConfigError, DaemonConfig, load_config
from .core import Daemon
from .hazards import knob_warnings
from .notify import Notifier

log = logging.getLogger("ioaz.daemon")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ioazd", description="ioazd: gives each disk the I/O scheduler that suits its "
        "measured workload, and puts the originals back when it stops (man ioazd)")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument("--config", "-c", default=str(DEFAULT_CONFIG), metavar="FILE",
                   help=f"configuration file (default {DEFAULT_CONFIG})")
    p.add_argument("--dry-run", action="store_true",
                   help="decide and log, never write to sysfs")
    p.add_argument("--windows", type=int, default=None, metavar="N",
                   help="stop (and restore) after N windows; default: run until signalled")
    p.add_argument("--check", action="store_true",
                   help="only load and check the configuration and that it can start here "
                   "(its address, socket and state directory), then exit")
    p.add_argument("--check-config", action="store_true",
                   help="only load and check the configuration file and what it names, then "
                   "exit: for a file a running ioazd will reload (whose address it holds)")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="also log every window's decision for every device (its class, "
                   "matrix cell, verdict and why it held or switched), at debug priority")
    p.add_argument("--restore", action="store_true",
                   help="only put back what the state file holds (a daemon that died), then exit")
    return p


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


class JournalFormatter(logging.Formatter):
    """Under systemd: the JSON alone (journald stamps the time), after a "<N>" syslog priority
    that journald reads off the line (SyslogLevelPrefix=, on by default), so that
    `journalctl -p warning -u ioazd` shows the warnings and errors and nothing else."""

    PRIORITY = {logging.CRITICAL: 2, logging.ERROR: 3, logging.WARNING: 4, logging.INFO: 6,
                logging.DEBUG: 7}

    def format(self, record: logging.LogRecord) -> str:
        prio = self.PRIORITY.get(record.levelno, 6)
        return "\n".join(f"<{prio}>{line}" for line in super().format(record).splitlines())


def setup_logging(verbose: bool = False) -> None:
    handler: logging.Handler
    if journal.available():   # entries with DEVICE= and IOAZ_EVENT= fields (journal.py)
        handler = journal.JournalHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JournalFormatter("%(message)s") if journal.stderr_is_journal()
                             else logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, handlers=[handler])


def start_services(daemon: Daemon) -> list[Any]:
    """The ioazctl socket and the Prometheus endpoint, where those modules exist."""
    started: list[Any] = []
    try:
        from ..api.server import start_api_server
    except ImportError:
        pass
    else:
        started.append(start_api_server(daemon, daemon.config.socket))
    if daemon.config.metrics_listen:
        try:
            from ..metrics.http import start_metrics_server
        except ImportError:
            pass
        else:
            started.append(start_metrics_server(daemon, daemon.config.metrics_listen))
    return started


def restore_only(config: DaemonConfig) -> int:
    """What the unit's ExecStopPost runs: a daemon that died or was stopped before it could
    restore (SIGTERM while it was still starting, SIGKILL, OOM) leaves its state file behind;
    the devices go back now, not at the next start."""
    actuator = Actuator(BlockSysfs(), StateStore(config.state_dir))
    results = recover(config.state_dir, actuator=actuator)
    log_recovered("restore_after_exit", results)
    return 0 if all(r.ok for r in results) else 1


def log_recovered(event: str, results: Sequence[RestoreResult]) -> None:
    """One warning per device a state file left changed: put back, vanished or replaced."""
    for r in results:
        log.warning(json.dumps({"event": event, "device": r.device,
                                "restored": r.restored, "vanished": r.vanished,
                                "replaced": r.replaced, "errors": r.errors,
                                "state_not_cleared": r.state_kept}))


def print_warnings(found: Sequence[str]) -> None:
    """What the configuration risks, though valid (hazards.py): said, and the check passes."""
    for w in found:
        print(f"ioazd: warning: {w}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    # A SIGTERM that comes while ioazd is still starting must not kill it before it can restore:
    # from here on it only asks the window loop to stop, and every step of the start checks.
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    args = parse_args(argv)
    why = home.missing("ioazd")
    if why:
        print(why, file=sys.stderr)
        return 2
    setup_logging(args.verbose)
    try:
        config = load_config(args.config, dry_run=args.dry_run)
    except ConfigError as e:
        print(f"ioazd: configuration refused:\n{e}", file=sys.stderr)
        return 2
    from .preflight import problems, warnings
    risky = knob_warnings(config.decide) + warnings(config)
    if args.check_config:
        print_warnings(risky)
        print(f"ioazd: {config.file}: configuration OK")
        return 0
    if args.restore:
        return 0 if config.dry_run else restore_only(config)
    # What --check finds (a taken port, a blocked socket path, a state directory that cannot
    # be written) is looked for at every start too: started by hand, not by the unit, ioazd
    # must refuse with the setting's line rather than fail half-way with a traceback.
    found = problems(config)
    if found:
        print("ioazd: the configuration is valid but cannot start as it is:\n"
              + "\n".join(found), file=sys.stderr)
        return 2
    if args.check:
        print_warnings(risky)
        print(f"ioazd: {config.file}: configuration OK")
        return 0
    if args.windows is not None and args.windows < 1:
        print(f"ioazd: --windows {args.windows}: must be at least 1", file=sys.stderr)
        return 2
    if os.geteuid() != 0 and not config.dry_run:
        print("ioazd: needs root to change schedulers (or run with --dry-run)", file=sys.stderr)
        return 1

    # the scheduler line and diskseq, read for every disk every window, through descriptors
    # it keeps (sysblock.HELD_KEYS)
    sysfs = BlockSysfs(hold_open=HELD_BY_DAEMON)
    state = StateStore(config.state_dir)
    actuator = Actuator(sysfs, state)
    if not config.dry_run:
        log_recovered("crash_recovery", recover(config.state_dir, actuator=actuator))
    try:
        source, why = open_source(config.probe, config.sample_plan(), sysfs)
    except Exception as e:
        print(f"ioazd: probe: {e}", file=sys.stderr)
        return 1

    for w in risky:
        log.warning(json.dumps({"event": "config_warning", "warning": w}))
    daemon = build(config, source, actuator, sysfs, fallback_reason=why)
    notify = Notifier()
    reload_wanted = threading.Event()
    wake = daemon.rest.woken    # a rest's long wait ends at once on a signal

    def stopping(*_: object) -> None:
        stop.set()
        wake.set()

    def reloading(*_: object) -> None:
        reload_wanted.set()
        daemon.rest.disturb()

    signal.signal(signal.SIGTERM, stopping)
    signal.signal(signal.SIGINT, stopping)
    signal.signal(signal.SIGHUP, reloading)
    services = []
    try:
        daemon.start()
        try:
            services = start_services(daemon)
        except OSError as e:      # taken between the preflight and now
            print(f"ioazd: cannot serve: {e}", file=sys.stderr)
            return 2
        n = 0
        began = time.monotonic()
        keepalive = (notify.alive, notify.every_s) if notify.every_s else None
        while True:
            ended = daemon.rest.wait(stop, began, daemon.moved, keepalive)
            if ended is None:
                break
            began = ended
            if reload_wanted.is_set():
                reload_wanted.clear()
                try:
                    daemon.control_reload()
                except ValueError as e:
                    log.error(str(e))
                except Exception as e:   # a reload must never end the daemon that serves
                    log.error(json.dumps({"event": "reload_failed",
                                          "error": f"{type(e).__name__}: {e}"}))
            daemon.window()
            n += 1
            if n == 1:
                notify.ready()
            notify.alive()
            if args.windows is not None and n >= args.windows:
                break
    finally:
        notify.stopping()
        for s in services:
            try:
                s.close()
            except Exception:
                pass
        if not config.dry_run:
            daemon.stop()
        source.close()
        sysfs.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
