"""decide: from a window's features and a device's state to a Decision, with its why.

Pure functions (the only I/O is loading YAML at start-up). The public surface:

    ctx = load_context(config_from_doc(doc))          # or load_context() for defaults
    provider = MatrixVerdicts(ctx.settings.matrix_rules, ctx.matrices)
    state = initial_state(DeviceInfo("sda", rotational=True, size_bytes=...), available)
    d = step(features, state, ctx.settings, provider, now, ctx.policies)
    state = d.state            # or on_switch_failed(state, now) if the actuator failed
"""
from ..device import DeviceInfo
from ..located import Doc, Issue, ValidationError, load_file, load_text
from ..realisation import Realisation
from .config import (
    DEFAULT_MATRIX_DIR,
    DEFAULT_RULES,
    DecideConfig,
    DecideContext,
    config_from_doc,
    load_context,
)
from .damping import Decision, DeviceState, Mode, Pin, request_count, step
from .matrix import GOALS, Cell, Matrix, Source, load_matrix
from .policies import (
    PolicyTable,
    Resolution,
    load_policies,
    resolve,
)
from .rules import (
    GoalRule,
    MatrixChoice,
    Rule,
    goal_for,
    parse_size,
    rule_from_dict,
    select_matrix,
)
from .schema import Schema
from .transitions import (
    after_rest_window,
    at_start,
    initial_state,
    on_same_scheduler,
    on_switch_failed,
    pause,
    pin,
    resume,
    set_goal,
    to_manual,
    unpin,
)
from .validate import validate_file
from .verdict import MatrixVerdicts, Verdict, VerdictProvider

__all__ = [
    "DEFAULT_MATRIX_DIR",
    "DEFAULT_RULES",
    "GOALS",
    "Cell",
    "DecideConfig",
    "DecideContext",
    "Decision",
    "DeviceInfo",
    "DeviceState",
    "Doc",
    "GoalRule",
    "Issue",
    "Matrix",
    "MatrixChoice",
    "MatrixVerdicts",
    "Mode",
    "Pin",
    "PolicyTable",
    "Realisation",
    "Resolution",
    "Rule",
    "Schema",
    "Source",
    "ValidationError",
    "Verdict",
    "VerdictProvider",
    "after_rest_window",
    "at_start",
    "config_from_doc",
    "goal_for",
    "initial_state",
    "load_context",
    "load_file",
    "load_matrix",
    "load_policies",
    "load_text",
    "on_same_scheduler",
    "on_switch_failed",
    "parse_size",
    "pause",
    "pin",
    "request_count",
    "resolve",
    "resume",
    "rule_from_dict",
    "select_matrix",
    "set_goal",
    "step",
    "to_manual",
    "unpin",
    "validate_file",
]
