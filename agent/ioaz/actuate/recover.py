"""Start-up after a crash: if a state file survived, put every device it names back.

ioazd calls recover() before its first window. A state file at start-up means the previous
process died (SIGKILL, OOM, power to the daemon only) between changing a device and restoring it:
a clean stop restores everything and removes the file.

    python -m ioaz.actuate.recover [--state-dir DIR] [--sysfs-root DIR]
prints one JSON line per device and exits 1 if any device could not be restored.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict

from ioaz.actuate.actuator import Actuator
from ioaz.actuate.state import DEFAULT_STATE_DIR, StateStore
from ioaz.actuate.types import RestoreResult
from ioaz.sysblock import BlockSysfs


def recover(state_dir: str | os.PathLike[str] = DEFAULT_STATE_DIR,
            sysfs_root: str | os.PathLike[str] = "/sys",
            actuator: Actuator | None = None) -> list[RestoreResult]:
    """Restore every device of a leftover state file; [] when there is none (a clean start)."""
    act = actuator or Actuator(BlockSysfs(sysfs_root), StateStore(state_dir))
    if act.state.dir.is_dir():
        act.state.clean_leftovers()
    if not act.state.path.exists():
        return []
    return act.restore_all()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ioaz.actuate.recover", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--state-dir", default=DEFAULT_STATE_DIR)
    ap.add_argument("--sysfs-root", default="/sys")
    args = ap.parse_args(argv)
    results = recover(args.state_dir, args.sysfs_root)
    for r in results:
        print(json.dumps(asdict(r)))
    if not results:
        print(f"no state file in {args.state_dir}: nothing to restore", file=sys.stderr)
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
