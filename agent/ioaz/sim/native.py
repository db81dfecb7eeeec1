"""Compile the simulator's hot modules with mypyc, and say which simulator runs.

`python -m ioaz.sim.native build` compiles ioaz.sim.MODULES into <repo>/build/mypyc/ with the
digest of their sources (nothing to do when that digest still matches); `make venv`, and so
`make run` and `make test`, runs it and carries on interpreted if it fails. ioaz.sim's
__init__ decides at import which modules run. `python -m ioaz.sim.native` prints which.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from ioaz.sim import MANIFEST, MODULES, NATIVE, PKG, STATUS, built_digest, digest

GROUP = "ioaz.sim.native"  # mypyc's shared library becomes ioaz.sim.native__mypyc


def running() -> str:
    """Which simulator this process runs: the loaded engine module, compiled or not."""
    from ioaz.sim import engine

    f = Path(engine.__file__ or "")
    if f.suffix == ".py":
        return "interpreted (pure Python)"
    return f"compiled with mypyc ({f.parent})"


def build(force: bool = False) -> int:
    """Compile MODULES into NATIVE; 0 when the build is there and current."""
    want = digest()
    if not force and built_digest() == want:
        print(f"simulator: compiled build up to date ({NATIVE})")
        return 0
    try:
        from mypyc.build import mypycify
        from setuptools import setup
    except ImportError as e:
        print(f"simulator: cannot compile ({e})", file=sys.stderr)
        return 1
    t0 = time.monotonic()
    MANIFEST.unlink(missing_ok=True)
    build_dir = NATIVE.parent
    cwd = os.getcwd()
    os.chdir(PKG.parents[1])  # agent/: mypyc names the modules after their paths below it
    try:
        exts = mypycify([f"--cache-dir={build_dir / 'mypyc-cache'}",
                         *(f"ioaz/sim/{m}" for m in MODULES)], opt_level="3",
                        group_name=GROUP, target_dir=str(build_dir / "mypyc-c"))
        setup(name="ioaz-sim-native", ext_modules=exts,
              script_args=["-q", "build_ext", "--build-lib", str(NATIVE),
                           "--build-temp", str(build_dir / "mypyc-tmp")])
    except (Exception, SystemExit) as e:  # a compiler error ends setup() with SystemExit
        print(f"simulator: compilation failed ({e}); it runs interpreted", file=sys.stderr)
        return 1
    finally:
        os.chdir(cwd)
    MANIFEST.write_text(f"{want}\n")
    print(f"simulator: compiled with mypyc into {NATIVE} in {time.monotonic() - t0:.0f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["build"]:
        return build(force="--force" in args)
    if args:
        print("usage: python -m ioaz.sim.native [build [--force]]", file=sys.stderr)
        return 2
    print(running())
    if not running().startswith("compiled"):
        print(STATUS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
