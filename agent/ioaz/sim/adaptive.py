"""ioaz's own decision code as the simulator's chooser: the agent in the loop.

`agent_chooser()` returns a `chooser(features) -> scheduler name or None` that does per window
what ioazd does per device: classify the window (ioaz.classify), then decide.step with the
configured matrices (or a trained model first, as ioazd's `classifier: {type: model}`),
damping (hysteresis, dwell, cooldown, budget) and goal. The policy it picks is the simulator
scheduler of the same name (policies are the papers' algorithms, and the simulator has them
all).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ioaz.classify.horizon import ProcessHorizon
from ioaz.classify.types import WindowFeatures, WorkloadClass
from ioaz.model.gate import DEFAULT_MIN_CONFIDENCE, DEFAULT_MIN_MARGIN
from ioaz.sim.schedulers import SCHEDULERS

# a policy the simulator has no scheduler for -> the nearest it has (none at present)
POLICY_STANDINS: dict[str, str] = {}


class AgentChooser:
    """Holds the decide state between windows; `decisions` keeps each window's Decision."""

    def __init__(self, goal: str | None = None, rotational: bool = True,
                 size_bytes: int | None = None, device: str = "sim0",
                 config: Any = None, start_policy: str | None = None,
                 model: Any = None, min_confidence: float = DEFAULT_MIN_CONFIDENCE,
                 min_margin: float = DEFAULT_MIN_MARGIN) -> None:
        from ioaz.classify.classes import Thresholds, classify
        from ioaz.decide import DeviceInfo, MatrixVerdicts, initial_state, load_context, set_goal

        self._classify = classify
        self.thresholds = Thresholds()
        self.horizon: ProcessHorizon | None = None   # made at the first window (its length)
        # the last judged window's class: near a ratio threshold classify keeps its side
        self.last_class: WorkloadClass | None = None
        self.ctx = load_context(config)
        self.provider: Any = MatrixVerdicts(self.ctx.settings.matrix_rules, self.ctx.matrices)
        if model is not None:
            # as ioazd's `classifier: {type: model}`: the model first, the matrices below
            # its confidence
            from ioaz.model.verdicts import ModelVerdicts
            self.provider = ModelVerdicts(model, self.provider, min_confidence, min_margin)
        state = initial_state(DeviceInfo(device, rotational=rotational, size_bytes=size_bytes))
        if goal is not None:
            state = set_goal(state, goal)
        if start_policy is not None:
            # the scheduler found at start was not ioaz's choice: like ioazd's initial_state
            # (since=None) it is under no dwell limit, only hysteresis
            state = replace(state, policy=start_policy, since=None)
        self.state = state
        self.now = 0.0
        self.decisions: list[Any] = []

    def __call__(self, f: WindowFeatures) -> str | None:
        from ioaz.decide import step

        self.now += f.window_s
        if self.horizon is None:
            self.horizon = ProcessHorizon.of(self.thresholds, f.window_s)
        # as ioaz.observe does: the class counts the processes over the horizon
        f.class_processes = self.horizon.add(f.process_bios)
        f.workload_class = self._classify(f, self.thresholds, self.last_class)
        if f.workload_class is not None:
            self.last_class = f.workload_class
        d = step(f, self.state, self.ctx.settings, self.provider, self.now, self.ctx.policies)
        self.decisions.append(d)
        self.state = d.state
        if not d.switch or d.policy is None:
            return None
        name = POLICY_STANDINS.get(d.policy, d.policy)
        return name if name in SCHEDULERS else None


def agent_chooser(**kw: Any) -> Callable[[WindowFeatures], str | None]:
    return AgentChooser(**kw)
