"""udev's properties of a disk (ioaz.udevdb) and the matrix rules that match on them."""
from __future__ import annotations

from pathlib import Path

import pytest
from ioaz.daemon.config import ConfigError, load_config
from ioaz.decide.rules import rule_from_dict
from ioaz.device import DeviceInfo
from ioaz.udevdb import UdevDb


def test_properties_are_the_E_lines_of_the_disks_udev_data(tmp_path: Path) -> None:
    (tmp_path / "b8:0").write_bytes(b"S:disk/by-id/wwn-0x50014ee\nI:123\n"
                                    b"E:ID_MODEL=WDC_WD5000AAKS\nE:ID_WWN=0x50014ee\n"
                                    b"E:ID_PATH=pci-0000:00:1f.2-ata-1\nE:ID_FS_LABEL=caf\xe9\n"
                                    b"E:EMPTY=\nG:systemd\n")
    db = UdevDb(str(tmp_path))
    assert db.properties("8:0") == {"ID_MODEL": "WDC_WD5000AAKS", "ID_WWN": "0x50014ee",
                                    "ID_PATH": "pci-0000:00:1f.2-ata-1",
                                    "ID_FS_LABEL": "caf\ufffd", "EMPTY": ""}
    # no udev data for the disk, no device number, no udev at all: no properties
    assert db.properties("8:16") == {} and db.properties(None) == {}
    assert UdevDb(str(tmp_path / "absent")).properties("8:0") == {}


def test_a_rule_matches_every_property_it_names_by_glob() -> None:
    rule = rule_from_dict(0, {"match": {"rotational": True,
                                        "udev": {"ID_MODEL": "WDC_WD5000*", "ID_BUS": "ata"}},
                              "matrices": {"mean": "m.yaml"}})
    wd = DeviceInfo("sdq", rotational=True,
                    udev=(("ID_BUS", "ata"), ("ID_MODEL", "WDC_WD5000AAKS-00V1A0")))
    assert rule.matches(wd)
    assert not rule.matches(DeviceInfo("sdq", rotational=True,
                                       udev=(("ID_BUS", "ata"), ("ID_MODEL", "ST2000DM008"))))
    # a property the disk does not have is not a match (no udev: no model)
    assert not rule.matches(DeviceInfo("sdq", rotational=True, udev=(("ID_MODEL", "WDC_WD5000"),)))
    assert not rule.matches(DeviceInfo("sdq", rotational=True))
    assert rule.describe() == "rule 1 (rotational=true, ID_BUS=ata, ID_MODEL=WDC_WD5000*)"


@pytest.mark.parametrize("udev,says", [
    ("{}", "udev"),
    ("{ID MODEL: x}", "udev property name"),
    ("{ID_MODEL: 5}", "expected a string"),
])
def test_a_bad_udev_match_is_refused_at_its_line(tmp_path: Path, udev: str, says: str) -> None:
    f = tmp_path / "ioaz.yaml"
    f.write_text("decide:\n  matrix_rules:\n    - match:\n        udev: " + udev + "\n"
                 "      matrices: {mean: ioaz-table3-mean.yaml}\n")
    with pytest.raises(ConfigError) as e:
        load_config(f)
    assert str(e.value).startswith(f"{f}:4: ") and says in str(e.value), str(e.value)
