"""Where a profiled ioazd's window goes: time per window in chosen functions, inclusive and
own. `python3 profile_parts.py FILE.prof` (a `bench testbed --profile-ioazd` run's)."""
import pstats, sys
st = pstats.Stats(*sys.argv[1:])
stats = st.stats  # (file, line, fn) -> (cc, nc, tt, ct, callers)
def find(fnpart, filepart=""):
    out = []
    for (f, l, fn), (cc, nc, tt, ct, callers) in stats.items():
        if fn == fnpart and filepart in f:
            out.append((f.split("ioaz/")[-1], l, fn, nc, tt, ct))
    return out
win = find("window", "daemon/core.py")
n = win[0][3] if win else 1
print("windows", n, "window ms", 1000 * win[0][5] / n)
keys = [("step", "observe.py"), ("read", "bpf_source.py"), ("_dump", "bpf_source"),
        ("parse_maps", "bpf_source"), ("fold_partitions", "bpf_source"),
        ("parse_diskstats", "diskstats_source"), ("with_exact_counts", "bpf_source"),
        ("idle_processes", "bpf_source"), ("pending_processes", "bpf_source"),
        ("_wanted", "observe.py"), ("scan", "compose.py"), ("_replaced", "observe.py"), ("_complete", "observe.py"),
        ("compute_features", "features.py"), ("classify", "classes.py"), ("add", "horizon.py"), ("_alive", "observe.py"),
        ("_read_facts", "core.py"), ("_refresh_scheduler", "core.py"), ("check_drift", "actuator.py"),
        ("_decide", "core.py"), ("_apply", "core.py"), ("window_line", "views.py"), ("debug", "logging"),
        ("devices", "sysblock.py"), ("disk_of_devt", "sysblock.py"), ("identity", "sysblock.py"), ("scheduler", "sysblock.py"),
        ("size_bytes", "sysblock.py")]
for fn, fp in keys:
    for f, l, name, nc, tt, ct in find(fn, fp):
        print(f"{f+':'+str(l)+' '+name:60} calls/w {nc/n:6.1f} ms/w incl {1000*ct/n:7.2f} self {1000*tt/n:6.2f}")
