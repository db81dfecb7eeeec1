"""A malformed matrix, policies file or decide config is refused with FILE:LINE: what
(got X, expected Y): the message an administrator sees when ioazd refuses to start."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from ioaz.decide import (
    DEFAULT_MATRIX_DIR,
    ValidationError,
    config_from_doc,
    load_context,
    load_file,
    load_matrix,
    load_policies,
    validate_file,
)

TABLE1 = (DEFAULT_MATRIX_DIR / "ioaz-table1-min.yaml").read_text()
POLICIES = (DEFAULT_MATRIX_DIR / "policies.yaml").read_text()


def line_of(text: str, needle: str) -> int:
    """1-based line of the first line containing needle (the spot a test broke)."""
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in text")


def broken(tmp_path: Path, old: str, new: str, base: str = TABLE1,
           name: str = "m.yaml") -> tuple[Path, str]:
    assert old in base
    text = base.replace(old, new, 1)
    p = tmp_path / name
    p.write_text(text)
    return p, text


def errors_of(path: Path) -> list[str]:
    with pytest.raises(ValidationError) as e:
        load_matrix(path)
    msgs = str(e.value).splitlines()
    for m in msgs:  # every message has the FILE:LINE: prefix and says what was expected
        assert re.match(rf"^{re.escape(str(path))}:\d+: ", m), m
    return msgs


def test_every_shipped_file_is_valid() -> None:
    files = sorted(DEFAULT_MATRIX_DIR.glob("*.yaml"))
    checked = [f for f in files if f.name not in ("schema.yaml", "thresholds.yaml")]
    assert len(checked) >= 8
    for f in checked:
        assert validate_file(f) == [], f


def test_wrong_type(tmp_path: Path) -> None:
    p, text = broken(tmp_path, "1/random/write: deadline", "1/random/write: 5")
    [msg] = errors_of(p)
    assert msg.startswith(f"{p}:{line_of(text, '1/random/write: 5')}: ")
    assert "wrong type (got integer 5, expected a policy name or a mapping" in msg


def test_unknown_policy(tmp_path: Path) -> None:
    p, text = broken(tmp_path, "8/sequential/write: deadline", "8/sequential/write: deadlne")
    [msg] = errors_of(p)
    assert msg.startswith(f"{p}:{line_of(text, 'deadlne')}: ")
    assert "unknown policy (got string 'deadlne', expected one of fcfs, fifo, deadline" in msg


def test_a_cells_shares_name_policies_and_stay_within_0_and_1(tmp_path: Path) -> None:
    good = "1/random/write: {policy: deadline, shares: {deadline: 1.0, fcfs: 0.42}}"
    p, _ = broken(tmp_path, "1/random/write: deadline", good)
    cell = load_matrix(p).tables["min"]["1/random/write"]
    assert cell.shares == (("deadline", 1.0), ("fcfs", 0.42))
    p, text = broken(tmp_path, "1/random/write: deadline",
                     "1/random/write: {policy: deadline, shares: {deadlne: 1.0, fcfs: 1.3}}")
    msgs = errors_of(p)
    at = f"{p}:{line_of(text, 'deadlne')}: "
    assert len(msgs) == 2 and all(m.startswith(at) for m in msgs)
    assert any("shares.deadlne: unknown policy (got 'deadlne'" in m for m in msgs), msgs
    assert any("shares.fcfs: too large (got 1.3, expected at most 1)" in m for m in msgs), msgs


def test_unknown_goal(tmp_path: Path) -> None:
    p, text = broken(tmp_path, "\n  min:\n", "\n  avg:\n")
    [msg] = errors_of(p)
    assert msg.startswith(f"{p}:{line_of(text, '  avg:')}: ")
    assert "unknown goal (got 'avg', expected one of min, max, mean, throughput, latency)" in msg


def test_yaml_syntax_error(tmp_path: Path) -> None:
    p, text = broken(tmp_path, "    1/random/read: fcfs", "\t1/random/read: fcfs")
    [msg] = errors_of(p)
    assert msg.startswith(f"{p}:{line_of(text, chr(9))}: YAML syntax error")
    assert "expected valid YAML" in msg


def test_unclosed_bracket_is_a_syntax_error(tmp_path: Path) -> None:
    p, _ = broken(tmp_path, "axes: [processes, pattern, mode]", "axes: [processes, pattern")
    [msg] = errors_of(p)
    assert "YAML syntax error" in msg


def test_missing_cells(tmp_path: Path) -> None:
    p, text = broken(tmp_path, "    8/random/write: fcfs            # FCFS\n", "")
    [msg] = errors_of(p)
    assert msg.startswith(f"{p}:{line_of(text, '  min:')}: ")
    assert "missing cells (got 15 of 16, expected also 8/random/write)" in msg


def test_unknown_cell_and_unknown_source_and_duplicate(tmp_path: Path) -> None:
    p, text = broken(tmp_path, "4/random/read: fcfs", "5/random/read: fcfs")
    msgs = errors_of(p)
    assert any(m.startswith(f"{p}:{line_of(text, '5/random/read')}: ") and "unknown cell" in m
               for m in msgs)
    p, text = broken(tmp_path, "4/random/read: fcfs",
                     "4/random/read: {policy: fcfs, source: nowhere}")
    [msg] = errors_of(p)
    assert msg.startswith(f"{p}:{line_of(text, 'nowhere')}: ")
    assert "unknown source (got 'nowhere', expected one of ioaz-table1)" in msg
    p, text = broken(tmp_path, "    4/random/write: fcfs ",
                     "    4/random/read: cfq\n    4/random/write: fcfs ")
    msgs = errors_of(p)
    assert any("duplicate key" in m and m.startswith(f"{p}:{line_of(text, 'read: cfq')}:")
               for m in msgs)


def test_several_errors_are_reported_at_once(tmp_path: Path) -> None:
    text = TABLE1.replace("1/random/write: deadline", "1/random/write: 5") \
                 .replace("kind: measured", "kind: guessed")
    p = tmp_path / "two.yaml"
    p.write_text(text)
    msgs = errors_of(p)
    assert len(msgs) == 2
    assert any("unknown source kind (got string 'guessed'" in m for m in msgs)


def test_missing_required_key_and_unknown_key(tmp_path: Path) -> None:
    p, text = broken(tmp_path, "axes: [processes, pattern, mode]\n",
                     "axis: [processes, pattern, mode]\n")
    msgs = errors_of(p)
    assert any("missing key 'axes'" in m for m in msgs)
    assert any(m.startswith(f"{p}:{line_of(text, 'axis:')}: ") and "unknown key (got 'axis'"
               in m for m in msgs)


def test_empty_and_missing_files(tmp_path: Path) -> None:
    p = tmp_path / "empty.yaml"
    p.write_text("# nothing\n")
    [msg] = errors_of(p)
    assert "empty file" in msg
    with pytest.raises(ValidationError, match="cannot read file"):
        load_matrix(tmp_path / "absent.yaml")


def test_policies_errors(tmp_path: Path) -> None:
    p, text = broken(tmp_path, "          rev_penalty: 1\n", "          rev_penalty: [1]\n",
                     base=POLICIES, name="p.yaml")
    with pytest.raises(ValidationError) as e:
        load_policies(p)
    [msg] = str(e.value).splitlines()
    assert msg.startswith(f"{p}:{line_of(text, 'rev_penalty: [1]')}: ")
    assert "wrong type (got a list, expected an integer or a string)" in msg
    p, text = broken(tmp_path, "\n  kyber:\n", "\n  kyberr:\n", base=POLICIES, name="q.yaml")
    with pytest.raises(ValidationError) as e:
        load_policies(p)
    msgs = str(e.value).splitlines()
    assert any("missing key 'kyber'" in m for m in msgs)
    assert any(m.startswith(f"{p}:{line_of(text, 'kyberr:')}: ") and "unknown policy" in m
               for m in msgs)


def write_config(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "ioaz.yaml"
    p.write_text(body)
    return p


def test_config_errors_name_the_config_line(tmp_path: Path) -> None:
    p = write_config(tmp_path, f"""\
window_s: 1
decide:
  goal: fastest
  matrix_dir: {DEFAULT_MATRIX_DIR}
  hysteresis_windows: three
""")
    with pytest.raises(ValidationError) as e:
        config_from_doc(load_file(p))
    msgs = str(e.value).splitlines()
    assert f"{p}:3: decide.goal: unknown goal (got string 'fastest'" in msgs[0]
    assert msgs[1].startswith(f"{p}:5: decide.hysteresis_windows: wrong type (got string "
                              "'three', expected an integer)")


def test_first_choice_windows_below_one_is_refused(tmp_path: Path) -> None:
    p = write_config(tmp_path, f"""\
decide:
  matrix_dir: {DEFAULT_MATRIX_DIR}
  first_choice_windows: 0
""")
    with pytest.raises(ValidationError) as e:
        config_from_doc(load_file(p))
    assert f"{p}:3: decide.first_choice_windows:" in str(e.value)
    assert "0" in str(e.value)


def test_config_rule_naming_a_missing_matrix(tmp_path: Path) -> None:
    p = write_config(tmp_path, f"""\
decide:
  matrix_dir: {DEFAULT_MATRIX_DIR}
  matrix_rules:
    - match: {{rotational: true}}
      matrices:
        mean: ioaz-table9.yaml
""")
    with pytest.raises(ValidationError) as e:
        config_from_doc(load_file(p))
    assert str(e.value).startswith(f"{p}:6: decide.matrix_rules[0].matrices.mean: matrix file "
                                   "not found (got 'ioaz-table9.yaml'")


def test_config_rule_mapping_a_goal_to_a_matrix_without_it(tmp_path: Path) -> None:
    p = write_config(tmp_path, f"""\
decide:
  matrix_dir: {DEFAULT_MATRIX_DIR}
  matrix_rules:
    - match: {{name: "sd*"}}
      matrices: {{latency: ioaz-table1-min.yaml}}
""")
    with pytest.raises(ValidationError) as e:
        load_context(config_from_doc(load_file(p)))
    assert str(e.value).startswith(f"{p}:4: rule 1 (name=sd*): goal latency mapped to "
                                   "ioaz-table1-min.yaml, which has no latency table")


def test_config_with_a_broken_matrix_refuses_with_the_matrix_line(tmp_path: Path) -> None:
    mdir = tmp_path / "m"
    mdir.mkdir()
    (mdir / "t1.yaml").write_text(TABLE1.replace("16+/random/read: fcfs", "16+/random/read: as"))
    (mdir / "policies.yaml").write_text(POLICIES)
    p = write_config(tmp_path, """\
decide:
  matrix_dir: m
  policies: m/policies.yaml
  matrix_rules:
    - matrices: {min: t1.yaml}
""")
    issues = validate_file(p)
    assert len(issues) == 1
    assert issues[0].file == str(mdir / "t1.yaml")
    assert issues[0].line == line_of(TABLE1, "16+/random/read: fcfs")
    assert "unknown policy (got string 'as'" in issues[0].message


def test_validate_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ioaz.decide.validate import main
    p, _ = broken(tmp_path, "1/random/write: deadline", "1/random/write: dead")
    assert main([str(DEFAULT_MATRIX_DIR / "ioaz-table2-max.yaml"), str(p)]) == 1
    out = capsys.readouterr()
    assert "ioaz-table2-max.yaml: ok" in out.out
    assert f"{p}:" in out.err and "unknown policy" in out.err


def test_readme_config_example_is_valid(tmp_path: Path) -> None:
    """The decide: example in decision_matrices/README.md is what administrators copy."""
    readme = (DEFAULT_MATRIX_DIR / "README.md").read_text()
    block = next(b for b in readme.split("```yaml\n")[1:] if b.startswith("decide:"))
    text = block.split("```")[0].replace("/path/to/decision_matrices", str(DEFAULT_MATRIX_DIR))
    p = write_config(tmp_path, text)
    ctx = load_context(config_from_doc(load_file(p)))
    cfg = ctx.settings
    assert (cfg.hysteresis_windows, cfg.min_dwell_s, cfg.cooldown_s) == (3, 5.0, 2.0)
    assert cfg.first_choice_windows == 1
    assert len(cfg.matrix_rules) == 2 and len(ctx.matrices) == 6


def test_unquoted_number_key_is_refused_with_a_hint(tmp_path: Path) -> None:
    base = (DEFAULT_MATRIX_DIR / "ioaz-table4-processes.yaml").read_text()
    p, text = broken(tmp_path, '    "4": anticipatory', "    4: anticipatory", base=base)
    msgs = errors_of(p)
    line = line_of(text, "    4: anticipatory")
    # One table shared by three goals through an alias: one message per goal, same line.
    assert len(msgs) == 3 and all(m.startswith(f"{p}:{line}: ") for m in msgs)
    assert "key must be text (got integer 4, expected a quoted string)" in msgs[0]


def test_within_noise_lists_other_known_policies(tmp_path: Path) -> None:
    ok, _ = broken(tmp_path, "1/random/write: deadline",
                   "1/random/write: {policy: deadline, within_noise: [sstf, stream]}")
    assert load_matrix(ok).tables["min"]["1/random/write"].within_noise == ("sstf", "stream")
    p, text = broken(tmp_path, "1/random/write: deadline",
                     "1/random/write: {policy: deadline, within_noise: [sstf, deadline]}",
                     name="own.yaml")
    [msg] = errors_of(p)
    assert msg.startswith(f"{p}:{line_of(text, 'within_noise')}: ")
    assert "lists the cell's own policy (got 'deadline', expected only others)" in msg
    p, text = broken(tmp_path, "1/random/write: deadline",
                     "1/random/write: {policy: deadline, within_noise: [stram]}", name="bad.yaml")
    [msg] = errors_of(p)
    assert msg.startswith(f"{p}:{line_of(text, 'stram')}: ") and "unknown policy" in msg


def test_p99_over_names_other_policies_with_a_ratio_of_at_least_one(tmp_path: Path) -> None:
    ok, _ = broken(tmp_path, "1/random/write: deadline",
                   "1/random/write: {policy: deadline, within_noise: [sstf], "
                   "p99_over: {anticipatory: 1.9}}")
    cell = load_matrix(ok).tables["min"]["1/random/write"]
    assert (cell.within_noise, cell.p99_over) == (("sstf",), (("anticipatory", 1.9),))
    for name, bad, want in (
            ("own.yaml", "{deadline: 1.5}", "the cell's own policy (got 'deadline'"),
            ("both.yaml", "{sstf: 1.5}", "also listed within_noise (got 'sstf'"),
            ("low.yaml", "{anticipatory: 0.5}", "0.5"),
            ("typo.yaml", "{antcipatory: 1.5}", "unknown policy")):
        p, text = broken(tmp_path, "1/random/write: deadline",
                         "1/random/write: {policy: deadline, within_noise: [sstf], "
                         f"p99_over: {bad}}}", name=name)
        [msg] = errors_of(p)
        assert msg.startswith(f"{p}:{line_of(text, 'p99_over')}: ") and want in msg, msg


def test_tunables_are_knobs_per_scheduler_and_a_bad_value_names_its_line(tmp_path: Path) -> None:
    ok, _ = broken(tmp_path, "\ngoals:", "\ntunables:\n  stream: {svc_min_us: 1088}\ngoals:")
    assert load_matrix(ok).tunables == {"stream": {"svc_min_us": 1088}}
    p, text = broken(tmp_path, "\ngoals:", "\ntunables:\n  stream: {svc_min_us: '10 88'}\ngoals:",
                     name="space.yaml")
    [msg] = errors_of(p)
    assert msg.startswith(f"{p}:{line_of(text, 'svc_min_us')}: ") and "a knob value" in msg
    p, text = broken(tmp_path, "\ngoals:", "\ntunables:\n  stream: {}\ngoals:", name="empty.yaml")
    [msg] = errors_of(p)
    assert msg.startswith(f"{p}:{line_of(text, 'stream: {}')}: ")
