"""Every YAML file ioazd reads goes through ioaz.located: what a broken or hostile file carries
is refused with FILE:LINE and exit 2 by `ioazd --check`, quickly and without a traceback."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from ioaz.located import MAX_NODES, ValidationError, load_file

BOMB = "".join(
    f"{a}: &{a} [{', '.join([f'*{p}'] * 10) if p else ', '.join(['x'] * 10)}]\n"
    for p, a in zip(["", *"abcdefg"], "abcdefgh", strict=True))   # 10^8 values expanded


@pytest.mark.parametrize("name,text,line,says", [
    ("bomb", BOMB, 1, f"more than {MAX_NODES:,} values"),
    ("deep", "window_s: " + "[" * 3000 + "]" * 3000 + "\n", 1, "nesting deeper"),
    ("deep-shallow-enough-for-the-parser", "window_s: " + "[" * 60 + "]" * 60 + "\n", 1,
     "nesting deeper than 50"),
    ("date", "window_s: 1.0\nstate_dir: 2024-01-01\n", 2, "a timestamp value ('2024-01-01')"),
    ("bigint", "window_s: 1\nhistory: " + "9" * 5000 + "\n", 2, "number too large"),
    ("binary", "window_s: 1\nsocket: !!binary aGVsbG8=\n", 2, "a binary value"),
    ("dupkey", "window_s: 1\nwindow_s: 2\n", 2, "duplicate key"),
    # reliability 4.1, 4.3 and 4.5: the report's other cases by name
    ("date-key", "window_s: 1\n2001-02-30: 1\n", 2, "a timestamp value ('2001-02-30')"),
    ("bomb-under-decide", "window_s: 1\ndecide:\n" + textwrap.indent(BOMB, "  "), 3,
     f"more than {MAX_NODES:,} values"),
    ("tab", "window_s: 1\n\tprobe: bpf\n", 2, "found character '\\t' that cannot start"),
    ("undefined-alias", "window_s: *nothing\n", 1, "found undefined alias 'nothing'"),
    ("merge-key", "base: &b {window_s: 1}\n<<: *b\n", 2, "merge keys (<<) are not supported"),
    ("python-object", "window_s: 1\nsocket: !!python/object:os.system 'x'\n", 2,
     "is not allowed here"),
    ("10^30", "decide:\n  max_switches_per_hour: 1" + "0" * 30 + "\n", 2,
     "number too large (31 characters"),
])
def test_refused_with_file_and_line(tmp_path: Path, name: str, text: str, line: int,
                                    says: str) -> None:
    f = tmp_path / f"{name}.yaml"
    f.write_text(text)
    t0 = time.monotonic()
    with pytest.raises(ValidationError) as e:
        load_file(f)
    assert time.monotonic() - t0 < 10          # no gigabytes built on the way
    msg = str(e.value)
    assert msg.startswith(f"{f}:{line}: ") and says in msg, msg


@pytest.mark.parametrize("data,says", [
    (b"window_s: 1\n# caf\xe9\n", r"latin1.yaml:2: not UTF-8 text \(byte 17\)"),
    (b"window_s: 1\nstate_dir: /run/caf\xe9\n", r"latin1.yaml:2: not UTF-8 text \(byte 31\)"),
], ids=["comment", "value"])
def test_not_utf8_names_the_line(tmp_path: Path, data: bytes, says: str) -> None:
    f = tmp_path / "latin1.yaml"
    f.write_bytes(data)
    with pytest.raises(ValidationError, match=says):
        load_file(f)


@pytest.mark.parametrize("spoil,line,says", [
    (lambda m: m.replace(b"kind: matrix", b"kind: matr\xe9x"), 4, "not UTF-8 text"),
    (lambda m: BOMB.encode() + m, 1, f"more than {MAX_NODES:,} values"),
], ids=["not-utf8", "bomb"])
def test_a_matrix_goes_through_the_same_loader(tmp_path: Path, spoil, line: int,
                                               says: str) -> None:
    """Reliability 4.3: a non-UTF-8 byte or an alias bomb in a matrix."""
    from ioaz.decide.matrix import load_matrix
    shipped = Path(__file__).resolve().parents[2] / "decision_matrices" / "ioaz-table3-mean.yaml"
    f = tmp_path / "matrix.yaml"
    f.write_bytes(spoil(shipped.read_bytes()))
    t0 = time.monotonic()
    with pytest.raises(ValidationError) as e:
        load_matrix(f)
    assert time.monotonic() - t0 < 10
    assert str(e.value).startswith(f"{f}:{line}: ") and says in str(e.value), str(e.value)


def test_a_knob_path_is_refused_as_a_badly_formed_name(tmp_path: Path) -> None:
    """Reliability 4.1: a knob named like a path would be joined under queue/iosched/."""
    from ioaz.decide.policies import load_policies
    shipped = (Path(__file__).resolve().parents[2] / "decision_matrices" / "policies.yaml")
    lines = shipped.read_text().splitlines()
    i = next(n for n, line in enumerate(lines) if "slice_idle: 8" in line)
    f = tmp_path / "policies.yaml"
    f.write_text("\n".join(lines[:i] + [lines[i].replace("slice_idle", "../../../tmp/x")]
                           + lines[i + 1:]) + "\n")
    with pytest.raises(ValidationError, match=rf"{f}:{i + 1}: .*badly formed knob name"):
        load_policies(f)


def test_ioazd_check_refuses_without_a_traceback(tmp_path: Path) -> None:
    f = tmp_path / "ioaz.yaml"
    f.write_text(BOMB)
    r = subprocess.run([sys.executable, "-m", "ioaz.daemon.main", "--check", "--config", str(f)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and f"{f}:1: more than" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_plain_values_and_aliases_still_load(tmp_path: Path) -> None:
    f = tmp_path / "ok.yaml"
    f.write_text("a: &x [1, 2.5, true, null, text, '2024-01-01']\nb: *x\n")
    assert load_file(f).data == {"a": [1, 2.5, True, None, "text", "2024-01-01"],
                                 "b": [1, 2.5, True, None, "text", "2024-01-01"]}


def test_thresholds_go_through_the_same_loader(tmp_path: Path) -> None:
    from ioaz.classify.classes import ThresholdsError, load_thresholds

    f = tmp_path / "thresholds.yaml"
    f.write_text(BOMB)
    with pytest.raises(ThresholdsError, match=f"{f}:1: more than"):
        load_thresholds(f)
    f.write_text("min_process_share: 0.02\nprocess_horizon_s: 2024-01-01\n")
    with pytest.raises(ThresholdsError, match=f"{f}:2: a timestamp value"):
        load_thresholds(f)


def test_a_knob_value_with_a_newline_is_refused_at_its_line(tmp_path: Path) -> None:
    """What would be written to queue/iosched/ must be one word: a value with a newline or a
    space is refused with its line, before anything reaches sysfs."""
    from ioaz.decide.policies import load_policies
    shipped = (Path(__file__).resolve().parents[2] / "decision_matrices" / "policies.yaml")
    lines = shipped.read_text().splitlines()
    i = next(n for n, line in enumerate(lines) if "slice_idle: 8" in line)
    for bad in ('"8\\nlow_latency"', '"8 0"'):
        f = tmp_path / "policies.yaml"
        f.write_text("\n".join(lines[:i] + [lines[i].replace("8", bad)] + lines[i + 1:]) + "\n")
        with pytest.raises(ValidationError, match=rf"{f}:{i + 1}: .*a knob value"):
            load_policies(f)


@pytest.mark.parametrize("name,tail,says", [
    ("deep", "history: " + "[" * 5000 + "]" * 5000 + "\n", ":1: nesting deeper"),
    ("bomb", BOMB, f":7: more than {MAX_NODES:,} values"),
    ("date", "history: 2001-02-30\n", ":7: a timestamp value ('2001-02-30')"),
    ("latin1", "# caf\xe9\n", ":7: not UTF-8"),
])
def test_a_reload_of_a_hostile_file_leaves_the_daemon_serving(
        tmp_path: Path, name: str, tail: str, says: str) -> None:
    """The report's R2-R6: `ioazctl reload` and SIGHUP with hostile files. Each is refused
    with the file's line, the windows go on, and no traceback is written."""
    import signal
    f = tmp_path / "ioaz.yaml"
    sock = tmp_path / "run" / "ioaz.sock"
    good = (f"window_s: 0.2\ndry_run: true\nprobe: diskstats\nstate_dir: {tmp_path}/run\n"
            f"socket: {sock}\nmetrics: {{listen: null}}\n")
    f.write_text(good)
    p = subprocess.Popen([sys.executable, "-m", "ioaz.daemon.main", "--config", str(f)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for _ in range(100):
            if sock.exists():
                break
            time.sleep(0.1)
        f.write_bytes(good.encode() + tail.encode("latin-1"))
        r = subprocess.run([sys.executable, "-m", "ioaz.cli.ioazctl", "reload", "--socket",
                            str(sock)], capture_output=True, text=True, timeout=60)
        assert r.returncode != 0 and f"{f}{says}" in r.stderr, r.stdout + r.stderr
        assert "Traceback" not in r.stderr
        p.send_signal(signal.SIGHUP)
        time.sleep(1.5)
        assert p.poll() is None, p.communicate()[0]       # still running
        p.send_signal(signal.SIGTERM)
        out = p.communicate(timeout=30)[0]
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, out
    assert out.count("reload_rejected") == 2 and f"{f}{says}" in out, out
    assert "Traceback" not in out, out
