"""`ioaz-lab calibrate --cells / --fill-empty`: measure the cells a dataset has no workload
in, instead of another sample of the grid."""
from __future__ import annotations

import pytest
from ioaz.decide.matrix import all_cell_keys
from ioaz.lab.main import main as lab
from ioaz.learn import grid
from ioaz.learn.dataset import read_rows, read_with_thresholds
from ioaz.learn.derive import AXES, SIZE_AXES, workload_classes

QUICK = ["--model", "carroll-hp72", "--seconds", "0.5", "--candidates", "cfq"]


def test_a_workspec_is_built_for_one_cell_of_the_four_axes():
    assert grid.WorkSpec(2, "seq", "write", 4, depth=1).cell == "4/sequential/write/shallow"
    assert grid.WorkSpec(16, "rand", "mixed", 64, depth=8).cell == "16+/random/read/deep"
    assert {w.cell for w in grid.full_grid()} == set(all_cell_keys(AXES))


def test_a_workspec_is_built_for_one_size_the_classifier_parts_at_48_kib():
    assert grid.WorkSpec(2, "seq", "write", 4, depth=8).sized_cell == \
        "4/sequential/write/deep/small"
    assert grid.WorkSpec(1, "rand", "read", 64).sized_cell == "1/random/read/shallow/large"
    assert {w.sized_cell for w in grid.full_grid()} == set(all_cell_keys(SIZE_AXES))


def test_for_cells_takes_a_cell_with_its_size():
    small, large = "16+/random/write/deep/small", "16+/random/write/deep/large"
    picked = grid.for_cells([small, large], per_cell=2, seed=5)
    assert [w.sized_cell for w in picked] == [small] * 2 + [large] * 2
    assert all(w.size_kb == 4 for w in picked[:2]) and all(w.size_kb == 64 for w in picked[2:])


def test_for_cells_picks_per_cell_workloads_built_for_each_and_skips_the_excluded():
    cells = ["4/sequential/write/shallow", "8/random/read/deep"]
    two = grid.for_cells(cells, per_cell=2, seed=3)
    assert [w.cell for w in two] == [cells[0], cells[0], cells[1], cells[1]]
    assert len({w.id for w in two}) == 4
    # the same seed chooses the same; excluding the first chosen gives the second
    assert grid.for_cells(cells[:1], seed=3) == two[:1]
    assert grid.for_cells(cells[:1], seed=3, exclude=frozenset({two[0].id})) == [two[1]]
    every = frozenset(w.id for w in grid.full_grid() if w.cell == cells[1])
    with pytest.raises(ValueError, match="8/random/read/deep"):
        grid.for_cells(cells, exclude=every)


def test_fill_empty_measures_the_cells_no_workload_fell_in(tmp_path, capsys):
    out = tmp_path / "d.csv"
    assert lab(["calibrate", *QUICK, "--cells", "1/random/read/shallow", "--out",
                str(out)]) == 0
    first = {r.workload for r in read_rows(out)}
    assert len(first) == 1
    capsys.readouterr()
    assert lab(["calibrate", *QUICK, "--fill-empty", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    rows, t = read_with_thresholds(out, None)
    classes = workload_classes(rows, t, AXES)
    empty_before = [c for c in all_cell_keys(AXES)
                    if c != classes[next(iter(first))]]
    assert f"cells without a workload in {out}: {', '.join(empty_before)}" in err
    # one new workload per empty cell, each built for it (where it landed is measured)
    added = {grid_id for grid_id in classes if grid_id not in first}
    built = {w.id: w.cell for w in grid.full_grid()}
    assert sorted(built[w] for w in added) == sorted(empty_before)
    # again: only the cells still empty, with workloads not measured yet
    capsys.readouterr()
    assert lab(["calibrate", *QUICK, "--fill-empty", "--out", str(out)]) == 0
    still = [c for c in all_cell_keys(AXES) if c not in set(classes.values())]
    assert f"cells without a workload in {out}: {', '.join(still) or 'none'}" in \
        capsys.readouterr().err
    again = {r.workload for r in read_rows(out)} - first - added
    assert sorted(built[w] for w in again) == sorted(still)


def test_fill_empty_with_the_size_axis_fills_the_other_size_of_a_measured_class(tmp_path,
                                                                              capsys):
    out = tmp_path / "d.csv"
    assert lab(["calibrate", *QUICK, "--cells", "1/random/read/shallow/small", "--out",
                str(out)]) == 0
    (first,) = {r.workload for r in read_rows(out)}
    assert grid.WorkSpec.from_id(first).size_kb == 4
    rows, t = read_with_thresholds(out, None)
    landed = workload_classes(rows, t, SIZE_AXES)[first]
    capsys.readouterr()
    assert lab(["calibrate", *QUICK, "--fill-empty", "--size-axis", "--out", str(out)]) == 0
    empty = [c for c in all_cell_keys(SIZE_AXES) if c != landed]
    assert f"cells without a workload in {out}: {', '.join(empty)}" in capsys.readouterr().err
    built = {w.id: w.sized_cell for w in grid.full_grid()}
    added = {r.workload for r in read_rows(out)} - {first}
    assert sorted(built[w] for w in added) == sorted(empty)
    # the class measured small is now measured large as well
    assert landed.rsplit("/", 1)[0] + "/large" in {built[w] for w in added}


@pytest.mark.parametrize("extra, says", [
    (["--cells", "4/seq/write"], "--cells: not a cell: 4/seq/write (expected "
                                 "PROCESSES/PATTERN/MODE/DEPTH[/SIZE]"),
    (["--cells", "4/random/write/deep/huge"], "--cells: not a cell: 4/random/write/deep/huge"),
    (["--cells", "4/random/write/deep", "--size-axis"], "--size-axis goes with --fill-empty"),
    (["--cells", "4/random/write/deep", "--workloads", "3"], "drop --workloads and --quick"),
    (["--cells", "4/random/write/deep", "--per-cell", "0"], "--per-cell 0: expected 1 or more"),
    (["--fill-empty"], "--out must name an existing one"),
])
def test_a_selection_that_cannot_be_made_is_refused_with_the_option(tmp_path, capsys,
                                                                    extra, says):
    out = tmp_path / "none.csv"
    assert lab(["calibrate", *QUICK, "--out", str(out), *extra]) == 2
    assert says in capsys.readouterr().err
    assert not out.exists()


def test_fill_empty_names_a_dataset_it_cannot_read(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("not,a,dataset\n1,2,3\n")
    assert lab(["calibrate", *QUICK, "--fill-empty", "--out", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ioaz-lab calibrate: --fill-empty: ") and str(bad) in err
