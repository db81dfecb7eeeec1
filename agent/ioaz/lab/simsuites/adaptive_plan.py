"""What the adaptive suite's runs and its report both need to know."""

START = "deadline"   # what Debian runs on a rotational disk
# Steady state: ioazd runs for days, so when a mix's phases come round again it starts from what
# it chose for the previous phase, not from the boot default. The mix runs PASSES times in a row
# in one simulation (agent and static schedulers alike) and the last pass is scored.
PASSES = 2
POLICY_SCHEDULER = {"none": "noop"}   # policy names the statics run under another name
