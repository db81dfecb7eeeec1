"""`ioaz-lab record DEV --seconds N [-o FILE]`: a block trace of a real device, for
`ioaz-lab sim --trace FILE` (every bio submitted: time, process, sector, size, direction, sync)."""
from __future__ import annotations

import argparse
import sys

from ..probe.bpf_object import ProbeUnavailable


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("device", help="block device to record (e.g. sda, loop0, /dev/vdb)")
    p.add_argument("--seconds", type=float, default=10.0, help="how long (default 10)")
    p.add_argument("-o", "--output", default="-", help="trace CSV file (default stdout)")


def run(args: argparse.Namespace) -> int:
    from ..probe.recorder import record

    dev = args.device[5:] if args.device.startswith("/dev/") else args.device
    if not 0 < args.seconds <= 86400:
        print(f"ioaz-lab record: --seconds {args.seconds}: must be between 0 and 86400",
              file=sys.stderr)
        return 2
    out = sys.stdout if args.output == "-" else open(args.output, "w", newline="")
    try:
        stats = record(dev, args.seconds, out)
    except ProbeUnavailable as e:
        print(f"ioaz-lab record: {e}", file=sys.stderr)
        return 1
    finally:
        if out is not sys.stdout:
            out.close()
    print(f"ioaz-lab record: {dev}: {stats.events} bios in {stats.seconds:.1f} s"
          + (f", {stats.dropped} dropped (ring buffer full)" if stats.dropped else ""),
          file=sys.stderr)
    return 0
