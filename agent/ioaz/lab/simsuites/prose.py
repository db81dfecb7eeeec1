"""The words of the simulator suites' report sections, kept in templates/SUITE.md beside this
module so that a sentence of the report is found there and the numbers in the suite's code.

A template starts with the section's heading (`## Title`), then named blocks, each opened by a
line `<!-- name -->`. A block is one paragraph, its lines joined by single spaces (so the file
wraps at any width), or a Markdown table's header row, giving the table's column headers.
`$name` placeholders are filled by string.Template.substitute: a placeholder the code does not
fill fails the report, never leaves a `$` in it.
"""
from __future__ import annotations

import re
from functools import cache
from importlib.resources import files
from string import Template

_BLOCK = re.compile(r"<!-- ([a-z0-9_]+) -->")


class Prose:
    """One suite's template: its heading and its blocks by name."""

    def __init__(self, text: str, where: str) -> None:
        lines = text.splitlines()
        if not lines or not lines[0].startswith("## "):
            raise ValueError(f"{where}:1: expected the section's heading, '## Title'")
        self.title = lines[0][3:].strip()
        self.blocks: dict[str, Template] = {}
        name, start = "", 0
        body: list[str] = []
        for no, line in enumerate([*lines[1:], "<!-- end -->"], start=2):
            m = _BLOCK.fullmatch(line.strip())
            if m:
                if name:
                    self.blocks[name] = Template(_paragraph(body, f"{where}:{start}"))
                elif any(body):
                    raise ValueError(f"{where}:{no}: text before the first <!-- name --> line")
                if m[1] in self.blocks:
                    raise ValueError(f"{where}:{no}: block '{m[1]}' defined twice")
                name, body, start = m[1], [], no
            else:
                body.append(line.strip())

    def __call__(self, block: str, **values: object) -> str:
        """Block `block` with its placeholders filled."""
        return self.blocks[block].substitute(values)

    def headers(self, block: str, **values: object) -> list[str]:
        """The column headers of the table header row `block`; a value that is several columns
        is given joined by ' | '."""
        row = self(block, **values)
        if not row.startswith("|"):
            raise ValueError(f"block '{block}' is not a table header row")
        return [h.strip() for h in row.strip().strip("|").split("|")]


def _paragraph(body: list[str], where: str) -> str:
    while body and not body[-1]:
        body.pop()
    while body and not body[0]:
        body.pop(0)
    if "" in body:
        raise ValueError(f"{where}: a block is one paragraph; this one has a blank line in it")
    return " ".join(body)


@cache
def prose(suite: str) -> Prose:
    """templates/SUITE.md, from the package (a checkout, the installed tree or a wheel)."""
    path = files("ioaz.lab.simsuites") / "templates" / f"{suite}.md"
    return Prose(path.read_text(encoding="utf-8"), f"templates/{suite}.md")
