"""deploy/ansible's role, read as data: what it must keep equal to ioazd (the role itself runs in
the testbed guest: tests/testbed/test_guest_ioazd.py)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from ioaz.decide.config import DEFAULT_RULES

ANSIBLE = Path(__file__).resolve().parents[2] / "deploy" / "ansible"
ROLE = ANSIBLE / "roles" / "ioaz"


def _tasks() -> list[dict[str, Any]]:
    return yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())


def test_the_rules_after_the_models_are_ioazds_defaults() -> None:
    """With model matrices the role writes matrix_rules, which replace ioazd's defaults; it
    appends its copy of them, so this copy must stay what decide/config.py has."""
    (fact,) = [t for t in _tasks() if "ansible.builtin.set_fact" in t]
    shipped = fact["vars"]["ioaz_shipped_rules"]
    assert len(shipped) == len(DEFAULT_RULES)
    for copy, rule in zip(shipped, DEFAULT_RULES, strict=True):
        assert copy["matrices"] == rule.matrices
        assert copy["match"].get("rotational") == rule.rotational
        assert set(copy["match"]) <= {"rotational"}


def test_every_notify_has_its_handler_and_the_file_is_checked_before_it_is_placed() -> None:
    handlers = {h["name"] for h in yaml.safe_load((ROLE / "handlers" / "main.yml").read_text())}
    notified = {t["notify"] for t in _tasks() if "notify" in t}
    assert notified and notified <= handlers, (notified, handlers)
    (template,) = [t["ansible.builtin.template"] for t in _tasks()
                   if "ansible.builtin.template" in t]
    # --check would fail on a host where ioazd runs (it holds the metrics port)
    assert template["validate"] == "/usr/sbin/ioazd --check-config --config %s"


@pytest.mark.skipif(shutil.which("ansible-lint") is None,
                    reason="ansible-lint is not installed (make test installs Debian's)")
def test_ansible_lint_passes_the_production_profile() -> None:
    r = subprocess.run(["ansible-lint", "--offline", "--nocolor", "--profile", "production",
                        "-p", "site.yml", "roles/ioaz"], cwd=ANSIBLE, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Passed with production profile" in r.stdout + r.stderr, r.stdout + r.stderr
