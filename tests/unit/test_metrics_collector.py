"""The Prometheus collector on a fake daemon state: what a scrape shows an operator.

The daemon's records are the real types (DeviceRecord, DeviceState, WindowFeatures,
DeviceSnapshot); only the daemon around them is a stand-in (metrics_standin.py), so no
kernel is needed. The HTTP endpoint that serves the scrape: test_metrics_endpoint.py.
"""
from __future__ import annotations

import collections
from pathlib import Path
from types import SimpleNamespace

import pytest
from ioaz.classify.types import WorkloadClass
from ioaz.decide import pin
from ioaz.metrics.collector import exported_names, log2_buckets
from ioaz.metrics.http import make_registry
from ioaz.probe.layout import LAT_SLOTS
from metrics_standin import NOW, fake_daemon, features, record, snapshot
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.parser import text_string_to_metric_families


def scrape(daemon) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of one scrape through a private registry."""
    text = generate_latest(make_registry(daemon)).decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def val(samples, name, **labels):
    return samples[(name, tuple(sorted(labels.items())))]


def test_latency_histogram_is_exact_and_in_seconds():
    m = scrape(fake_daemon(record()))
    h = "ioaz_request_latency_seconds_bucket"
    # Everything up to 4095 ns (incl. the folded slot 3) but not the 4096..8191 ns slot.
    assert val(m, h, device="sdz", le="4.095e-06") == 2
    assert val(m, h, device="sdz", le="8.191e-06") == 32
    assert val(m, h, device="sdz", le="0.002097151") == 42
    assert val(m, h, device="sdz", le="+Inf") == 42
    assert val(m, "ioaz_request_latency_seconds_count", device="sdz") == 42
    assert val(m, "ioaz_request_latency_seconds_sum", device="sdz") == pytest.approx(
        (30 * 6000 + 10 * 1_500_000 + 20) * 1e-9)
    s = "ioaz_request_size_bytes_bucket"
    assert val(m, s, device="sdz", le="4095.0") == 3
    assert val(m, s, device="sdz", le="4096.0") == 43      # 4 KiB's own bucket: (4095, 4096]
    assert val(m, s, device="sdz", le="4194304.0") == 43   # the last finite one, 4 MiB
    assert val(m, s, device="sdz", le="+Inf") == 44
    assert val(m, "ioaz_request_size_bytes_sum", device="sdz") == 40 * 4096 + 3 * 512 + (6 << 20)


def test_service_histogram_only_when_the_kernel_stamped_issues():
    m = scrape(fake_daemon(record()))
    assert ("ioaz_request_service_seconds_count", (("device", "sdz"),)) not in m
    snap = snapshot()
    snap.svc_hist = [0] * LAT_SLOTS
    snap.svc_hist[12] = 7
    snap.svc_count, snap.svc_sum_ns = 7, 7 * 5000
    m = scrape(fake_daemon(record(snapshot=snap)))
    assert val(m, "ioaz_request_service_seconds_count", device="sdz") == 7
    assert val(m, "ioaz_request_service_seconds_bucket", device="sdz", le="4.095e-06") == 0
    assert val(m, "ioaz_request_service_seconds_sum", device="sdz") == pytest.approx(35e-6)


def test_service_histogram_left_out_while_it_is_the_latency_one():
    """Inside a plug the block layer stamps a request's start and its issue from one cached
    clock (blk_time_get_ns), so where the request is issued in the plug that allocated it
    (scheduler none) the two histograms are the same to the nanosecond: 31 series that say
    nothing. They are exported once they differ."""
    snap = snapshot()
    snap.svc_hist, snap.svc_sum_ns = list(snap.lat_hist), snap.lat_sum_ns
    snap.svc_count = sum(snap.lat_hist)
    m = scrape(fake_daemon(record(snapshot=snap)))
    assert not [k for k in m if k[0].startswith("ioaz_request_service_seconds")]
    snap.svc_hist[12] += 1
    snap.svc_count += 1
    m = scrape(fake_daemon(record(snapshot=snap)))
    assert val(m, "ioaz_request_service_seconds_count", device="sdz") == snap.svc_count


def test_buckets_are_cumulative_and_monotonic():
    hist = [1] * LAT_SLOTS
    b = log2_buckets(hist, 9, 1e9)
    counts = [c for _, c in b]
    assert counts == sorted(counts) and counts[-1] == LAT_SLOTS
    assert b[-1][0] == "+Inf" and len(b) == LAT_SLOTS - 9
    assert b[0][0] == "1.023e-06" and len(log2_buckets(hist, 9, 1e9, 36)) == 36 - 9 + 2


def test_scheduler_state_and_policy_label_sets():
    rec = record()
    rec.state = pin(rec.state, "deadline", 0.0, 60)
    m = scrape(fake_daemon(rec))
    assert val(m, "ioaz_device_scheduler", device="sdz", scheduler="bfq") == 1
    assert val(m, "ioaz_device_scheduler", device="sdz", scheduler="none") == 0
    assert val(m, "ioaz_device_state", device="sdz", state="pinned") == 1
    assert sum(val(m, "ioaz_device_state", device="sdz", state=s)
               for s in ("auto", "pinned", "manual", "paused")) == 1
    assert val(m, "ioaz_device_workload_class_info", device="sdz", **{
        "class": "8/random/read", "processes": "8", "pattern": "random", "mode": "read",
        "depth": "shallow", "size": "small"}) == 1
    # a timestamp, not an age: PromQL's time() - this is the age, and a stuck scrape shows
    assert val(m, "ioaz_last_decision_timestamp_seconds", device="sdz") == NOW - 2.5


def test_switches_by_reason_and_stalls():
    m = scrape(fake_daemon(record()))
    sw = "ioaz_switches_total"
    assert val(m, sw, device="sdz", **{"from": "mq-deadline", "to": "bfq",
                                       "reason": "matrix"}) == 3
    assert val(m, sw, device="sdz", **{"from": "bfq", "to": "none", "reason": "pin"}) == 1
    # every switch's stall since start, as a histogram (cumulative, by bound)
    st = "ioaz_switch_stall_seconds"
    assert val(m, st + "_count", device="sdz") == 4
    assert val(m, st + "_sum", device="sdz") == pytest.approx(0.716)
    assert [val(m, st + "_bucket", device="sdz", le=le) for le in
            ("0.005", "0.025", "0.1", "0.5", "2.5", "+Inf")] == [2, 3, 3, 3, 4, 4]


def test_window_features_and_unmeasurable_ones_are_absent():
    rec = record(features=features(seq_ratio=None, processes=None, source="diskstats"))
    rec.snapshot.source = "diskstats"
    m = scrape(fake_daemon(rec))
    assert val(m, "ioaz_window_iops", device="sdz") == 250
    assert val(m, "ioaz_window_throughput_bytes_per_second", device="sdz",
               direction="read") == 1024000
    assert val(m, "ioaz_window_latency_p99_seconds", device="sdz") == 0.02
    names = {k[0] for k in m}
    # diskstats cannot see sequentiality or processes, nor latency buckets: no fake zeros.
    assert "ioaz_window_sequential_ratio" not in names
    assert "ioaz_window_processes" not in names
    assert "ioaz_request_latency_seconds_bucket" not in names


def test_agent_families_show_fallback_and_collector_down():
    d = fake_daemon(record(), source=SimpleNamespace(name="diskstats"), collector_up=False,
                    fallback_reason="BPF: permission denied")
    m = scrape(d)
    assert val(m, "ioaz_collector_up") == 0
    assert val(m, "ioaz_probe_source", source="diskstats") == 1
    assert val(m, "ioaz_probe_source", source="bpf") == 0
    assert val(m, "ioaz_probe_fallback_info", reason="BPF: permission denied") == 1
    assert val(m, "ioaz_windows_total") == 42
    assert val(m, "ioaz_window_length_seconds") == 1.0
    assert val(m, "ioaz_window_cpu_seconds_total") == 0.25   # a counter: rate() is CPU share


def test_the_bcc_probe_is_named_as_the_source_and_is_no_fallback():
    m = scrape(fake_daemon(record(), source=SimpleNamespace(name="bcc")))
    assert val(m, "ioaz_probe_source", source="bcc") == 1
    assert val(m, "ioaz_probe_source", source="bpf") == 0
    assert val(m, "ioaz_probe_source", source="diskstats") == 0
    assert not any(k[0] == "ioaz_probe_fallback_info" for k in m)


def test_one_broken_record_does_not_cost_the_scrape():
    bad = record("sdy")
    bad.state = None   # as if half-built: its families are skipped, the rest stay
    m = scrape(fake_daemon(record(), bad))
    assert val(m, "ioaz_device_scheduler", device="sdz", scheduler="bfq") == 1
    assert val(m, "ioaz_collector_up") == 1


def test_every_family_is_listed_and_nothing_global():
    m = scrape(fake_daemon(record()))
    listed = set(exported_names())
    assert {n for n, _ in m if n.startswith("process_")} >= {
        "process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds"}
    for name, _ in m:
        if name.startswith("process_"):   # the standard process families, not ioaz's
            continue
        base = name
        for suffix in ("_bucket", "_count", "_sum"):
            if name.endswith(suffix) and name[: -len(suffix)] in listed:
                base = name[: -len(suffix)]
        assert base in listed, name
    assert all(n.startswith("ioaz_") for n in listed)
    assert not [n for n in REGISTRY._names_to_collectors if n.startswith("ioaz_")]


def test_counter_collections_are_plain():
    # The daemon's switches Counter is keyed (from, to, reason): empty strings are kept.
    rec = record(switches=collections.Counter({("", "bfq", "matrix"): 1}))
    m = scrape(fake_daemon(rec))
    assert val(m, "ioaz_switches_total", device="sdz",
               **{"from": "", "to": "bfq", "reason": "matrix"}) == 1


def test_probe_periods_by_mode_only_when_sampling():
    sampler = SimpleNamespace(periods=10, full_periods=3)
    m = scrape(fake_daemon(record(), source=SimpleNamespace(name="bpf", sampler=sampler)))
    assert val(m, "ioaz_probe_periods_total", mode="sampled") == 7
    assert val(m, "ioaz_probe_periods_total", mode="full") == 3
    always_on = scrape(fake_daemon(record()))
    assert not [k for k in always_on if k[0] == "ioaz_probe_periods_total"]


def test_trials_are_counted_by_outcome():
    rec = record(trials=collections.Counter({"kept": 1, "given_back": 2}))
    m = scrape(fake_daemon(rec))
    assert val(m, "ioaz_trials_total", device="sdz", outcome="kept") == 1
    assert val(m, "ioaz_trials_total", device="sdz", outcome="given_back") == 2
    assert ("ioaz_trials_total", (("device", "sdz"), ("outcome", "abandoned"))) not in m


def test_threads_beside_processes_and_a_kept_class_flagged():
    kept = WorkloadClass("16+", "sequential", "read", kept="3 bios seen, fewer than 16")
    m = scrape(fake_daemon(record(features=features(processes=1, threads=16,
                                                    workload_class=kept))))
    assert val(m, "ioaz_window_processes", device="sdz") == 1
    assert val(m, "ioaz_window_threads", device="sdz") == 16
    assert val(m, "ioaz_window_class_kept", device="sdz") == 1
    m = scrape(fake_daemon(record()))
    assert val(m, "ioaz_window_class_kept", device="sdz") == 0
    assert ("ioaz_window_threads", (("device", "sdz"),)) not in m   # unknown: no fake zero


def test_state_files_set_aside_are_counted() -> None:
    got = scrape(fake_daemon(record(), state_set_aside=2))
    assert got[("ioaz_state_file_set_aside_total", ())] == 2.0


def test_build_info_names_this_ioazd():
    import platform

    from ioaz import __version__
    m = scrape(fake_daemon(record()))
    assert val(m, "ioaz_build_info", version=__version__, python=platform.python_version(),
               kernel=platform.release()) == 1


def test_promtool_accepts_every_family():
    """Prometheus's own linter (promtool check metrics) on a scrape with every family filled."""
    import shutil
    import subprocess
    if shutil.which("promtool") is None:
        pytest.skip("promtool is not installed (make deps installs prometheus)")
    text = generate_latest(make_registry(fake_daemon(record())))
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                       timeout=30)
    assert r.returncode == 0, (r.stdout + r.stderr).decode()


def test_every_family_is_documented_for_the_operator():
    """docs/metrics.md is where an operator looks a metric up: it names every family."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text()
    missing = [n for n in exported_names() if f"`{n}" not in doc]
    assert missing == [], f"not in docs/metrics.md: {missing}"


def per_device(samples, dev: str = "sdz") -> dict[str, int]:
    out: dict[str, int] = {}
    for (name, labels) in samples:
        if ("device", dev) in labels:
            out[name] = out.get(name, 0) + 1
    return out


def test_basic_detail_keeps_a_disk_near_thirty_series_and_reads_as_full_does():
    rec = record()
    full = scrape(fake_daemon(rec))
    basic = scrape(fake_daemon(rec, config=SimpleNamespace(window_s=1.0, dry_run=False,
                                                           metrics_detail="basic")))
    nb, nf = per_device(basic), per_device(full)
    print(f"series per device: basic {sum(nb.values())}, full {sum(nf.values())}")
    # this record has switched (2 switch series, 8 of the stall histogram): without a switch
    # basic is 10 fewer
    assert sum(nb.values()) - 10 <= 32 < sum(nf.values())
    # the latency histogram: 16 us .. 4.3 s a factor of 4 apart, each bucket's count the
    # full histogram's at that bound
    les = sorted((dict(lb)["le"], v) for (n, lb), v in basic.items()
                 if n == "ioaz_request_latency_seconds_bucket")
    assert len(les) == 11
    for le, v in les:
        assert v == full[("ioaz_request_latency_seconds_bucket",
                          (("device", "sdz"), ("le", le)))]
    finite = sorted(float(le) for le, _ in les if le != "+Inf")
    assert finite[0] == pytest.approx(16.383e-6) and finite[-1] == pytest.approx(4.294967295)
    steps = [b / a for a, b in zip(finite, finite[1:], strict=False)]
    assert steps == pytest.approx([4] * len(steps), rel=1e-3)
    assert val(basic, "ioaz_request_latency_seconds_sum", device="sdz") == \
        val(full, "ioaz_request_latency_seconds_sum", device="sdz")
    # no size histogram (the window's mean size stays); the sets keep the member in force
    assert "ioaz_request_size_bytes_bucket" not in nb and nb["ioaz_window_request_size_bytes"]
    assert nb["ioaz_device_scheduler"] == 1 and nb["ioaz_device_state"] == 1
    assert val(basic, "ioaz_device_scheduler", device="sdz", scheduler="bfq") == 1
    assert nf["ioaz_device_scheduler"] == 3 and nf["ioaz_device_state"] == 4


def test_detail_is_basic_by_default_and_a_bad_one_is_refused_at_its_line(tmp_path):
    from ioaz.daemon.config import ConfigError, load_config
    f = tmp_path / "ioaz.yaml"
    f.write_text("window_s: 1\nmetrics:\n  listen: null\n")
    assert load_config(f).metrics_detail == "basic"
    f.write_text("window_s: 1\nmetrics:\n  listen: null\n  detail: full\n")
    assert load_config(f).metrics_detail == "full"
    f.write_text("window_s: 1\nmetrics:\n  listen: null\n  detail: most\n")
    with pytest.raises(ConfigError) as e:
        load_config(f)
    assert str(e.value).startswith(
        f"{f}:4: metrics.detail: expected basic or full, got string 'most'")
