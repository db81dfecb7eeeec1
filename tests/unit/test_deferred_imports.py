"""Every import in agent/ioaz resolves, those deferred into functions included: a deferred
import runs only on its path (a full report, a model classifier), so a module that moved away
from it fails there, long after the tests that import the module at its top passed."""
from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "agent" / "ioaz"
# Imports a module makes only when an optional package is there (ImportError handled).
OPTIONAL = {"bcc", "sklearn", "joblib", "matplotlib", "numpy", "mypyc"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_dir(name: str) -> Path | None:
    """The directory of package NAME, or None when NAME is not a package here."""
    try:
        spec = importlib.util.find_spec(name)
    except ModuleNotFoundError:
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def imported(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the file; `from PKG import name` counts
    as an import of PKG.name when PKG holds a module of that name."""
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            out.append((node.lineno, base))
            pkg = package_dir(base)
            if pkg is not None:
                out += [(node.lineno, f"{base}.{a.name}") for a in node.names
                        if (pkg / f"{a.name}.py").exists() or (pkg / a.name).is_dir()]
    return out


def test_every_import_in_agent_resolves() -> None:
    missing = []
    for path in sorted(PKG.rglob("*.py")):
        for line, name in imported(path):
            if name.split(".")[0] in OPTIONAL:
                continue
            try:
                found = importlib.util.find_spec(name)
            except ModuleNotFoundError:
                found = None
            if found is None:
                missing.append(f"{path.relative_to(PKG.parent)}:{line}: {name}")
    assert not missing, "imports that do not resolve:\n" + "\n".join(missing)
