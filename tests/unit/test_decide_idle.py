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
    kept = run([None] * 31 + [RND8] * 4 + [SEQ1] * 8 + [None] * 31, CFG, found())
    # the random readers kept bfq; the sequential reader after them, with no quiet between,
    # chose fcfs with the full damping, so the disk quiet again goes back to bfq
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


def test_a_workload_that_started_under_it_and_kept_it_leaves_on_most_windows_only() -> None:
    """S's five readers beside five writers (docs/testbed.md, seventy-ninth run) started under
    bfq, which the verdict named in most windows; stream three windows in a row took ioazd
    off it, and bfq set again later merged the readers' queues for good. Leaving the idle
    policy the running workload started under and kept takes the same verdict in most (6) of
    the last 10 judged windows; a run of 3 among the others does not."""
    cfg = replace(CFG, min_dwell_s=0)
    ds = run([None] * 31 + [RND8] * 4 + [SEQ1] * 3 + [RND8] * 5 + [SEQ1] * 3, cfg, found())
    assert [d.reason for d in ds if d.switch] == ["idle_policy"]
    assert ds[31].state.started_under and "already in force" in ds[31].text
    third = ds[31 + 4 + 2]
    assert third.reason == "started_under" and third.policy == "anticipatory"
    assert "fcfs in 3 of the last 10 judged windows" in third.text
    assert ds[-1].reason == "started_under" and "fcfs in 5 of the last 10" in ds[-1].text

    ds = run([None] * 31 + [RND8] * 4 + [SEQ1] * 7, cfg, found())
    sw = [d for d in ds if d.switch]
    assert [(d.reason, d.policy) for d in sw] == [
        ("idle_policy", "anticipatory"), ("matrix", "fcfs")]
    assert sw[1] is ds[31 + 4 + 5]   # its sixth window: fcfs in 6 of the last 10
    assert ds[31 + 4 + 4].reason == "started_under"
    # fcfs is ioaz's choice: leaving it takes hysteresis_windows again, no more
    assert not sw[1].state.started_under
    back = run([RND8] * 3, cfg, sw[1].state, t0=2000.0)
    assert [d.reason for d in back] == ["hysteresis", "hysteresis", "matrix"] and back[2].switch


def test_other_processes_after_it_are_another_workload_and_damped_as_usual() -> None:
    """The rule is for the processes that started under the idle policy and kept it: a
    sequential reader that comes after eight random readers which kept bfq leaves it with the
    usual hysteresis (tests/integration/test_daemon_loop.py on a real disk), while the same
    readers' own turn away from bfq is held."""
    def go(seq_pids: range) -> list[Decision]:
        state, out = found(), []
        stream = [(None, ())] * 31 + [(RND8, range(8))] * 4 + [(SEQ1, seq_pids)] * 3
        for i, (cls, pids) in enumerate(stream):
            f = feats(cls, iops=0.0) if cls is None else \
                replace(feats(cls), process_bios={100 + k: 10 for k in pids})
            d = step(f, state, replace(CFG, min_dwell_s=0), PROVIDER, 1000.0 + i,
                     CTX.policies)
            out.append(d)
            state = d.state
        return out

    new = go(range(8, 9))
    assert [(d.reason, d.policy) for d in new if d.switch] == [
        ("idle_policy", "anticipatory"), ("matrix", "fcfs")]
    assert new[-1].switch and new[-2].reason == "hysteresis"
    same = go(range(3))
    assert [d.reason for d in same if d.switch] == ["idle_policy"]
    assert same[-1].reason == "started_under"


def test_a_workload_that_left_it_at_first_choice_is_not_held() -> None:
    ds = run([None] * 31 + [SEQ1] + [RND8] * 3, replace(CFG, min_dwell_s=0), found())
    assert [(d.reason, d.policy) for d in ds if d.switch] == [
        ("idle_policy", "anticipatory"), ("matrix", "fcfs"), ("matrix", "anticipatory")]
    assert not any(d.reason == "started_under" for d in ds)


def test_a_disk_quiet_again_under_it_gives_the_next_workload_its_first_choice() -> None:
    """The random readers kept bfq and ended; after idle_after_s of quiet the disk is as the
    idle policy's switch leaves it: the sequential reader that comes next started under bfq
    but chose nothing yet, so it leaves bfq in its first window, not held by the readers'
    verdicts before it."""
    ds = run([None] * 31 + [RND8] * 4 + [None] * 31 + [SEQ1] * 2, CFG, found())
    assert [(d.reason, d.policy) for d in ds if d.switch] == [
        ("idle_policy", "anticipatory"), ("matrix", "fcfs")]
    assert ds[-2].switch and "first choice" not in ds[-2].text
    assert ds[-3].state.idle_set and not ds[-3].state.started_under
    # ... which it then waits for when quiet, as for any workload that left it at once
    assert ds[-1].state.idle_left_for == "fcfs"
    # a quiet shorter than idle_after_s is the same workload pausing: still held
    ds = run([None] * 31 + [RND8] * 4 + [None] * 10 + [SEQ1] * 3, CFG, found())
    assert ds[-1].reason == "started_under"


def test_a_trial_pin_or_hand_change_ends_started_under() -> None:
    from ioaz.decide import to_manual
    kept = run([None] * 31 + [RND8] * 2, CFG, found())[-1].state
    assert kept.started_under
    assert not to_manual(kept, "bfq -> none by hand").started_under
    pinned = run([RND8], CFG, pin(kept, "deadline", now=2000.0), t0=2000.0)[0]
    assert pinned.switch and not pinned.state.started_under


def test_the_processes_that_kept_it_accumulate_the_latest_first_up_to_a_bound() -> None:
    """Readers that show a few at a time (bfq serves them in turn) all count as the workload
    that kept it, however long ago each last showed; a disk under bfq for days does not
    remember every process it served."""
    from ioaz.decide.damping import PID_WINDOWS
    from ioaz.decide.idle import KEPT_BY
    state = run([None] * 31, CFG, found())[-1].state
    for i in range(PID_WINDOWS + 100):
        f = replace(feats(RND8), process_bios={1000 + i: 10})
        state = step(f, state, CFG, PROVIDER, 2000.0 + i, CTX.policies).state
    assert state.started_under and len(state.kept_by) == KEPT_BY
    last = {1000 + PID_WINDOWS + 100 - k for k in range(1, PID_WINDOWS + 1)}
    assert set(state.kept_by[:PID_WINDOWS]) == last   # the latest first
    assert 1000 not in state.kept_by


def _with_pids(stream: list[tuple[str | None, tuple[int, ...]]], config: DecideConfig,
               state: DeviceState) -> list[Decision]:
    """One (class, processes) per window; None: an idle window."""
    out = []
    for i, (cls, pids) in enumerate(stream):
        f = feats(cls, iops=0.0) if cls is None else \
            replace(feats(cls), process_bios={p: 10 for p in pids})
        d = step(f, state, config, PROVIDER, 1000.0 + i, CTX.policies)
        out.append(d)
        state = d.state
    return out


def test_a_new_workload_s_first_busy_window_is_not_judged() -> None:
    """The window a workload starts in holds its programs starting (S's ten readers opening
    their files read as random): the first choice comes from the next window."""
    new = (201, 202, 203)
    ds = _with_pids([(None, ())] * 31 + [(RND8, new), (SEQ1, new), (SEQ1, new)], CFG, found())
    assert ds[30].reason == "idle_policy"
    assert ds[31].reason == "starting" and not ds[31].switch
    assert "programs starting" in ds[31].text
    assert ds[32].switch and ds[32].policy == "fcfs"
    assert [d for d in ds if d.switch and d.policy == "anticipatory"] == [ds[30]]


def test_a_lull_in_the_same_workload_is_judged_at_once() -> None:
    """A quiet window within one workload (its processes drove the device before it) is no
    start: the window after it counts, as every window does without process ids."""
    cfg = replace(CFG, hysteresis_windows=2, min_dwell_s=0)
    same = (301, 302)
    ds = _with_pids([(SEQ1, same), (SEQ1, same), (None, ()), (RND8, same), (RND8, same)],
                    cfg, found())
    assert ds[0].switch and ds[0].policy == "fcfs"        # first choice from the found one
    assert ds[3].reason == "hysteresis" and ds[4].switch and ds[4].policy == "anticipatory"


def test_skip_start_window_false_judges_the_start() -> None:
    new = (401,)
    ds = _with_pids([(None, ())] * 31 + [(SEQ1, new)],
                    replace(CFG, skip_start_window=False), found())
    assert ds[31].switch and ds[31].policy == "fcfs"
