"""The disk laboratory (README.md).

Its hot modules (MODULES) run compiled by mypyc when build/mypyc/ holds a build of exactly the
sources here (`python -m ioaz.sim.native build`, run by `make venv`): then that directory comes
first on this package's path. Otherwise, or with IOAZ_SIM_INTERPRETED=1 in the environment,
they run interpreted, with the same results; an edited module never runs as a stale extension.
"""
from __future__ import annotations

import hashlib
import importlib
import os
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parent            # agent/ioaz/sim
NATIVE = PKG.parents[2] / "build" / "mypyc"      # the repository's build/ (git-ignored)
MANIFEST = NATIVE / "ioaz" / "sim" / "SOURCES"   # the digest of the sources it was built from
# the modules a run goes through (every scheduler: the compiled schedulers package has no
# interpreted part); adaptive, speed and native stay interpreted
MODULES = ("engine.py", "results.py", "request.py", "device_base.py", "hdd.py", "ssd.py",
           "raid.py", "devices.py", "workloads.py", "trace.py",
           *sorted(p.relative_to(PKG).as_posix() for p in PKG.glob("schedulers/*.py")))


def digest() -> str:
    """SHA-256 over the compiled modules' sources and the interpreter's ABI tag."""
    h = hashlib.sha256(sys.implementation.cache_tag.encode())
    for m in MODULES:
        h.update(m.encode() + b"\0" + (PKG / m).read_bytes() + b"\0")
    return h.hexdigest()


def built_digest() -> str | None:
    try:
        return MANIFEST.read_text().split()[0]
    except (OSError, IndexError):
        return None


def native_status() -> tuple[bool, str]:
    """(run the compiled modules?, why), without importing any of them."""
    if os.environ.get("IOAZ_SIM_INTERPRETED"):
        return False, "interpreted (IOAZ_SIM_INTERPRETED is set)"
    built = built_digest()
    if built is None:
        return False, "interpreted (no compiled build: python -m ioaz.sim.native build)"
    if built != digest():
        return False, ("interpreted (the compiled build is older than the sources: "
                       "python -m ioaz.sim.native build)")
    return True, f"compiled with mypyc ({NATIVE})"


COMPILED, STATUS = native_status()
if COMPILED:
    __path__.insert(0, str(NATIVE / "ioaz" / "sim"))
    try:  # the compiled code itself (mypyc's shared library), loaded now to fail early
        importlib.import_module("ioaz.sim.native__mypyc")
    except ImportError as e:
        __path__.remove(str(NATIVE / "ioaz" / "sim"))
        COMPILED, STATUS = False, f"interpreted (the compiled build does not load: {e})"
