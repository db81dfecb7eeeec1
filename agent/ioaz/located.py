"""YAML loaded together with the line of every value, so errors can say FILE:LINE.

PyYAML's safe_load forgets where things were; yaml.compose keeps a mark on every node.
We compose, then build the plain Python value ourselves from the nodes, recording the line
of each value and each mapping key by its path (a tuple of keys and list indexes).
Building it ourselves also lets us refuse what a configuration never needs and a hostile or
broken file can carry: duplicate keys (safe_load silently keeps the last), aliases that expand
into millions of values (a few lines of YAML can make gigabytes: the build stops at MAX_NODES),
nesting beyond MAX_DEPTH, and any type but text, numbers, booleans and null (an unquoted
2024-01-01 is a date to YAML; an integer of thousands of digits costs seconds to convert).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

PathKey = str | int
DocPath = tuple[PathKey, ...]

MAX_NODES = 100_000      # values after aliases are expanded; the largest matrix has ~1,000
MAX_DEPTH = 50
MAX_INT_DIGITS = 30
_PLAIN_TAGS = {"tag:yaml.org,2002:" + t for t in ("str", "int", "float", "bool", "null")}


@dataclass(frozen=True)
class Issue:
    """One thing wrong in one file, at one line."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


class ValidationError(Exception):
    """A file (or several) failed validation; str() is one FILE:LINE line per issue."""

    def __init__(self, issues: list[Issue]) -> None:
        self.issues = sorted(issues, key=lambda i: (i.file, i.line))
        super().__init__("\n".join(str(i) for i in self.issues))


@dataclass
class Doc:
    """A loaded YAML document: its value and where each part of it was written."""

    file: str
    data: Any
    lines: dict[DocPath, int] = field(default_factory=dict)      # value node lines
    key_lines: dict[DocPath, int] = field(default_factory=dict)  # mapping key lines

    def line(self, path: DocPath) -> int:
        """Line of the value at path, or of its nearest written ancestor (a missing key
        is reported at the mapping that lacks it)."""
        p = tuple(path)
        while p:
            if p in self.lines:
                return self.lines[p]
            p = p[:-1]
        return self.lines.get((), 1)

    def key_line(self, path: DocPath) -> int:
        """Line where the key of path was written (for 'unknown key' errors)."""
        return self.key_lines.get(tuple(path), self.line(path))

    def issue(self, path: DocPath, message: str, *, at_key: bool = False) -> Issue:
        line = self.key_line(path) if at_key else self.line(path)
        return Issue(self.file, line, message)


def describe(value: Any) -> str:
    """A value as the 'got X' part of a message: its type and a short repr."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    kind = {int: "integer", float: "number", str: "string"}.get(type(value), type(value).__name__)
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{kind} {text}"


def format_path(path: DocPath) -> str:
    """goals.min['1/random/write'] style, so a reader can find the spot without the line."""
    out = ""
    for p in path:
        if isinstance(p, int) and not isinstance(p, bool):
            out += f"[{p}]"
        elif not isinstance(p, str):   # a key YAML read as null, a boolean, a number
            out += f"[{p!r}]"
        elif out and (not p.replace("_", "").replace("-", "").isalnum()):
            out += f"[{p!r}]"
        else:
            out += ("." if out else "") + p
    return out or "(top level)"


def load_text(text: str, file: str) -> Doc:
    """Parse YAML text; raise ValidationError (FILE:LINE) on syntax errors."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else 1
        what = e.problem or "not valid YAML"
        ctx = f" {e.context}" if e.context else ""
        raise ValidationError(
            [Issue(file, line, f"YAML syntax error: {what}{ctx} (expected valid YAML)")]
        ) from None
    except yaml.YAMLError as e:
        raise ValidationError([Issue(file, 1, f"YAML error: {e} (expected valid YAML)")]) from None
    except RecursionError:
        raise ValidationError([Issue(file, 1, f"nesting deeper than the parser can follow "
                                     f"(expected at most {MAX_DEPTH} levels)")]) from None
    if node is None:
        raise ValidationError([Issue(file, 1, "empty file (got nothing, expected a mapping)")])
    doc = Doc(file=file, data=None)
    issues: list[Issue] = []
    try:
        doc.data = _build(node, (), doc, SafeConstructor(), issues, depth=0, budget=[MAX_NODES])
    except _TooBig as e:
        raise ValidationError([Issue(file, e.line, f"more than {MAX_NODES:,} values once "
                                     "aliases are expanded (an alias bomb? expected a "
                                     "configuration of plain values)")]) from None
    if issues:
        raise ValidationError(issues)
    return doc


def load_file(path: str | Path) -> Doc:
    """Read and parse one YAML file; a missing or unreadable file is a ValidationError too."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ValidationError([Issue(name, 0, f"cannot read file: {e.strerror or e}")]) from None
    except UnicodeDecodeError as e:
        line = Path(path).read_bytes()[:e.start].count(b"\n") + 1
        raise ValidationError([Issue(name, line, f"not UTF-8 text (byte {e.start})")]) from None
    return load_text(text, name)


class _TooBig(Exception):
    def __init__(self, line: int) -> None:
        self.line = line


def _scalar(node: ScalarNode, doc: Doc, ctor: SafeConstructor, issues: list[Issue]) -> Any:
    line = node.start_mark.line + 1
    if node.tag not in _PLAIN_TAGS:
        kind = node.tag.rsplit(":", 1)[-1]
        issues.append(Issue(doc.file, line, f"a {kind} value ({node.value!r}) is not allowed "
                            "here (expected text, a number, true/false or null; quote it "
                            "to make it text)"))
        return None
    if node.tag.endswith(":int") and sum(c.isdigit() for c in node.value) > MAX_INT_DIGITS:
        issues.append(Issue(doc.file, line, f"number too large ({len(node.value)} "
                            f"characters; expected at most {MAX_INT_DIGITS} digits)"))
        return None
    try:
        return ctor.construct_object(node)
    except (yaml.YAMLError, ValueError) as e:
        issues.append(Issue(doc.file, line, f"bad value: {e}"))
        return None


def _build(node: Node, path: DocPath, doc: Doc, ctor: SafeConstructor,
           issues: list[Issue], depth: int, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooBig(node.start_mark.line + 1)
    if depth > MAX_DEPTH:  # an alias loop or absurd nesting: stop rather than recurse forever
        issues.append(Issue(doc.file, node.start_mark.line + 1,
                            f"nesting deeper than {MAX_DEPTH} levels"))
        return None
    doc.lines[path] = node.start_mark.line + 1
    if isinstance(node, ScalarNode):
        return _scalar(node, doc, ctor, issues)
    if isinstance(node, SequenceNode):
        return [_build(n, path + (i,), doc, ctor, issues, depth + 1, budget)
                for i, n in enumerate(node.value)]
    if isinstance(node, MappingNode):
        out: dict[Any, Any] = {}
        for knode, vnode in node.value:
            kline = knode.start_mark.line + 1
            if knode.tag == "tag:yaml.org,2002:merge":
                issues.append(Issue(doc.file, kline,
                                    "merge keys (<<) are not supported (use an alias *name)"))
                continue
            if not isinstance(knode, ScalarNode):
                issues.append(Issue(doc.file, kline,
                                    "a key must be a plain value (got a mapping or list)"))
                continue
            key = _scalar(knode, doc, ctor, issues)
            if key in out:
                issues.append(Issue(doc.file, kline,
                                    f"duplicate key (got {describe(key)} twice, expected each "
                                    "key once)"))
                continue
            kpath = path + (key,)
            doc.key_lines[kpath] = kline
            out[key] = _build(vnode, kpath, doc, ctor, issues, depth + 1, budget)
        return out
    issues.append(Issue(doc.file, node.start_mark.line + 1, "unsupported YAML node"))
    return None
