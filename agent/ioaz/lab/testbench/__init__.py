"""`ioaz-lab bench testbed`: ioazd against the static schedulers in the testbed guest (bench.py,
bench_cli.py), the workloads (workloads.py), what runs in the guest (guest_bench.py), reading
the runs (measure.py), the report (bench_report.py) and the simulator beside it (bench_sim.py).
The guest itself is ioaz.testbed."""
