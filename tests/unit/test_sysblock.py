"""Parsing queue/scheduler and listing knobs, on lines and trees the kernel produces."""
from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import pytest
from fake_sysfs import FakeKernel
from ioaz.sysblock import BlockSysfs, SchedulerLine, parse_scheduler


def test_bracketed_name_is_active() -> None:
    line = parse_scheduler("none [mq-deadline] kyber bfq \n")
    assert line.active == "mq-deadline"
    assert line.available == ("none", "mq-deadline", "kyber", "bfq")


def test_every_name_is_available_in_the_kernels_order() -> None:
    line = parse_scheduler("mq-deadline kyber [bfq] none\n")
    assert line == SchedulerLine("bfq", ("mq-deadline", "kyber", "bfq", "none"))
    assert parse_scheduler("[none] mq-deadline") == SchedulerLine("none", ("none", "mq-deadline"))


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


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_held_reads_see_every_new_value_and_hold_no_more_than_asked(tmp_path: Path) -> None:
    for dev in ("sda", "sdb"):
        q = tmp_path / "block" / dev / "queue"
        q.mkdir(parents=True)
        (q / "scheduler").write_text("none [mq-deadline] bfq\n")
        (q / "read_ahead_kb").write_text("128\n")
    before = _open_fds()
    s = BlockSysfs(tmp_path, hold_open=1)
    assert s.scheduler("sda").active == "mq-deadline"
    assert s.scheduler("sdb").active == "mq-deadline"   # read, not held: the one is taken
    assert s.read("sda", "queue/read_ahead_kb") == "128"  # not a held key
    assert _open_fds() == before + 1
    s.write("sda", "queue/scheduler", "none [mq-deadline] [bfq]")   # rewritten in place
    assert s.read("sda", "queue/scheduler") == "none [mq-deadline] [bfq]"
    s.let_go("sda")
    assert _open_fds() == before
    assert s.scheduler("sdb").active == "mq-deadline"   # the freed place is sdb's now
    assert _open_fds() == before + 1
    s.close()
    assert _open_fds() == before


def test_a_held_read_of_a_removed_node_looks_the_path_up_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sysfs node the kernel removed answers ENODEV through a descriptor held open; the
    disk that now has the name is read, and an error of the attribute's own is raised."""
    q = tmp_path / "block" / "sdb" / "queue"
    q.mkdir(parents=True)
    (q / "scheduler").write_text("[none] bfq\n")
    s = BlockSysfs(tmp_path, hold_open=4)
    assert s.scheduler("sdb").active == "none"
    held = next(iter(s._held.values()))
    (q / "scheduler").unlink()
    (q / "scheduler").write_text("none [bfq]\n")     # another disk's file, the same path
    real_pread = os.pread
    answered = []

    def gone(fd: int, n: int, off: int) -> bytes:
        # the held descriptor's first read only: a new one may be given the same number
        if fd == held and not answered:
            answered.append(fd)
            raise OSError(errno.ENODEV, "No such device")
        return real_pread(fd, n, off)

    monkeypatch.setattr(os, "pread", gone)
    assert s.scheduler("sdb").active == "bfq" and answered
    held = next(iter(s._held.values()))

    def broken(fd: int, n: int, off: int) -> bytes:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "pread", broken)
    with pytest.raises(OSError) as e:
        s.scheduler("sdb")
    assert e.value.errno == errno.EIO and held not in s._held.values()
    monkeypatch.setattr(os, "pread", real_pread)
    (q / "scheduler").unlink()
    with pytest.raises(FileNotFoundError):
        s.scheduler("sdb")
    assert not s._held


def test_facts_of_a_disk_read_from_the_tree(tmp_path: Path) -> None:
    kernel = FakeKernel(tmp_path / "sys")
    kernel.add_device("sda", dev="8:0", rotational=True, size_sectors=2048, queue_depth=32)
    assert kernel.rotational("sda") is True
    assert kernel.size_bytes("sda") == 2048 * 512
    assert kernel.queue_depth("sda") == 32
    assert kernel.devt("sda") == (8, 0)
    assert kernel.rotational("sdz") is None and kernel.devt("sdz") is None


def test_a_partition_folds_into_its_disk_and_holders_are_listed(tmp_path: Path) -> None:
    kernel = FakeKernel(tmp_path / "sys")
    kernel.add_device("sda", dev="8:0")
    kernel.add_partition("sda", "sda1", dev="8:1")
    (kernel.device_dir("sda") / "sda1" / "holders" / "dm-0").mkdir(parents=True)
    assert kernel.disk_of_devt(8, 1) == "sda" and kernel.disk_of_devt(8, 0) == "sda"
    assert kernel.disk_of_devt(9, 9) is None
    assert kernel.partitions("sda") == ["sda1"]
    assert kernel.holders("sda", "sda1") == ["dm-0"] and kernel.holders("sda") == []


def test_a_device_number_taken_by_another_device_folds_into_that_one(tmp_path: Path) -> None:
    """disk_of_devt keeps the disk of each directory it has seen, not of each number: a
    number another device takes (nvme's 259:N are handed out as devices come) names the new
    device's disk, and a number whose device is gone names none."""
    kernel = FakeKernel(tmp_path / "sys")
    kernel.add_device("nvme0n1", dev="259:0")
    kernel.add_partition("nvme0n1", "nvme0n1p1", dev="259:1")
    assert [kernel.disk_of_devt(259, m) for m in (0, 1, 0, 1)] == ["nvme0n1"] * 4
    kernel.remove_device("nvme0n1")
    (kernel.root / "dev" / "block" / "259:1").unlink()
    assert kernel.disk_of_devt(259, 0) is None and kernel.disk_of_devt(259, 1) is None
    kernel.add_device("nvme1n1", dev="259:1")
    kernel.add_partition("nvme1n1", "nvme1n1p1", dev="259:0")
    assert kernel.disk_of_devt(259, 1) == "nvme1n1" and kernel.disk_of_devt(259, 0) == "nvme1n1"
    # a disk attached again under its old name, with another number: its directory still
    # names it
    kernel.add_device("nvme0n1", dev="259:2")
    assert kernel.disk_of_devt(259, 2) == "nvme0n1"


def test_only_disks_with_a_scheduler_and_a_medium_are_scheduled(tmp_path: Path) -> None:
    kernel = FakeKernel(tmp_path / "sys")
    kernel.add_device("sda", dev="8:0")
    kernel.add_device("loop1", dev="7:1", size_sectors=0)          # nothing attached
    kernel.add_device("zram0", dev="252:0", available=("none",))   # bio-based
    assert kernel.scheduled_disks() == ["sda"]


def test_device_numbers_fold_as_realpath_says_on_this_machine() -> None:
    """disk_of_devt resolves the kernel's relative links by name; on the real /sys it names
    the same disk as resolving every component would (partitions into their disks)."""
    sys_dev = Path("/sys/dev/block")
    if not sys_dev.is_dir():
        pytest.skip("no /sys/dev/block on this machine")
    real = BlockSysfs()
    for link in sorted(sys_dev.iterdir()):
        major, minor = (int(x) for x in link.name.split(":"))
        resolved = Path(os.path.realpath(link))
        expected = resolved.parent.name if (resolved / "partition").exists() else resolved.name
        assert real.disk_of_devt(major, minor) == expected, link
    assert real.disk_of_devt(4095, 1048575) is None


def test_no_other_module_names_block_sysfs_paths() -> None:
    """The door is the only code that touches /sys/block and /sys/dev/block: everything else
    is handed a BlockSysfs, so a fake tree can stand in for the kernel everywhere."""
    agent = Path(__file__).resolve().parents[2] / "agent" / "ioaz"
    door = agent / "sysblock.py"
    found = [f"{p.relative_to(agent)}:{n}" for p in sorted(agent.rglob("*.py")) if p != door
             for n, line in enumerate(p.read_text().splitlines(), 1)
             if "/sys/block" in line or "/sys/dev/block" in line
             or '"block"' in line and "sys" in line]
    assert found == [], f"block sysfs paths outside ioaz/sysblock.py: {found}"
    assert "/sys/block" in door.read_text()   # the test looks where the paths are


# What reading the kernel's "none [mq-deadline] kyber" takes: a regular expression with an
# escaped bracket, a string method handed a bracket, or a test for a bracket in a word.
_READS_BRACKETS = re.compile(
    r"\\[\[\]]"
    r"|\.(?:replace|strip|lstrip|rstrip|split|rsplit|partition|rpartition|find|rfind|index"
    r"|rindex|startswith|endswith|count|removeprefix|removesuffix|maketrans)\(\s*(['\"])[\[\]]+\1"
    r"|(['\"])[\[\]]+\2\s+(?:not\s+)?in\b")
# an IPv6 listen address, "[::1]", is the one other bracket ioaz reads
_IPV6_HOST = re.compile(r"\bhost\.strip\(\"\[\]\"\)")


def test_no_other_module_parses_the_scheduler_line() -> None:
    """parse_scheduler is the one reader of the bracketed scheduler line: a module that needs
    the active scheduler asks BlockSysfs.scheduler, never parses the line again."""
    agent = Path(__file__).resolve().parents[2] / "agent" / "ioaz"
    door = agent / "sysblock.py"
    found = [f"{p.relative_to(agent)}:{n}" for p in sorted(agent.rglob("*.py")) if p != door
             for n, line in enumerate(p.read_text().splitlines(), 1)
             if _READS_BRACKETS.search(line) and not _IPV6_HOST.search(line)]
    assert found == [], f"bracket parsing outside ioaz/sysblock.py: {found}"
    # the test looks for what the parser does
    assert sum(bool(_READS_BRACKETS.search(line)) for line in door.read_text().splitlines()) >= 2
