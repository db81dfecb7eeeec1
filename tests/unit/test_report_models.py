"""The report's model agent meets every phase of the mixes unseen: no phase is, process for
process, a workload the model was trained on (ioaz.lab.report_models). Training it takes
minutes, so the full report runs it (`ioaz-lab bench report --only adaptive`), not this test."""
from __future__ import annotations

from ioaz.lab.report_models import held_out, layout
from ioaz.lab.simsuites.adaptive import MIXES, _mix
from ioaz.learn import grid, simcal


def test_no_phase_of_the_mixes_is_in_the_training_set():
    trained = {layout(simcal.sim_workload(w, 1.0).phases[0]): w.id
               for w in grid.full_grid() if w.id not in held_out()}
    kept_out = {layout(simcal.sim_workload(w, 1.0).phases[0]): w.id
                for w in grid.ioaz_categories()}
    seen_held = []
    for mix in ("phases", *MIXES):
        for ph in _mix(mix, 10.0).phases:
            sig = layout(ph)
            assert sig not in trained, f"{mix}: phase {ph.name} is {trained[sig]}, trained on"
            if sig in kept_out:
                seen_held.append(kept_out[sig])
    # the held-out categories are the mixes' own phases (else holding them out proves nothing)
    assert {"16p-seq-read-128k-t0-d1-g1_2", "16p-seq-write-128k-t0-d8-g1_2"} <= set(seen_held)
    assert len(seen_held) >= 6
