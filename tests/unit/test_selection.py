"""Which disks ioazd manages (daemon/compose.py Selection), read as cheaply as the scan allows:
it runs every window, so names the globs exclude cost nothing and a disk's answer is kept a
while; a new disk is seen at once, a gone one forgotten at once, a medium inserted later seen
within RECHECK_S."""
from __future__ import annotations

from pathlib import Path

from fake_sysfs import FakeKernel
from ioaz.daemon.compose import Selection


class CountingKernel(FakeKernel):
    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.reads: list[str] = []

    def read(self, device: str, key: str) -> str:
        self.reads.append(device)
        return super().read(device, key)


def make(tmp_path: Path) -> tuple[CountingKernel, Selection, list[float]]:
    kernel = CountingKernel(tmp_path / "sys")
    kernel.add_device("sda", dev="8:0")
    for i in range(4):
        kernel.add_device(f"loop{i}", dev=f"7:{i}")
    now = [0.0]
    return kernel, Selection(["*"], ["loop*"], kernel, clock=lambda: now[0]), now


def test_excluded_names_are_never_read(tmp_path: Path) -> None:
    kernel, sel, _ = make(tmp_path)
    assert sel.scan() == ["sda"]
    assert set(kernel.reads) == {"sda"}


def test_an_answer_is_kept_until_recheck_and_new_disks_are_read_at_once(tmp_path: Path) -> None:
    kernel, sel, now = make(tmp_path)
    kernel.add_device("sr0", dev="11:0", size_sectors=0)      # a drive with no disc in it
    assert sel.scan() == ["sda"]
    kernel.reads.clear()
    now[0] = Selection.RECHECK_S - 1
    assert sel.scan() == ["sda"] and kernel.reads == []       # nothing read again yet
    kernel.add_device("sdb", dev="8:16")
    assert sel.scan() == ["sda", "sdb"] and set(kernel.reads) == {"sdb"}
    (kernel.device_dir("sr0") / "size").write_text("2048\n")  # a disc inserted
    now[0] = Selection.RECHECK_S
    assert sel.scan() == ["sda", "sdb", "sr0"]
    kernel.remove_device("sdb")
    assert sel.scan() == ["sda", "sr0"]


def test_a_reload_changes_the_globs_at_the_next_scan(tmp_path: Path) -> None:
    _, sel, _ = make(tmp_path)
    sel.update(["loop*"], [])
    assert sel.scan() == ["loop0", "loop1", "loop2", "loop3"]


def test_a_disk_can_be_chosen_by_its_udev_properties(tmp_path: Path) -> None:
    from ioaz.udevdb import UdevDb
    kernel = CountingKernel(tmp_path / "sys")
    for name, dev in (("sda", "8:0"), ("sdb", "8:16"), ("nvme0n1", "259:0")):
        kernel.add_device(name, dev=dev)
    udev = tmp_path / "udev"
    udev.mkdir()
    (udev / "b8:0").write_text("E:ID_MODEL=WDC_WD5000AAKS\nE:ID_BUS=ata\n")
    (udev / "b8:16").write_text("E:ID_MODEL=ST2000DM008\nE:ID_BUS=ata\n")
    (udev / "b259:0").write_text("E:ID_MODEL=Samsung SSD 980\n")
    now = [0.0]
    sel = Selection(["udev:ID_BUS=ata"], ["udev:ID_MODEL=ST*"], kernel, clock=lambda: now[0],
                    udev=UdevDb(str(udev)))
    assert sel.scan() == ["sda"]
    # names and properties mix; a disk udev knows nothing of matches no property
    sel.update(["nvme*", "udev:ID_MODEL=WDC_*"], [])
    assert sorted(sel.scan()) == ["nvme0n1", "sda"]
    (udev / "b259:0").unlink()
    sel.update(["udev:ID_MODEL=Samsung*"], [])
    now[0] += Selection.RECHECK_S
    assert sel.scan() == []


def test_a_bad_udev_entry_is_refused_at_its_line(tmp_path: Path) -> None:
    import pytest
    from ioaz.daemon.config import ConfigError, load_config
    f = tmp_path / "ioaz.yaml"
    f.write_text("devices:\n  include:\n    - sd*\n    - udev:ID MODEL\n")
    with pytest.raises(ConfigError) as e:
        load_config(f)
    assert str(e.value).startswith(f"{f}:4: devices.include: 'udev:ID MODEL': expected "
                                   "udev:KEY=GLOB"), str(e.value)
    f.write_text("devices:\n  include: ['udev:ID_MODEL=WDC*', 'sd*']\n")
    assert load_config(f).include == ("udev:ID_MODEL=WDC*", "sd*")


def test_name_globs_mean_what_fnmatch_says_they_mean(tmp_path: Path) -> None:
    """The globs of a list are matched as one pattern; it must agree with fnmatchcase, name by
    name, for every kind of glob an operator writes (and a list of plain names)."""
    import fnmatch
    import itertools
    globs = ["sd[a-c]", "nvme*n1", "vd?", "md[!0]", "dm-1*", "loop7", "a.b", "x+y", "[*]z"]
    names = ["sda", "sdd", "nvme0n1", "nvme0n1p1", "vda", "vdaa", "md0", "md1", "dm-1", "dm-10",
             "dm-2", "loop7", "loop70", "a.b", "axb", "x+y", "xxy", "*z", "z", ""]
    kernel = FakeKernel(tmp_path / "sys")
    for r in range(0, 3):
        for inc in itertools.combinations(globs, r):
            for exc in ([], ["dm-10", "nvme*p*"]):
                sel = Selection(list(inc), exc, kernel)
                for n in names:
                    want = (any(fnmatch.fnmatchcase(n, g) for g in inc)
                            and not any(fnmatch.fnmatchcase(n, g) for g in exc))
                    assert sel.managed(n, 0.0) == want, (inc, exc, n)
