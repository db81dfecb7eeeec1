"""`make deb`: the packages hold what an operator installs, depend only on what runs, and the
DKMS package builds the elevators with the real dkms against a real kernel's headers.

Installing, starting, reloading and purging the package under systemd is
tests/testbed/test_guest_ioazd.py, in the testbed guest.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import ioaz
import pytest
import tomllib
from conftest import DEB_MAINTAINER, REPO, need_root, need_tool


def deb_field(deb: Path, field: str) -> str:
    return subprocess.run(["dpkg-deb", "-f", str(deb), field], capture_output=True, text=True,
                          check=True).stdout.strip()


def deb_files(deb: Path) -> set[str]:
    out = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True,
                         check=True).stdout
    return {line.split()[5].removeprefix(".") for line in out.splitlines()}


def test_versions_agree() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    changelog = (REPO / "deploy" / "debian" / "changelog").read_text().split("\n", 1)[0]
    dkms = re.search(r'^PACKAGE_VERSION="(.*)"', (REPO / "kmod" / "dkms.conf").read_text(), re.M)
    assert dkms is not None
    assert (ioaz.__version__, f"ioaz ({project})", dkms.group(1)) == (
        project, changelog.split(")")[0] + ")", project)


def test_ioaz_package_contents(debs: dict[str, Path], tmp_path: Path) -> None:
    deb = debs["ioaz"]
    depends = {d.split()[0].split(":")[0] for d in deb_field(deb, "Depends").split(", ")}
    # only what runs (systemd-sysusers for the group): no compiler, no test tools, no VM
    assert depends == {"python3", "python3-yaml", "python3-prometheus-client", "libbpf1",
                       "systemd"}, depends
    # a trained model runs in plain Python (ioaz.model.portable): scikit-learn is not needed
    assert deb_field(deb, "Recommends") == ""
    assert "python3-sklearn" in deb_field(deb, "Suggests").split(", ")
    # the maintainer is who built it (DEBFULLNAME/DEBEMAIL), not deploy/debian's placeholder
    who = f"{DEB_MAINTAINER[0]} <{DEB_MAINTAINER[1]}>"
    assert deb_field(deb, "Maintainer") == who
    assert deb_field(debs["ioaz-dkms"], "Maintainer") == who
    files = deb_files(deb)
    for f in ("/usr/sbin/ioazd", "/usr/bin/ioazctl", "/etc/ioaz/ioaz.yaml",
              "/lib/systemd/system/ioazd.service", "/usr/lib/tmpfiles.d/ioaz.conf",
              "/usr/lib/sysusers.d/ioaz.conf", "/usr/lib/ioaz/bpf/build/ioaz.bpf.o",
              "/usr/lib/ioaz/agent/ioaz/daemon/main.py",
              "/usr/lib/ioaz/decision_matrices/policies.yaml",
              "/usr/share/man/man8/ioazd.8.gz", "/usr/share/man/man8/ioazctl.8.gz",
              "/usr/share/man/man5/ioaz.yaml.5.gz",
              "/usr/share/bash-completion/completions/ioazctl",
              "/usr/share/ioaz/prometheus/ioaz-rules.yml"):
        assert f in files, f
    assert not [f for f in files if "__pycache__" in f or "/tests/" in f or f.endswith(".ko")]
    subprocess.run(["dpkg-deb", "-R", str(deb), str(tmp_path)], check=True)
    assert (tmp_path / "DEBIAN" / "conffiles").read_text().split() == ["/etc/ioaz/ioaz.yaml"]
    unit = (tmp_path / "lib/systemd/system/ioazd.service").read_text()
    assert "ExecStart=/usr/sbin/ioazd --config /etc/ioaz/ioaz.yaml\n" in unit
    assert "ExecStopPost=/usr/sbin/ioazd --config /etc/ioaz/ioaz.yaml --restore" in unit
    cfg = (tmp_path / "etc/ioaz/ioaz.yaml").read_text()
    assert "matrix_dir: /usr/lib/ioaz/decision_matrices" in cfg
    launcher = (tmp_path / "usr/sbin/ioazd").read_text()
    assert launcher.startswith("#!/usr/bin/python3 -I\n") and "/usr/lib/ioaz/agent" in launcher
    postinst = (tmp_path / "DEBIAN" / "postinst").read_text()
    prerm = (tmp_path / "DEBIAN" / "prerm").read_text()
    # the group, /run/ioaz, byte-compilation at install; stopped (and so restored) at removal
    assert "systemd-sysusers" in postinst and "ioaz.conf" in postinst
    assert "systemd-tmpfiles" in postinst and "py3compile" in postinst
    assert "deb-systemd-invoke stop 'ioazd.service'" in prerm and "py3clean" in prerm


def test_dkms_package_builds_with_dkms(debs: dict[str, Path], tmp_path: Path) -> None:
    need_root("dkms keeps its signing key under /var/lib/dkms")
    need_tool("dkms")
    deb = debs["ioaz-dkms"]
    assert deb_field(deb, "Architecture") == "all"
    assert "dkms" in deb_field(deb, "Depends")
    heads = sorted(p for p in Path("/usr/src").glob("linux-headers-6.12.*-amd64")
                   if not p.name.endswith(("-rt-amd64", "-cloud-amd64")))
    if not heads:
        pytest.skip("no linux-headers-6.12 on this machine (`make deps` installs them)")
    rel = heads[-1].name.removeprefix("linux-headers-")
    root, tree = tmp_path / "root", tmp_path / "tree"
    tree.mkdir()
    subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    version = ioaz.__version__
    assert (root / "usr/src" / f"ioaz-sched-{version}" / "dkms.conf").exists()
    # dkms itself, on trees of the test's own: nothing lands in /usr/src or /lib/modules
    trees = ["--sourcetree", str(root / "usr/src"), "--dkmstree", str(tree)]
    for step in (["add"], ["build", "-k", rel, "--kernelsourcedir", str(heads[-1])]):
        r = subprocess.run(["dkms", *step, "-m", "ioaz-sched", "-v", version, *trees],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"dkms {step[0]}:\n{r.stdout[-3000:]}\n{r.stderr[-2000:]}"
    (ko,) = (tree / "ioaz-sched" / version / rel).rglob("ioaz_sched.ko*")
    info = subprocess.run(["modinfo", "-F", "vermagic", str(ko)], capture_output=True, text=True,
                          check=True).stdout
    assert info.split()[0] == rel


def test_make_deps_installs_every_build_dependency() -> None:
    """A fresh machine's `make test` builds the package: what it needs is in the Makefile's
    package lists (debhelper-compat is debhelper's)."""
    control = (REPO / "deploy" / "debian" / "control").read_text()
    field = re.search(r"^Build-Depends:(.*?)^\S", control, re.M | re.S)
    assert field is not None
    needed = {re.split(r"[\s(]", d.strip())[0] for d in field.group(1).split(",") if d.strip()}
    needed = {"debhelper" if d == "debhelper-compat" else d for d in needed}
    make = (REPO / "Makefile").read_text().replace("\\\n", " ")
    listed = set()
    for var in ("RUNTIME_PACKAGES", "BPF_BUILD_PACKAGES", "APT_PACKAGES"):
        m = re.search(rf"^{var} := (.*)$", make, re.M)
        assert m is not None, var
        listed |= set(m.group(1).split())
    assert needed <= listed, f"not installed by make deps: {sorted(needed - listed)}"
