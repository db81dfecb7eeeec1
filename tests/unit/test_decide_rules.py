"""Matrix selection rules, goals per device, and policy -> scheduler resolution."""
from __future__ import annotations

import pytest
from ioaz.decide import (
    DEFAULT_RULES,
    DeviceInfo,
    GoalRule,
    Rule,
    goal_for,
    load_policies,
    parse_size,
    resolve,
    select_matrix,
)

RULES = (
    Rule(0, {"mean": "big-ssd.yaml"}, rotational=False, min_size=parse_size("1T")),
    Rule(1, {"mean": "nvme.yaml", "latency": "nvme-lat.yaml"}, name="nvme*"),
    Rule(2, {"mean": "ssd.yaml"}, rotational=False, max_size=parse_size("512G")),
    Rule(3, {"mean": "hdd.yaml", "min": "hdd-min.yaml"}),
)


@pytest.mark.parametrize("dev,goal,file", [
    (DeviceInfo("nvme0n1", False, 2 << 40), "mean", "big-ssd.yaml"),  # first match wins
    (DeviceInfo("nvme0n1", False, 256 << 30), "mean", "nvme.yaml"),
    (DeviceInfo("nvme0n1", False, 256 << 30), "latency", "nvme-lat.yaml"),
    (DeviceInfo("sda", False, 256 << 30), "mean", "ssd.yaml"),
    (DeviceInfo("sda", False, 800 << 30), "mean", "hdd.yaml"),     # between the size ranges
    (DeviceInfo("sda", False, None), "mean", "hdd.yaml"),          # unknown size: no size rule
    (DeviceInfo("sdb", True, 4 << 40), "min", "hdd-min.yaml"),
])
def test_first_matching_rule_with_the_goal_wins(dev: DeviceInfo, goal: str, file: str) -> None:
    choice = select_matrix(RULES, dev, goal)
    assert choice is not None and choice.file == file


def test_no_rule_for_a_goal() -> None:
    assert select_matrix(RULES, DeviceInfo("sda", True), "throughput") is None


def test_default_rules_split_on_rotational() -> None:
    ssd = select_matrix(DEFAULT_RULES, DeviceInfo("vda", False), "mean")
    hdd = select_matrix(DEFAULT_RULES, DeviceInfo("vda", True), "mean")
    unknown = select_matrix(DEFAULT_RULES, DeviceInfo("vda", None), "min")
    assert ssd and ssd.file == "nonrotational-default.yaml"
    assert hdd and hdd.file == "ioaz-table3-mean.yaml"
    assert unknown and unknown.file == "ioaz-table1-min.yaml"
    assert "rotational=false" in ssd.rule.describe()


def test_parse_size() -> None:
    assert parse_size(4096) == 4096
    assert parse_size("512K") == 512 << 10
    assert parse_size("1.5T") == 3 << 39
    assert parse_size("100") == 100


def test_goal_for() -> None:
    rules = (GoalRule("sd[ab]", "min"), GoalRule("sd*", "max"))
    assert goal_for("sda", None, rules, "mean") == "min"
    assert goal_for("sdc", None, rules, "mean") == "max"
    assert goal_for("nvme0n1", None, rules, "mean") == "mean"
    assert goal_for("sda", "latency", rules, "mean") == "latency"


HOST = ["mq-deadline", "kyber", "bfq", "none"]  # what this machine's loop devices offer
WITH_MODULES = HOST + ["fifo", "vr", "stream"]


@pytest.mark.parametrize("policy,available,scheduler,knobs,fell_back", [
    # IOAZ's FCFS was 2.6's noop, which merged: none, even where our strict fifo is loaded
    ("fcfs", WITH_MODULES, "none", {}, False),
    ("fcfs", HOST, "none", {}, False),
    ("fifo", WITH_MODULES, "fifo", {}, False),
    ("anticipatory", HOST, "bfq", {"slice_idle": 8}, False),
    ("deadline", HOST, "mq-deadline", {}, False),
    ("cfq", HOST, "bfq", {}, False),
    ("vr", WITH_MODULES, "vr", {}, False),
    ("vr", HOST, "mq-deadline", {}, True),
    ("sstf", WITH_MODULES, "vr", {"rev_penalty": 1}, False),
    ("scan", WITH_MODULES, "vr", {"rev_penalty": 0}, False),
    ("scan", HOST, "mq-deadline", {}, True),
    ("stream", WITH_MODULES, "stream", {}, False),
    ("stream", HOST, "bfq", {}, True),
    ("kyber", HOST, "kyber", {}, False),
    ("none", HOST, "none", {}, False),
])
def test_resolve_every_policy(policy: str, available: list[str], scheduler: str,
                              knobs: dict[str, int], fell_back: bool) -> None:
    r = resolve(policy, load_policies(), available)
    assert (r.scheduler, r.knobs, r.fell_back) == (scheduler, knobs, fell_back)


def test_resolve_says_why_it_fell_back_or_failed() -> None:
    table = load_policies()
    r = resolve("stream", table, HOST)
    assert r.skipped == ("stream",)
    assert "stream not offered by the kernel (queue/scheduler lists mq-deadline kyber bfq none)" \
        in r.reason
    r = resolve("kyber", table, ["mq-deadline", "none"])
    assert r.scheduler is None and "none of kyber offered" in r.reason


def test_every_reason_a_decision_gives_is_described() -> None:
    """The reasons damping.py gives are the enum's, and each has an operator's description."""
    import re
    from pathlib import Path

    from ioaz.decide import damping
    from ioaz.decide.reasons import DESCRIPTION, Reason, describe

    assert set(DESCRIPTION) == set(Reason) and all(DESCRIPTION.values())
    used = set(re.findall(r"Reason\.([A-Z_]+)", Path(damping.__file__).read_text()))
    assert used and used <= {r.name for r in Reason}
    assert describe("cooldown").startswith("a window right after a switch")
    assert describe("not-a-reason") == ""
    assert f"{Reason.FLIP_FLOP}" == "flip_flop"    # labels and JSON keep the plain names
