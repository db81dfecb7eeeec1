"""The Grafana dashboard keeps the conventions grafana/dashboard-linter checks (its rules, as
ecosystem.md measured them: job and instance variables and matchers on every query, a unit and
a description on every panel, not editable, counters only under rate or increase), and has the
switch annotations and the node_exporter panel an operator reads beside ioaz's.

The linter itself is not in `make test`: the Go module proxy refuses it here (ecosystem.md).
Which metrics the dashboard names is checked against a real scrape in
tests/integration/test_prometheus_scrape.py."""
from __future__ import annotations

import json
import re
from pathlib import Path

DASH = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "ioaz-dashboard.json"
SELECTOR = re.compile(r"\b((?:ioaz|node)_[a-z0-9_]+)(\{[^}]*\})?")


def dashboard() -> dict:
    return json.loads(DASH.read_text())


def queries(d: dict) -> list[tuple[str, str]]:
    """(panel or annotation, PromQL) of everything the dashboard draws."""
    out = [(p["title"], t["expr"]) for p in d["panels"] for t in p.get("targets", [])]
    return out + [(a["name"], a["expr"]) for a in d["annotations"]["list"] if "expr" in a]


def missing_matchers(expr: str, want: dict[str, str]) -> list[str]:
    """The matchers of `want` (prefix -> required matcher) a selector in `expr` lacks."""
    out = []
    for m in SELECTOR.finditer(expr):
        job = want["job"].replace("$job", "$node_job") if m.group(1).startswith("node_") \
            else want["job"]
        for w in [job, *(v for k, v in want.items() if k != "job")]:
            if w not in (m.group(2) or ""):
                out.append(f"{m.group(1)}{m.group(2) or ''} lacks {w}")
    return out


def test_not_editable_and_job_instance_device_variables() -> None:
    d = dashboard()
    assert d["editable"] is False
    variables = {v["name"]: v for v in d["templating"]["list"]}
    for name in ("job", "instance", "device", "node_job"):
        v = variables[name]
        assert v["type"] == "query" and v["datasource"]["uid"] == "${datasource}", name
        if v.get("includeAll"):
            assert v["allValue"] == ".+", f"{name}: All must match every value"
    # each variable narrows by the ones before it
    assert not missing_matchers(variables["instance"]["definition"], {"job": 'job=~"$job"'})
    assert not missing_matchers(variables["device"]["definition"],
                                {"job": 'job=~"$job"', "instance": 'instance=~"$instance"'})


def test_every_query_selects_job_and_instance() -> None:
    bad = [f"{where}: {x}" for where, expr in queries(dashboard())
           for x in missing_matchers(expr, {"job": 'job=~"$job"',
                                            "instance": 'instance=~"$instance"'})]
    assert not bad, "\n".join(bad)


def test_every_panel_has_a_description_and_a_unit() -> None:
    bad = []
    for p in dashboard()["panels"]:
        if not p.get("description", "").strip():
            bad.append(f"{p['title']}: no description")
        if p["type"] in ("timeseries", "stat", "table", "heatmap") and not p.get(
                "fieldConfig", {}).get("defaults", {}).get("unit") and p["type"] != "heatmap":
            bad.append(f"{p['title']}: no unit")
    assert not bad, bad


def test_counters_only_under_rate_or_increase() -> None:
    bad = [(where, m.group(1)) for where, expr in queries(dashboard())
           for m in SELECTOR.finditer(expr) if m.group(1).endswith("_total")
           and not re.search(r"(rate|increase)\(\s*$", expr[:m.start()])]
    assert not bad, bad


def test_switches_annotate_throughput_and_latency_and_node_utilisation_is_beside() -> None:
    d = dashboard()
    ids = {p["title"]: p["id"] for p in d["panels"]}
    (ann,) = [a for a in d["annotations"]["list"] if "ioaz_switches_total" in a.get("expr", "")]
    assert ann["enable"] and {ids["Throughput"], ids["Request latency p50 / p99"]} <= set(
        ann["filter"]["ids"])
    assert any("node_disk_io_time_seconds_total" in t["expr"] for p in d["panels"]
               for t in p.get("targets", []))
