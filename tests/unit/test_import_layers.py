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
    "located": 0, "device": 0, "realisation": 0, "sysblock": 0, "home": 0, "quantile": 0, "bdi": 0,
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


def module_name(p: Path) -> str:
    """agent/ioaz/decide/damping.py -> ioaz.decide.damping; a package by its own name."""
    parts = p.relative_to(AGENT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p) for p in AGENT.rglob("*.py")}


def module_imports() -> list[tuple[str, str, str]]:
    """(importing module, imported module, where) for every import of an ioaz module, function-
    level imports included; `from PKG import name` imports PKG.name when that is a module."""
    out = []
    for p in sorted(AGENT.rglob("*.py")):
        mod = module_name(p)
        pkg = mod if p.name == "__init__.py" else mod.rsplit(".", 1)[0]
        where = f"{p.relative_to(AGENT.parent)}:"
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = pkg.split(".")
                target = (".".join(base[:len(base) - node.level + 1]
                                   + ([node.module] if node.module else []))
                          if node.level else node.module or "")
                found = [f"{target}.{a.name}" if f"{target}.{a.name}" in MODULES else target
                         for a in node.names]
            elif isinstance(node, ast.Import):
                found = [a.name for a in node.names]
            else:
                continue
            out += [(mod, t, f"{where}{node.lineno}") for t in found
                    if t == "ioaz" or t.startswith("ioaz.")]
    return out


def imports() -> list[tuple[str, str, str]]:
    """(importing unit, imported unit, where) for every import of an ioaz module."""
    return [(unit(a), unit(b), where) for a, b, where in module_imports()]


def circles(pairs: list[tuple[str, str, str]]) -> list[str]:
    """Every import a -> b (a before b by name) that b leads back to a through other imports."""
    edges: dict[str, set[str]] = {}
    for a, b, _ in pairs:
        if a != b:
            edges.setdefault(a, set()).add(b)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = {start}, [start]
        while todo:
            for n in edges.get(todo.pop(), ()):
                if n == goal:
                    return True
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        return False

    return sorted(f"{a} <-> {b}" for a in edges for b in edges[a] if a < b and reaches(b, a))


def test_every_unit_has_a_floor() -> None:
    units = {unit(".".join(p.relative_to(AGENT.parent).with_suffix("").parts))
             for p in AGENT.rglob("*.py")}
    assert units <= set(FLOORS), sorted(units - set(FLOORS))


def test_no_import_reaches_up_a_floor() -> None:
    up = [f"{where}: {a} (floor {FLOORS[a]}) imports {b} (floor {FLOORS[b]})"
          for a, b, where in imports() if FLOORS[b] > FLOORS[a]]
    assert up == [], "\n".join(up)


def test_no_circle_between_packages() -> None:
    assert circles(imports()) == []


def test_no_circle_between_modules() -> None:
    """Inside a package too (the lab had one): a module never needs itself to be imported."""
    assert circles(module_imports()) == []


def test_ioazd_and_ioazctl_reach_a_model_through_ioaz_model_never_ioaz_learn() -> None:
    """The daemon and its front ends sit above learn/ but must not import it: what runs on a
    server loads a trained model through ioaz.model, without calibration's dependencies."""
    served = {"daemon", "api", "metrics", "cli"}
    found = [f"{where}: {b}" for a, b, where in module_imports()
             if unit(a) in served and unit(b) == "learn"]
    assert found == [], found
