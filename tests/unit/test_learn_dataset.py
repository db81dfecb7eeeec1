"""The calibration dataset and the matrices derived from it: an interrupted calibration
resumes without redoing or duplicating runs; derive names each cell's winner with its margin
and runs, and says when there is no clear winner; the files pass ioaz's own validator."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from ioaz.classify.classes import DEFAULT_THRESHOLDS, load_thresholds
from ioaz.decide import load_matrix, validate_file
from ioaz.learn.dataset import DatasetError, DatasetWriter, Row, read_rows
from ioaz.learn.derive import IOAZ_AXES, derive_table, matrix_doc, row_class, write_matrix


def row(workload: str, cand: str, mean: float, *, procs: int = 4, seq: float = 0.0,
        read: float = 1.0, rep: int = 0, depth: float = 1.0) -> Row:
    """depth: requests in flight over the whole device (shallow below 2 per process)."""
    feats = {"iops": 200.0, "read_bytes_per_s": 1e6 * read, "write_bytes_per_s": 1e6 * (1 - read),
             "read_ratio": read, "seq_ratio": seq, "processes": float(procs), "avg_depth": depth,
             "mean_size_bytes": 4096.0, "p50_latency_s": 0.004, "p99_latency_s": 0.02,
             "merge_ratio": 0.0}
    return Row(workload=workload, workload_class="4/random/read", candidate=cand, policy=cand,
               scheduler=cand, knobs="", rep=rep, seconds=2.0, features=feats,
               throughput_mb_s=mean * procs, proc_min_mb_s=mean * 0.8, proc_max_mb_s=mean * 1.2,
               proc_mean_mb_s=mean, p50_latency_s=0.004, p99_latency_s=1 / mean,
               requests=400, device="testdisk")


def test_an_interrupted_dataset_resumes_after_its_last_complete_row(tmp_path):
    path = tmp_path / "cal.csv"
    with DatasetWriter(path) as w:
        w.write(row("w1", "deadline", 5.0))
        w.write(row("w1", "cfq", 6.0))
    # the run was killed in the middle of writing a third line
    with open(path, "a") as f:
        f.write("testdisk,w1,4/random/read,stream,stream,str")
    assert [r.candidate for r in read_rows(path)] == ["deadline", "cfq"]
    with DatasetWriter(path) as w:
        assert w.done == {("w1", "deadline", 0), ("w1", "cfq", 0)}
        w.write(row("w1", "stream", 7.0))
    rows = read_rows(path)
    assert [r.candidate for r in rows] == ["deadline", "cfq", "stream"]
    assert rows[2].proc_mean_mb_s == 7.0 and rows[2].features["processes"] == 4.0


def test_a_csv_that_is_not_a_dataset_is_refused(tmp_path):
    p = tmp_path / "other.csv"
    p.write_text("a,b\n1,2\n")
    with pytest.raises(DatasetError, match="missing columns"):
        read_rows(p)


def clear_and_tied_rows(cfq: float, deadline: float) -> list[Row]:
    """4 random readers: cfq clearly best on both workloads; 1 sequential reader: all within
    a hair of each other (fcfs 50.1 MB/s, cfq and deadline as given)."""
    rows = []
    for w in ("r1", "r2"):
        rows += [row(w, "cfq", 10.0), row(w, "deadline", 8.0), row(w, "fcfs", 5.0)]
    rows += [row("s1", "cfq", cfq, procs=1, seq=0.99),
             row("s1", "deadline", deadline, procs=1, seq=0.99),
             row("s1", "fcfs", 50.1, procs=1, seq=0.99)]
    return rows


def written(tmp_path: Path, rows: list[Row], table: dict) -> Path:
    """The matrix file of a table derived from rows (and their dataset), checked valid."""
    src = tmp_path / "cal.csv"
    with DatasetWriter(src) as w:
        for r in rows:
            w.write(r)
    path = tmp_path / "testdisk-mean.yaml"
    write_matrix(path, matrix_doc("testdisk-mean", "mean", table, src, len(rows), 0.02,
                                  IOAZ_AXES))
    assert validate_file(path) == []
    return path


def test_derive_names_winner_margin_runs_and_unclear_cells(tmp_path):
    t = load_thresholds(DEFAULT_THRESHOLDS)
    rows = clear_and_tied_rows(cfq=50.0, deadline=50.2)
    table = derive_table(rows, "mean", t, min_margin=0.02, axes=IOAZ_AXES)
    c = table["4/random/read"]
    assert (c.policy, c.clear, c.workloads, c.runs) == ("cfq", True, 2, 6)
    assert c.margin == pytest.approx(0.2)           # 100% vs deadline's 80% of the best
    assert "won by 20.0 points over deadline" in c.note() and "6 runs" in c.note()
    s = table["1/sequential/read"]
    assert s.policy == "deadline" and not s.clear
    assert "no clear winner" in s.note()
    # the policies the margin cannot tell from the best, best first; a clear cell has none
    assert s.within_noise == ("fcfs", "cfq") and c.within_noise == ()
    empty = table["16+/random/write"]
    assert empty.empty and "no calibration workload" in empty.note()

    m = load_matrix(written(tmp_path, rows, table))
    cell = m.tables["mean"]["4/random/read"]
    assert cell.policy == "cfq" and cell.source.kind == "measured"
    # the runner-up and the lead over it, for the trials (decide/trial.py)
    assert (cell.runner_up, cell.margin_points) == ("deadline", 20.0)
    assert m.tables["mean"]["1/sequential/read"].source.kind == "judgement"
    assert m.tables["mean"]["1/sequential/read"].within_noise == ("fcfs", "cfq")
    assert cell.within_noise == ()
    # a cell no workload fell in has no measured runner-up
    assert m.tables["mean"]["16+/random/write"].runner_up is None
    # every measured policy's share of the best, best first (decide/confirm.py reads how far
    # behind the scheduler in force is); a cell no workload fell in has none
    assert cell.shares == (("cfq", 1.0), ("deadline", 0.8), ("fcfs", 0.5))
    assert m.tables["mean"]["16+/random/write"].shares == ()
    text = (tmp_path / "testdisk-mean.yaml").read_text()
    assert "shares: {cfq: 1.0, deadline: 0.8, fcfs: 0.5}" in text   # one line a cell


def test_a_cells_shares_are_each_policys_highest_over_its_workloads():
    """deadline at 0.2 of cfq on one workload and 0.9 on the other: its mean, 0.55, would
    make it look further behind than it is on the second."""
    t = load_thresholds(DEFAULT_THRESHOLDS)
    rows = [row("r1", "cfq", 10.0), row("r1", "deadline", 2.0),
            row("r2", "cfq", 10.0), row("r2", "deadline", 9.0)]
    c = derive_table(rows, "mean", t, min_margin=0.02, axes=IOAZ_AXES)["4/random/read"]
    assert c.share == pytest.approx(1.0) and c.runner_up == "deadline"
    assert c.margin == pytest.approx(0.45)                          # from the means
    assert c.shares == (("cfq", 1.0), ("deadline", pytest.approx(0.9)))


def test_a_stand_in_takes_the_cells_without_a_clear_winner(tmp_path):
    t = load_thresholds(DEFAULT_THRESHOLDS)
    rows = clear_and_tied_rows(cfq=50.3, deadline=50.0)
    table = derive_table(rows, "mean", t, min_margin=0.02, axes=IOAZ_AXES, stand_in="deadline")
    # a clear winner keeps its cell
    assert (table["4/random/read"].policy, table["4/random/read"].clear) == ("cfq", True)
    # a tie, and a class without workloads, name the stand-in and say what the data leaned to
    s = table["1/sequential/read"]
    assert (s.policy, s.stood_in_for, s.clear) == ("deadline", "cfq", False)
    assert s.note().startswith("no clear winner: deadline stands in") and "cfq was ahead" in \
        s.note()
    e = table["16+/random/write"]
    assert e.policy == "deadline" and e.empty and "stands in" in e.note()
    cell = load_matrix(written(tmp_path, rows, table)).tables["mean"]["1/sequential/read"]
    # judgement, and no runner-up to try: nothing measured says the leaning is real
    assert (cell.policy, cell.source.kind, cell.runner_up) == ("deadline", "judgement", None)
    # what the data leaned to, and what came within the margin of it, without the stand-in
    assert cell.within_noise == ("cfq", "fcfs")


def test_a_stand_in_far_behind_a_tie_between_others_does_not_stand_in(tmp_path):
    """One sequential reader where cfq and fcfs tie and deadline has 40% of them (as bfq and
    stream tie on 8 readers at depth 1, mq-deadline at 0.28): the cell keeps what the data
    leaned to, says why the stand-in did not stand in, and lists the tie."""
    t = load_thresholds(DEFAULT_THRESHOLDS)
    rows = clear_and_tied_rows(cfq=50.3, deadline=20.0)
    table = derive_table(rows, "mean", t, min_margin=0.02, axes=IOAZ_AXES, stand_in="deadline")
    s = table["1/sequential/read"]
    assert (s.policy, s.stood_in_for, s.clear) == ("cfq", None, False)
    assert s.stand_in_behind == ("deadline", pytest.approx(20.0 / 50.3))
    assert "deadline, which stands in for a tie it is part of, had 39.8% of the per-workload " \
        "best here, outside the margin, so it does not" in s.note()
    assert s.within_noise == ("fcfs",)
    # a class without workloads still takes the stand-in: nothing says it is behind there
    assert table["16+/random/write"].policy == "deadline"
    cell = load_matrix(written(tmp_path, rows, table)).tables["mean"]["1/sequential/read"]
    assert (cell.policy, cell.source.kind, cell.within_noise) == ("cfq", "judgement", ("fcfs",))


def test_a_small_lead_over_the_stand_in_at_a_much_worse_p99_leaves_it_standing(tmp_path):
    """cfq and fcfs tie, deadline 4.8% behind them (outside the margin) but with a 2.5x better
    p99 than cfq's: a gain under the p99 slack does not pay for a p99 over it, so deadline
    stands in (8 random readers at depth 1: bfq 1.027x mq-deadline at 10.6x its p99). With
    the slack off, the lead is named."""
    t = load_thresholds(DEFAULT_THRESHOLDS)
    rows = [replace(r, p99_latency_s=0.020 if r.candidate == "deadline" else 0.050)
            if r.workload == "s1" else r for r in clear_and_tied_rows(cfq=50.3, deadline=48.0)]
    table = derive_table(rows, "mean", t, min_margin=0.02, axes=IOAZ_AXES, stand_in="deadline")
    s = table["1/sequential/read"]
    assert (s.policy, s.stood_in_for, s.stand_in_behind) == ("deadline", "cfq", None)
    assert s.stand_in_p99 == (pytest.approx(50.3 / 48.0 - 1), pytest.approx(2.5))
    assert "it moved 4.8% more than deadline at 2.50x its p99" in s.note()
    off = derive_table(rows, "mean", t, 0.02, IOAZ_AXES, "deadline", p99_slack=None)
    assert off["1/sequential/read"].policy == "cfq"


def test_a_tie_with_a_worse_p99_is_named_in_the_cell_but_not_kept(tmp_path):
    """One sequential reader, three candidates within a hair on the goal: cfq with 2.5x
    deadline's p99 is not within the noise (ioazd would keep it), sstf with 1.05x is."""
    t = load_thresholds(DEFAULT_THRESHOLDS)
    rows = []
    for w in ("s1", "s2"):
        rows += [replace(row(w, "deadline", 50.0, procs=1, seq=0.99), p99_latency_s=0.020),
                 replace(row(w, "cfq", 50.1, procs=1, seq=0.99), p99_latency_s=0.050),
                 replace(row(w, "sstf", 50.05, procs=1, seq=0.99), p99_latency_s=0.021)]
    table = derive_table(rows, "mean", t, min_margin=0.02, axes=IOAZ_AXES, stand_in="deadline")
    s = table["1/sequential/read"]
    assert (s.policy, s.stood_in_for, s.within_noise) == ("deadline", "cfq", ("sstf",))
    assert s.p99_over == (("cfq", pytest.approx(2.5)),)
    assert s.note().endswith("their p99 this many times deadline's: cfq 2.50x")
    cell = load_matrix(written(tmp_path, rows, table)).tables["mean"]["1/sequential/read"]
    assert cell.within_noise == ("sstf",) and cell.p99_over == (("cfq", 2.5),)
    # without the slack every tie is kept, as before
    off = derive_table(rows, "mean", t, 0.02, IOAZ_AXES, "deadline", p99_slack=None)
    assert off["1/sequential/read"].within_noise == ("cfq", "sstf")
    # a wider slack keeps cfq too; runs without a p99 are no evidence either way
    assert derive_table(rows, "mean", t, 0.02, IOAZ_AXES, "deadline", p99_slack=2.0)[
        "1/sequential/read"].within_noise == ("cfq", "sstf")
    blind = [replace(r, p99_latency_s=None) if r.candidate == "cfq" else r for r in rows]
    assert derive_table(blind, "mean", t, 0.02, IOAZ_AXES, "deadline")[
        "1/sequential/read"].within_noise == ("cfq", "sstf")


def test_the_closed_loop_settles_or_pays_for_its_cycle():
    from ioaz.learn.dataset import outcomes
    from ioaz.learn.trainer import _loop_losses
    rows = [row("w", "a", 10.0), row("w", "b", 5.0), row("w", "c", 8.0)]
    outs = outcomes(rows)
    # under a the model says b, under b it says a (it flips), under c it stays on c
    got = _loop_losses(rows, ["b", "a", "c"], "mean", outs)
    assert got == pytest.approx([0.25, 0.25, 0.2])
    # a model that always says a settles there from anywhere: no loss
    assert _loop_losses(rows, ["a", "a", "a"], "mean", outs) == [0.0, 0.0, 0.0]


def test_class_processes_column_is_optional_and_drives_derive_classes(tmp_path):
    t = load_thresholds(DEFAULT_THRESHOLDS)
    r = row("w16", "stream", 5.0, procs=5, seq=0.99)
    assert row_class(r, t, IOAZ_AXES) == "4/sequential/read"   # one window's count
    assert row_class(r, t) == "4/sequential/read/shallow"    # ... and its depth
    r.features["class_processes"] = 16.0            # over the horizon: all 16 readers
    assert row_class(r, t, IOAZ_AXES) == "16+/sequential/read"
    path = tmp_path / "new.csv"
    with DatasetWriter(path) as w:
        w.write(r)
    assert read_rows(path)[0].features["class_processes"] == 16.0
    # a dataset written before the column existed still reads, and appends keep its columns
    old = tmp_path / "old.csv"
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    drop = header.index("f_class_processes")
    old.write_text("\n".join(",".join(c for i, c in enumerate(ln.split(",")) if i != drop)
                             for ln in lines) + "\n")
    assert read_rows(old)[0].features["class_processes"] is None
    with DatasetWriter(old) as w:
        w.write(row("w16", "cfq", 6.0, procs=16, seq=0.99))
    rows = read_rows(old)
    assert [x.candidate for x in rows] == ["stream", "cfq"]
    assert "f_class_processes" not in old.read_text().splitlines()[0]


def test_a_rows_read_depth_gives_its_class_the_reads_depth(tmp_path):
    """A calibration run of readers beside a write-back keeps the reads' depth, and derive's
    class takes it as the daemon's does; a row written before the column takes the whole."""
    t = load_thresholds(DEFAULT_THRESHOLDS)
    r = row("mix", "cfq", 5.0, procs=4, seq=0.99, read=0.8, depth=32.0)
    assert row_class(r, t) == "4/sequential/read/deep"        # no split: the whole depth
    r.features["read_depth"] = 4.0                            # the readers' part: 1 each
    assert row_class(r, t) == "4/sequential/read/shallow"
    path = tmp_path / "mix.csv"
    with DatasetWriter(path) as w:
        w.write(r)
    assert read_rows(path)[0].features["read_depth"] == 4.0


def test_derive_splits_a_class_by_depth_and_fills_an_empty_depth_from_its_class(tmp_path):
    """4 random readers, once waiting for each request (cfq wins) and once 8 deep each (sstf
    wins): IOAZ's axes give one cell for both, the depth axis one cell each. A class seen at
    one depth only lends its winner to the other depth, saying so."""
    t = load_thresholds(DEFAULT_THRESHOLDS)
    rows = []
    for w in ("sync1", "sync2"):
        rows += [row(w, "cfq", 10.0, depth=4.0), row(w, "sstf", 6.0, depth=4.0)]
    rows += [row("deep1", "cfq", 5.0, depth=32.0), row("deep1", "sstf", 10.0, depth=32.0)]
    rows += [row("seq", "cfq", 3.0, procs=1, seq=0.99), row("seq", "sstf", 9.0, procs=1,
                                                            seq=0.99)]
    four = derive_table(rows, "mean", t)
    assert four["4/random/read/shallow"].policy == "cfq"
    assert four["4/random/read/shallow"].workloads == 2
    assert four["4/random/read/deep"].policy == "sstf"
    assert four["4/random/read/deep"].workloads == 1
    borrowed = four["1/sequential/read/deep"]
    assert borrowed.empty and borrowed.policy == "sstf"
    assert "1/sequential/read" in borrowed.note() and "1 workloads" in borrowed.note()
    nowhere = four["8/random/write/deep"]
    assert nowhere.empty and nowhere.fallback_from is None
    three = derive_table(rows, "mean", t, axes=IOAZ_AXES)
    assert three["4/random/read"].workloads == 3      # both depths in one cell

    src = tmp_path / "cal.csv"
    with DatasetWriter(src) as w:
        for r in rows:
            w.write(r)
    path = tmp_path / "testdisk-mean.yaml"
    write_matrix(path, matrix_doc("testdisk-mean", "mean", four, src, len(rows), 0.02))
    assert validate_file(path) == []
    m = load_matrix(path)
    assert m.axes == ("processes", "pattern", "mode", "depth")
    from ioaz.classify.types import WorkloadClass
    assert m.lookup("mean", WorkloadClass("4", "random", "read", "deep")).policy == "sstf"
    assert m.lookup("mean", WorkloadClass("4", "random", "read")).policy == "cfq"


def test_derive_can_leave_a_candidate_out_and_says_so(tmp_path, capsys):
    """`ioaz-lab derive --exclude fifo`: the excluded candidate's runs are left out, so no
    cell can name it (on the testbed's kernel fifo won the O_DIRECT writer, and a buffered
    writer under it gets its pages one request each); the matrix says what was left out; a
    name the dataset does not have is refused, naming the ones it has."""
    import argparse

    from ioaz.lab import derive as cli
    rows = clear_and_tied_rows(cfq=50.0, deadline=50.2)
    src = tmp_path / "testdisk.csv"
    with DatasetWriter(src) as w:
        for r in rows:
            w.write(r)
    p = argparse.ArgumentParser()
    cli.add_arguments(p)
    out = tmp_path / "m"
    assert cli.run(p.parse_args([str(src), "--out-dir", str(out), "--goal", "mean",
                                 "--ioaz-axes", "--exclude", "cfq"])) == 0
    m = load_matrix(out / "testdisk-mean.yaml")
    assert m.tables["mean"]["4/random/read"].policy == "deadline"
    text = (out / "testdisk-mean.yaml").read_text()
    assert "never cfq" in text and "without the runs of cfq" in text
    capsys.readouterr()
    assert cli.run(p.parse_args([str(src), "--out-dir", str(out), "--exclude", "fifo"])) == 2
    assert "--exclude fifo: no such candidate" in capsys.readouterr().err


def test_derive_puts_the_stream_curve_measured_beside_the_dataset_in_the_matrices(
        tmp_path, capsys):
    """`ioaz-lab calibrate` writes DATASET.curve.json with the stream scheduler's fitted curve;
    derive carries it into every matrix as `tunables`, which the loader reads; without a curve
    file there are none, and a curve file that is not one is refused by name."""
    import argparse
    import json

    from ioaz.lab import derive as cli
    src = tmp_path / "testdisk.csv"
    with DatasetWriter(src) as w:
        for r in clear_and_tied_rows(cfq=50.0, deadline=50.2):
            w.write(r)
    p = argparse.ArgumentParser()
    cli.add_arguments(p)
    args = [str(src), "--out-dir", str(tmp_path / "m"), "--goal", "mean", "--ioaz-axes"]
    assert cli.run(p.parse_args(args)) == 0
    assert load_matrix(tmp_path / "m" / "testdisk-mean.yaml").tunables == {}
    fit = {"svc_min_us": 1088, "svc_max_us": 24921, "svc_full_sectors": 878790440}
    curve = Path(f"{src}.curve.json")
    curve.write_text(json.dumps({"curve": {}, "stream_tunables": fit}))
    assert cli.run(p.parse_args(args)) == 0
    path = tmp_path / "m" / "testdisk-mean.yaml"
    assert load_matrix(path).tunables == {"stream": fit}
    assert validate_file(path) == []
    capsys.readouterr()
    curve.write_text('{"curve": {}}')
    assert cli.run(p.parse_args(args)) == 2
    assert f"{curve}: not a curve file of ioaz-lab calibrate" in capsys.readouterr().err


def test_a_workload_measured_again_replaces_its_runs_and_o_direct_ones_read_no_dirty_data():
    from ioaz.learn.dataset import merged, with_direct_dirty_zero
    direct, writer = "4p-seq-write-128k-t0-d8-g1_2", "4p-seq-write-128k-t0-d1-g1_2-b"
    old = [row(direct, "cfq", 5.0), row(writer, "cfq", 5.0), row(writer, "deadline", 6.0)]
    again = row(writer, "cfq", 7.0)
    again.features["dirty_fill"] = 0.93
    rows = merged([old, [again]])
    # the writer's two old runs gave way to the one measured with the feature
    assert [(r.workload, r.proc_mean_mb_s) for r in rows] == [(direct, 5.0), (writer, 7.0)]
    odd = row("not-an-id", "cfq", 1.0)
    rows, n = with_direct_dirty_zero(rows + [odd, row(writer, "sstf", 3.0)])
    assert n == 1 and rows[0].features["dirty_fill"] == 0.0      # O_DIRECT: nothing dirty
    assert rows[1].features["dirty_fill"] == 0.93                # measured: kept
    assert "dirty_fill" not in odd.features                      # unknown: left missing
    assert rows[3].features.get("dirty_fill") is None            # a page-cache writer unmeasured
