"""Why a decision was what it was: one name per reason, used by the decision, the metric's
`reason` label, the log and `ioazctl explain`, with what each means to an operator."""
from __future__ import annotations

import enum


class Reason(enum.StrEnum):
    MATRIX = "matrix"
    MODEL = "model"
    PIN = "pin"
    TRIAL = "trial"
    MANUAL = "manual"
    PAUSED = "paused"
    IDLE = "idle"
    TOO_FEW_REQUESTS = "too_few_requests"
    COOLDOWN = "cooldown"
    STARTING = "starting"
    NO_VERDICT = "no_verdict"
    HYSTERESIS = "hysteresis"
    DWELL = "dwell"
    FLIP_FLOP = "flip_flop"
    BUDGET = "budget"
    UNAVAILABLE = "unavailable"
    WITHIN_NOISE = "within_noise"
    IDLE_POLICY = "idle_policy"
    STARTED_UNDER = "started_under"


DESCRIPTION: dict[Reason, str] = {
    Reason.MATRIX: "the decision matrix's cell for this workload class (switch when it differs "
                   "from the scheduler in force, and the damping below allows it)",
    Reason.MODEL: "the trained model's choice, at or above its confidence threshold",
    Reason.PIN: "the administrator pinned a policy (ioazctl pin), until it expires",
    Reason.TRIAL: "a near-tie cell's runner-up (or, with trial_unclear, an unclear cell's "
                  "alternative) measured against its policy for a few windows "
                  "(at most max_trials_per_hour, outside the switch budget)",
    Reason.MANUAL: "the administrator, or someone behind ioaz's back, owns the device until "
                   "`ioazctl resume`",
    Reason.PAUSED: "paused by the administrator (ioazctl pause)",
    Reason.IDLE: "the disk was idle this window: nothing to judge",
    Reason.TOO_FEW_REQUESTS: "too few requests this window to be evidence",
    Reason.COOLDOWN: "a window right after a switch measures the switch, not the workload",
    Reason.STARTING: "the first busy window after a quiet spell holds the programs starting "
                     "(files opened, catalogs read), not their workload (skip_start_window)",
    Reason.NO_VERDICT: "neither matrix nor model had an answer for this window",
    Reason.HYSTERESIS: "waiting for the same verdict in enough consecutive windows "
                       "(hysteresis_windows; first_choice_windows leaving the scheduler "
                       "found at start; decisive_windows when a sure model or the matrix "
                       "cell's calibration puts the one in force under decisive_share of the "
                       "best, first_choice_windows when it does so in a new workload's first "
                       "window)",
    Reason.DWELL: "a minimum time on a scheduler before leaving it (min_dwell_s)",
    Reason.FLIP_FLOP: "after A -> B -> A where B lasted under flip_flop_stay_s, B again only "
                      "return_hold_s after the return (a verdict the scheduler itself shapes "
                      "can cycle)",
    Reason.BUDGET: "at most max_switches_per_hour automatic switches in any hour",
    Reason.UNAVAILABLE: "the policy's schedulers are not offered by this device's kernel",
    Reason.WITHIN_NOISE: "the cell names another policy, but its calibration could not tell "
                         "that one from the policy in force (within the derive margin): "
                         "no switch for noise",
    Reason.IDLE_POLICY: "the disk spins and was quiet for idle_after_s (or had nothing in "
                        "flight at start): idle_policy, so that the next workload's processes "
                        "start under it (bfq serves a process well only when it created its "
                        "queue); the next workload leaves it as it leaves the scheduler found "
                        "at start",
    Reason.STARTED_UNDER: "the workload started under the idle policy and kept it; a switch "
                          "away cannot be undone for its running processes (bfq merges queues "
                          "created together), so leaving it takes the same verdict in most of "
                          "the last 10 judged windows, not hysteresis_windows in a row",
}


def describe(reason: str) -> str:
    try:
        return DESCRIPTION[Reason(reason)]
    except ValueError:
        return ""
