"""The simulator suites' report prose comes from templates/SUITE.md (ioaz.lab.simsuites.prose):
every suite's section rendered from stand-in results, every block of every template reached,
every placeholder filled and the numbers where the sentences say they are."""
from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("matplotlib")

from ioaz.lab.report import Report  # noqa: E402
from ioaz.lab.simsuites import adaptive, carroll, ioaz_tables, speed, xujiang  # noqa: E402
from ioaz.lab.simsuites.adaptive_report import adaptive_section, adaptive_summary  # noqa: E402
from ioaz.lab.simsuites.common import Opts  # noqa: E402
from ioaz.lab.simsuites.prose import Prose, prose  # noqa: E402

TEMPLATES = Path(ioaz_tables.__file__).parent / "templates"


def _share(*key: Any) -> float:
    return int(hashlib.sha256(repr(key).encode()).hexdigest()[:12], 16) / 16**12


def fake_run_sim(device: str, sched: str, wl: Any, *, tunables: Any = None,
                 keep_windows: bool = False, **over: Any) -> Any:
    """A run's numbers from a hash of what was asked: different per scheduler, the same for the
    same question; IOAZ's 8 random writers a four-way tie (the tie's reason)."""
    key = (device, sched, wl.name, sorted((tunables or {}).items()), sorted(over.items()))
    tie = "8-rand-write" in wl.name
    base = 10.0 if tie else 10.0 + 10.0 * _share(key)
    v = {a: base * (1 + (0.001 if tie else 0.5) * _share(key, a))
         for a in ("thr", "min", "max", "mean", "iops")}
    p99 = 0.05 + 2.0 * _share(key, "p99")
    windows = [SimpleNamespace(p99_latency_s=p99 * (0.5 + _share(key, i))) for i in range(3)]
    return SimpleNamespace(throughput_mb_s=v["thr"], proc_min_mb_s=v["min"],
                           proc_max_mb_s=v["max"], proc_mean_mb_s=v["mean"], iops=v["iops"],
                           p99_latency_s=p99, windows=windows if keep_windows else [])


def fake_measure(sim_seconds: float, repeat: int) -> list[dict[str, Any]]:
    return [{"case": case, "requests": 1000 * (i + 1), "wall_s": 0.5, "requests_per_wall_s": 2e5,
             "requests_per_cpu_s": 123456.0 * (i + 1)}
            for i, case in enumerate(["HDD wd500 par-read", "fixed 10 us"])]


# -- the adaptive suite's results, by hand ------------------------------------------------------
def _phase(name: str, oracle: str, policy: str, value: float = 1.0, oracle_value: float = 1.0,
           **more: Any) -> dict[str, Any]:
    return {"phase": name, "oracle": oracle, "policy_at_end": policy, "policy_value": value,
            "oracle_value": oracle_value, "class": "4/sequential/read/shallow",
            "classes_seen": 1, "processes": 4, "processes_counted": 4, "budget_holds": 0,
            **more}


def _agent(value: float, switches: list[float], phases: list[dict[str, Any]],
           enters: str | None = None) -> dict[str, Any]:
    a = {"value": value, "vs_best_static": value / 50.0, "vs_oracle": value / 51.0,
         "switches": [{"t": t, "from": "x", "to": "y", "drain_s": 0.0} for t in switches],
         "phases": phases, "p99_ms": 1.0}
    return a if enters is None else {**a, "enters_under": enters}


def _mix(goal: str, agents: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    static = {"deadline": 30.0, "stream": 50.0}
    steady = {"pass": 2, "passes": 2, "static": static, "best_static": "stream",
              "best_static_value": 50.0, "oracle": 51.0, "oracle_first_pass": 51.5,
              "static_drift": {"deadline": -0.031, "stream": 0.004}, "t0": 20.0,
              **{v: s for v, (_, s) in agents.items()}}
    m = {"mix": "phases", "phase_s": 10.0, "goal": goal, "static": static,
         "best_static": "stream", "best_static_value": 50.0, "oracle": 51.0,
         **{v: c for v, (c, _) in agents.items()}, "steady": steady}
    first = m[next(iter(agents))]
    return {**m, "adaptive": first["value"], "vs_best_static": first["vs_best_static"],
            "vs_oracle": first["vs_oracle"], "switches": first["switches"],
            "phases": first["phases"]}


def adaptive_short() -> dict[str, Any]:
    """Three agents, every reason to fall short, both sweeps and the recorded trace."""
    good = _phase("par-read", "stream", "stream")
    wrong = _phase("16 rand read", "cfq", "vr", 0.1, 0.5, processes=16, processes_counted=3,
                   budget_holds=4, classes_seen=2)
    held = _phase("4 seq read", "stream", "stream", budget_holds=2)
    fine = _agent(52.0, [11.0], [good], enters="stream")
    agents = {"ioaz": (_agent(40.0, [3.0, 13.0], [good, wrong]),
                       _agent(40.0, [], [good, held], enters="noop")),
              "ioaz-calibrated": (_agent(40.0, [], [good]),
                                  _agent(40.0, [25.0], [good], enters="noop")),
              "ioaz-model": (fine, fine)}
    return {"device": "wd500", "variants": list(agents),
            "mixes": [_mix("throughput", agents), _mix("mean", agents)],
            "hysteresis": [{"agent": "ioaz", "hysteresis_windows": 1, "mb_s": 61.3,
                            "switches": 4, "vs_best_static": 0.96, "vs_oracle": 0.95}],
            "trials": [{"mix": "phases", "phase_s": 10.0, "trials": "off",
                        "cold_vs_best_static": 0.989, "cold_vs_oracle": 0.983,
                        "steady_vs_best_static": 1.0, "steady_vs_oracle": 0.999,
                        "trials_run": 0}],
            "trace": {"file": "trace-phases-loop.csv", "device": "wd500",
                      "static": {"deadline": {"mb_s": 9.0, "p50_ms": 4.0, "p99_ms": 80.0}},
                      "adaptive": {"ioaz, throughput": {"mb_s": 9.0, "p50_ms": 3.0,
                                                        "p99_ms": 70.0,
                                                        "switches": ["5s deadline->stream"]}}}}


def adaptive_fine() -> dict[str, Any]:
    """The default agent alone, never short; the trace skipped."""
    good = _phase("par-read", "stream", "stream")
    agents = {"ioaz": (_agent(52.0, [1.0], [good]), _agent(52.0, [21.0], [good], "stream"))}
    return {"device": "ssd", "variants": ["ioaz"], "mixes": [_mix("throughput", agents)],
            "trace": {"skipped": "tests/data/trace-phases-loop.csv not found"}}


def _markdown(rep: Report) -> str:
    return "\n".join([*rep.summary, *(s.markdown() for s in rep.sections)])


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Every suite's section, quick and full, the adaptive one from both inputs above, and the
    blocks of each template that were used."""
    used: dict[str, set[str]] = {}
    real_call = Prose.__call__

    def call(self: Prose, block: str, **values: object) -> str:
        used.setdefault(self.title, set()).add(block)
        return real_call(self, block, **values)

    mp = pytest.MonkeyPatch()
    mp.setattr(Prose, "__call__", call)
    for mod in (ioaz_tables, carroll, xujiang):
        mp.setattr(mod, "run_sim", fake_run_sim)
    mp.setattr("ioaz.sim.speed.measure", fake_measure)
    out = tmp_path_factory.mktemp("report")
    md: dict[str, str] = {}
    data: dict[str, Any] = {}
    for quick in (True, False):
        for name, suite in (("ioaz", ioaz_tables.suite_ioaz), ("carroll", carroll.suite_carroll),
                            ("xujiang", xujiang.suite_xujiang), ("speed", speed.suite_speed)):
            rep = Report(out, "t", quick=quick)
            data[f"{name}-{quick}"] = suite(rep, Opts(quick=quick))
            md[f"{name}-{quick}"] = _markdown(rep)
    for name, res in (("adaptive-short", adaptive_short()), ("adaptive-fine", adaptive_fine())):
        rep = Report(out, "t")
        if name == "adaptive-short":
            w = SimpleNamespace(read_bytes_per_s=1e6, write_bytes_per_s=0.0)
            run = SimpleNamespace(windows=[w, w], switches=[{"t": 1.0, "to": "cfq"}])
            adaptive._timeline(res, {"ioaz": run}, run, "stream", "phases", 10.0)
        adaptive_summary(rep, res)
        adaptive_section(rep, res, ["deadline", "stream"])
        md[name] = _markdown(rep)
    mp.undo()
    yield {"md": md, "data": data, "used": used}


def test_every_block_of_every_template_is_rendered(rendered: dict[str, Any]) -> None:
    # so a misspelt placeholder anywhere in a template fails here (substitute raises)
    for path in sorted(TEMPLATES.glob("*.md")):
        words = prose(path.stem)
        assert set(words.blocks) == rendered["used"].get(words.title), path.name


def test_no_placeholder_is_left_and_every_section_has_its_heading(rendered: dict[str, Any]) -> None:
    for name, text in rendered["md"].items():
        assert "$" not in text, name
        title = prose(name.split("-")[0]).title
        assert f"## {title}\n" in text, name


def test_the_sentences_carry_this_runs_numbers(rendered: dict[str, Any]) -> None:
    md, data = rendered["md"], rendered["data"]
    xj = data["xujiang-False"]
    assert (f"Xu & Jiang par-read on wd500: stream {xj['mb_s']['stream']:.1f} MB/s = "
            f"{xj['stream_vs_deadline']:.2f}x deadline") in md["xujiang-False"]
    assert "(`ioaz-lab sim par-read --device wd500`), 20 simulated seconds." in md["xujiang-False"]
    assert "| think ms | stream MB/s | noop MB/s | stream/noop |" in md["xujiang-False"]
    assert "think ms" not in md["xujiang-True"]
    assert ("target 100,000 per second. Quick run: 1 simulated second per case, once."
            in md["speed-True"])
    assert "HDD wd500 par-read 123,456 req/s; fastest case 246,912" in md["speed-True"]
    assert "per second. 5 s per case, best of 3." in md["speed-False"]
    io = data["ioaz-True"]
    assert (f"the model's best scheduler is the paper's in {io['agree']}/{io['cells']} cells; "
            f"{io['ties']} more are within 2% (a tie)") in md["ioaz-True"]
    assert "| model CFQ | goal | agree | tie (<2%) | differ | cells |" in md["ioaz-True"]
    assert "| FCFS MB/s | AS MB/s | DEAD MB/s | CFQ MB/s | CFQ no idle MB/s |" in md["ioaz-True"]
    assert "- all four within 2% in the model: a tie;" in md["ioaz-True"]
    ca = data["carroll-False"]
    best = ", ".join(f"{a} {max(v, key=v.get)}" for a, v in ca["raid_queue_depth"].items())
    assert f"Best depth here: {best}." in md["carroll-False"]
    assert "| array | qd 1 | qd 8 | qd 32 |" in md["carroll-True"]
    assert "| b1 p99 ms | probe p99 ms | rule read_expire |" in md["carroll-True"]


def test_the_adaptive_section_names_each_shortfall(rendered: dict[str, Any]) -> None:
    short, fine = rendered["md"]["adaptive-short"], rendered["md"]["adaptive-fine"]
    assert ("adaptive on phases (10 s phases, goal throughput), cold start: 40.00 vs best static "
            "stream 50.00 (80%) and per-phase oracle 51.00 (78%); with the model-calibrated "
            "matrix 40.00 (80% of static, 78% of oracle); steady state (pass 2 of 2): ioaz 80% "
            "of static stream, 78% of oracle") in short
    assert ("- ioaz on phases 10 s, goal throughput, cold start: the policy it chose is not the "
            "simulator's best in '16 rand read' (4/sequential/read/shallow: vr 0.10 vs cfq "
            "0.50; its windows count 3 of the phase's 16 processes); the switch budget (") in short
    assert "it held '16 rand read' under vr for 4 windows;" in short
    assert ("it held '4 seq read' under stream for 2 windows (the previous pass's switches "
            "count against the same hour)") in short
    assert ("it starts under deadline, not stream (the best for 'par-read'), and its first "
            "switch comes 3 s into the run (at least 1 window to leave") in short
    assert ("it enters pass 2 under noop, its choice for the previous pass's last phase, not "
            "stream (the best for 'par-read'), and its first switch comes 5 s into the pass "
            "(at least 3 windows of hysteresis)") in short
    assert "2 switches, each at least 3 windows (hysteresis) after the change, in 10 s" in short
    assert "and it stays there; it makes no switch in the run;" in short
    assert "stream alone is within 2.0% of the oracle" in short
    assert "pass 1: -3.10% (deadline on phases 10 s, goal throughput)" in short
    assert "| mix | phase s | goal | scored | deadline | stream |" in short
    assert "**Reaction delay.**" in short and "**Runner-up trials**" in short
    assert "| adaptive (ioaz, throughput) | 9.00 | 3.00 | 70.00 | 5s deadline->stream |" in short
    assert "- none: adaptive matches the best static scheduler on every mix" in fine
    assert "Recorded trace: skipped (tests/data/trace-phases-loop.csv not found)." in fine
    assert "model-calibrated" not in fine and "the trained-model agent runs in the full" in fine


def test_a_block_is_one_paragraph_its_lines_joined() -> None:
    words = Prose("## Title\n\n<!-- a -->\nOne $what,\n  wrapped.\n\n<!-- b -->\n| x | $ys |\n",
                  "t.md")
    assert words.title == "Title"
    assert words("a", what="sentence") == "One sentence, wrapped."
    assert words.headers("b", ys="y | z") == ["x", "y", "z"]


def test_a_misspelt_placeholder_fails_the_report() -> None:
    words = Prose("## T\n<!-- a -->\n$devcie model\n", "t.md")
    with pytest.raises(KeyError, match="devcie"):
        words("a", device="wd500")


@pytest.mark.parametrize("text, where", [
    ("no heading\n", "t.md:1"),
    ("## T\nloose text\n<!-- a -->\nx\n", "t.md:3"),
    ("## T\n<!-- a -->\nx\n\ny\n", "t.md:2"),
    ("## T\n<!-- a -->\nx\n<!-- a -->\ny\n", "t.md:4"),
])
def test_a_malformed_template_is_refused_with_its_line(text: str, where: str) -> None:
    with pytest.raises(ValueError, match=where):
        Prose(text, "t.md")
