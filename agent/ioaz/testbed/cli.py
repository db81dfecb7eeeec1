"""`ioaz-lab testbed`: build the Debian 12 guest, run a command in it, or open a shell in it."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ioaz.testbed import disks, image, vm
from ioaz.testbed.errors import TestbedError


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    b = sub.add_parser("build", help="build the guest image (cached until its recipe changes)")
    b.add_argument("--force", action="store_true", help="rebuild even if cached")
    c = sub.add_parser("check-disk", help="fio in the guest on a model disk against the simulator")
    c.add_argument("--model", default="wd500", help="the disk model (default wd500)")
    c.add_argument("--runtime", type=float, default=15.0, metavar="S", help="seconds per fio run")
    c.add_argument("--results", type=Path, metavar="DIR", help="where fio's JSON and the report go")
    c.add_argument("--order", action="store_true",
                   help="the scheduler-order checks instead (16 random readers, par-read)")
    c.add_argument("--no-credit", action="store_true",
                   help="charge the VM path on top of the model's time (no path credit)")
    for name, help_text in (("run", "boot the guest, run CMD as root, power off"),
                            ("shell", "boot the guest with a root shell on this terminal")):
        r = sub.add_parser(name, help=help_text)
        r.add_argument("--kernel", default="6.12", choices=("6.12", "6.1"),
                       help="the guest kernel's series (default 6.12)")
        r.add_argument("--disks", default="", metavar="SPEC",
                       help="data disks: comma list of file:SIZE or model:NAME[:SIZE]")
        r.add_argument("--memory", type=int, default=2048, metavar="MB", help="guest memory")
        r.add_argument("--results", type=Path, metavar="DIR",
                       help="results directory, /mnt/results in the guest "
                            "(default build/testbed/runs/TIME)")
        r.add_argument("--metrics-port", type=int, default=0, metavar="PORT",
                       help=f"forward the guest's port {vm.GUEST_METRICS_PORT} to 127.0.0.1:PORT")
        r.add_argument("--path-credit-us", type=float, default=0.0, metavar="US",
                       help="model disks: the VM path's cost per request, not charged "
                            "(check-disk measures it; default 0)")
        if name == "run":
            r.add_argument("--timeout", type=float, default=900.0, metavar="S",
                           help="kill the guest after S seconds (default 900)")
            r.add_argument("--quiet", action="store_true", help="do not echo the console")
            r.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD",
                           help="the command (one argument: a shell command line)")


def run(args: argparse.Namespace) -> int:
    try:
        if args.action == "build":
            img = image.build(force=args.force)
            print(json.dumps({"image": str(img.dir), **{k: v for k, v in img.manifest.items()
                                                         if k != "recipe"}}, indent=1))
            return 0
        if args.action == "check-disk":
            from ioaz.testbed import diskcheck
            results = vm.results_dir(args.results)
            if args.order:
                report = diskcheck.run_order(args.model, args.runtime, results,
                                             credit=not args.no_credit)
                print(diskcheck.render_order(report))
            else:
                report = diskcheck.run(args.model, args.runtime, results,
                                       credit=not args.no_credit)
                print(diskcheck.render(report))
            (results / "check-disk.json").write_text(json.dumps(report, indent=1) + "\n")
            return 0
        opts = vm.Options(kernel=args.kernel, disks=disks.parse(args.disks),
                          memory_mb=args.memory, results=args.results,
                          metrics_port=args.metrics_port, path_credit_us=args.path_credit_us)
        if args.action == "shell":
            return vm.shell(opts)
        opts.timeout_s = args.timeout
        cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
        res = vm.run(cmd, opts, echo=not args.quiet)
        if args.quiet:
            sys.stdout.write(res.output)
        boot = f"{res.boot_s:.1f} s" if res.boot_s is not None else "?"
        print(f"testbed: exit {res.rc}, boot {boot}, wall {res.wall_s:.1f} s, results "
              f"{res.results}", file=sys.stderr)
        return res.rc
    except TestbedError as e:
        print(f"ioaz-lab testbed: {e}", file=sys.stderr)
        return 2
