"""The benchmark report: Markdown with PNG plots (matplotlib, Agg backend) and the raw numbers
as JSON, written under one output directory by `ioaz-lab bench report`.

A suite adds a `Section` (text, tables, plots) and puts its numbers into `Report.data[key]`;
`Report.write()` writes `report.md`, `results.json` and the PNGs next to them, so the report
and the numbers it quotes always come from the same run.
"""
from __future__ import annotations

import json
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path("reports")


def fmt(x: Any, digits: int = 2) -> str:
    """A table cell: numbers rounded, None as a dash."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        return f"{x:,.{digits}f}"
    return str(x)


class Section:
    def __init__(self, report: Report, title: str) -> None:
        self.report = report
        self.title = title
        self.lines: list[str] = []

    def text(self, *paras: str) -> Section:
        for p in paras:
            self.lines += [p.strip(), ""]
        return self

    def bullets(self, items: Sequence[str]) -> Section:
        self.lines += [f"- {i}" for i in items] + [""]
        return self

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[Any]],
              digits: int = 2) -> Section:
        self.lines.append("| " + " | ".join(headers) + " |")
        self.lines.append("|" + "|".join("---" for _ in headers) + "|")
        for r in rows:
            self.lines.append("| " + " | ".join(fmt(c, digits) for c in r) + " |")
        self.lines.append("")
        return self

    def plot(self, name: str, fig: Any, caption: str) -> Section:
        """Save a matplotlib figure as NAME.png beside the report and link it."""
        path = self.report.out / f"{name}.png"
        fig.savefig(path, dpi=90, bbox_inches="tight")
        import matplotlib.pyplot as plt

        plt.close(fig)
        self.report.files.append(path)
        self.lines += [f"![{caption}]({path.name})", "", f"*{caption}*", ""]
        return self

    def markdown(self) -> str:
        return "\n".join([f"## {self.title}", "", *self.lines])


class Report:
    def __init__(self, out: Path, title: str, quick: bool = False) -> None:
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.title = title
        self.quick = quick
        self.sections: list[Section] = []
        self.data: dict[str, Any] = {}
        self.files: list[Path] = []
        self.started = time.time()
        self.summary: list[str] = []   # headline lines, printed first

    def section(self, title: str) -> Section:
        s = Section(self, title)
        self.sections.append(s)
        return s

    def write(self) -> Path:
        md = self.out / "report.md"
        took = time.time() - self.started
        head = [f"# {self.title}", "",
                f"Generated {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())} on "
                f"{platform.node()} ({platform.machine()}, Python {platform.python_version()}) "
                f"in {took:.0f} s"
                f"{' (--quick: shorter runs, fewer schedulers)' if self.quick else ''}."
                " Every ratio below was measured in this run.", ""]
        if self.summary:
            head += ["## Summary", "", *[f"- {s}" for s in self.summary], ""]
        md.write_text("\n".join(head + [s.markdown() for s in self.sections]) + "\n")
        (self.out / "results.json").write_text(
            json.dumps(self.data, indent=2, default=str) + "\n")
        self.files += [md, self.out / "results.json"]
        return md


def figure(width: float = 7.0, height: float = 3.6) -> tuple[Any, Any]:
    """A new figure on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height))


def bars(ax: Any, labels: Sequence[str], values: Sequence[float], ylabel: str,
         highlight: Sequence[str] = ()) -> None:
    colors = ["tab:orange" if lab in highlight else "tab:blue" for lab in labels]
    ax.bar(range(len(values)), values, color=colors)
    ax.set_xticks(range(len(values)))
    ax.set_xticklabels(labels, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
