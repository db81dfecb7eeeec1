"""The testbed's one error type: a sentence for the operator, never a traceback; and the way its
build steps run, each into a log whose last lines a failure quotes."""
from __future__ import annotations

import subprocess
from pathlib import Path


class TestbedError(Exception):
    """Something the testbed needs is missing or failed; the message says what and where."""

    __test__ = False   # not a pytest test class, despite the name


def run_logged(cmd: list[str], what: str, log: Path) -> None:
    """Run a build step with its output appended to `log`; a failure quotes the log's tail."""
    with open(log, "a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        r = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        raise TestbedError(f"{what} failed (exit {r.returncode}); the last lines of {log}:\n"
                           + "\n".join(tail))
