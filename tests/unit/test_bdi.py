"""The disk's dirty data from the kernel's per-disk write-back stats (ioaz.bdi)."""
from __future__ import annotations

import pytest
from ioaz.bdi import FILL_CAP, DirtyReader, fill, parse_stats

# the stats file as a 6.12 guest wrote it, five buffered writers beside five readers under bfq
# (docs/reports/dirty-under-bfq-2026-12-05/out.log), with the lines that carry no kB
STATS = """BdiWriteback:             2688 kB
BdiReclaimable:         363520 kB
BdiDirtyThresh:         359576 kB
DirtyThresh:            364576 kB
BackgroundThresh:       182064 kB
BdiDirtied:            1234567 kB
BdiWritten:             876543 kB
BdiWriteBandwidth:       40960 kBps
b_dirty:                     5
b_io:                        0
state:                       7
"""


def test_the_stats_file_is_read_in_kib():
    s = parse_stats(STATS)
    assert s["BdiReclaimable"] == 363520 and s["BdiWriteback"] == 2688
    assert "BdiWriteBandwidth" not in s and "b_dirty" not in s   # not kB


def test_fill_is_dirty_over_the_disk_s_threshold():
    assert fill(parse_stats(STATS)) == pytest.approx((363520 + 2688) / 359576)
    # readers alone: what the last run left, nothing near the threshold
    assert fill({"BdiReclaimable": 64, "BdiWriteback": 0, "BdiDirtyThresh": 365168}) < 0.001
    # no share of the threshold yet (the disk has had no write-back): the global one
    assert fill({"BdiReclaimable": 1000, "BdiWriteback": 0, "BdiDirtyThresh": 0,
                 "DirtyThresh": 4000}) == pytest.approx(0.25)
    assert fill({"BdiReclaimable": 0, "BdiWriteback": 0}) == 0.0
    assert fill({"BdiReclaimable": 10, "BdiWriteback": 0}) == FILL_CAP
    assert fill({"BdiReclaimable": 10 ** 9, "BdiWriteback": 0, "BdiDirtyThresh": 1}) == FILL_CAP
    assert fill({"BdiDirtyThresh": 5}) is None      # a kernel whose file lacks the counts


def test_the_reader_finds_the_disk_by_its_numbers_and_says_none_without_debugfs(tmp_path):
    d = tmp_path / "bdi" / "8:0"
    d.mkdir(parents=True)
    (d / "stats").write_text(STATS)
    r = DirtyReader(tmp_path)
    assert r.fill(8, 0) == pytest.approx(fill(parse_stats(STATS)))
    assert r.fill(8, 16) is None                       # another disk: no file
    assert DirtyReader(tmp_path / "unmounted").fill(8, 0) is None
    (d / "stats").write_bytes(b"\xff\xfe")
    assert r.fill(8, 0) is None                        # not text: unreadable, not a crash
