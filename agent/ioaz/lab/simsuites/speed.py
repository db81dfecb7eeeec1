"""How fast the simulator runs (`ioaz-lab sim --bench`)."""
from __future__ import annotations

from typing import Any

from ioaz.lab.report import Report
from ioaz.lab.simsuites.common import Opts
from ioaz.lab.simsuites.prose import prose


def suite_speed(rep: Report, o: Opts) -> dict[str, Any]:
    from ioaz.sim.speed import TARGET_REQ_PER_S, measure

    rows = measure(1.0 if o.quick else 5.0, 1 if o.quick else 3)
    out = {"cases": rows, "target": TARGET_REQ_PER_S}
    rep.data["speed"] = out
    words = prose("speed")
    hdd = [words("summary_case", case=r["case"], req_s=f"{r['requests_per_cpu_s']:,.0f}")
           for r in rows if "HDD" in r["case"]]
    rep.summary.append(words("summary", hdd=", ".join(hdd),
                             fastest=f"{max(r['requests_per_cpu_s'] for r in rows):,.0f}"))
    sec = rep.section(words.title)
    sec.text(words("intro", target=f"{TARGET_REQ_PER_S:,}",
                   runs=words("runs_quick" if o.quick else "runs_full")))
    sec.table(words.headers("cases"),
              [(r["case"], r["requests"], r["wall_s"], r["requests_per_wall_s"],
                r["requests_per_cpu_s"]) for r in rows], digits=0)
    return out

