"""The damped policy on synthetic feature streams: what a user sees in ioazd's decisions.

The verdicts come from the shipped matrices (IOAZ Table 3 for goal mean on a rotational
disk), so these tests also pin down which policy a class gets.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from ioaz.classify.types import WindowFeatures, WorkloadClass
from ioaz.decide import (
    DecideConfig,
    Decision,
    DeviceInfo,
    DeviceState,
    GoalRule,
    MatrixVerdicts,
    Mode,
    initial_state,
    load_context,
    on_switch_failed,
    pause,
    pin,
    resume,
    set_goal,
    step,
    to_manual,
    unpin,
)
from ioaz.decide.verdict import Verdict, VerdictProvider

CTX = load_context()
PROVIDER = MatrixVerdicts(CTX.settings.matrix_rules, CTX.matrices)
HDD = DeviceInfo("sdz", rotational=True, size_bytes=1 << 40)
SSD = DeviceInfo("nvme9n1", rotational=False, size_bytes=1 << 40)

# Table 3 (goal mean): 1/sequential/read -> fcfs, 8/random/read -> anticipatory,
# 1/random/write -> deadline, 4/sequential/write -> fcfs.
SEQ1 = "1/sequential/read"
RND8 = "8/random/read"
WR1 = "1/random/write"

# first_choice_windows as hysteresis_windows: these tests are about the damping of choices;
# the first choice has tests of its own
QUICK = DecideConfig(hysteresis_windows=3, first_choice_windows=3, min_dwell_s=0, cooldown_s=0,
                     max_switches_per_hour=100, return_hold_s=0)


def feats(cls: str | None, iops: float = 500.0, requests: int | None = None,
          device: str = "sdz") -> WindowFeatures:
    wc = WorkloadClass(*cls.split("/")) if cls else None
    return WindowFeatures(
        device=device, window_s=1.0, iops=iops, read_bytes_per_s=iops * 4096,
        write_bytes_per_s=0.0, read_ratio=1.0, seq_ratio=0.0, processes=8, avg_depth=4.0,
        mean_size_bytes=4096.0, p50_latency_s=0.004, p99_latency_s=0.02, merge_ratio=0.0,
        workload_class=wc, requests=int(iops) if requests is None else requests,
    )


def run(stream: list[str | None], config: DecideConfig, state: DeviceState | None = None,
        t0: float = 1000.0, dt: float = 1.0, **kw: object) -> list[Decision]:
    """Feed one class per window (None = an idle window); return every decision."""
    state = state or initial_state(HDD)
    out = []
    for i, cls in enumerate(stream):
        f = feats(cls, iops=0.0) if cls is None else feats(cls, **kw)  # type: ignore[arg-type]
        d = step(f, state, config, PROVIDER, t0 + i * dt, CTX.policies)
        out.append(d)
        state = d.state
    return out


def switches(ds: list[Decision]) -> list[Decision]:
    return [d for d in ds if d.switch]


def test_hysteresis_switches_on_the_nth_identical_verdict() -> None:
    ds = run([RND8] * 5, QUICK)
    assert [d.reason for d in ds[:2]] == ["hysteresis", "hysteresis"]
    assert "seen 2 of 3" in ds[1].text
    assert ds[2].switch and ds[2].policy == "anticipatory" and ds[2].reason == "matrix"
    assert [d.action for d in ds[3:]] == ["hold", "hold"]
    assert "already in force" in ds[4].text


def test_a_broken_streak_starts_again() -> None:
    ds = run([RND8, RND8, SEQ1, RND8, RND8, RND8], QUICK)
    assert switches(ds) == [ds[5]]


def test_class_alternating_every_window_never_flaps() -> None:
    ds = run([SEQ1, RND8] * 30, DecideConfig())
    assert len(switches(ds)) <= 1
    # Even after settling on one policy, alternation must not pull it back and forth.
    ds = run([RND8] * 3 + [SEQ1, RND8] * 30, QUICK)
    assert len(switches(ds)) == 1 and ds[2].switch


def test_dwell_holds_a_confirmed_verdict_until_the_minimum_time() -> None:
    cfg = replace(QUICK, hysteresis_windows=1, min_dwell_s=10)
    ds = run([RND8] + [SEQ1] * 15, cfg)
    sw = switches(ds)
    assert [d.now for d in sw] == [1000.0, 1010.0]
    assert {d.reason for d in ds[1:10]} == {"dwell"}
    assert "only 1.0 s on the current scheduler" in ds[1].text


def test_untouched_device_has_no_dwell_but_a_resumed_one_does() -> None:
    cfg = replace(QUICK, hysteresis_windows=1, min_dwell_s=10)
    assert run([RND8], cfg)[0].switch
    resumed = resume(to_manual(initial_state(HDD), "scheduler changed by hand"), now=999.0)
    ds = run([RND8] * 12, cfg, state=resumed)
    assert ds[0].reason == "dwell" and switches(ds)[0].now == 1009.0


def test_cooldown_windows_are_not_evidence() -> None:
    cfg = replace(QUICK, cooldown_s=3)
    ds = run([RND8] * 3 + [SEQ1] * 8, cfg)
    assert ds[2].switch                         # t=1002
    assert [d.reason for d in ds[3:5]] == ["cooldown", "cooldown"]  # t=1003, 1004
    # The streak for fcfs starts at t=1005, so the switch is at the third judged window.
    assert [d.now for d in switches(ds)] == [1002.0, 1007.0]


def test_budget_caps_switches_per_sliding_hour() -> None:
    cfg = replace(QUICK, hysteresis_windows=1, max_switches_per_hour=2)
    ds = run([RND8, SEQ1, RND8, SEQ1, RND8], cfg)
    assert [d.action for d in ds] == ["switch", "switch", "hold", "hold", "hold"]
    assert ds[2].reason == "budget" and "2 of 2 in the last hour" in ds[2].text
    # An hour after the first switch there is room again.
    later = run([RND8], cfg, state=ds[-1].state, t0=1000.0 + 3600.0)
    assert later[0].switch


class Cycle:
    """A verdict that depends on the scheduler in force, as a model's can: each policy's
    view names the next one (with two, under A it wants B and under B it wants A; with
    three, postmark's class on the maxtor40 model: sstf -> anticipatory -> stream)."""

    def __init__(self, *order: str) -> None:
        self.order = order
        self.current: str | None = None

    def verdict(self, features, device, goal):  # type: ignore[no-untyped-def]
        from ioaz.decide.verdict import Verdict
        i = self.order.index(self.current) + 1 if self.current in self.order else 0
        want = self.order[i % len(self.order)]
        return Verdict(want, "model:cycle", goal, f"cycle says {want}")


def go_round(cyc: Cycle, windows: int, cfg: DecideConfig) -> list[Decision]:
    """Windows of one workload, one a second, under a verdict that goes round `cyc`."""
    state = initial_state(HDD)
    ds = []
    for i in range(windows):
        d = step(feats(RND8), state, cfg, cyc, 1000.0 + i, CTX.policies)
        ds.append(d)
        state = d.state
        cyc.current = state.policy
    return ds


def test_a_flip_flop_waits_but_one_return_does_not() -> None:
    cfg = replace(QUICK, hysteresis_windows=1, min_dwell_s=5, return_hold_s=60)
    ds = go_round(Cycle("cfq", "scan"), 80, cfg)
    # cfq at once, scan after the dwell, back to cfq after another (one return is allowed:
    # a phase may come back), then scan again only 60 s after that return
    assert [(d.now, d.policy) for d in switches(ds)] == [
        (1000.0, "cfq"), (1005.0, "scan"), (1010.0, "cfq"), (1070.0, "scan")]
    held = ds[15]
    assert held.reason == "flip_flop" and "cfq -> scan -> cfq (scan left after 5 s), the " \
        "return 5 s ago" in held.text
    # a third policy is not held
    d = step(feats(SEQ1), ds[15].state, replace(cfg, hysteresis_windows=1), PROVIDER, 1015.0,
             CTX.policies)
    assert d.switch and d.policy not in ("cfq", "scan")


def test_a_three_policy_cycle_is_held_too() -> None:
    cfg = replace(QUICK, hysteresis_windows=1, min_dwell_s=5, return_hold_s=60)
    ds = go_round(Cycle("cfq", "scan", "deadline"), 90, cfg)
    # round once (the return to cfq is allowed: phases come back), then scan again only
    # 60 s after that return
    assert [(d.now, d.policy) for d in switches(ds)] == [
        (1000.0, "cfq"), (1005.0, "scan"), (1010.0, "deadline"), (1015.0, "cfq"),
        (1075.0, "scan")]
    held = ds[20]
    assert held.reason == "flip_flop" and "cfq -> scan -> deadline -> cfq (scan left after " \
        "5 s), the return 5 s ago" in held.text
    assert held.state.cycle == ("cfq", "deadline", "scan")


def test_a_cycle_is_one_workload_going_round_not_new_programs() -> None:
    """With the processes known, a policy wanted again for other processes than those that
    drove the device when it was left is a phase coming round, even one shorter than the
    stay bound; the same processes coming round that fast are held as before."""
    cfg = replace(QUICK, hysteresis_windows=1, min_dwell_s=5, return_hold_s=600,
                  flip_flop_stay_s=30)

    def go(new_programs: bool) -> list[Decision]:
        state = initial_state(HDD)
        ds = []
        for i in range(80):
            phase = i // 20
            cls = RND8 if phase % 2 == 0 else SEQ1
            base = 100 * phase if new_programs else 0
            f = replace(feats(cls), process_bios={base + k: 10 for k in range(4)})
            d = step(f, state, cfg, PROVIDER, 1000.0 + i, CTX.policies)
            ds.append(d)
            state = d.state
        return ds

    fresh = go(True)
    assert [d.now for d in switches(fresh)] == [1000.0, 1020.0, 1040.0, 1060.0]
    assert not [d for d in fresh if d.reason == "flip_flop"]
    same = go(False)
    assert [d.now for d in switches(same)] == [1000.0, 1020.0, 1040.0]
    assert same[60].reason == "flip_flop"


def test_phases_that_come_round_are_followed_each_time() -> None:
    """A -> B -> A -> B where B lasted longer than flip_flop_stay_s: a workload whose phases
    come round (here every 20 s), not a verdict cycle, so no flip_flop hold."""
    cfg = replace(QUICK, hysteresis_windows=1, min_dwell_s=5, return_hold_s=600,
                  flip_flop_stay_s=15)
    state = initial_state(HDD)
    ds = []
    for i in range(80):
        cls = RND8 if (i // 20) % 2 == 0 else SEQ1
        d = step(feats(cls), state, cfg, PROVIDER, 1000.0 + i, CTX.policies)
        ds.append(d)
        state = d.state
    assert [d.now for d in switches(ds)] == [1000.0, 1020.0, 1040.0, 1060.0]
    assert not [d for d in ds if d.reason == "flip_flop"]


def test_zero_budget_means_observe_only() -> None:
    ds = run([RND8] * 10, replace(QUICK, max_switches_per_hour=0))
    assert not switches(ds) and ds[-1].reason == "budget"


def test_idle_and_thin_windows_neither_count_nor_break_the_streak() -> None:
    ds = run([RND8, None, None, RND8, None, RND8], QUICK)
    assert [d.reason for d in ds[:3]] == ["hysteresis", "idle", "idle"]
    assert switches(ds) == [ds[5]]
    thin = run([RND8] * 5, QUICK, requests=5)
    assert not switches(thin)
    assert {d.reason for d in thin} == {"too_few_requests"}
    assert "5 requests < 20" in thin[0].text


def test_idle_device_never_switches() -> None:
    ds = run([None] * 50, DecideConfig())
    assert not switches(ds) and {d.reason for d in ds} == {"idle"}


def test_an_idle_windows_reason_never_reads_as_its_own_limit() -> None:
    # 0.96 IO/s under a limit of 1 once read "idle (1.0 IO/s < 1)"
    d = step(feats(RND8, iops=0.96), initial_state(HDD), DecideConfig(), PROVIDER, 1000.0,
             CTX.policies)
    assert d.reason == "idle" and d.text.startswith("idle (0.96 IO/s < 1)")


def test_pin_switches_at_once_holds_and_expires() -> None:
    state = pin(initial_state(HDD), "kyber", now=1000.0, duration_s=5.0)
    ds = run([RND8] * 10, DecideConfig(), state=state)
    assert ds[0].switch and ds[0].reason == "pin" and ds[0].policy == "kyber"
    assert [d.reason for d in ds[1:5]] == ["pin"] * 4
    assert "s left" in ds[1].text
    # At t=1005 the pin has expired: back to auto, and the matrix needs its 3 windows.
    assert ds[5].state.mode is Mode.AUTO and "pin on kyber expired" in ds[5].text
    assert ds[5].reason == "hysteresis"
    assert [(ds.index(d), d.policy) for d in switches(ds)] == [(0, "kyber"), (7, "anticipatory")]


def test_pin_without_expiry_lasts_until_unpinned() -> None:
    state = pin(initial_state(HDD), "none", now=0.0)
    ds = run([RND8] * 30, QUICK, state=state, t0=1e6)
    assert ds[0].switch and all(d.reason == "pin" for d in ds[1:])
    after = run([RND8] * 3, QUICK, state=unpin(ds[-1].state), t0=2e6)
    assert after[2].switch and after[2].policy == "anticipatory"


def test_pin_to_a_policy_the_kernel_cannot_realise_holds() -> None:
    state = replace(pin(initial_state(HDD), "kyber", now=0.0), available=("mq-deadline", "none"))
    d = run([RND8], QUICK, state=state)[0]
    assert d.action == "hold" and d.reason == "unavailable" and "kyber" in d.text


def test_manual_and_paused_devices_are_left_alone() -> None:
    manual = to_manual(initial_state(HDD), "queue/scheduler changed to bfq by someone else")
    ds = run([RND8] * 20, QUICK, state=manual)
    assert not switches(ds) and {d.reason for d in ds} == {"manual"}
    assert "changed to bfq" in ds[0].text
    ds = run([RND8] * 20, QUICK, state=pause(initial_state(HDD)))
    assert not switches(ds) and {d.reason for d in ds} == {"paused"}
    ds = run([RND8] * 3, QUICK, state=resume(pause(initial_state(HDD)), now=0.0))
    assert ds[2].switch


def test_failed_switch_keeps_policy_but_spends_budget_and_cools_down() -> None:
    cfg = replace(QUICK, cooldown_s=5)
    ds = run([RND8] * 3, cfg)
    before = ds[1].state
    failed = on_switch_failed(before, now=ds[2].now)
    assert failed.policy is None and failed.switches == (ds[2].now,)
    nxt = run([RND8], cfg, state=failed, t0=ds[2].now + 1)[0]
    assert nxt.reason == "cooldown"


def test_decision_carries_its_why() -> None:
    d = switches(run([RND8] * 3, QUICK))[0]
    v = d.verdict
    assert v is not None and v.matrix is not None
    assert Path(v.matrix).name == "ioaz-table3-mean.yaml"
    assert v.cell == RND8 and v.source_kind == "measured"
    assert "Table 3" in (v.source or "")
    # The cell line points at the cell in the file.
    line = Path(v.matrix).read_text().splitlines()[(v.cell_line or 0) - 1]
    assert line.strip().startswith(f"{RND8}: anticipatory")
    assert d.features["iops"] == 500.0 and d.workload_class == {
        "processes": "8", "pattern": "random", "mode": "read", "depth": "shallow",
        "size": "small"}
    assert d.goal == "mean" and d.previous is None and d.policy == "anticipatory"
    as_json = d.as_dict()
    assert as_json["verdict"]["cell"] == RND8 and as_json["state"]["mode"] == "auto"


def test_switch_resolves_and_says_how() -> None:
    state = initial_state(HDD, available=("mq-deadline", "kyber", "bfq", "none", "fifo"))
    d = switches(run([SEQ1] * 3, QUICK, state=state))[0]
    assert d.policy == "fcfs"
    # fcfs is noop's successor (it merges), not the strict fifo module, even when loaded
    assert d.resolution is not None and d.resolution.scheduler == "none"
    assert not d.resolution.fell_back and "fcfs -> none (first choice)" in d.resolution.reason


def test_goal_per_device_from_config_and_from_the_administrator() -> None:
    cfg = replace(QUICK, goals=(GoalRule("sd*", "min"),))
    # Table 1 (min) gives fcfs for 8/random/read where Table 3 (mean) gives anticipatory.
    d = switches(run([RND8] * 3, cfg))[0]
    assert d.goal == "min" and d.policy == "fcfs"
    d = switches(run([RND8] * 3, cfg, state=set_goal(initial_state(HDD), "max")))[0]
    assert d.goal == "max" and d.policy == "anticipatory"


def test_ssd_uses_the_nonrotational_matrix() -> None:
    cfg = replace(QUICK, goal="latency")
    d = switches(run([RND8] * 3, cfg, state=initial_state(SSD), device="nvme9n1"))[0]
    assert d.policy == "kyber" and d.verdict is not None
    assert Path(d.verdict.matrix or "").name == "nonrotational-default.yaml"


def test_no_class_no_verdict() -> None:
    ds = run([None], QUICK)  # idle
    f = feats(None)
    d = step(f, initial_state(HDD), QUICK, PROVIDER, 0.0, CTX.policies)
    assert d.action == "hold" and d.reason == "no_verdict" and ds[0].reason == "idle"


@pytest.mark.parametrize("phase", [[SEQ1] * 8 + [RND8] * 8 + [WR1] * 8])
def test_workload_changes_switch_within_three_windows(phase: list[str]) -> None:
    """The integration scenario of issue 3, on synthetic windows with default damping."""
    ds = run(phase, DecideConfig())
    sw = switches(ds)
    assert [d.policy for d in sw] == ["fcfs", "anticipatory", "deadline"]
    # the first choice on the first window (the scheduler found was nobody's choice), the
    # later ones on the third window of their phase
    assert [ds.index(d) for d in sw] == [0, 10, 18]


def test_first_choice_needs_first_choice_windows_then_full_hysteresis() -> None:
    cfg = replace(QUICK, first_choice_windows=1)
    ds = run([RND8] * 2 + [SEQ1] * 4, cfg)
    assert ds[0].switch and ds[0].policy == "anticipatory"
    # once ioaz has chosen, leaving its choice takes hysteresis_windows again
    assert [d.reason for d in ds[2:4]] == ["hysteresis", "hysteresis"]
    assert "seen 2 of 3 windows" in ds[3].text and "first choice" not in ds[3].text
    assert ds[4].switch and ds[4].policy == "fcfs"


def test_first_choice_windows_counts_and_is_capped_by_hysteresis() -> None:
    ds = run([RND8] * 3, replace(QUICK, first_choice_windows=2))
    assert ds[0].reason == "hysteresis" and "seen 1 of 2 windows (first choice)" in ds[0].text
    assert ds[1].switch
    # more first-choice windows than hysteresis windows would make the first choice the
    # slower one: hysteresis_windows bounds it
    ds = run([RND8] * 3, replace(QUICK, hysteresis_windows=2, first_choice_windows=5))
    assert ds[1].switch


def test_a_misleading_first_window_costs_one_switch() -> None:
    """A passing first window is followed once; the workload then has to hold for the full
    hysteresis and dwell to be followed back."""
    cfg = replace(DecideConfig(), cooldown_s=0)
    ds = run([SEQ1] + [RND8] * 12, cfg)
    sw = switches(ds)
    assert [d.policy for d in sw] == ["fcfs", "anticipatory"]
    assert ds.index(sw[1]) == 5   # 3 windows seen, and held until the 5 s dwell ran out


def test_the_first_choice_is_the_found_schedulers_only() -> None:
    """After a failed switch or resume the device is no longer at its start: full damping."""
    st = on_switch_failed(initial_state(HDD), 990.0)
    ds = run([RND8] * 3, replace(QUICK, first_choice_windows=1), state=st)
    assert [d.action for d in ds] == ["hold", "hold", "switch"]


def test_the_verdict_says_when_the_boundary_band_kept_the_class() -> None:
    f = feats(RND8)
    f.workload_class = WorkloadClass("8", "random", "read", held=("mode",))
    v = PROVIDER.verdict(f, HDD, "mean")
    assert "class 8/random/read/shallow (mode kept from the previous window: within the boundary " \
           "band) -> anticipatory" in v.text
    assert "kept" not in PROVIDER.verdict(feats(RND8), HDD, "mean").text


class TiedCell:
    """A verdict provider whose every cell names deadline and lists `tied` as within the noise
    of it (what ioaz-lab derive writes for a cell without a clear winner)."""

    def __init__(self, tied: tuple[str, ...]) -> None:
        self.tied = tied

    def verdict(self, features: WindowFeatures, device: DeviceInfo, goal: str) -> Verdict:
        return Verdict("deadline", "matrix", goal, "test cell -> deadline", cell="1/random/read",
                       source_kind="judgement", within_noise=self.tied)


@pytest.mark.parametrize("in_force,tied,kept", [
    ("stream", ("sstf", "stream"), True),     # in force and within the noise: kept
    ("stream", ("sstf",), False),             # in force but not listed: switched
    ("stream", (), False),                    # a cell with a clear winner lists none
])
def test_a_policy_within_the_cells_noise_is_kept(in_force: str, tied: tuple[str, ...],
                                                 kept: bool) -> None:
    state = replace(initial_state(HDD), policy=in_force, since=0.0, last_switch=0.0)
    ds = []
    for i in range(6):
        d = step(feats("1/random/read"), state, QUICK, TiedCell(tied), 1000.0 + i, CTX.policies)
        ds.append(d)
        state = d.state
    if kept:
        assert not switches(ds)
        assert {d.reason for d in ds} == {"within_noise"}
        assert "stream in force is within the noise of deadline" in ds[-1].text
        assert ds[-1].policy == "stream" and ds[-1].state.streak == 0
    else:
        assert [d.policy for d in switches(ds)] == ["deadline"]
        assert "within_noise" not in {d.reason for d in ds}


OFFERED = ("none", "mq-deadline", "bfq", "kyber", "fifo", "vr", "stream")


class ModelOverTiedCell(TiedCell):
    """A model's verdict for `chosen` in a cell whose calibration named deadline and could not
    tell it from `tied` (ioaz.model.verdicts.matrix_cell: the cell's ties, less the choice)."""

    def __init__(self, chosen: str, tied: tuple[str, ...]) -> None:
        super().__init__(tied)
        self.chosen = chosen

    def verdict(self, features: WindowFeatures, device: DeviceInfo, goal: str) -> Verdict:
        ties = tuple(p for p in ("deadline", *self.tied) if p != self.chosen)
        return Verdict(self.chosen, "model:test", goal, f"model -> {self.chosen}",
                       cell="8/random/read", second_opinion="deadline", within_noise=ties)


@pytest.mark.parametrize("found,tied,kept", [
    ("mq-deadline", ("sstf", "vr"), True),   # the kernel's default realises deadline: kept
    ("bfq", ("sstf", "vr"), False),          # bfq realises neither deadline nor vr: switched
    ("bfq", ("sstf", "anticipatory"), True),  # an operator's bfq realises anticipatory: kept
    ("kyber", (), False),                     # no ties: the model's choice is taken
])
def test_the_scheduler_found_running_is_kept_when_it_is_within_the_cells_noise(
        found: str, tied: tuple[str, ...], kept: bool) -> None:
    state = replace(initial_state(HDD, available=OFFERED), found=found)
    ds = []
    for i in range(4):
        d = step(feats("8/random/read"), state, replace(QUICK, first_choice_windows=1),
                 ModelOverTiedCell("sstf", tied), 1000.0 + i, CTX.policies)
        ds.append(d)
        state = d.state
    if kept:
        assert not switches(ds)
        assert {d.reason for d in ds} == {"within_noise"}
        assert f"{found}, the scheduler found running, realises" in ds[0].text
        assert ds[-1].policy is None and ds[-1].state.streak == 0
    else:
        # the model and the matrix disagree (deadline): the first choice takes the full
        # hysteresis
        assert [d.policy for d in switches(ds)] == ["sstf"] and ds[2].switch
        assert "within_noise" not in {d.reason for d in ds}


def first_windows(provider: VerdictProvider, n: int) -> list[Decision]:
    """n windows of RND8 from the scheduler found at start, one window's first choice."""
    state = initial_state(HDD, available=OFFERED)
    ds = []
    for i in range(n):
        d = step(feats(RND8), state, replace(QUICK, first_choice_windows=1), provider,
                 1000.0 + i, CTX.policies)
        ds.append(d)
        state = d.state
    return ds


class ModelAgainstMatrix:
    """A model's verdict for sstf on every window, beside the matrix's `matrix` for the same
    window (None: the matrix agrees)."""

    def __init__(self, matrix: str | None) -> None:
        self.matrix = matrix

    def verdict(self, features: WindowFeatures, device: DeviceInfo, goal: str) -> Verdict:
        return Verdict("sstf", "model:test", goal, "model -> sstf", cell="8/random/read",
                       second_opinion=self.matrix)


@pytest.mark.parametrize("matrix,at", [(None, 0), ("anticipatory", 2)])
def test_the_first_choice_waits_the_full_hysteresis_when_the_model_and_matrix_disagree(
        matrix: str | None, at: int) -> None:
    """On S's start under mq-deadline the kernel model said sstf (0.67) for one window where
    the matrix said anticipatory, and the next window anticipatory (0.93): one window of a
    disagreement took vr for 5 s."""
    ds = run([RND8] * 4, replace(QUICK, first_choice_windows=1))
    assert ds[0].switch   # the matrix alone: one window
    ds = first_windows(ModelAgainstMatrix(matrix), 4)
    assert [ds.index(d) for d in switches(ds)] == [at] and ds[at].policy == "sstf"
    if matrix:
        assert "seen 1 of 3 windows (first choice; the matrix says anticipatory)" in ds[0].text
    # once ioaz has chosen, a disagreement is ordinary hysteresis
    assert "first choice" not in ds[-1].text


class UnsureModel:
    """The matrix's verdict for the window with an unsure model leaning elsewhere."""

    def __init__(self, leaning: str | None) -> None:
        self.leaning = leaning

    def verdict(self, features: WindowFeatures, device: DeviceInfo, goal: str) -> Verdict:
        return Verdict("stream", "matrix", goal, "model unsure, matrix -> stream",
                       cell="4/sequential/read", leaning=self.leaning)


@pytest.mark.parametrize("leaning,at", [(None, 0), ("anticipatory", 2)])
def test_an_unsure_models_leaning_also_makes_the_first_choice_wait(
        leaning: str | None, at: int) -> None:
    """S "5 5 seq" under the idle policy's bfq (docs/testbed.md, eighty-first run): the model
    was unsure (anticipatory 0.58, stream 0.34), the matrix said stream, and one window took
    ioazd off bfq, which the workload's later windows named in most of them."""
    ds = first_windows(UnsureModel(leaning), 3)
    assert [ds.index(d) for d in switches(ds)] == [at] and ds[at].policy == "stream"
    if leaning:
        assert "seen 1 of 3 windows (first choice; the model, unsure, leans to " \
            "anticipatory)" in ds[0].text


def test_once_ioaz_has_chosen_the_scheduler_found_counts_for_nothing() -> None:
    """found is the scheduler running while ioaz has put no policy in force; after ioaz's own
    switch the within-noise rule looks at ioaz's policy alone."""
    state = replace(initial_state(HDD, available=OFFERED), found="mq-deadline", policy="stream",
                    since=0.0, last_switch=0.0)
    d = step(feats("8/random/read"), state, replace(QUICK, hysteresis_windows=1),
             ModelOverTiedCell("sstf", ("vr",)), 1000.0, CTX.policies)
    assert d.switch and d.policy == "sstf", d.text
