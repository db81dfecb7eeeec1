"""ioazctl export's grouping and rendering (the real daemon and udev: test_export_cli.py and the
guest test)."""
from __future__ import annotations

import configparser

from ioaz.cli.export import Disk, group, tuned_profile, udev_rules

BFQ = (("queue/scheduler", "bfq"), ("queue/iosched/slice_idle", "0"))
DEADLINE = (("queue/scheduler", "mq-deadline"), ("queue/iosched/read_expire", "100"))


def test_disks_of_one_model_with_one_choice_share_a_rule() -> None:
    gs = group([Disk("sda", BFQ, "WDC WD5000AAKS", "ATA", "naa.1"),
                Disk("sdb", BFQ, "WDC WD5000AAKS", "ATA", "naa.2")])
    assert len(gs) == 1 and gs[0].disks == ("sda", "sdb")
    assert gs[0].match == (("ATTRS{vendor}", "ATA"), ("ATTRS{model}", "WDC WD5000AAKS"))


def test_a_model_with_two_choices_is_matched_per_disk_and_says_so() -> None:
    gs = group([Disk("sda", BFQ, "M1", None, "naa.1"), Disk("sdb", DEADLINE, "M1", None, "naa.2"),
                Disk("loop3", BFQ)])
    assert [g.match for g in gs] == [(("ATTRS{wwid}", "naa.1"),), (("ATTRS{wwid}", "naa.2"),),
                                     (("KERNEL", "loop3"),)]
    assert "other disks of this model" in gs[0].note and "may change" in gs[2].note


def test_udev_rule_sets_the_elevator_first_and_quotes() -> None:
    text = udev_rules(group([Disk("sda", BFQ, 'odd "model"')]), "header")
    (line,) = [x for x in text.splitlines() if x and not x.startswith("#")]
    assert line == ('ACTION=="add|change", SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", '
                    'ATTRS{model}=="odd \\"model\\"", ATTR{queue/scheduler}="bfq", '
                    'ATTR{queue/iosched/slice_idle}="0"')


def test_tuned_profile_is_ini_with_disk_and_sysfs_sections() -> None:
    text = tuned_profile(group([Disk("sda", BFQ, "M1"), Disk("sdb", BFQ, "M1"),
                                Disk("sdc", DEADLINE, "M2")]), "header")
    ini = configparser.ConfigParser(interpolation=None, delimiters=("=",))
    ini.optionxform = str
    ini.read_string(text)
    assert ini["ioaz_disk0"]["devices"] == "sda,sdb" and ini["ioaz_disk0"]["elevator"] == "bfq"
    assert ini["ioaz_disk1"]["elevator"] == "mq-deadline"
    assert dict(ini["ioaz_sysfs"]) == {"type": "sysfs",
                                       "/sys/block/sda/queue/iosched/slice_idle": "0",
                                       "/sys/block/sdb/queue/iosched/slice_idle": "0",
                                       "/sys/block/sdc/queue/iosched/read_expire": "100"}
