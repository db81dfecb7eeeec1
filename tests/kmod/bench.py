"""Requests per second through fifo, vr and stream against none and mq-deadline, in the VM.

    .venv/bin/python tests/kmod/bench.py [--seconds 4] [--rounds 2]

null_blk without timer delay (irqmode=0, depth 64), random 4 KiB O_DIRECT reads with 32 in
flight from iotool, every scheduler in the same boot, rounds interleaved so drift in the VM
hits all schedulers alike. Prints each scheduler's median requests/s and its ratio to none and
to mq-deadline. Numbers are for a TCG VM: they measure scheduler overhead, not a disk.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys

import vmharness
import vmscripts

SCHEDS = ["none", "mq-deadline", "fifo", "vr", "stream"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    try:
        vmharness.check_prerequisites()
    except vmharness.Unavailable as e:
        print(f"cannot run: {e}", file=sys.stderr)
        return 2
    initrd = vmharness.make_initramfs("bench", vmscripts.bench_script(SCHEDS, args.seconds,
                                                                      args.rounds))
    b = vmharness.boot(initrd, timeout=120 + len(SCHEDS) * args.rounds * (args.seconds + 5))
    runs: dict[str, list[float]] = {s: [] for s in SCHEDS}
    for line in b.section("bench"):
        parts = line.split()
        if len(parts) == 4 and parts[2] == "iops" and parts[0] in runs:
            runs[parts[0]].append(float(parts[3]))
    missing = [s for s, v in runs.items() if not v]
    if missing:
        print(f"no result for {missing}; console in {vmharness.WORK}", file=sys.stderr)
        return 1
    mean = {s: statistics.median(v) for s, v in runs.items()}
    result = {s: {"iops": round(mean[s]), "runs": [round(x) for x in runs[s]],
                  "vs_none": round(mean[s] / mean["none"], 3),
                  "vs_mq_deadline": round(mean[s] / mean["mq-deadline"], 3)} for s in SCHEDS}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{'scheduler':12} {'req/s':>9} {'vs none':>8} {'vs mq-deadline':>15}")
        for s in SCHEDS:
            r = result[s]
            print(f"{s:12} {r['iops']:9d} {r['vs_none']:8.3f} {r['vs_mq_deadline']:15.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
