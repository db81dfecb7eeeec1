"""The adaptive report's steady state: a mix run several times in a row in one simulation and
scored on one pass only (ioaz.lab.simsuites.adaptive: pass_scores, pass_oracle, repeated)."""
from __future__ import annotations

import pytest
from ioaz.lab.simsuites.adaptive import pass_oracle, pass_scores, repeated
from ioaz.lab.simsuites.common import run_sim
from ioaz.sim.workloads import Workload, ioaz_category

DEV = "wd500"


def _phase(n: int, pattern: str, seconds: float = 3.0):
    return ioaz_category(n, pattern, "read", seconds).phases[0]


def test_repeated_gives_fresh_phases_in_order() -> None:
    wl = Workload("ab", [_phase(1, "seq"), _phase(2, "rand")])
    two = repeated(wl, 2)
    assert [len(p.procs) for p in two.phases] == [1, 2, 1, 2]
    assert [p.duration_s for p in two.phases] == [3.0] * 4
    assert two.phases[0] is not two.phases[2] and two.phases[0] == two.phases[2]


def test_the_second_pass_is_scored_on_the_second_pass_only() -> None:
    # Pass 1 = 4 sequential readers, pass 2 = 4 random readers (30x slower): scored as two
    # passes of the one-phase mix, pass 1 must be exactly the readers run alone, and pass 2
    # must hold every other byte of the run and only the random readers' processes.
    seq, rand = _phase(4, "seq"), _phase(4, "rand")
    r = run_sim(DEV, "deadline", Workload("seq-then-rand", [seq, rand]), keep_windows=True)
    one = Workload("one pass", [seq])
    s0, s1 = pass_scores(r, one, 0), pass_scores(r, one, 1)
    alone = run_sim(DEV, "deadline", Workload("seq", [seq]))
    assert s0["throughput"] == pytest.approx(alone.throughput_mb_s, rel=1e-9)
    assert s0["mean"] == pytest.approx(alone.proc_mean_mb_s, rel=1e-9)
    assert s0["min"] == pytest.approx(alone.proc_min_mb_s, rel=1e-9)
    assert s0["phases"][0]["bytes"] + s1["phases"][0]["bytes"] == pytest.approx(r.bytes)
    rand_procs = sorted(r.proc_mb_s.items(), key=lambda kv: int(kv[0].split(":")[0]))[4:]
    assert s1["phases"][0]["procs"] == [v for _, v in rand_procs]
    assert s1["mean"] == pytest.approx(sum(v for _, v in rand_procs) / 4)
    assert s1["min"] == min(v for _, v in rand_procs)
    assert s1["throughput"] < 0.1 * s0["throughput"]


def test_a_static_schedulers_passes_agree() -> None:
    # the device state a pass leaves (head, read cache, queue) barely moves the next pass
    wl = Workload("mix", [_phase(4, "seq", 2.0), _phase(2, "rand", 2.0)])
    r = run_sim(DEV, "cfq", repeated(wl, 2), keep_windows=True)
    s0, s1 = pass_scores(r, wl, 0), pass_scores(r, wl, 1)
    single = run_sim(DEV, "cfq", wl)
    assert s0["throughput"] == pytest.approx(single.throughput_mb_s, rel=1e-9)
    assert s1["throughput"] == pytest.approx(s0["throughput"], rel=0.03)
    with pytest.raises(ValueError, match="not covered"):
        pass_scores(r, wl, 2)


def _ph(nbytes: float, procs: list[float]) -> dict:
    return {"bytes": nbytes, "s": 1.0, "procs": procs, "throughput": nbytes / 1e6,
            "mean": sum(procs) / len(procs), "min": min(procs)}


def test_the_pass_oracle_takes_each_phases_best() -> None:
    scores = {"a": {"phases": [_ph(4e6, [1.0, 3.0]), _ph(1e6, [0.5])]},
              "b": {"phases": [_ph(2e6, [1.5, 1.5]), _ph(3e6, [0.4])]}}
    assert pass_oracle(scores, "throughput") == (pytest.approx(3.5), ["a", "b"])
    v, picks = pass_oracle(scores, "min")
    assert picks == ["b", "a"] and v == 0.5
    v, picks = pass_oracle(scores, "mean")
    assert picks == ["a", "a"] and v == pytest.approx((1.0 + 3.0 + 0.5) / 3)
