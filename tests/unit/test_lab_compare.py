"""The simulator set beside the kernel from calibration datasets: calibrate's --tags and
--sim-scheduler (the testbed's request limits and the bench's stand-ins) and `ioaz-lab compare`."""
from __future__ import annotations

import json
from pathlib import Path

from ioaz.lab.main import main as lab
from ioaz.learn.dataset import read_rows

EIGHT_READERS = "8p-seq-read-128k-t0-d1-g1_2"


def _calibrate(out: Path, *extra: str, cands: str = "fcfs,anticipatory") -> dict[str, float]:
    assert lab(["calibrate", "--model", "wd500", "--queue-depth", "1", "--ids", EIGHT_READERS,
                "--seconds", "2", "--reps", "1", "--candidates", cands, "--out", str(out),
                *extra]) == 0
    return {r.candidate: r.throughput_mb_s for r in read_rows(out)}


def test_request_limits_sized_for_the_guests_tags_let_an_idling_scheduler_idle(tmp_path):
    """At drive depth 1 the limits sized for that depth hold 2 requests, so 7 of 8 readers
    wait outside the elevator and bfq cannot wait for one of them; the testbed's guest sized
    them for its 32 tags before its disk's depth was set to 1, and there bfq's stand-in
    reads the streams one at a time."""
    small = _calibrate(tmp_path / "a.csv", "--blk-mq", "--sim-scheduler", "anticipatory=bfq")
    tags = _calibrate(tmp_path / "b.csv", "--blk-mq", "--tags", "32",
                      "--sim-scheduler", "anticipatory=bfq")
    assert small["anticipatory"] < 1.1 * small["fcfs"]
    assert tags["anticipatory"] > 2 * tags["fcfs"]
    rows = read_rows(tmp_path / "b.csv")
    assert {r.candidate: r.scheduler for r in rows} == {"fcfs": "noop", "anticipatory": "bfq"}


def test_bad_stand_ins_and_tags_are_refused_by_name(tmp_path, capsys):
    base = ["calibrate", "--model", "wd500", "--ids", EIGHT_READERS, "--seconds", "1",
            "--candidates", "fcfs,anticipatory", "--out", str(tmp_path / "x.csv")]
    assert lab([*base, "--sim-scheduler", "anticipatory=bfqq"]) == 2
    assert "--sim-scheduler anticipatory=bfqq: expected POLICY=NAME" in capsys.readouterr().err
    assert lab([*base, "--sim-scheduler", "stream=bfq"]) == 2       # not a candidate here
    assert "--sim-scheduler stream=bfq" in capsys.readouterr().err
    assert lab([*base, "--tags", "32"]) == 2                         # without --blk-mq
    assert "--tags 32: it sizes --blk-mq's request limits" in capsys.readouterr().err
    assert lab(["calibrate", "--device", "sdzz", "--tags", "32", "--out",
                str(tmp_path / "y.csv")]) == 2
    assert "are for --model" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()


def test_compare_finds_the_simulator_that_idles_and_the_one_that_cannot(tmp_path, capsys):
    """The same workload twice: with the guest's limits the simulator parts bfq from none as
    the kernel does; with the drive's its bfq cannot idle and none reads as well or better,
    which is a different winner."""
    k, s = tmp_path / "k.csv", tmp_path / "s.csv"
    _calibrate(k, "--blk-mq", "--tags", "32", "--sim-scheduler", "anticipatory=bfq")
    _calibrate(s, "--blk-mq", "--sim-scheduler", "anticipatory=bfq")
    assert lab(["compare", str(k), str(k), "--json", str(tmp_path / "same.json")]) == 0
    same = json.loads((tmp_path / "same.json").read_text())
    assert same["summary"]["all"] == {"workloads": 1, "same_winner": 1, "blind": 0,
                                      "pairs": 2, "within": 2, "pick_share_sum": 1.0,
                                      "pick_close": 1}
    assert lab(["compare", str(k), str(s), "--json", str(tmp_path / "other.json")]) == 0
    out = capsys.readouterr().out
    assert "DIFFERENT" in out and "the same winner on 0 of 1 workloads" in out
    other = json.loads((tmp_path / "other.json").read_text())
    r = other["rows"][EIGHT_READERS]
    assert (r["real_winner"], r["sim_winner"]) == ("anticipatory", "fcfs")
    assert other["summary"]["sequential"]["within"] == 1      # bfq near its best in both
    # what trusting the simulator would cost: its pick, none, on the kernel's side
    kernel_none = r["ratios"]["fcfs"][0]
    assert kernel_none < 0.95 and other["summary"]["all"]["pick_close"] == 0
    assert f"the simulator's pick reads {kernel_none:.3f} of the kernel's best" in out


def test_compare_says_what_is_wrong_with_its_input(tmp_path, capsys):
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
    assert lab(["compare", str(tmp_path / "bad.csv"), str(tmp_path / "bad.csv")]) == 2
    assert "not an ioaz calibration dataset" in capsys.readouterr().err
    assert lab(["compare", str(tmp_path / "none.csv"), str(tmp_path / "bad.csv")]) == 2
    assert "none.csv" in capsys.readouterr().err


def test_the_stream_modules_stand_in_runs_with_the_models_curve(tmp_path):
    """As calibrate runs the kernel's stream with the curve it measured first, its stand-in
    runs with the curve of the model, not the preset's default, and the rows say so."""
    out = tmp_path / "s.csv"
    _calibrate(out, "--sim-scheduler", "stream=stream-vr", cands="fcfs,stream")
    curve = json.loads(Path(str(out) + ".curve.json").read_text())["stream_tunables"]
    (row,) = [r for r in read_rows(out) if r.candidate == "stream"]
    assert row.scheduler == "stream-vr"
    assert row.knobs == ",".join(f"{k}={v}" for k, v in curve.items())
    assert f"svc_min_us={curve['svc_min_us']}" in row.knobs and curve["svc_min_us"] != 100


def test_a_slow_turn_around_ends_a_writers_hold_on_deadline(tmp_path, capsys):
    """16 writers 8 deep under deadline: with a host's 20 us from completion to the next
    request, a writer's next requests are queued before deadline picks again and it keeps
    the disk (the kernel's mq-deadline in the TCG guest went round the writers at 3.2 MB/s);
    with the guest's measured turn-around, the simulator's deadline goes round them too."""
    def mb_s(out: Path, *extra: str) -> float:
        assert lab(["calibrate", "--model", "wd500", "--queue-depth", "1", "--blk-mq",
                    "--tags", "32", "--ids", "16p-seq-write-4k-t0-d8-g40", "--seconds", "2",
                    "--reps", "1", "--candidates", "deadline", "--out", str(out), *extra]) == 0
        (row,) = read_rows(out)
        return row.throughput_mb_s
    host, guest = mb_s(tmp_path / "h.csv"), mb_s(tmp_path / "g.csv", "--host-us", "200")
    assert guest < 0.2 * host
    assert lab(["calibrate", "--model", "wd500", "--host-us", "-1", "--out",
                str(tmp_path / "x.csv")]) == 2
    assert "--host-us -1: expected 0..1000000" in capsys.readouterr().err
