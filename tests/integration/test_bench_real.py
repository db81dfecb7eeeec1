"""`ioaz-lab bench report --real --quick`: ioazd against each static kernel scheduler on a loop
device with fio, in the report, with the loop's queue settings given back."""
from __future__ import annotations

import json

import pytest
from conftest import need_root, need_tool


def test_real_suite_compares_ioazd_with_every_kernel_scheduler(tmp_path) -> None:
    need_root()
    need_tool("fio")
    need_tool("losetup")
    pytest.importorskip("matplotlib")
    from ioaz.lab.report_suites import make_report
    from ioaz.probe.bpf_object import ProbeUnavailable

    try:
        rep = make_report(tmp_path, quick=True, real=True, only=["real"])
    except ProbeUnavailable as e:
        pytest.skip(f"the BPF probe cannot load here: {e}")
    real = rep.data["real"]
    # every scheduler the loop device offers was measured, and ioazd too
    assert {"none", "mq-deadline"} <= set(real["static"])
    for name, r in [*real["static"].items(), ("ioazd", real["adaptive"])]:
        assert r["mb_s"] > 0 and r["p99_ms"] > 0, name
        assert [p["phase"] for p in r["phases"]] == ["par-read", "rand-read", "seq-write",
                                                     "seq-read"], name
    # the agent saw the phases change (the probe's classes of the fio phases, with their
    # depth: fio's psync jobs wait for each request; and size: 4 KiB each)
    assert "16+/random/read/shallow/small" in real["adaptive"]["classes"], \
        real["adaptive"]["classes"]
    assert real["vs_best_throughput"] > 0 and real["p99_vs_best"] > 0
    # the loop's queue settings were put back after the schedulers were changed
    assert real["queue_after"] == real["queue_before"]
    md = (tmp_path / "report.md").read_text()
    assert "## Real: ioazd against each static kernel scheduler" in md
    assert (tmp_path / "real_loop.png").stat().st_size > 2000
    assert json.loads((tmp_path / "results.json").read_text())["real"]["phase_s"] == 3.0
