"""The workloads `ioaz-lab bench testbed` runs in the guest, each a bash script.

Two model disks: RAW (testbed disk 0) takes the fio mixes on the raw device, laid out as the
simulator's workloads lay theirs out (sim/workloads.py), so that the simulator can run the same
thing on the same model, and the zeroing of IOAZ 4.2 further in; FS (disk 1) holds an ext4 file
system for the programs that use files (S's throughput tests, sysbench, postmark, dbench, and
PostgreSQL under pgbench).

A script sees RAW, FS_DEV, FS (the mount point), RT (seconds a timed run lasts), PHASE
(seconds a mix's phase lasts), OUT (its output file) and placement()'s variables; what it
writes to OUT is parsed on the host by measure.py according to the workload's `parser`.
`setup` runs once per boot, before any contender, and must leave the disk as every contender
finds it (files laid out, not changed by the runs: the timed parts only read them, or write
files of their own that are removed).
"""
from __future__ import annotations

from dataclasses import dataclass

FIO = "fio --output-format=json+ --eta=never"
RAW_FIO = (f"{FIO} --filename=/dev/$RAW --direct=1 --time_based --norandommap "
           "--randrepeat=0 --group_reporting")
FS_FIO = (f"{FIO} --directory=$FS/s --direct=0 --time_based --norandommap --randrepeat=0 "
          "--group_reporting --fallocate=none --create_on_open=0 --allow_file_create=0")


@dataclass(frozen=True)
class Workload:
    name: str
    family: str                 # "seq" | "rand" | "mixed": reported apart (HDD scheduler results)
    parser: str                 # measure.py: "fio" | "dd" | "sysbench" | "postmark" | "dbench"
                                # | "pgbench"
    script: str
    what: str                   # one line for the report
    disk: str = "fs"            # "raw" | "fs": whose block-layer stat measures the run
    phases: tuple[str, ...] = ()   # a mix's stonewalled fio groups, in order
    setup: str = ""
    unit: str = "MB/s"          # the application's own figure: MB/s, or transactions/s
    # "app": the program's own figure; "disk": the disk's bytes over the run, as S measures
    # with iostat, for programs whose own figure counts writes that reach only the page cache
    figure: str = "app"


# The simulator's phase-changing mixes on the raw disk, each process in its own 1 GB region, as
# the simulator lays them out. Every group runs O_DIRECT (RAW_FIO): the simulator's
# asynchronous writers are libaio 8 deep here, not the page cache's write-back.
# Each group's jobs first run `date` (exec_prerun; fio writes its output to NAME.prerun.txt in
# its working directory): fio starts a stonewalled group only once the last one's jobs have
# exited, so the phases drift from PHASE s apart, and the report's switch lags (lag.py) need
# when each really began.
_STAMP = "exec_prerun=date +%s.%N\n"
_PAR_READ = ("rw=read\nbs=4k\nioengine=psync\nnumjobs=4\noffset=10g\n"
             "offset_increment=${PAR_APART_GB}g\nsize=1g\n")

# Where the raw disk's workloads reach past its first 20 GB: par-read's readers 50 GB apart
# from 10 GB in (Xu & Jiang) and the zeroing at 200 GiB (IOAZ 4.2, where a partition would
# start) were laid out for the 500 GB wd500. On a smaller disk (IOAZ's own 40 GB Maxtor) the
# readers are spread over what it has and the zeroing starts at its middle: the same long
# seeks, in proportion, where the wd500's offsets would be past its end.
PAR_FIRST_GB = 10


def placement(disk_bytes: int) -> dict[str, str]:
    """The raw disk's PAR_APART_GB and ZERO_AT_MB for its size; ValueError when the mixes'
    regions (20 GB of them) and par-read's do not fit."""
    gib = disk_bytes >> 30
    apart = min(50, (gib - PAR_FIRST_GB - 1) // 3)
    if gib < 24 or apart < 1:
        raise ValueError(f"the raw disk has {gib} GiB: the workloads need 24 or more")
    return {"PAR_APART_GB": str(apart), "ZERO_AT_MB": str(min(200, gib // 2) * 1024)}



def _readers(n: int, rw: str, bs: str) -> str:
    return (f"rw={rw}\nbs={bs}\nioengine=psync\nnumjobs={n}\noffset=1g\n"
            "offset_increment=1200m\nsize=1g\n")


def _writers(n: int) -> str:
    return (f"rw=write\nbs=128k\nioengine=libaio\niodepth=8\nnumjobs={n}\noffset=1g\n"
            "offset_increment=1200m\nsize=1g\n")


def _mix_script(name: str, groups: tuple[tuple[str, str], ...]) -> str:
    """A fio job file of stonewalled groups (phase name, its options), PHASE s each; $OUT.starts
    gets "PHASE EPOCH" per phase (the last of its jobs' stamps: they start together)."""
    job = "[global]\ntime_based\nruntime=${PHASE}\n" + "".join(
        f"[{g}]\nstonewall\nnew_group\n{_STAMP}{opts}" for g, opts in groups)
    return (f"cat > /tmp/{name}.fio <<EOF\n{job}EOF\n"
            f"d=$(mktemp -d) && cd $d && {RAW_FIO} /tmp/{name}.fio > $OUT; rc=$?\n"
            "for p in " + " ".join(g for g, _ in groups) + "; do echo $p $(cat $p.prerun.txt); "
            "done > $OUT.starts; cd /; rm -rf $d; exit $rc")


# sim/workloads.py phases_mix: par-read, 16 random readers, one sequential writer, 4
# sequential readers
_PHASES = (("par-read", _PAR_READ), ("rand-read-16", _readers(16, "randread", "4k")),
           ("seq-write", _writers(1)), ("seq-read-4", _readers(4, "read", "128k")))
# lab/simsuites/adaptive.py phases_contrast: par-read, 16 sequential writers, 16 sequential
# readers; in the simulator each phase was won by a different scheduler (chosen so, before any
# agent ran on it: the mix asks whether switching pays where no single scheduler wins all)
_CONTRAST = (("par-read", _PAR_READ), ("seq-write-16", _writers(16)),
             ("seq-read-16", _readers(16, "read", "128k")))


# S (Algodev-github/S) throughput tests: N readers and M writers on files of their own, through
# the page cache. The readers' files are laid out once (setup); writers write new files. With
# writers the figure is the disk's, as S's own (iostat): fio counts a buffered write when it
# reaches the page cache, and the writers' files go before the closing sync, so what the
# kernel held back was never written, and fio's figure was mostly the page cache's.
S_FILES = 10
S_FILE_MB = 256


def _s_test(readers: int, writers: int, pattern: str) -> str:
    rw_r, rw_w = ("read", "write") if pattern == "seq" else ("randread", "randwrite")
    bs = "128k" if pattern == "seq" else "4k"
    jobs = []
    if readers:
        jobs.append(f"--name=r --rw={rw_r} --bs={bs} --ioengine=psync --numjobs={readers} "
                    f"--filename_format='r.$jobnum' --size={S_FILE_MB}m --runtime=$RT")
    if writers:
        jobs.append(f"--name=w --new_group --rw={rw_w} --bs={bs} --ioengine=psync "
                    f"--numjobs={writers} --filename_format='w.$jobnum' --size={S_FILE_MB}m "
                    "--allow_file_create=1 --runtime=$RT")
    return (f"{FS_FIO} {' '.join(jobs)} > $OUT; rc=$?; rm -f $FS/s/w.*; sync; exit $rc")


_S_SETUP = (f"mkdir -p $FS/s && for i in $(seq 0 {S_FILES - 1}); do "
            f"dd if=/dev/urandom of=$FS/s/r.$i bs=1M count={S_FILE_MB} status=none; done; sync")
_SYSBENCH = ("cd $FS/sb && sysbench fileio --file-num=16 --file-total-size=2G --threads=4 "
             "--time=$RT --file-fsync-freq=0 --percentile=99")

WORKLOADS: tuple[Workload, ...] = (
    Workload("phases", "mixed", "fio", _mix_script("phases", _PHASES),
             "the simulator's phases mix on the raw disk, PHASE s each: par-read, 16 random "
             "4 KiB readers, one 128 KiB writer 8 deep (libaio), 4 sequential 128 KiB readers, all "
             "O_DIRECT",
             disk="raw", phases=tuple(g for g, _ in _PHASES)),
    Workload("phases-contrast", "mixed", "fio", _mix_script("phases-contrast", _CONTRAST),
             "the simulator's phases-contrast mix on the raw disk, PHASE s each: par-read, 16 "
             "sequential 128 KiB writers 8 deep (libaio), 16 sequential 128 KiB readers, all "
             "O_DIRECT", disk="raw", phases=tuple(g for g, _ in _CONTRAST)),
    Workload("par-read", "seq", "fio",
             f"{RAW_FIO} --name=par-read --rw=read --bs=4k --ioengine=psync --numjobs=4 "
             f"--offset={PAR_FIRST_GB}g --offset_increment=${{PAR_APART_GB}}g --size=1g "
             "--runtime=$RT > $OUT",
             "Xu & Jiang's par-read: 4 synchronous 4 KiB sequential readers 50 GB apart "
             "(a third of the rest of a smaller disk), O_DIRECT", disk="raw"),
    Workload("zero", "seq", "dd",
             "dd if=/dev/zero of=/dev/$RAW bs=1M seek=$ZERO_AT_MB count=1024 conv=fdatasync "
             "2> $OUT",
             "IOAZ 4.2's disk zeroing: dd of 1 GiB of zeros onto the raw disk at 200 GiB (where "
             "a partition would start; the middle of a smaller disk), through the page cache, "
             "fdatasync at the end",
             disk="raw"),
    Workload("s-1r-seq", "seq", "fio", _s_test(1, 0, "seq"),
             "S '1 0 seq': one sequential reader of its own file (page cache)",
             setup=_S_SETUP),
    Workload("s-10r-seq", "seq", "fio", _s_test(10, 0, "seq"),
             "S '10 0 seq': ten sequential readers, each its own file", setup=_S_SETUP),
    Workload("s-10r-rand", "rand", "fio", _s_test(10, 0, "rand"),
             "S '10 0 rand': ten random 4 KiB readers, each its own file", setup=_S_SETUP),
    Workload("s-5r5w-seq", "seq", "fio", _s_test(5, 5, "seq"),
             "S '5 5 seq': five sequential readers and five sequential writers; the disk's "
             "bytes over the run (S's iostat)", setup=_S_SETUP, unit="disk MB/s", figure="disk"),
    Workload("s-5r5w-rand", "rand", "fio", _s_test(5, 5, "rand"),
             "S '5 5 rand': five random readers and five random writers; the disk's bytes "
             "over the run (S's iostat)", setup=_S_SETUP, unit="disk MB/s", figure="disk"),
    Workload("sysbench-rndrw", "rand", "sysbench",
             f"{_SYSBENCH} --file-test-mode=rndrw run > $OUT",
             "sysbench fileio rndrw: 4 threads, 16 files of 2 GiB in all, 16 KiB requests; "
             "its MB/s is over the whole run, the fsync of every file at the end included",
             setup=f"mkdir -p $FS/sb && {_SYSBENCH} prepare > /dev/null && sync"),
    Workload("sysbench-seqrd", "seq", "sysbench",
             f"{_SYSBENCH} --file-test-mode=seqrd run > $OUT",
             "sysbench fileio seqrd: 4 threads reading the same 16 files in turn",
             setup=f"mkdir -p $FS/sb && {_SYSBENCH} prepare > /dev/null && sync"),
)

# PostgreSQL (Debian 12's 15) on the file-system disk: one cluster, made once per boot, its
# database PG_SCALE x 15 MB (scale 150: about 2.3 GB, more than the guest's 2 GB of memory, as
# the issue asks). The server is started by each run and stopped at its end, so a run's
# checkpoint and its write-back fall inside the run and nothing of one run's cache (its
# shared_buffers, kept small) carries into the next.
PG_SCALE = 150
_PG = "PGBIN=$(ls -d /usr/lib/postgresql/*/bin | tail -1); PGD=$FS/pg/data; "
_PG_CTL = "runuser -u postgres -- $PGBIN/pg_ctl -D $PGD -s -w -t 300"
_PG_CONF = ("shared_buffers = 32MB", "listen_addresses = ''", "unix_socket_directories = '/tmp'",
            "max_wal_size = 1GB", "autovacuum = off")
_PG_SETUP = (_PG + "mkdir -p $FS/pg && chown postgres: $FS/pg && "
             "runuser -u postgres -- $PGBIN/initdb --no-instructions -D $PGD > /dev/null && "
             + "".join(f"echo \"{c}\" >> $PGD/postgresql.conf && " for c in _PG_CONF)
             + f"{_PG_CTL} -l $FS/pg/log start && "
             f"runuser -u postgres -- $PGBIN/pgbench -h /tmp -q -i -I dtGvp -s {PG_SCALE} "
             f"postgres > /dev/null 2>&1; rc=$?; {_PG_CTL} stop; sync; exit $rc")


# What the page cache still held unwritten when a program ended, appended to its output: what
# its own figure left for later (pgbench, dbench).
_DIRTY_AT_END = "grep -E '^(Dirty|Writeback):' /proc/meminfo >> $OUT; "


# Its figure is the transactions over the wall time from pgbench's start to the end of the
# server's shutdown checkpoint, as sysbench's and postmark's include their final write-back:
# pgbench's own tps leaves out the write-back of the pages the run dirtied, so a policy that
# defers write-back (the kernel's writeback throttling) would look free when it only moved its
# cost past the window (20-40 s of shutdown checkpoint on this disk). The page cache's dirty
# data at pgbench's end is kept beside the report to show what was left over.
def _pgbench(args: str) -> str:
    return (_PG + f"{_PG_CTL} -l $FS/pg/log start || exit 1; t0=$(date +%s.%N); "
            f"runuser -u postgres -- $PGBIN/pgbench -h /tmp -n -c 8 -j 2 -T $RT {args} "
            f"postgres > $OUT 2>&1; rc=$?; {_DIRTY_AT_END}"
            f"{_PG_CTL} stop || rc=1; echo \"wall $t0 $(date +%s.%N)\" >> $OUT; exit $rc")


# postmark: many small files created, read, appended and deleted (Carroll's mail-server
# stand-in). It runs a fixed number of transactions, so the figure is the bytes it read and
# wrote over the wall time of the whole run, its final write-back (sync) included.
_POSTMARK_CFG = ("set location $FS/pm\nset number 6000\nset size 500 16384\n"
                 "set transactions 30000\nset read 4096\nset write 4096\nrun\nquit\n")

APPLICATIONS: tuple[Workload, ...] = (
    Workload("pgbench-ro", "rand", "pgbench", _pgbench("-S"),
             f"PostgreSQL 15 under pgbench select-only: 8 clients, scale {PG_SCALE} "
             "(about 2.3 GB, more than the guest's memory)", setup=_PG_SETUP, unit="tps"),
    Workload("pgbench-rw", "rand", "pgbench", _pgbench(""),
             f"PostgreSQL 15 under pgbench's TPC-B-like read-write: 8 clients, scale "
             f"{PG_SCALE}, a commit is a WAL fsync; transactions over the run and its shutdown "
             "checkpoint", setup=_PG_SETUP, unit="tps"),
    Workload("postmark", "rand", "postmark",
             f"mkdir -p $FS/pm && printf \"{_POSTMARK_CFG}\" > /tmp/pm.cfg && "
             "t0=$(date +%s.%N) && postmark /tmp/pm.cfg > $OUT && sync && "
             "echo \"wall $t0 $(date +%s.%N)\" >> $OUT; rc=$?; rm -rf $FS/pm; sync; exit $rc",
             "postmark: 6000 files of 0.5-16 KiB, 30000 transactions, 4 KiB reads and writes, "
             "through the page cache; its bytes over the whole run with the final sync"),
    # The sync before the files go: what the run left dirty is written and timed (measure.py
    # charges it to the figure), where deleting first would throw it away unpaid.
    Workload("dbench", "mixed", "dbench",
             "mkdir -p $FS/db && dbench -D $FS/db -t $RT -c /usr/share/dbench/client.txt 4 "
             "> $OUT 2>&1; rc=$?; " + _DIRTY_AT_END +
             "t0=$(date +%s.%N); sync; echo \"closing sync $t0 $(date +%s.%N)\" >> $OUT; "
             "rm -rf $FS/db; sync; exit $rc",
             "dbench 4 clients replaying its NetBench file-server trace (client.txt); its "
             "throughput with the closing sync of what it left dirty"),
)

WORKLOADS = WORKLOADS + APPLICATIONS
BY_NAME = {w.name: w for w in WORKLOADS}


def select(names: str) -> list[Workload]:
    """A comma list of workload names ("all": every one), in WORKLOADS's order."""
    if names == "all":
        return list(WORKLOADS)
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in BY_NAME]
    if unknown:
        raise ValueError(f"unknown workload(s) {', '.join(unknown)}; known: "
                         + ", ".join(BY_NAME))
    return [w for w in WORKLOADS if w.name in wanted]
