"""deploy/kubernetes/: the DaemonSet and its ConfigMap, Service, ServiceMonitor and
PrometheusRule. Checked offline: the core kinds against the Kubernetes API's own schema
(kubernetes-validate, strict: unknown fields are errors), the operator's kinds against what
they must agree with (the Service they select, the alert file), and the config the pods run
through ioazd's own loader."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from ioaz.daemon.config import load_config

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "kubernetes"
kv = pytest.importorskip("kubernetes_validate",
                         reason="kubernetes-validate is not installed (make test installs it)")

# The oldest Kubernetes still maintained when this was written, and the newest the package has
VERSIONS = ("1.31", "1.33")


def docs() -> dict[str, dict]:
    return {d["kind"]: d for d in yaml.safe_load_all((K8S / "ioaz.yaml").read_text())}


@pytest.mark.parametrize("version", VERSIONS)
def test_the_core_kinds_are_valid_kubernetes(version: str) -> None:
    checked = set()
    for d in docs().values():
        if d["apiVersion"].startswith("monitoring.coreos.com/"):
            continue
        kv.validate(d, version, strict=True)        # raises on any schema error
        checked.add(d["kind"])
    assert checked == {"Namespace", "ConfigMap", "DaemonSet", "Service"}, checked


def test_the_validator_catches_a_broken_daemonset() -> None:
    ds = copy.deepcopy(docs()["DaemonSet"])
    ds["spec"]["template"]["spec"]["hostPID"] = "yes"
    ds["spec"]["template"]["spec"]["containers"][0]["privilegd"] = True
    with pytest.raises(kv.ValidationError):
        kv.validate(ds, VERSIONS[-1], strict=True)


def test_the_pods_config_loads_and_the_manifest_agrees_with_it(tmp_path: Path) -> None:
    d = docs()
    text = d["ConfigMap"]["data"]["ioaz.yaml"]
    # the package's matrices are at /usr/lib/ioaz; here, the checkout's
    f = tmp_path / "ioaz.yaml"
    f.write_text(text.replace("/usr/lib/ioaz/decision_matrices",
                              str(REPO / "decision_matrices")))
    cfg = load_config(f)
    pod = d["DaemonSet"]["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert pod["hostPID"] is True and c["securityContext"]["privileged"] is True
    # metrics on the port the Service and the probe name, state where the host keeps it
    port = {p["name"]: p["containerPort"] for p in c["ports"]}["metrics"]
    assert cfg.metrics_listen == f"0.0.0.0:{port}"
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    host = {v["name"]: v.get("hostPath", {}).get("path") for v in pod["volumes"]}
    assert host[mounts[str(cfg.state_dir)]] == str(cfg.state_dir)
    assert str(cfg.socket) in c["livenessProbe"]["exec"]["command"]
    assert "/etc/ioaz/ioaz.yaml" in c["args"] and mounts["/etc/ioaz"] == "config"


def test_the_service_monitor_scrapes_the_pods_and_names_them_as_node_exporter_does() -> None:
    d = docs()
    svc, sm = d["Service"], d["ServiceMonitor"]
    pod_labels = d["DaemonSet"]["spec"]["template"]["metadata"]["labels"]
    assert svc["spec"]["selector"].items() <= pod_labels.items()
    assert sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    ports = {p["name"] for p in svc["spec"]["ports"]}
    ep = sm["spec"]["endpoints"][0]
    assert ep["port"] in ports
    targets = {r["targetLabel"]: r for r in ep["relabelings"]}
    # the alerts ask for job="ioaz"; the dashboard joins node_exporter's series by instance
    assert targets["job"]["replacement"] == "ioaz"
    assert targets["instance"]["sourceLabels"] == ["__meta_kubernetes_pod_node_name"]


def test_the_prometheus_rule_holds_the_alert_file() -> None:
    rule = yaml.safe_load((K8S / "ioaz-rules.yaml").read_text())
    alerts = yaml.safe_load((REPO / "deploy" / "prometheus" / "ioaz-rules.yml").read_text())
    assert rule["kind"] == "PrometheusRule" and rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["spec"]["groups"] == alerts["groups"]
