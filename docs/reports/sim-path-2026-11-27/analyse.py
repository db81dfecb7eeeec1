import sys, statistics, json
def q(xs, p): xs = sorted(xs); return xs[min(len(xs)-1, int(p*len(xs)))]
for name in ["one4k-none", "one4k-dl", "par4k-dl", "one128k-dl", "seq4-dl"]:
    qd, iss, comp = {}, {}, {}
    order = []
    for line in open(f"{name}.ev"):
        ts, k, sec, pid = map(int, line.split())
        if k == 0: qd[sec] = (ts, pid); order.append(sec)
        elif k == 1: iss.setdefault(sec, ts)
        else: comp.setdefault(sec, ts)
    by_pid = {}
    for sec in order:
        t, pid = qd[sec]
        if sec in comp: by_pid.setdefault(pid, []).append((t, sec))
    turn, svc, wait, rtt = [], [], [], []
    for pid, lst in by_pid.items():
        lst.sort()
        for (t0, s0), (t1, s1) in zip(lst, lst[1:]):
            turn.append((t1 - comp[s0]) / 1e3); rtt.append((t1 - t0) / 1e3)
        for t, s in lst:
            if s in iss: svc.append((comp[s] - iss[s]) / 1e3); wait.append((iss[s] - t) / 1e3)
    j = json.load(open(f"{name}.json"))
    bw = sum(x["read"]["bw_bytes"] for x in j["jobs"]) / 1e6
    print(f"{name:11s} fio {bw:6.2f} MB/s  n={len(svc)} pids={len(by_pid)}  turn-around us median {statistics.median(turn):6.0f} p10 {q(turn,.1):5.0f} p90 {q(turn,.9):6.0f} | issue->complete median {statistics.median(svc):6.0f} | queue->issue median {statistics.median(wait):6.0f} | bio->bio {statistics.median(rtt):6.0f}")
