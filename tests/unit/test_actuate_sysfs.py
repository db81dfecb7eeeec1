"""Parsing queue/scheduler and listing knobs, on lines and trees the kernel produces."""
from __future__ import annotations

from pathlib import Path

import pytest
from ioaz.actuate.sysfs import BlockSysfs, parse_scheduler


def test_bracketed_name_is_active() -> None:
    line = parse_scheduler("none [mq-deadline] kyber bfq \n")
    assert line.active == "mq-deadline"
    assert line.available == ("none", "mq-deadline", "kyber", "bfq")


def test_plain_none_is_a_queue_without_elevators() -> None:
    line = parse_scheduler("none")
    assert line.active == "none" and line.available == ()


@pytest.mark.parametrize("text", ["", "mq-deadline kyber", "[none] [bfq]"])
def test_anything_else_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a queue/scheduler line"):
        parse_scheduler(text)


def test_knobs_skip_read_only_files_even_for_root(tmp_path: Path) -> None:
    d = tmp_path / "block" / "sdb" / "queue" / "iosched"
    d.mkdir(parents=True)
    (d / "read_expire").write_text("500\n")
    (d / "stats").write_text("1 2 3\n")
    (d / "stats").chmod(0o444)
    assert BlockSysfs(tmp_path).knobs("sdb") == {"queue/iosched/read_expire": "500"}


def test_write_is_one_write_with_no_newline_and_read_strips(tmp_path: Path) -> None:
    q = tmp_path / "block" / "sdb" / "queue"
    q.mkdir(parents=True)
    (q / "read_ahead_kb").write_text("128\n")
    s = BlockSysfs(tmp_path)
    s.write("sdb", "queue/read_ahead_kb", "4096")
    assert (q / "read_ahead_kb").read_text() == "4096"
    assert s.read("sdb", "queue/read_ahead_kb") == "4096"
    assert s.devices() == ["sdb"] and not s.exists("sdc")
