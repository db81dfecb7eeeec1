#!/bin/bash
# Written by the host (ioaz.testbed.vm) for one run.
R=/mnt/results/.testbed
echo "$(cut -d' ' -f1 /proc/uptime)" > "$R/started"
export PYTHONPATH=/mnt/ioaz/agent PYTHONDONTWRITEBYTECODE=1 IOAZ_RESULTS=/mnt/results
cd /mnt/ioaz
( python3 -m ioaz.lab.testbench.guest_bench /mnt/results/plan.json ) 2>&1 | tee "$R/output" > /dev/console
echo "${PIPESTATUS[0]}" > "$R/rc"
sync
