"""`ioaz-lab`: the laboratory commands (sim, bench, record, calibrate, derive, train, testbed).

Each subcommand lives in its own module under ioaz.lab and registers itself in SUBCOMMANDS as
`name -> "module:function"`; the module is imported only when its subcommand runs, so the light
commands never pay for numpy, matplotlib or scikit-learn.

A subcommand module provides `add_arguments(parser)` and `run(args) -> int`.
"""
from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from ioaz import __version__, home

# name -> (module, one-line help). Add a line here when you add a subcommand module.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "bench": ("ioaz.lab.bench", "run benchmark suites and print their numbers"),
    "sim": ("ioaz.lab.sim_cmd", "simulate a workload on a disk model under I/O schedulers"),
    "calibrate": ("ioaz.lab.calibrate", "measure every candidate policy on a device or model"),
    "derive": ("ioaz.lab.derive", "decision matrices from a calibration dataset"),
    "compare": ("ioaz.lab.compare", "the simulator against the kernel: two calibrations compared"),
    "train": ("ioaz.lab.train", "train a classifier from features to the best policy"),
    "record": ("ioaz.lab.record", "record a block trace of a real device for replay in sim"),
    "replay": ("ioaz.lab.replay", "what a model names on the windows an ioazd --verbose log holds"),
    "testbed": ("ioaz.testbed.cli", "a Debian 12 storage server in qemu: build, run, shell"),
}


def _terminated(signum: int, frame: FrameType | None) -> None:
    print(f"ioaz-lab: {signal.Signals(signum).name} received, stopping", file=sys.stderr,
          flush=True)
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # SIGTERM (kill, a CI job's timeout, systemd) unwinds as Ctrl-C does, so that every
    # `finally` runs: a testbed's qemu and model disks stop, a calibrated device gets its
    # scheduler back. Python's default ends the process with none of them run, and left a
    # guest and its two disk servers running (docs/testbed.md, seventy-second run).
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminated)
    why = home.missing("ioaz-lab")
    if why and not {"-h", "--help", "--version"} & set(argv):
        print(why, file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog="ioaz-lab", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    # Only the chosen subcommand's module is imported.
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name, (module, help_text) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text)
        if name == chosen:
            importlib.import_module(module).add_arguments(p)
    args = parser.parse_args(argv)
    mod = importlib.import_module(SUBCOMMANDS[args.command][0])
    return int(mod.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
