"""The soak's samples (ioaz.lab.bench_scale.Marks), taken at the tenths of the run and after its
first phase, not every window, so that the bench does not grow the RSS it reports; and its
tally of what the daemon logged (LogTally)."""
from __future__ import annotations

from ioaz.lab import bench_scale


def test_the_soaks_marks_are_its_tenths_and_its_first_phase(monkeypatch) -> None:
    now = [100.0]
    monkeypatch.setattr(bench_scale.time, "monotonic", lambda: now[0])
    m = bench_scale.Marks(seconds=100.0, phase_s=20.0)
    taken = []

    def sample() -> dict[str, int]:
        taken.append(now[0])
        return {"rss_kb": int(now[0])}
    for t in (100.5, 101, 105, 110.2, 119, 120.1, 125, 155, 201):
        now[0] = t
        m.window(sample)
    m.end({"rss_kb": 999})
    # 0, 10, 20, 30, 40, 50 s into the run came at these windows; 60-90 s at the one of 201
    # (a window that outlasted four marks gives one sample for each)
    assert m.of("rss_kb") == [100, 110, 120, 155, 155, 155, 201, 201, 201, 201, 999]
    assert m.warm == {"rss_kb": 120}
    assert taken == [100.5, 110.2, 120.1, 155, 201]   # one sample a window at most
    short = bench_scale.Marks(seconds=100.0, phase_s=20.0)
    short.end({"rss_kb": 7})                           # cut short: its end stands for the rest
    assert short.of("rss_kb") == [7] * 11 and short.warm is None


def test_the_log_tally_counts_warnings_errors_and_tracebacks_by_event() -> None:
    import logging
    tally = bench_scale.LogTally()
    log = logging.getLogger("ioaz.test_tally")
    log.addHandler(tally)
    try:
        log.info('{"event": "switch", "device": "loop0"}')   # not counted
        log.warning('{"event": "device_vanished", "device": "loop0"}')
        log.error("a switch failed", exc_info=False)
        try:
            raise OSError("EMFILE")
        except OSError:
            log.exception("window failed")
    finally:
        log.removeHandler(tally)
    got = tally.summary()
    assert got["levels"] == {"WARNING": 1, "ERROR": 2}
    # by event: a JSON record's own, a plain-text one's logger
    assert got["events"] == {"device_vanished": 1, "ioaz.test_tally": 2}
    assert got["tracebacks"] == 1
    assert got["first"] == ['WARNING {"event": "device_vanished", "device": "loop0"}',
                            "ERROR a switch failed", "ERROR window failed"]


def test_a_long_window_names_the_switches_made_in_it() -> None:
    """Only the history's entries from the window's start on are its switches, each with the
    time its queue was frozen."""
    from types import SimpleNamespace

    from ioaz.lab.bench_scale import _long_window
    history = [{"time": 99.0, "device": "loop0", "from_scheduler": "none",
                "to_scheduler": "bfq", "stall_s": 0.02},
               {"time": 100.5, "device": "loop1", "from_scheduler": "bfq",
                "to_scheduler": "mq-deadline", "stall_s": 1.2345},
               {"time": 100.6, "device": "loop2", "from_scheduler": "none",
                "to_scheduler": "none", "stall_s": None}]
    w = _long_window(SimpleNamespace(history=history), 12.34, 1.5, 100.0)
    assert w == {"at_s": 12.3, "ms": 1500.0, "switches": [
        {"device": "loop1", "from": "bfq", "to": "mq-deadline", "stall_ms": 1234.5},
        {"device": "loop2", "from": "none", "to": "none", "stall_ms": None}]}
    assert _long_window(SimpleNamespace(history=history), 1.0, 1.1, 200.0)["switches"] == []
