"""Validate matrix, policies or config files: `python -m ioaz.decide FILE...`.

The kind of file is read from its `kind:` key (matrix, policies); a file with a top-level
`decide:` section is checked as an ioazd config, including the matrices its rules name.
This is what `ioazctl matrix validate FILE` calls.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..located import Issue, ValidationError, load_file
from .config import config_from_doc, load_context
from .matrix import matrix_from_doc
from .policies import policies_from_doc
from .schema import Schema


def validate_file(path: str | Path, schema: Schema | None = None) -> list[Issue]:
    """Every issue in one file (empty list: valid)."""
    schema = schema or Schema.load()
    try:
        doc = load_file(path)
        kind = doc.data.get("kind") if isinstance(doc.data, dict) else None
        if kind == "policies":
            policies_from_doc(doc, schema)
        elif kind == "matrix":
            matrix_from_doc(doc, schema)
        elif isinstance(doc.data, dict) and "decide" in doc.data:
            load_context(config_from_doc(doc, ("decide",), schema), schema)
        else:
            return [doc.issue(("kind",) if isinstance(doc.data, dict) else (),
                              f"unknown kind of file (got {kind!r}, expected kind: matrix, "
                              "kind: policies, or a config with a decide: section)")]
    except ValidationError as e:
        return e.issues
    return []


def main(argv: list[str] | None = None) -> int:
    files = sys.argv[1:] if argv is None else argv
    if not files:
        print("usage: python -m ioaz.decide FILE...", file=sys.stderr)
        return 2
    schema = Schema.load()
    bad = 0
    for f in files:
        issues = validate_file(f, schema)
        for i in issues:
            print(i, file=sys.stderr)
        if issues:
            bad += 1
        else:
            print(f"{f}: ok")
    return 1 if bad else 0
