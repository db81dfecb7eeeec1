"""What the elevators promise beyond dispatch order, checked in the VM (functional boot)."""
from __future__ import annotations

import json
import re

import pytest
import vmharness

pytestmark = pytest.mark.slow


def test_writing_the_name_loads_the_module(functional_boot: vmharness.Boot) -> None:
    """MODULE_ALIAS("fifo-iosched"): `echo fifo > queue/scheduler` modprobes ioaz_sched."""
    vals = functional_boot.values("autoload")
    assert vals["write_rc"] == "0"
    assert vals["loaded"] == "yes"
    assert "[fifo]" in vals["scheduler"]


def test_fifo_never_merges_but_vr_does(functional_boot: vmharness.Boot) -> None:
    """Four adjacent 8-sector requests: fifo issues four, vr (same input) merges them."""
    fifo = vmharness.issued(functional_boot.section("vector:fifo_adjacent_no_merge"))
    vr_lines = functional_boot.section("vr_merges_adjacent")
    vr = vmharness.issued(vr_lines)
    assert [n for _, n, _ in fifo[1:]] == [8, 8, 8, 8]
    assert functional_boot.values("vector:fifo_adjacent_no_merge")["counter_merged"] == "0"
    # the contrast shows the check can see a merge: vr serves 199992..200024 as one request
    assert (199992, 32) in [(s, n) for s, n, _ in vr]
    assert int(functional_boot.values("vr_merges_adjacent")["counter_merged"]) >= 3


def test_vr_expires_a_starved_request(functional_boot: vmharness.Boot) -> None:
    """Same arrivals with and without deadlines: z waits behind all 12 near requests only
    when deadlines are off; with them it is served at the first batch start after 350 ms."""
    on = functional_boot.values("vector:vr_r1_deadline_expiry")
    off = functional_boot.values("vector:vr_r1_no_deadlines")
    assert int(on["counter_expired"]) >= 1
    assert off["counter_expired"] == "0"


TUNABLE_RE = re.compile(r"(\w+)/(\w+)=(\S+) rc=(\d) before=(\S+) after=(\S+)")


def test_iosched_holds_the_tunables_and_debugfs_the_counters(
        functional_boot: vmharness.Boot) -> None:
    v = functional_boot.values("places")
    counters = {"inserted", "dispatched", "merged"}
    for s in ("fifo", "vr", "stream"):
        tunables = set(v.get(f"iosched_{s}", "").split())
        shown = set(v.get(f"debugfs_{s}", "").split())
        assert counters <= shown, (s, shown)
        assert not tunables & (counters | {"expired", "queued", "waits", "waits_paid"}), \
            (s, tunables)
    assert "fifo_batch" in v["iosched_vr"] and "stream_threshold" in v["iosched_stream"]
    assert "iosched_fifo" not in v     # nothing to tune: no queue/iosched/ at all


def test_tunables_reject_bad_values_and_keep_the_old_one(
        functional_boot: vmharness.Boot) -> None:
    results = {}
    for line in functional_boot.section("tunables"):
        m = TUNABLE_RE.search(line)
        if m:
            sched, knob, value, rc, before, after = m.groups()
            results[(sched, knob, value)] = (rc, before, after)
    assert len(results) == 18, results
    good = {("vr", "rev_penalty", "7"), ("vr", "fifo_batch", "32"), ("vr", "sync_expire", "250"),
            ("stream", "stream_threshold", "6"), ("stream", "stream_time_slice", "200"),
            ("stream", "svc_max_us", "8000"), ("stream", "max_inflight", "1")}
    for key, (rc, before, after) in results.items():
        if key in good:
            assert (rc, after) == ("0", key[2]), key
        else:
            assert rc == "1" and after == before, f"{key}: rc={rc} before={before} after={after}"


def test_stream_switches_regions_far_less_than_mq_deadline(
        functional_boot: vmharness.Boot) -> None:
    """Two sync sequential readers far apart + one random reader, 4 s each scheduler."""
    dl = functional_boot.values("stream:mq-deadline")
    ss = functional_boot.values("stream:stream")
    report = {
        "mq-deadline": {"issued": int(dl["issued"]), "switches": int(dl["switches"])},
        "stream": {"issued": int(ss["issued"]), "switches": int(ss["switches"]),
                   "waits_paid": int(ss["counter_waits_paid"]),
                   "waits_timeout": int(ss["counter_waits_timeout"])},
    }
    krel = functional_boot.krel
    (vmharness.WORK / f"stream_vs_deadline-{krel}.json").write_text(json.dumps(report, indent=1))
    print("region switches:", report)
    dl_rate = report["mq-deadline"]["switches"] / report["mq-deadline"]["issued"]
    ss_rate = report["stream"]["switches"] / report["stream"]["issued"]
    assert ss_rate * 4 < dl_rate, report
    assert report["stream"]["waits_paid"] > 0


def test_stream_never_holds_a_request_past_expiry_plus_one_slice(
        functional_boot: vmharness.Boot) -> None:
    """sync_expire 100 ms, default 124 ms slice, 1 ms device: the longest any request stayed
    in the scheduler (tracefs block_rq_insert to block_rq_issue, in the kernel's clock)."""
    ss = functional_boot.values("stream:stream")
    held_us = int(ss["max_held_us"])
    print("stream: longest time in the scheduler", held_us, "us")
    assert 0 < held_us <= (100 + 124) * 1000, ss
