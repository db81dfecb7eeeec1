"""How fast the simulator runs (`ioaz-lab sim --bench`)."""
from __future__ import annotations

from typing import Any

from ioaz.lab.report import Report
from ioaz.lab.simsuites.common import Opts


def suite_speed(rep: Report, o: Opts) -> dict[str, Any]:
    from ioaz.sim.speed import TARGET_REQ_PER_S, measure

    rows = measure(1.0 if o.quick else 5.0, 1 if o.quick else 3)
    out = {"cases": rows, "target": TARGET_REQ_PER_S}
    rep.data["speed"] = out
    hdd = [r for r in rows if "HDD" in r["case"]]
    rep.summary.append("simulator speed (CPU time of one core): "
                       + ", ".join(f"{r['case']} {r['requests_per_cpu_s']:,.0f} req/s"
                                   for r in hdd)
                       + f"; fastest case {max(r['requests_per_cpu_s'] for r in rows):,.0f}")
    sec = rep.section("Simulator speed")
    sec.text("`ioaz-lab sim --bench`: simulated requests per second of wall time and of the "
           f"process's CPU time (the speed on one core whatever else the machine runs); target "
           f"{TARGET_REQ_PER_S:,} per second. " + ("Quick run: 1 simulated second per case, once."
                                                   if o.quick else "5 s per case, best of 3."))
    sec.table(["case", "requests", "wall s", "req/s wall", "req/s CPU"],
            [(r["case"], r["requests"], r["wall_s"], r["requests_per_wall_s"],
              r["requests_per_cpu_s"]) for r in rows], digits=0)
    return out

