"""The man pages and the bash completion say what the programs accept.

Each is written by hand; these tests hold them to the argument parsers, the config loader
and the shipped policies, so that an option added to one and not the other fails here.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from ioaz.cli.ioazctl import build_parser as ioazctl_parser
from ioaz.daemon.config import SETTINGS, ConfigError, load_config
from ioaz.daemon.main import build_parser as ioazd_parser
from ioaz.decide.matrix import GOALS

REPO = Path(__file__).resolve().parents[2]
MAN = REPO / "deploy" / "man"
COMPLETION = REPO / "deploy" / "bash-completion" / "ioazctl"
BASH_COMPLETION = Path("/usr/share/bash-completion/bash_completion")


def subcommands(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    return {}


def long_options(p: argparse.ArgumentParser) -> set[str]:
    return {s for a in p._actions for s in a.option_strings if s.startswith("--")}


def roff_text(page: Path) -> str:
    """The page's words as a reader sees them: escapes undone, font requests dropped."""
    t = page.read_text().replace("\\-", "-").replace("\\&", "")
    return re.sub(r"\\f[BIRP]", "", t)


def every_parser() -> list[tuple[str, argparse.ArgumentParser]]:
    out = [("ioazd", ioazd_parser()), ("ioazctl", ioazctl_parser())]
    for name, sub in subcommands(out[1][1]).items():
        out.append((f"ioazctl {name}", sub))
        out += [(f"ioazctl {name} {n}", s) for n, s in subcommands(sub).items()]
    return out


def test_every_argument_has_help() -> None:
    missing = [f"{prog}: {a.dest}" for prog, p in every_parser() for a in p._actions
               if not a.help and not isinstance(a, argparse._SubParsersAction)]
    assert not missing, f"arguments without help text: {missing}"


def test_ioazd_page_names_every_option() -> None:
    text = roff_text(MAN / "ioazd.8")
    missing = sorted(o for o in long_options(ioazd_parser()) if o not in text)
    assert not missing, f"ioazd.8 does not mention {missing}"


def test_ioazctl_page_names_every_command_and_option() -> None:
    text = roff_text(MAN / "ioazctl.8")
    top = ioazctl_parser()
    missing = [f"command {c}" for c in subcommands(top) if f".B {c}" not in text]
    for prog, p in every_parser():
        if prog.startswith("ioazctl"):
            missing += [f"{prog} {o}" for o in sorted(long_options(p)) if o not in text]
    assert not missing, f"ioazctl.8 does not mention {missing}"


def test_config_page_names_every_setting() -> None:
    text = roff_text(MAN / "ioaz.yaml.5")
    schema = yaml.safe_load((REPO / "decision_matrices" / "schema.yaml").read_text())
    keys = [*SETTINGS, *schema["decide_config"]["properties"]]
    missing = [k for k in keys if not re.search(rf"^\.(BR?|SS) {re.escape(k)}\b", text, re.M)]
    assert not missing, f"ioaz.yaml.5 has no entry for {missing}"


def test_config_page_example_is_accepted(tmp_path: Path) -> None:
    text = roff_text(MAN / "ioaz.yaml.5")
    example = text.split(".SH EXAMPLE", 1)[1].split(".nf\n", 1)[1].split("\n.fi", 1)[0]
    f = tmp_path / "ioaz.yaml"
    f.write_text(example + "\nthresholds: " + str(REPO / "decision_matrices" / "thresholds.yaml")
                 + "\n")
    try:
        cfg = load_config(f)
    except ConfigError as e:
        pytest.fail(f"the example in ioaz.yaml.5 is refused:\n{e}")
    assert cfg.decide.settings.goal == "throughput" and cfg.raid == ("md*",)


@pytest.mark.parametrize("page", ["ioazd.8", "ioazctl.8", "ioaz.yaml.5"])
def test_page_renders_without_warnings(page: str) -> None:
    if not shutil.which("man"):
        pytest.skip("man is not installed (make deps installs man-db)")
    r = subprocess.run(["man", "--warnings", "-l", str(MAN / page)], capture_output=True,
                       text=True, env={"MANWIDTH": "80", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr
    assert "NAME" in r.stdout and "SEE ALSO" in r.stdout


def complete(line: str) -> list[str]:
    """COMPREPLY for the command line `line` (the cursor at its end), from bash itself."""
    if not BASH_COMPLETION.exists():
        pytest.skip(f"{BASH_COMPLETION} is missing (make deps installs bash-completion)")
    words = line.split(" ")
    script = (f"source {BASH_COMPLETION}\nsource {COMPLETION}\n"
              f"COMP_WORDS=({' '.join(repr(w) for w in words)})\n"
              f"COMP_CWORD={len(words) - 1}\nCOMP_LINE={line!r}\nCOMP_POINT={len(line)}\n"
              f"_{words[0]}\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n")
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return [w for w in r.stdout.splitlines() if w]


def test_completion_of_commands_and_global_options() -> None:
    top = ioazctl_parser()
    assert sorted(complete("ioazctl ")) == sorted(subcommands(top))
    assert set(complete("ioazctl --")) == long_options(top)
    assert complete("ioazctl --json st") == ["status"]


def test_completion_of_each_commands_options() -> None:
    for name, p in subcommands(ioazctl_parser()).items():
        offered = set(complete(f"ioazctl {name} --"))
        # --socket is meaningless for the commands that need no daemon
        wanted = long_options(p) - ({"--socket"} if name in ("observe", "matrix") else set())
        assert wanted <= offered, f"{name}: {sorted(wanted - offered)} not offered"
    assert set(complete("ioazd --")) == long_options(ioazd_parser())


def test_completion_of_policies_goals_and_disks() -> None:
    policies = yaml.safe_load((REPO / "decision_matrices" / "policies.yaml").read_text())
    assert sorted(complete("ioazctl pin sda ")) == sorted(policies["policies"])
    assert sorted(complete("ioazctl goal sda ")) == sorted(GOALS)
    assert complete("ioazctl --socket /tmp/s goal sda th") == ["throughput"]
    disks = sorted(p.name for p in Path("/sys/block").iterdir()
                   if (p / "queue" / "scheduler").exists())
    if not disks:
        pytest.skip("this machine has no block device with a scheduler to offer")
    assert sorted(complete("ioazctl explain ")) == disks
    assert sorted(complete("ioazctl observe -d ")) == disks
