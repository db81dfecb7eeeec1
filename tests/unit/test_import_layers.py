"""The packages of agent/ioaz stand on floors: a module imports only from its own floor or
below (function-level imports included), and no two packages import each other in a circle."""
from __future__ import annotations

import ast
from pathlib import Path

AGENT = Path(__file__).resolve().parents[2] / "agent" / "ioaz"

# lowest first: the ground (files and types everyone uses), then what reads the kernel,
# what decides and acts, models, the simulator, calibration, the daemon and its
# front ends, and the laboratory on top
FLOORS: dict[str, int] = {
    "located": 0, "device": 0, "realisation": 0, "sysblock": 0, "home": 0, "quantile": 0,
    "udevdb": 0,
    "__init__": 0,
    "probe": 1, "classify": 1,
    "decide": 2, "actuate": 2, "observe": 2,
    "model": 3,
    "sim": 4,
    "learn": 5,
    "daemon": 6, "api": 6, "metrics": 6, "cli": 6,
    "lab": 7, "testbed": 7,
}


def unit(module: str) -> str:
    """ioaz.decide.damping -> decide; ioaz.sysblock -> sysblock."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports() -> list[tuple[str, str, str]]:
    """(importing unit, imported unit, where) for every import of an ioaz module."""
    out = []
    for p in sorted(AGENT.rglob("*.py")):
        rel = p.relative_to(AGENT.parent).with_suffix("")
        mod = ".".join(rel.parts)
        pkg = mod if p.name == "__init__.py" else mod.rsplit(".", 1)[0]
        if p.name == "__init__.py":
            mod = pkg.removesuffix(".__init__")
            pkg = mod
        for node in ast.walk(ast.parse(p.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")
                    base = base[:len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                targets = [target] + ([f"{target}.{a.name}" for a in node.names]
                                      if target.count(".") == 0 else [])
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets[:1]:
                if t == "ioaz" or t.startswith("ioaz."):
                    if t == "ioaz" and isinstance(node, ast.ImportFrom):
                        for a in node.names:   # a module of the package, or a name of its own
                            name = a.name if a.name in FLOORS else "__init__"
                            out.append((unit(mod), unit(f"ioaz.{name}"),
                                        f"{rel}.py:{node.lineno}"))
                    else:
                        out.append((unit(mod), unit(t), f"{rel}.py:{node.lineno}"))
    return out


def test_every_unit_has_a_floor() -> None:
    units = {unit(".".join(p.relative_to(AGENT.parent).with_suffix("").parts))
             for p in AGENT.rglob("*.py")}
    assert units <= set(FLOORS), sorted(units - set(FLOORS))


def test_no_import_reaches_up_a_floor() -> None:
    up = [f"{where}: {a} (floor {FLOORS[a]}) imports {b} (floor {FLOORS[b]})"
          for a, b, where in imports() if FLOORS[b] > FLOORS[a]]
    assert up == [], "\n".join(up)


def test_no_circle_between_packages() -> None:
    edges: dict[str, set[str]] = {}
    for a, b, _ in imports():
        if a != b:
            edges.setdefault(a, set()).add(b)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for n in edges.get(start, ()):
            if n == goal or (n not in seen and reaches(n, goal, seen | {n})):
                return True
        return False

    circles = sorted(f"{a} <-> {b}" for a in edges for b in edges[a]
                     if a < b and reaches(b, a, {b}))
    assert circles == [], circles
