"""A small JSON-Schema subset, checked against a located YAML Doc.

The schema of the decision matrices, policies.yaml and the `decide` config section is the
document decision_matrices/schema.yaml; this module executes it, so that document and the
checks cannot drift apart. Only the keywords that document uses are implemented:
$ref (#/$defs/...), type, enum, const, properties, required, additionalProperties,
propertyNames, minProperties, items, minItems, uniqueItems, minimum, maximum,
exclusiveMinimum, pattern, anyOf (chosen by the value's type, for clear messages).
`x-what` names what a value is ("unknown policy", "unknown goal") in enum messages.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..home import MATRICES
from ..located import Doc, DocPath, Issue, describe, format_path, load_file

DEFAULT_SCHEMA = MATRICES / "schema.yaml"

_TYPES = ("object", "array", "string", "integer", "number", "boolean", "null")


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


def _type_ok(value: Any, wanted: str) -> bool:
    t = _type_of(value)
    return t == wanted or (wanted == "number" and t == "integer")


_TYPE_WORDS = {"object": "a mapping", "array": "a list", "string": "a string",
               "integer": "an integer", "number": "a number", "boolean": "true or false",
               "null": "null"}


def _one_of(items: list[Any]) -> str:
    return "one of " + ", ".join(str(i) for i in items)


class Schema:
    """A loaded schema document with named entry points (e.g. 'matrix', 'policies')."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root

    @classmethod
    def load(cls, path: str | Path | None = None) -> Schema:
        # The schema is ours and must itself be valid YAML; a ValidationError here is a bug
        # in the shipped file, reported the same way.
        return cls(load_file(path or DEFAULT_SCHEMA).data)

    def entry(self, name: str) -> dict[str, Any]:
        return self.root[name]

    def definition(self, name: str) -> dict[str, Any]:
        return self.root["$defs"][name]

    def check(self, doc: Doc, entry: str, path: DocPath = ()) -> list[Issue]:
        """Every issue of the value at `path` of `doc` against schema entry `entry`."""
        issues: list[Issue] = []
        value: Any = doc.data
        for p in path:
            value = value[p]
        self._check(self.entry(entry), value, tuple(path), doc, issues)
        return issues

    # -- the interpreter ---------------------------------------------------------------------

    def _resolve(self, s: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in s:
            ref = s["$ref"]
            if not ref.startswith("#/$defs/"):
                raise ValueError(f"schema: unsupported $ref {ref}")
            s = self.root["$defs"][ref[len("#/$defs/"):]]
        return s

    def _check(self, s: dict[str, Any], v: Any, path: DocPath, doc: Doc,
               out: list[Issue]) -> None:
        s = self._resolve(s)
        where = format_path(path)
        if "anyOf" in s:
            self._any_of(s["anyOf"], v, path, doc, out)
            return
        if "type" in s:
            types = s["type"] if isinstance(s["type"], list) else [s["type"]]
            if not any(_type_ok(v, t) for t in types):
                want = " or ".join(_TYPE_WORDS[t] for t in types)
                out.append(doc.issue(path, f"{where}: wrong type (got {describe(v)}, "
                                           f"expected {want})"))
                return
        if "const" in s and v != s["const"]:
            out.append(doc.issue(path, f"{where}: wrong value (got {describe(v)}, "
                                       f"expected {s['const']!r})"))
        if "enum" in s and v not in s["enum"]:
            what = s.get("x-what", "value not allowed")
            out.append(doc.issue(path, f"{where}: {what} (got {describe(v)}, "
                                       f"expected {_one_of(s['enum'])})"))
        if isinstance(v, str) and "pattern" in s and not re.search(s["pattern"], v):
            what = s.get("x-what", "badly formed value")
            out.append(doc.issue(path, f"{where}: {what} (got {describe(v)}, expected text "
                                       f"matching {s['pattern']})"))
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            if "minimum" in s and v < s["minimum"]:
                out.append(doc.issue(path, f"{where}: too small (got {v}, expected at least "
                                           f"{s['minimum']})"))
            if "exclusiveMinimum" in s and v <= s["exclusiveMinimum"]:
                out.append(doc.issue(path, f"{where}: too small (got {v}, expected more than "
                                           f"{s['exclusiveMinimum']})"))
            if "maximum" in s and v > s["maximum"]:
                out.append(doc.issue(path, f"{where}: too large (got {v}, expected at most "
                                           f"{s['maximum']})"))
        if isinstance(v, dict):
            self._object(s, v, path, doc, out)
        if isinstance(v, list):
            if "minItems" in s and len(v) < s["minItems"]:
                out.append(doc.issue(path, f"{where}: too few entries (got {len(v)}, expected "
                                           f"at least {s['minItems']})"))
            if s.get("uniqueItems"):
                seen: list[Any] = []
                for i, item in enumerate(v):
                    if item in seen:
                        out.append(doc.issue(path + (i,), f"{format_path(path + (i,))}: "
                                             f"repeated entry (got {describe(item)} again, "
                                             "expected each once)"))
                    seen.append(item)
            if "items" in s:
                for i, item in enumerate(v):
                    self._check(s["items"], item, path + (i,), doc, out)

    def _object(self, s: dict[str, Any], v: dict[Any, Any], path: DocPath, doc: Doc,
                out: list[Issue]) -> None:
        where = format_path(path)
        props: dict[str, Any] = s.get("properties", {})
        for k in s.get("required", []):
            if k not in v:
                want = props.get(k, {}).get("x-what", f"a '{k}' entry")
                out.append(doc.issue(path, f"{where}: missing key '{k}' (got nothing, "
                                           f"expected {want})", at_key=True))
        if "minProperties" in s and len(v) < s["minProperties"]:
            out.append(doc.issue(path, f"{where}: empty (got {len(v)} entries, expected at "
                                       f"least {s['minProperties']})", at_key=True))
        names = s.get("propertyNames")
        extra = s.get("additionalProperties", True)
        for k, item in v.items():
            kpath = path + (k,)
            if names is not None:
                before = len(out)
                self._check_key(names, k, kpath, doc, out)
                if len(out) > before:
                    continue
            if k in props:
                self._check(props[k], item, kpath, doc, out)
            elif extra is False:
                allowed = ", ".join(props) if props else "no keys"
                out.append(doc.issue(kpath, f"{format_path(kpath)}: unknown key (got {k!r}, "
                                            f"expected {allowed})", at_key=True))
            elif isinstance(extra, dict):
                self._check(extra, item, kpath, doc, out)

    def _check_key(self, s: dict[str, Any], key: Any, kpath: DocPath, doc: Doc,
                   out: list[Issue]) -> None:
        s = self._resolve(s)
        where = format_path(kpath)
        if not isinstance(key, str):
            out.append(doc.issue(kpath, f"{where}: key must be text (got {describe(key)}, "
                                        "expected a quoted string)", at_key=True))
        elif "enum" in s and key not in s["enum"]:
            what = s.get("x-what", "unknown key")
            out.append(doc.issue(kpath, f"{where}: {what} (got {key!r}, expected "
                                        f"{_one_of(s['enum'])})", at_key=True))
        elif "pattern" in s and not re.search(s["pattern"], key):
            what = s.get("x-what", "badly formed key")
            out.append(doc.issue(kpath, f"{where}: {what} (got {key!r}, expected text "
                                        f"matching {s['pattern']})", at_key=True))

    def _any_of(self, alts: list[dict[str, Any]], v: Any, path: DocPath, doc: Doc,
                out: list[Issue]) -> None:
        # Pick the alternative by the value's type: "got an integer, expected a policy name
        # or a mapping" reads better than the errors of every alternative at once.
        resolved = [self._resolve(a) for a in alts]
        fitting = [a for a in resolved
                   if "type" not in a or _type_ok(v, a["type"])]
        if not fitting:
            want = " or ".join(
                a.get("x-what") or r.get("x-what") or _TYPE_WORDS.get(r.get("type", ""), "?")
                for a, r in zip(alts, resolved, strict=True))
            out.append(doc.issue(path, f"{format_path(path)}: wrong type (got {describe(v)}, "
                                       f"expected {want})"))
            return
        first: list[Issue] | None = None
        for a in fitting:
            trial: list[Issue] = []
            self._check(a, v, path, doc, trial)
            if not trial:
                return
            first = first if first is not None else trial
        out.extend(first or [])
