"""Debian's 6.1 kernel, the other guest kernel (older enterprise kernels' API): ioaz's three
elevators load and serve I/O, the BPF probe attaches and classes a workload, and the BCC probe
(chosen as on a kernel without BTF) counts what the CO-RE probe counts. One boot."""
from __future__ import annotations

import json

from guest_fixture import (  # noqa: F401 (guest_image: a fixture)
    DMESG,
    ELEVATORS_AND_PROBE,
    STOP_READERS,
    check_elevators_and_probe,
    guest_image,
    guest_values,
    make_kmod,
)
from ioaz.testbed import disks, image, vm

SCRIPT = ELEVATORS_AND_PROBE + STOP_READERS + r"""
python3 /mnt/ioaz/tests/testbed/probe_compare.py $D 3 > /mnt/results/probe_compare.jsonl \
    2>/mnt/results/probe_compare.err
echo "@@ compare_rc $?"
""" + DMESG


def test_elevators_and_probe_on_the_6_1_kernel(guest_image: image.Image,  # noqa: F811
                                               tmp_path) -> None:
    rel = image.kernels()["6.1"]
    make_kmod(rel)
    res = vm.run([SCRIPT], vm.Options(kernel="6.1", disks=disks.parse("model:wd500"),
                                      results=tmp_path, timeout_s=600))
    m = guest_values(res.output)
    assert res.rc == 0, res.output[-3000:]
    check_elevators_and_probe(m, rel, tmp_path)
    check_bcc_against_core(m, tmp_path)


# Features that are shares of a whole agree within this much (absolute); the others within this
# share of the larger (issue 18: "its features agree with the libbpf probe's within 5%").
RATIO_TOLERANCE = 0.05
RELATIVE_TOLERANCE = 0.05
RATIOS = ("seq_ratio", "read_ratio")
# Latency: each probe reads the clock itself at the same tracepoint, a few microseconds apart, so a
# request near a log2 bucket's edge may land in the next bucket in one of them. How many do
# depends on how many requests lie near an edge, not on the probes: a CI run's dense-random-1m,
# served from the disk's cache at about 0.52 ms, put 200 of 3,239 beside the 2^19 ns edge in the
# other bucket. So the histograms are held to what a clock offset can do, move a request into
# a neighbouring bucket and no further, and the mean latency (avg_depth: the latency sum over the
# same window, the same requests) within 5%. A percentile, interpolated inside its bucket, may
# then move by up to a bucket (a window of 380 requests: p99 70.6 against 83.3 ms).
PERCENTILES = ("p50_latency_s", "p99_latency_s")
# Under the emulator (TCG) the two handlers' clock reads can be tens of microseconds apart when
# one is interrupted: a CI run's seq-write had a write that the disk's cache took in 16-32 us by
# one probe and in over 64 us by the other. Requests that fast are held to agree only as "under
# 2^17 ns" (131 us): above it such an offset moves a request a bucket at most.
FAST_BUCKET = 17


def folded(h: dict[str, int]) -> dict[str, int]:
    """The histogram with every bucket under FAST_BUCKET counted in FAST_BUCKET - 1."""
    out: dict[str, int] = {}
    for k, n in h.items():
        key = str(max(int(k), FAST_BUCKET - 1))
        out[key] = out.get(key, 0) + n
    return out


def farther_than_a_neighbour(a: dict[str, int], b: dict[str, int]) -> list[int]:
    """The buckets k where some requests below bucket k in one histogram are above it in the
    other: more than a neighbour's move. Empty when the two differ only by neighbouring moves."""
    keys = sorted({int(k) for k in (*a, *b)})
    if not keys:
        return []
    below_a = below_b = 0          # requests in buckets < k - 1
    far = []
    for k in range(keys[0], keys[-1] + 2):
        upto_a = below_a + a.get(str(k - 1), 0)   # requests in buckets <= k - 1
        upto_b = below_b + b.get(str(k - 1), 0)
        within_a = upto_a + a.get(str(k), 0)      # requests in buckets <= k
        within_b = upto_b + b.get(str(k), 0)
        # everything at or below bucket k - 1 in one must be at or below bucket k in the other
        if within_b < upto_a or within_a < upto_b:
            far.append(k)
        below_a, below_b = upto_a, upto_b
    return far


def check_bcc_against_core(m: dict[str, str], tmp_path) -> None:
    err = (tmp_path / "probe_compare.err").read_text()[-3000:]
    assert m["compare_rc"] == "0", err
    lines = [json.loads(x) for x in (tmp_path / "probe_compare.jsonl").read_text().splitlines()]
    auto = lines[0]
    print("BCC chosen without BTF:", auto)
    assert auto["auto"] == "bcc" and auto["fallback"] is None, auto
    assert any("no BTF" in x and "BCC probe" in x for x in auto["log"]), auto
    runs = [x for x in lines if "workload" in x]
    assert len(runs) == 7, lines
    for r in runs:
        assert r["fio_rc"] == 0 and r["bpf"] and r["bcc"], r
        core, bcc = r["bpf"], r["bcc"]
        # The same requests, seen at the same tracepoints: the counts are the same.
        for k in ("completed", "bytes", "bios", "bios_seq", "size_hist"):
            assert bcc["counts"][k] == core["counts"][k], (r["workload"], k)
        # every request completed: none in flight, by either probe's count
        print(f"{r['workload']:16} in_flight        libbpf {core['counts']['in_flight']} "
              f"bcc {bcc['counts']['in_flight']}")
        assert core["counts"]["in_flight"] == bcc["counts"]["in_flight"] == [0, 0], r["workload"]
        hist_a, hist_b = core["features"]["latency_hist"], bcc["features"]["latency_hist"]
        moved = sum(abs(hist_a.get(b, 0) - hist_b.get(b, 0)) for b in {*hist_a, *hist_b}) / 2
        print(f"{r['workload']:16} latency_hist     {moved:.0f} of {sum(hist_a.values())} "
              "requests in another bucket")
        assert not farther_than_a_neighbour(folded(hist_a), folded(hist_b)), \
            (r["workload"], hist_a, hist_b)
        for k, want in core["features"].items():
            got = bcc["features"][k]
            if k == "latency_hist":
                continue
            print(f"{r['workload']:16} {k:16} libbpf {want!s:24} bcc {got}")
            if want is None or got is None:
                assert want == got, (r["workload"], k, want, got)
            elif k in PERCENTILES:
                assert max(got, want) <= 2 * min(got, want), (r["workload"], k, want, got)
            elif k in RATIOS:
                assert abs(got - want) <= RATIO_TOLERANCE, (r["workload"], k, want, got)
            else:
                assert abs(got - want) <= RELATIVE_TOLERANCE * max(abs(want), abs(got)), \
                    (r["workload"], k, want, got)
    # fio's truth, as the CO-RE probe's tests hold it (issue 18 items 1 and 2), through BCC
    f = {r["workload"]: r["bcc"]["features"] for r in runs}
    assert f["dense-random-1m"]["seq_ratio"] < 0.1, f["dense-random-1m"]
    assert f["interleaved-4"]["seq_ratio"] > 0.9, f["interleaved-4"]
    assert f["threads-8"]["threads"] == 8 and f["threads-8"]["processes"] == 1, f["threads-8"]
    # what each probe's programs cost per request, on the same requests (reported, not held:
    # under TCG an instruction costs what the emulator makes it)
    (stats,) = [x["bpf_stats"] for x in lines if "bpf_stats" in x]
    requests = sum(runs[-1]["bpf"]["counts"]["completed"])   # cumulative, per direction
    print(f"BPF run time per request over {requests} requests, both probes attached (TCG): "
          + ", ".join(f"{k} {v['run_time_ns'] / requests:.0f} ns ({v['run_cnt'] / requests:.1f} "
                      "runs)" for k, v in stats.items()))
    for k in ("bpf", "bcc"):
        assert stats[k]["run_cnt"] > requests and stats[k]["run_time_ns"] > 0, (stats, requests)
    sampled = lines[-1]
    print("BCC probe sampled:", sampled)
    assert sampled["error"] is None and sampled["drained"] >= 2, sampled
    assert sampled["sampled"]["seq_ratio"] > 0.9 and sampled["sampled"]["processes"] == 2
