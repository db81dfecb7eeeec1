"""The `decide` section of the ioazd config, and the loaded matrices and policies it names.

Everything is validated at start-up and every problem is reported as FILE:LINE, so a bad
config or matrix refuses to start instead of misbehaving at run time.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..located import Doc, DocPath, Issue, ValidationError, format_path
from .matrix import Matrix, load_matrix
from .policies import DEFAULT_POLICIES, PolicyTable, load_policies
from .rules import GoalRule, Rule, rule_from_dict
from .schema import Schema

DEFAULT_MATRIX_DIR = DEFAULT_POLICIES.parent

# Used when the config has no matrix_rules: IOAZ's own tables on disks that spin (and on
# devices that do not say), the published-guidance matrix on SSD/NVMe.
DEFAULT_RULES: tuple[Rule, ...] = (
    Rule(0, {"min": "nonrotational-default.yaml", "max": "nonrotational-default.yaml",
             "mean": "nonrotational-default.yaml", "throughput": "nonrotational-default.yaml",
             "latency": "nonrotational-default.yaml"}, rotational=False),
    Rule(1, {"min": "ioaz-table1-min.yaml", "max": "ioaz-table2-max.yaml",
             "mean": "ioaz-table3-mean.yaml", "throughput": "rotational-throughput.yaml",
             "latency": "rotational-latency.yaml"}),
)


@dataclass(frozen=True)
class DecideConfig:
    goal: str = "mean"
    goals: tuple[GoalRule, ...] = ()
    matrix_dir: Path = DEFAULT_MATRIX_DIR
    policies_file: Path = DEFAULT_POLICIES
    # Damping (damping.py). A switch needs the same verdict in hysteresis_windows consecutive
    # judged windows, at least min_dwell_s on the current scheduler, and room in the hourly
    # budget; windows within cooldown_s of a switch are not evidence (the switch itself
    # disturbs what is measured).
    hysteresis_windows: int = 3
    # ... but only first_choice_windows while the scheduler in force is the one ioaz found
    # (no switch yet since it started): hysteresis keeps a choice made from evidence against
    # a passing window, and the scheduler found was not chosen for this workload, so waiting
    # protects nothing. A first window that misled costs one switch, after which the full
    # damping applies. When a model's verdict and the matrix's disagree on the window (the
    # verdict's second_opinion, or an unsure model's leaning), the first choice waits
    # hysteresis_windows too.
    first_choice_windows: int = 1
    # ... and decisive_windows when a sure model puts the scheduler in force under
    # decisive_share of the best and the matrix agrees on the window, or, where the matrix
    # decides, its cell's calibration measured it that far behind on every workload (a
    # derived matrix's `shares`): each window waited then
    # costs over half a window, while two windows of a class that plain are seldom a passing
    # one (the flip-flop guard and dwell still apply). On the testbed's phases mix, the
    # four sequential readers read a third of the best under deadline for the third window
    # hysteresis waited (docs/testbed.md, hundred-and-second run). In the first window of a
    # new workload (its cell another than the last window's) such a lead takes
    # first_choice_windows: the scheduler in force was chosen for the workload before.
    decisive_windows: int = 2
    decisive_share: float = 0.5
    min_dwell_s: float = 5.0
    cooldown_s: float = 2.0
    # The first window with enough requests after a quiet spell holds the programs starting
    # (files opened, catalogs read) more than their workload, as the window after a switch
    # holds the switch: not evidence. Costs every first choice after a quiet spell one window
    # (docs/testbed.md, ninety-sixth run: 3 of 28 first choices were taken on such a window).
    skip_start_window: bool = True
    max_switches_per_hour: int = 12
    # After A -> B -> A (or A -> B -> C -> A), a switch to B again waits until this long
    # after the return: a verdict that reads features the scheduler itself shapes can want B
    # under A and A under B (or hop through three), and would go round every dwell until the
    # budget is spent.
    return_hold_s: float = 600.0
    # ... but only when B (and C) was left within this long of going to it: a verdict cycle turns
    # at the pace of the damping (the dwell, 5-9 s in the simulator's mixes), while a
    # workload whose phases come round (20 s and more) is followed each time.
    flip_flop_stay_s: float = 15.0
    # Too little to judge: below idle_iops the device is idle; below min_requests in a
    # window the class is noise.
    idle_iops: float = 1.0
    min_requests: int = 20
    # Trials of a near-tie cell's runner-up (trial.py): cells whose policy led by less than
    # trial_margin_points (0: never), after trial_after_windows judged windows settled in the
    # cell, for trial_windows judged windows; the runner-up is kept when its measure is at
    # least trial_min_gain better, and the cell is not tried again for trial_retry_s.
    # 5 points: a lead that small is within what one workload of the class can reverse
    # (docs/results.md says how many cells of a calibration that makes eligible).
    # 20 windows settled: a trial spans about 6 windows (the switch, a cooldown window, 3
    # measured, the return) and costs two switches; it is worth starting only in a phase
    # that has already lasted over 3 times that. The report's sweep (off, 10, 15, 20) shows
    # what each costs and gains on its mixes. 10% gain: a 3-window mean of one scheduler
    # against another's varies by a few percent on a real device doing the same thing.
    trial_margin_points: float = 5.0
    trial_after_windows: int = 20
    trial_windows: int = 3
    trial_min_gain: float = 0.1
    trial_retry_s: float = 3600.0
    # Rounds of a trial, alternating the candidate with the cell's policy (trial.py): kept
    # when the mean gain over them reaches trial_min_gain / sqrt(rounds). 1: one stretch
    # against the windows before, as the simulator's sweep measured.
    trial_rounds: int = 1
    # A trial waits for judged windows: where the device is mostly idle, or too quiet to
    # judge (dbench's write-back on a slow disk), its few windows could keep the candidate in
    # force for minutes (89 s in the twentieth testbed run). Past trial_max_s a stretch (a
    # trial of R rounds has 2R - 1 stretches) it is abandoned. 30 s: a stretch takes 4-5 s
    # when every window is judged (a cooldown window and three measured ones).
    trial_max_s: float = 30.0
    # Also try, in a cell whose policy no measurement chose (source kind judgement: no
    # calibration workload fell in it, or none won clearly), the policies that won the
    # matrix's measured cells, one a trial (Verdict.alternatives). Off by default: measured
    # on the real kernel's applications (docs/testbed.md, thirteenth run), not yet on the
    # simulator's mixes whose figures the README gives.
    trial_unclear: bool = False
    # And in a cell a measurement chose: the calibration measured its own workloads of the
    # class, and the device's may want another scheduler (docs/testbed.md, fourteenth run:
    # dbench's cell, measured on 4 KiB O_DIRECT writers, names stream; bfq serves dbench
    # better). Off by default, as trial_unclear.
    trial_measured: bool = False
    # Trials have their own cap, outside max_switches_per_hour (two switches each).
    max_trials_per_hour: int = 6
    # The idle policy (idle.py): a disk that spins and has been quiet for idle_after_s is set
    # to idle_policy, so that the next workload's processes start under it (anticipatory:
    # bfq, policies.yaml). None: a quiet disk keeps what the last workload left. 30 s: a
    # pause within one workload (a checkpoint's gap, a client's think time) lasts seconds; a
    # disk quiet for half a minute waits for another, and a switch on it delays no request.
    idle_policy: str | None = "anticipatory"
    idle_after_s: float = 30.0
    matrix_rules: tuple[Rule, ...] = DEFAULT_RULES
    file: str = "(defaults)"

    def matrix_path(self, name: str) -> Path:
        return self.matrix_dir / name


@dataclass(frozen=True)
class DecideContext:
    """A validated config with every matrix its rules name, and the policy table."""

    settings: DecideConfig          # the decide section's settings
    matrices: dict[str, Matrix] = field(default_factory=dict)  # rule file name -> matrix
    policies: PolicyTable | None = None


def config_from_doc(doc: Doc, path: DocPath = ("decide",),
                    schema: Schema | None = None) -> DecideConfig:
    """Parse the decide section at `path` of a loaded config; relative paths in it are taken
    from the config file's directory. Raises ValidationError (FILE:LINE) on any issue."""
    schema = schema or Schema.load()
    section: Any = doc.data
    for p in path:
        section = section.get(p) if isinstance(section, dict) else None
    if section is None:
        return DecideConfig(file=doc.file)
    issues = schema.check(doc, "decide_config", path)
    if issues:
        raise ValidationError(issues)
    base = Path(doc.file).parent
    d: dict[str, Any] = section
    defaults = DecideConfig()

    def rel(v: str | None, default: Path) -> Path:
        return default if v is None else (base / v if not Path(v).is_absolute() else Path(v))

    rules = defaults.matrix_rules
    if "matrix_rules" in d:
        rules = tuple(rule_from_dict(i, r, doc.line(path + ("matrix_rules", i)))
                      for i, r in enumerate(d["matrix_rules"]))
    cfg = DecideConfig(
        goal=d.get("goal", defaults.goal),
        goals=tuple(GoalRule(g["device"], g["goal"]) for g in d.get("goals", [])),
        matrix_dir=rel(d.get("matrix_dir"), defaults.matrix_dir),
        policies_file=rel(d.get("policies"), defaults.policies_file),
        hysteresis_windows=d.get("hysteresis_windows", defaults.hysteresis_windows),
        first_choice_windows=d.get("first_choice_windows", defaults.first_choice_windows),
        decisive_windows=d.get("decisive_windows", defaults.decisive_windows),
        decisive_share=float(d.get("decisive_share", defaults.decisive_share)),
        min_dwell_s=float(d.get("min_dwell_s", defaults.min_dwell_s)),
        cooldown_s=float(d.get("cooldown_s", defaults.cooldown_s)),
        skip_start_window=bool(d.get("skip_start_window", defaults.skip_start_window)),
        max_switches_per_hour=d.get("max_switches_per_hour", defaults.max_switches_per_hour),
        return_hold_s=float(d.get("return_hold_s", defaults.return_hold_s)),
        flip_flop_stay_s=float(d.get("flip_flop_stay_s", defaults.flip_flop_stay_s)),
        idle_iops=float(d.get("idle_iops", defaults.idle_iops)),
        min_requests=d.get("min_requests", defaults.min_requests),
        trial_margin_points=float(d.get("trial_margin_points", defaults.trial_margin_points)),
        trial_after_windows=d.get("trial_after_windows", defaults.trial_after_windows),
        trial_windows=d.get("trial_windows", defaults.trial_windows),
        trial_min_gain=float(d.get("trial_min_gain", defaults.trial_min_gain)),
        trial_retry_s=float(d.get("trial_retry_s", defaults.trial_retry_s)),
        trial_rounds=d.get("trial_rounds", defaults.trial_rounds),
        trial_max_s=float(d.get("trial_max_s", defaults.trial_max_s)),
        trial_unclear=bool(d.get("trial_unclear", defaults.trial_unclear)),
        trial_measured=bool(d.get("trial_measured", defaults.trial_measured)),
        max_trials_per_hour=d.get("max_trials_per_hour", defaults.max_trials_per_hour),
        idle_policy=d.get("idle_policy", defaults.idle_policy),
        idle_after_s=float(d.get("idle_after_s", defaults.idle_after_s)),
        matrix_rules=rules,
        file=doc.file,
    )
    issues = []
    if not cfg.policies_file.is_file():
        issues.append(doc.issue(path + ("policies",), f"{format_path(path + ('policies',))}: "
                                f"file not found (got {str(cfg.policies_file)!r}, expected an "
                                "existing policies.yaml)"))
    for rule in cfg.matrix_rules:
        for goal, name in rule.matrices.items():
            mpath = path + ("matrix_rules", rule.index, "matrices", goal)
            if not cfg.matrix_path(name).is_file():
                issues.append(doc.issue(mpath, f"{format_path(mpath)}: matrix file not found "
                                               f"(got {name!r}, expected a file in "
                                               f"{cfg.matrix_dir})"))
    if cfg.idle_policy is not None and cfg.policies_file.is_file():
        try:
            known = load_policies(cfg.policies_file, schema).policies()
        except ValidationError:
            known = ()   # load_context reports the policy table's own issues
        if known and cfg.idle_policy not in known:
            ipath = path + ("idle_policy",)
            issues.append(doc.issue(ipath, f"{format_path(ipath)}: unknown policy (got "
                                    f"{cfg.idle_policy!r}, expected one of "
                                    f"{', '.join(sorted(known))} or null)"))
    if issues:
        raise ValidationError(issues)
    return cfg


def load_context(config: DecideConfig | None = None,
                 schema: Schema | None = None) -> DecideContext:
    """Load and validate every matrix the rules name and the policy table; collect every
    issue of every file before raising, so one start-up attempt shows them all."""
    config = config or DecideConfig()
    schema = schema or Schema.load()
    issues: list[Issue] = []
    matrices: dict[str, Matrix] = {}
    policies: PolicyTable | None = None
    try:
        policies = load_policies(config.policies_file, schema)
    except ValidationError as e:
        issues.extend(e.issues)
    for rule in config.matrix_rules:
        for goal, name in rule.matrices.items():
            if name not in matrices:
                try:
                    matrices[name] = load_matrix(config.matrix_path(name), schema)
                except ValidationError as e:
                    issues.extend(i for i in e.issues if i not in issues)
                    continue
            m = matrices[name]
            if goal not in m.tables:
                issues.append(Issue(config.file, rule.line,
                                    f"{rule.describe()}: goal {goal} mapped to {name}, which has "
                                    f"no {goal} table (got goals {', '.join(m.goals)}, expected "
                                    f"{goal})"))
    if issues:
        raise ValidationError(issues)
    return DecideContext(config, matrices, policies)
