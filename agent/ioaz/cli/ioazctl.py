"""ioazctl: the administrator's tool.

`observe`, `advise`, `export` and `matrix validate` work without the daemon; the other commands
talk to ioazd over its Unix socket (/run/ioaz/ioaz.sock, or --socket PATH).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .. import __version__, home
from . import advise, control, export, observe


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ioazctl", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    control.common(p, top=True)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    observe.add_arguments(sub.add_parser(
        "observe", help="live per-device workload features and IOAZ class (no daemon needed)"))
    p_advise = sub.add_parser(
        "advise", help="what ioaz would set on each disk and why, writing nothing (no daemon "
                       "needed)")
    advise.add_arguments(p_advise)
    control.common(p_advise, daemon=False)
    export.add_arguments(sub.add_parser(
        "export", help="what ioazd has set on each disk, frozen as a udev rule or a TuneD "
                       "profile (printed)"))
    control.add_commands(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    why = home.missing("ioazctl")
    if why:
        print(why, file=sys.stderr)
        return 2
    if args.command == "observe":
        return observe.run(args)
    if args.command == "advise":
        return advise.run(args)
    if args.command == "export":
        return export.run(args)
    return control.run(args)


if __name__ == "__main__":
    sys.exit(main())
