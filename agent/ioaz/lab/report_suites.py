"""`ioaz-lab bench report [--quick] [--real] [--out DIR] [--only PART]`: every suite of the
benchmark report, written as DIR/report.md with PNG plots and DIR/results.json.

Parts: ioaz, carroll, xujiang, adaptive, speed (the simulator, ioaz.lab.simsuites) and, with
--real, real (ioazd against the kernel's schedulers on a loop device, ioaz.lab.report_real).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ioaz.lab.report import Report

SIM_PARTS = ("ioaz", "carroll", "xujiang", "adaptive", "speed")


def make_report(out: Path, quick: bool = False, real: bool = False,
                only: list[str] | None = None, device: str | None = None) -> Report:
    from ioaz.lab import simsuites

    unknown = set(only or ()) - set(SIM_PARTS) - {"real"}
    if unknown:
        raise ValueError(f"unknown report part(s) {sorted(unknown)}; "
                         f"known: {', '.join(SIM_PARTS)}, real")
    if device is not None:
        from ioaz.sim.devices import model_names
        if device not in model_names():
            raise ValueError(f"--device {device!r}: not a simulator device model (expected one "
                             f"of {', '.join(model_names())})")
    rep = Report(out, "ioaz benchmark report", quick=quick)
    simsuites.run_all(rep, quick, only, device)
    if real and (not only or "real" in only):
        from ioaz.lab import report_real

        report_real.suite_real(rep, quick)
    rep.write()
    return rep


def run_report(args: argparse.Namespace) -> dict[str, Any]:
    rep = make_report(Path(args.out), quick=args.quick, real=args.real, only=args.only,
                      device=args.device)
    return {"summary": rep.summary, "report": str(rep.out / "report.md"),
            "files": [str(f) for f in rep.files]}
