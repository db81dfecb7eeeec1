"""ioazctl: the administrator's tool.

`observe` works without the daemon; the other commands talk to ioazd over its Unix socket.
"""
from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from . import observe


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ioazctl", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    observe.add_arguments(sub.add_parser(
        "observe", help="live per-device workload features and IOAZ class (no daemon needed)"))
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "observe":
        return observe.run(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
