"""Fuzzing every file ioazd reads and its socket protocol (Hypothesis, a bounded number of
examples each): whatever comes in is either accepted or refused with the reader's own error,
every line of which names the file and line; never another exception, never a hang.

The files are the shipped ones with one part replaced by something else (a value of another
type, a huge number, a nested structure, an empty one), and text that is barely YAML at all.
"""
from __future__ import annotations

import copy
import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ioaz.actuate.state import StateStore
from ioaz.api.protocol import RequestError, decode
from ioaz.classify.classes import ThresholdsError, load_thresholds
from ioaz.daemon.config import ConfigError, load_config
from ioaz.decide.matrix import load_matrix
from ioaz.decide.policies import load_policies
from ioaz.located import ValidationError

REPO = Path(__file__).resolve().parents[2]
MATRICES = REPO / "decision_matrices"
FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

SCALARS = (st.none() | st.booleans() | st.integers(-10**40, 10**40)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12)
           | st.sampled_from(["", "none", "bfq", "1/random/read", "2024-01-01", "0x10",
                              "1e999", "~", "-1", "sd*", "a\nb"]))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
YAMLISH = st.text(alphabet=":-[]{},&*!|>#'\"? \n\tabsdq019.%@", max_size=300)


def _paths(data: Any, at: tuple = ()) -> list[tuple]:
    out = [at]
    if isinstance(data, dict):
        for k, v in data.items():
            out += _paths(v, at + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += _paths(v, at + (i,))
    return out


@st.composite
def mutated(draw: st.DrawFn, base: Any) -> Any:
    """`base` with one node (anywhere, the root included) replaced by another value, or one
    mapping key dropped."""
    data = copy.deepcopy(base)
    path = draw(st.sampled_from(_paths(data)))
    if not path:
        return draw(VALUES)
    parent = data
    for k in path[:-1]:
        parent = parent[k]
    if isinstance(parent, dict) and draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(VALUES)
    return data


def _check(load: Callable[[Path], Any], errors: tuple[type[Exception], ...], text: str,
           name: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / name
        f.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            load(f)
        except errors as e:
            lines = str(e).splitlines()
            assert lines, f"{type(e).__name__} without a message"
            line_re = re.compile(rf"^{re.escape(str(f))}(:\d+)?: \S")
            first = lines[0].removeprefix("configuration refused:")
            assert line_re.match(first) or any(line_re.match(x) for x in lines), str(e)


def _yaml(data: Any) -> str:
    return yaml.safe_dump(data, default_flow_style=None, allow_unicode=True)


def _base(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


CONFIG_BASE = _base(REPO / "deploy" / "ioaz.yaml")
CONFIG_BASE["decide"]["matrix_dir"] = str(MATRICES)   # the mutation is the only fault
CONFIG_BASE["thresholds"] = str(MATRICES / "thresholds.yaml")


@FUZZ
@given(st.one_of(mutated(CONFIG_BASE).map(_yaml), YAMLISH))
def test_config(text: str) -> None:
    _check(load_config, (ConfigError,), text, "ioaz.yaml")


@FUZZ
@given(st.one_of(mutated(_base(MATRICES / "ioaz-table3-mean.yaml")).map(_yaml), YAMLISH))
def test_matrix(text: str) -> None:
    _check(load_matrix, (ValidationError,), text, "m.yaml")


@FUZZ
@given(st.one_of(mutated(_base(MATRICES / "policies.yaml")).map(_yaml), YAMLISH))
def test_policies(text: str) -> None:
    _check(load_policies, (ValidationError,), text, "policies.yaml")


@FUZZ
@given(st.one_of(mutated(_base(MATRICES / "thresholds.yaml")).map(_yaml), YAMLISH))
def test_thresholds(text: str) -> None:
    _check(load_thresholds, (ThresholdsError,), text, "thresholds.yaml")


STATE_BASE = {"version": 1, "devices": {"sdb": {
    "dev": "8:16", "identity": "diskseq:3", "saved_at": 1.0, "scheduler": "mq-deadline",
    "knobs": {"queue/iosched/read_expire": "500"}, "queue": {"queue/nr_requests": "64"},
    "changed": ["queue/scheduler"]}}}


@FUZZ
@given(st.one_of(mutated(STATE_BASE).map(json.dumps), YAMLISH, st.binary(max_size=200)))
def test_state_file_never_raises(content: str | bytes) -> None:
    """A state file is never refused: what cannot be trusted is set aside, the rest kept."""
    with tempfile.TemporaryDirectory() as d:
        store = StateStore(d)
        if isinstance(content, bytes):
            store.path.write_bytes(content)
        else:
            store.path.write_text(content, encoding="utf-8", errors="surrogatepass")
        devices = store.load()
        assert isinstance(devices, dict)
        for entry in devices.values():
            assert isinstance(entry["scheduler"], str)


REQUEST = {"cmd": "pin", "device": "sda", "policy": "deadline", "for": "30m"}


@FUZZ
@given(st.one_of(mutated(REQUEST).map(lambda r: json.dumps(r).encode()),
                 st.binary(max_size=300),
                 st.text(alphabet='{}[]":,0123456789.eE+-truefalsn\\u ', max_size=200)
                 .map(lambda t: t.encode())))
def test_protocol(line: bytes) -> None:
    try:
        req = decode(line)
    except RequestError as e:
        assert str(e) and "\n" not in str(e)
    else:
        assert isinstance(req, dict)


@pytest.mark.parametrize("path", sorted(MATRICES.glob("*.yaml")) + [REPO / "deploy" / "ioaz.yaml"],
                         ids=lambda p: p.name)
def test_the_shipped_files_are_the_fuzzers_good_starting_points(path: Path) -> None:
    """The bases load as they are (a refusal raises), so a refusal above comes from the
    mutation."""
    if path.name == "ioaz.yaml":
        assert load_config(path).file == str(path)
    elif path.name == "thresholds.yaml":
        assert load_thresholds(path) is not None
    elif path.name == "policies.yaml":
        assert load_policies(path).policies()
    elif path.name != "schema.yaml":
        assert load_matrix(path) is not None
