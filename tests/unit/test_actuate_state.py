"""The state file: survives the process, atomic, refuses to guess when corrupt."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from ioaz.actuate.state import STATE_FILE, StateStore


def test_absent_file_is_empty_state(tmp_path: Path) -> None:
    assert StateStore(tmp_path / "nowhere").load() == {}


def test_put_get_remove_and_the_file_goes_with_the_last_entry(tmp_path: Path) -> None:
    s = StateStore(tmp_path / "run")
    s.put("sdb", {"scheduler": "mq-deadline"})
    s.put("sdc", {"scheduler": "none"})
    assert StateStore(tmp_path / "run").get("sdb") == {"scheduler": "mq-deadline"}
    s.remove("sdb")
    assert list(json.loads((tmp_path / "run" / STATE_FILE).read_text())["devices"]) == ["sdc"]
    s.remove("sdc")
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == []


def test_corrupt_file_is_an_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / STATE_FILE).write_text('{"devices": {"sdb": ')
    with pytest.raises(ValueError, match=f"{STATE_FILE}:1: corrupt"):
        StateStore(tmp_path).load()
    (tmp_path / STATE_FILE).write_text("[]")
    with pytest.raises(ValueError, match="'devices'"):
        StateStore(tmp_path).load()


def test_a_failed_write_leaves_the_old_file_whole(tmp_path: Path) -> None:
    s = StateStore(tmp_path)
    s.put("sdb", {"scheduler": "bfq"})
    with pytest.raises(TypeError):
        s.put("sdc", {"scheduler": object()})  # not JSON: fails before the rename
    assert s.load() == {"sdb": {"scheduler": "bfq"}}
    assert [p.name for p in tmp_path.iterdir()] == [STATE_FILE]
