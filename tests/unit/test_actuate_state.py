"""The state file: survives the process, atomic; a corrupt one is set aside, never trusted."""
from __future__ import annotations

import json
import os
import random
import stat
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


@pytest.mark.parametrize("text,why", [
    (b'{"devices": {"sdb": ', "line 1: not JSON"),
    (b"[]", "expected an object with a 'devices' object"),
    (b'{"devices": {"sdb": "bfq"}}', "sdb: entry is str"),
    (b'{"devices": {"sdb": {"scheduler": 7}}}', "sdb: scheduler is 7"),
    (b'{"devices": {"sdb": {"scheduler": "bfq", "queue": {"queue/nr_requests": 64}}}}',
     "sdb: queue is"),
    (b'{"devices": {"sdb": {"scheduler": "bfq", "changed": "queue/nr_requests"}}}',
     "sdb: changed is"),
    # reliability 3.3, the report's other cases
    (b"", "line 1: not JSON"),
    (b"[1,2]", "expected an object with a 'devices' object"),
    (b'{"devices": ["sdb", "sdc"]}', "expected an object with a 'devices' object"),
    (b'{"devices": {"sdb": {"scheduler": "caf\xe9"}}}', "not UTF-8 (byte 38)"),
    (random.Random(3).randbytes(300), "not UTF-8"),
], ids=["truncated", "list", "entry-str", "scheduler-int", "queue-int", "changed-str",
        "empty", "list-1-2", "devices-list", "latin1", "300-random-bytes"])
def test_a_corrupt_file_is_set_aside_and_counted(tmp_path: Path, text: bytes, why: str,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """Never a crash (a crash loop under systemd) and never a store that refuses every later
    write: the file is moved aside, logged at error, counted, and the state starts empty."""
    (tmp_path / STATE_FILE).write_bytes(text)
    s = StateStore(tmp_path)
    assert s.load() == {}
    assert s.set_aside == 1 and why in (s.last_set_aside or ""), s.last_set_aside
    assert str(tmp_path / STATE_FILE) in " ".join(r.getMessage() for r in caplog.records)
    aside = [p.name for p in tmp_path.iterdir()]
    assert len(aside) == 1 and aside[0].startswith(f"{STATE_FILE}.corrupt-")
    assert (tmp_path / aside[0]).read_bytes() == text         # kept for the operator
    assert any(r.levelname == "ERROR" and "state_file_corrupt" in r.getMessage()
               for r in caplog.records)
    s.put("sdc", {"scheduler": "none"})                       # and writing works again
    assert StateStore(tmp_path).load() == {"sdc": {"scheduler": "none"}}


def test_the_previous_good_state_stays_beside_and_leftovers_go(tmp_path: Path) -> None:
    s = StateStore(tmp_path)
    s.put("sdb", {"scheduler": "bfq"})
    s.put("sdc", {"scheduler": "none"})
    prev = json.loads((tmp_path / f"{STATE_FILE}.prev").read_text())["devices"]
    assert prev == {"sdb": {"scheduler": "bfq"}}
    (tmp_path / ".actuate-state.x1y2.tmp").write_text('{"devi')   # a kill mid-write
    assert [p.name for p in s.clean_leftovers()] == [".actuate-state.x1y2.tmp"]
    s.remove("sdb")
    s.remove("sdc")                          # all back: neither file applies any more
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_leaves_the_old_file_whole(tmp_path: Path) -> None:
    s = StateStore(tmp_path)
    s.put("sdb", {"scheduler": "bfq"})
    with pytest.raises(TypeError):
        s.put("sdc", {"scheduler": object()})  # not JSON: fails before the rename
    assert s.load() == {"sdb": {"scheduler": "bfq"}}
    assert [p.name for p in tmp_path.iterdir()] == [STATE_FILE]


def test_a_directory_in_the_state_files_place_is_set_aside(tmp_path: Path) -> None:
    (tmp_path / STATE_FILE).mkdir()
    (tmp_path / STATE_FILE / "x").write_text("left by hand")
    s = StateStore(tmp_path)
    assert s.load() == {} and "a directory" in (s.last_set_aside or "")
    s.put("sdc", {"scheduler": "none"})
    assert StateStore(tmp_path).load() == {"sdc": {"scheduler": "none"}}
    aside = [p for p in tmp_path.iterdir() if p.name.startswith(f"{STATE_FILE}.corrupt-")]
    assert len(aside) == 1 and (aside[0] / "x").read_text() == "left by hand"


def test_a_state_file_of_another_version_is_still_restored(tmp_path: Path) -> None:
    """Reliability 3.5: a file written by another version (99) holds originals all the same;
    putting them back beats ignoring them."""
    (tmp_path / STATE_FILE).write_text(json.dumps(
        {"version": 99, "devices": {"sdc": {"scheduler": "mq-deadline", "changed": []}}}))
    s = StateStore(tmp_path)
    assert s.load() == {"sdc": {"scheduler": "mq-deadline", "changed": []}}
    assert s.set_aside == 0


def test_the_state_file_is_for_root_alone_and_its_directory_readable(tmp_path: Path) -> None:
    """Reliability 2.6: the directory is made 0755 under the unit's UMask=0022; the state file
    is 0600 whatever the umask (written through mkstemp), and so is its .prev link."""
    old = os.umask(0o022)
    try:
        s = StateStore(tmp_path / "run")
        s.put("sdb", {"scheduler": "bfq"})
        os.umask(0)                         # a careless umask does not open the file up
        s.put("sdc", {"scheduler": "none"})
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "run").stat().st_mode) == 0o755
    for name in (STATE_FILE, f"{STATE_FILE}.prev"):
        assert stat.S_IMODE((tmp_path / "run" / name).stat().st_mode) == 0o600, name
