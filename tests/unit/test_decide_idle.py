"""The idle policy (decide/idle.py): a quiet disk that spins is set to bfq, so that the next
workload starts under it, and the next workload leaves it as it leaves the scheduler found
at start. On synthetic feature streams through the shipped matrices (IOAZ Table 3, goal
mean): 8/random/read is anticipatory's cell, 1/sequential/read fcfs's."""
from __future__ import annotations

from dataclasses import replace

from ioaz.decide import (
    DecideConfig,
    Decision,
    DeviceState,
    at_start,
    config_from_doc,
    initial_state,
    load_text,
    pause,
    pin,
    step,
)
from ioaz.located import ValidationError
from test_decide_policy import CTX, HDD, PROVIDER, RND8, SEQ1, SSD, feats

OFFERED = ("mq-deadline", "kyber", "bfq", "none")
CFG = DecideConfig(cooldown_s=0, idle_after_s=30.0)


def found(info=HDD, scheduler: str = "mq-deadline") -> DeviceState:
    return replace(initial_state(info, available=OFFERED), found=scheduler)


def run(stream: list[str | None], config: DecideConfig, state: DeviceState,
        t0: float = 1000.0, dt: float = 1.0, requests: int | None = None) -> list[Decision]:
    """One class per window (None: an idle window); every decision, the state carried on as
    if each switch was made."""
    out = []
    for i, cls in enumerate(stream):
        f = feats(cls, iops=0.0) if cls is None else feats(cls, requests=requests)
        d = step(f, state, config, PROVIDER, t0 + i * dt, CTX.policies)
        out.append(d)
        state = d.state
    return out


def test_a_quiet_disk_goes_to_bfq_after_idle_after_s_and_only_once() -> None:
    ds = run([None] * 60, CFG, found())
    sw = [d for d in ds if d.switch]
    assert len(sw) == 1 and sw[0] is ds[30]   # quiet since the first window, 30 s before
    assert sw[0].reason == "idle_policy" and sw[0].policy == "anticipatory"
    assert sw[0].resolution is not None and sw[0].resolution.scheduler == "bfq"
    assert "quiet for 30 s" in sw[0].text
    assert {d.reason for d in ds[31:]} == {"idle"}


def test_too_few_requests_to_judge_is_quiet_too() -> None:
    ds = run([SEQ1] * 40, CFG, found(), requests=5)
    assert [d.reason for d in ds if d.switch] == ["idle_policy"]


def test_a_judged_window_starts_the_quiet_count_again() -> None:
    ds = run([None] * 20 + [SEQ1] + [None] * 25, CFG, found(scheduler="none"))
    assert not any(d.switch and d.reason == "idle_policy" for d in ds)


def test_the_next_workload_leaves_it_in_its_first_window_with_no_dwell() -> None:
    """Nobody chose bfq for the workload that comes: its first choice is as quick as one from
    the scheduler found at start (first_choice_windows 1), and no dwell holds it."""
    cfg = replace(CFG, min_dwell_s=60.0)
    ds = run([None] * 31 + [SEQ1] * 3, cfg, found())
    assert ds[30].reason == "idle_policy"
    assert ds[31].switch and ds[31].policy == "fcfs" and ds[31].reason == "matrix"
    # that choice is ioaz's: leaving it takes the full damping again
    assert not ds[31].state.idle_set


def test_a_workload_that_wants_bfq_keeps_it_and_later_choices_are_damped() -> None:
    ds = run([None] * 31 + [RND8] * 5 + [SEQ1] * 2, replace(CFG, min_dwell_s=0), found())
    assert not any(d.switch for d in ds[31:36])
    assert ds[31].reason == "matrix" and "already in force" in ds[31].text
    assert ds[36].reason == "hysteresis" and "first choice" not in ds[36].text


def test_no_idle_policy_on_a_disk_that_does_not_spin_or_with_none_configured() -> None:
    assert not any(d.switch for d in run([None] * 60, CFG, found(SSD)))
    assert not any(d.switch for d in run([None] * 60, replace(CFG, idle_policy=None), found()))
    unknown = replace(found(), info=replace(HDD, rotational=None))
    assert not any(d.switch for d in run([None] * 60, CFG, unknown))


def test_bfq_found_running_is_left_as_it_is() -> None:
    assert not any(d.switch for d in run([None] * 60, CFG, found(scheduler="bfq")))


def test_the_switch_leaves_room_in_the_budget_for_the_next_workloads() -> None:
    full = replace(found(), switches=tuple(900.0 + i for i in range(11)))
    assert not any(d.switch for d in run([None] * 40, CFG, full))   # 11 + 2 > 12
    room = replace(full, switches=full.switches[:10])
    ds = run([None] * 40, CFG, room)
    assert [d.reason for d in ds if d.switch] == ["idle_policy"]
    assert len(ds[-1].state.switches) == 11


def test_a_workload_that_left_it_at_once_is_waited_for_when_it_comes_back() -> None:
    """The same workload in bursts with quiet between: the first burst starts under bfq and
    leaves it for fcfs; the disk then stays on fcfs while quiet, so the next bursts pay no
    switch. A workload that kept bfq does not stop the next return to it."""
    burst = [SEQ1] * 4 + [None] * 40
    ds = run([None] * 31 + burst * 3, CFG, found())
    assert [(d.reason, d.policy) for d in ds if d.switch] == [
        ("idle_policy", "anticipatory"), ("matrix", "fcfs")]
    assert {d.reason for d in ds[-40:]} == {"idle"}
    kept = run([None] * 31 + [RND8] * 4 + [None] * 31 + [SEQ1] * 4 + [None] * 31, CFG, found())
    # the random readers kept bfq; the sequential reader after them chose fcfs with the full
    # damping, so the disk quiet again goes back to bfq
    assert [(d.reason, d.policy) for d in kept if d.switch] == [
        ("idle_policy", "anticipatory"), ("matrix", "fcfs"), ("idle_policy", "anticipatory")]


def test_it_is_no_cycle_for_the_flip_flop_guard() -> None:
    ds = run([RND8] * 2 + [SEQ1] * 8 + [None] * 31, replace(CFG, min_dwell_s=0), found())
    sw = [d for d in ds if d.switch]
    assert [(d.reason, d.policy) for d in sw] == [
        ("matrix", "anticipatory"), ("matrix", "fcfs"), ("idle_policy", "anticipatory")]
    # fcfs -> anticipatory on a quiet disk is not the workload going back: the guard's
    # record is the verdicts' switches alone
    assert sw[2].state.history == sw[1].state.history
    assert len(sw[2].state.switches) == 3


def test_pinned_paused_and_manual_disks_get_none() -> None:
    pinned = pin(found(), "deadline", now=0.0)
    assert not any(d.reason == "idle_policy" for d in run([None] * 60, CFG, pinned))
    assert not any(d.switch for d in run([None] * 60, CFG, pause(found())))


def test_at_start_only_with_nothing_in_flight() -> None:
    d = at_start(found(), CFG, 5.0, CTX.policies, in_flight=0)
    assert d is not None and d.switch and d.reason == "idle_policy"
    assert d.resolution is not None and d.resolution.scheduler == "bfq"
    assert "nothing in flight at start" in d.text
    assert d.state.idle_set and d.state.since is None
    for busy in (3, None):
        assert at_start(found(), CFG, 5.0, CTX.policies, in_flight=busy) is None
    assert at_start(found(SSD), CFG, 5.0, CTX.policies, in_flight=0) is None
    assert at_start(pause(found()), CFG, 5.0, CTX.policies, in_flight=0) is None


def test_a_workload_after_the_start_switch_takes_its_first_choice_at_once() -> None:
    d = at_start(found(), replace(CFG, cooldown_s=2.0, min_dwell_s=5.0), 999.5,
                 CTX.policies, in_flight=0)
    assert d is not None
    ds = run([SEQ1], replace(CFG, cooldown_s=2.0, min_dwell_s=5.0), d.state)
    assert ds[0].switch and ds[0].policy == "fcfs"


def test_an_unknown_idle_policy_is_refused_at_its_line() -> None:
    doc = load_text("decide:\n  goal: mean\n  idle_policy: bfq\n", "c.yaml")
    try:
        config_from_doc(doc)
    except ValidationError as e:
        text = str(e)
    else:
        raise AssertionError("an unknown idle_policy was accepted")
    assert "c.yaml:3" in text and "unknown policy (got 'bfq'" in text
    assert "anticipatory" in text
    ok = config_from_doc(load_text("decide:\n  idle_policy: null\n", "c.yaml"))
    assert ok.idle_policy is None
