"""The simulator suites of `ioaz-lab bench report`: the papers' headline results reproduced on the
disk models (ioaz_tables, carroll, xujiang), adaptive ioaz against every static scheduler and the
per-phase oracle (adaptive, adaptive_report), and the simulator's speed; one module a suite.

Each suite adds one section to the Report and its numbers to Report.data; the section's words
(headings, sentences, table headers, captions) are in templates/SUITE.md (prose.py). Sources
(docs/references.md): IOAZ (Martens & Katchabaw), Carroll ("I/O Scheduling on RAID"), Xu &
Jiang (Stream Scheduling).
"""
from __future__ import annotations

from ioaz.lab.report import Report
from ioaz.lab.simsuites.adaptive import suite_adaptive
from ioaz.lab.simsuites.carroll import suite_carroll
from ioaz.lab.simsuites.common import Opts
from ioaz.lab.simsuites.ioaz_tables import suite_ioaz
from ioaz.lab.simsuites.speed import suite_speed
from ioaz.lab.simsuites.xujiang import suite_xujiang

SIM_SUITES = {"ioaz": suite_ioaz, "carroll": suite_carroll, "xujiang": suite_xujiang,
              "adaptive": suite_adaptive, "speed": suite_speed}


def run_all(rep: Report, quick: bool, only: list[str] | None = None,
            adaptive_device: str | None = None) -> None:
    o = Opts(quick=quick, adaptive_device=adaptive_device)
    for name, fn in SIM_SUITES.items():
        if only and name not in only:
            continue
        fn(rep, o)
