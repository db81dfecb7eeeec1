"""How full a disk's dirty data runs: the kernel's per-disk write-back statistics (debugfs
`bdi/MAJ:MIN/stats`).

Programs that write through the page cache never reach the block layer as themselves: the
flusher writes for them, and a scheduler that serves readers first (bfq) can hold their data
back as long as readers keep the disk busy. The disk's requests then show the readers alone.
What still shows the writers is the dirty data they leave: writers throttled by the kernel hold
the disk's dirty data near the disk's share of the dirty threshold, readers alone leave none
(docs/limits.md: 309-365 of 354-369 MB under bfq beside five read-ahead readers, 64 KiB
without the writers).

`fill` is that dirty data (waiting and under write-back) over the disk's threshold: 0 with
nothing dirty, about 1 where writers are held back, capped at FILL_CAP. None where it cannot be
read: debugfs not mounted (or locked down), a kernel without the file, not root.
"""
from __future__ import annotations

from pathlib import Path

DEBUGFS = "/sys/kernel/debug"
# above the threshold the kernel stops the writers outright; how far above says nothing more
FILL_CAP = 2.0


def parse_stats(text: str) -> dict[str, int]:
    """The `Name: value kB` lines of a bdi stats file, in KiB (other lines left out)."""
    out = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        parts = rest.split()
        if sep and len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
            out[name.strip()] = int(parts[0])
    return out


def fill(stats: dict[str, int]) -> float | None:
    """Dirty data (waiting and under write-back) over the disk's dirty threshold, 0..FILL_CAP;
    None when the stats lack what it needs."""
    try:
        dirty = stats["BdiReclaimable"] + stats["BdiWriteback"]
    except KeyError:
        return None
    # the disk's share of the threshold; a kernel that has not given this disk one yet (no
    # write-back on it so far) says 0, and then the whole threshold is the limit
    thresh = stats.get("BdiDirtyThresh") or stats.get("DirtyThresh") or 0
    if thresh <= 0:
        return 0.0 if dirty == 0 else FILL_CAP
    return min(FILL_CAP, dirty / thresh)


class DirtyReader:
    """Reads each disk's fill by its MAJ:MIN; `root` is where debugfs is mounted."""

    def __init__(self, root: str | Path = DEBUGFS) -> None:
        self.root = Path(root)

    def fill(self, major: int, minor: int) -> float | None:
        try:
            text = (self.root / "bdi" / f"{major}:{minor}" / "stats").read_text()
        except (OSError, UnicodeDecodeError):
            return None
        return fill(parse_stats(text))
