// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ioaz block-layer probe: cumulative per-device counters and log2 histograms,
 * read by user space once a window. No per-event traffic to user space.
 *
 * Where each number is taken, and why there:
 *  - requests, bytes, sizes, latency: at block_rq_complete, which fires
 *    for every request whatever the scheduler (block_rq_insert only fires
 *    for requests that pass through a scheduler queue), with the times the
 *    block layer already stamped in the request (see ioaz.h);
 *  - sequentiality and the submitting process: at block_bio_queue, where the
 *    current task is still the submitter (at issue it is often a kworker) and
 *    before merging has changed request boundaries, so neither depends on the
 *    scheduler in use.
 *
 * Cost is the design constraint (a fast device spends a few microseconds of
 * CPU per request): two programs per request, one per-CPU map lookup each,
 * no per-request map, no value shared between CPUs. What was measured to
 * cost what is in README.md (Performance).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ioaz.h"
#include "core_fixes.bpf.h"

/*
 * A bio starting within this many sectors of a stream's end continues that
 * stream. 0 by default, exact adjacency: a tolerance makes every head catch
 * a band of sectors, and random I/O packed in a few MiB then lands in one of
 * the live heads' bands by chance most of the time.
 */
const volatile __u64 seq_tolerance_sectors = 0;
/*
 * Stream heads are filed by bucket = sector >> seq_bucket_shift. User space
 * makes a bucket at least 2 * seq_tolerance_sectors wide, so the heads a bio
 * can continue lie in at most two buckets.
 */
const volatile __u32 seq_bucket_shift = 1;

/*
 * Counters and per-CPU working state of each device (ioaz.h). Allocated when
 * a device is first seen, not up front: a value is ~2.5 KiB per CPU, and
 * IOAZ_MAX_DEVS of them on every CPU of a large machine would be tens of MiB.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, IOAZ_MAX_DEVS);
	__type(key, __u32);
	__type(value, struct ioaz_dev);
} dev_stats SEC(".maps");

/*
 * Per-CPU bio counts per (device, thread): no shared counter to bounce.
 * Keyed by thread, with its process beside it: the schedulers see threads
 * apart (bfq gives each I/O context a queue, and a thread has its own unless
 * created with CLONE_IO), and user space wants both counts. Written only
 * when the submitting thread on a CPU changes (a thread submitting a batch
 * costs one update, not one per bio).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, IOAZ_MAX_PROCS);
	__type(key, struct ioaz_proc_key);
	__type(value, struct ioaz_proc_val);
} procs SEC(".maps");

/*
 * The last bio of each thread: where its stream ends and how far it has run
 * (`run` as a stream head's, below). A synchronous reader often wakes on
 * another CPU than the one it last submitted from, and a per-CPU stream
 * table alone then calls each of its bios random. Task-local, so no CPU
 * writes what another reads. (Task storage in tracing programs: v5.11,
 * a10787e6d58c, "bpf: Enable task local storage for tracing programs".)
 */
struct ioaz_task_stream {
	__u32 dev;
	__u32 run;
	__u64 end;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ioaz_task_stream);
} task_stream SEC(".maps");

/*
 * Sampling (agent/ioaz/probe/sampler.py). By default the probe sees every
 * request. Sampled, user space attaches the bio-side programs for part of
 * each window only: `counting` is 0 while they warm the stream table up and
 * 1 while their bios count, and a completion is recorded only for a request
 * submitted in one of the last two counted periods [lat_from, lat_until).
 * Exact counts then come from /proc/diskstats. Written by user space through
 * the mmapped .data map; an aligned u64 store is atomic.
 */
volatile __u64 counting = 1;
volatile __u64 lat_from[2] = { 0, 0 };
volatile __u64 lat_until[2] = { ~0ULL, 0 };
/* Sampled: count the periods' requests in `slots` (see on_getrq). */
volatile __u64 track_slots = 0;

/* Per-CPU request counts of the two sampled periods (struct ioaz_slot). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct ioaz_slot);
} slots SEC(".maps");

static const struct ioaz_dev zero_dev;

static __always_inline struct ioaz_dev *dev_of(__u32 dev)
{
	struct ioaz_dev *d = bpf_map_lookup_elem(&dev_stats, &dev);

	if (d)
		return d;
	bpf_map_update_elem(&dev_stats, &dev, &zero_dev, BPF_NOEXIST);
	return bpf_map_lookup_elem(&dev_stats, &dev);
}

/* floor(log2(v)) by halving the search range: no loop, a few instructions. */
static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r, shift;

	shift = (v > 0xFFFFFFFFULL) << 5;
	v >>= shift;
	r = shift;
	shift = (v > 0xFFFF) << 4;
	v >>= shift;
	r |= shift;
	shift = (v > 0xFF) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xF) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	return r | (__u32)(v >> 1);
}

/*
 * hist[floor(log2(v))]++, the last slot taking everything above. The bounds
 * check is written out on the very register used to index, after a compiler
 * barrier: without it clang clamps a 32-bit copy and the 6.1 verifier loses
 * the bound ("unbounded memory access"; found by tests/kmod/test_probe_vm.py).
 */
static __always_inline void hist_add(__u64 *hist, __u32 slots, __u64 v)
{
	__u64 i = log2_u64(v);

	if (i >= slots)
		i = slots - 1;
	barrier_var(i);
	if (i < slots)
		hist[i]++;
}

/*
 * The size histogram's slot (agent/ioaz/probe/layout.py size_slot, which says why):
 * 0 for v <= 512, then for each power of two 2^k a slot of its own, 2(k-9), and one
 * for the sizes between it and the next, 2(k-9)+1; the last slot takes v > 16 MiB.
 * The bound is checked on the indexing register, as in hist_add.
 */
static __always_inline void size_add(__u64 *hist, __u64 v)
{
	__u64 k = log2_u64(v);
	__u64 i = 0;

	if (k >= IOAZ_SIZE_MIN_LOG2)
		i = 2 * (k - IOAZ_SIZE_MIN_LOG2) + ((v & (v - 1)) != 0);
	if (i >= IOAZ_SIZE_SLOTS)
		i = IOAZ_SIZE_SLOTS - 1;
	barrier_var(i);
	if (i < IOAZ_SIZE_SLOTS)
		hist[i]++;
}

/*
 * io_uring's io-wq workers (PF_IO_WORKER in include/linux/sched.h) submit what would have blocked
 * the ring's owner; create_io_thread() gives them CLONE_IO, so they share its I/O context and a
 * scheduler queues their requests as the owner's. They count as the process's main thread, not as
 * submitters of their own (4 fio io_uring jobs at depth 32 read 8 threads without this).
 */
#define IOAZ_PF_IO_WORKER 0x00000010

static __always_inline int rq_dir(struct request *rq)
{
	__u32 op = rq->cmd_flags & IOAZ_REQ_OP_MASK;

	switch (op) {
	case REQ_OP_READ:
		return IOAZ_DIR_READ;
	case REQ_OP_WRITE:
	case REQ_OP_WRITE_ZEROES:
		return IOAZ_DIR_WRITE;
	case REQ_OP_FLUSH:
		return IOAZ_DIR_FLUSH;
	case REQ_OP_DISCARD:
	case REQ_OP_SECURE_ERASE:
		return IOAZ_DIR_DISCARD;
	default:
		return IOAZ_DIR_OTHER;
	}
}

static __always_inline __u32 gendisk_dev(struct gendisk *disk)
{
	int major, minor;

	if (!disk)
		return 0;
	major = disk->major;
	minor = disk->first_minor;
	return ((__u32)major << 20) | (__u32)minor;
}

/* Reads and writes with data: flushes, discards and empty bios say nothing about the pattern. */
static __always_inline bool bio_is_rw(struct bio *bio)
{
	__u32 op = bio->bi_opf & IOAZ_REQ_OP_MASK;

	return (op == REQ_OP_READ || op == REQ_OP_WRITE) && bio->bi_iter.bi_size > 0;
}

/* Kernel dev_t encoding (major << 20 | minor) of a request's whole disk. */
static __always_inline __u32 disk_dev(struct request *rq)
{
	return gendisk_dev(ioaz_rq_disk(rq));
}

/*
 * One stream table per CPU: a table shared by all CPUs is written on every
 * bio and its cache line would bounce between CPUs on each one. A process
 * that migrates to another CPU is judged random once, then its stream is
 * found again on the new CPU's table.
 *
 * The table is hashed, not scanned: a scan of every head cost ~150 ns per
 * random bio (measured with bpf_stats), a random bio being exactly the one
 * that matches nothing. Each set holds two heads, most recent first; a new
 * head pushes out the set's older one. A head is packed as
 * end_sector << 18 | run (2 bits) << 16 | the low 16 bits of this CPU's bio count
 * when it was written, and counts only for IOAZ_STREAM_AGE bios. Each
 * thread's own stream is also kept apart (task_stream), so the table is
 * needed only for streams that one submitter interleaves (AIO over several
 * files) or that pass between submitters (io_uring's workers): sixteen live
 * heads are room for fifteen of those, and every live head is one more place
 * for a random bio to land by chance.
 *
 * Every random bio leaves a head behind too, and random I/O packed in a
 * small region (a hot table, an index) lands on one of the live heads by
 * chance: in 1 MiB of 4 KiB blocks one bio in sixteen. So a stream is only
 * believed once it has run IOAZ_STREAM_CONFIRM + 1 bios: `run` counts the
 * continuations that led to a head, up to 3. The bios that continued the
 * stream before are counted sequential when the fourth confirms it; chance
 * hits count only when three follow one another.
 */
#define IOAZ_STREAM_AGE 16
#define IOAZ_STREAM_CONFIRM 3
#define IOAZ_HEAD_SHIFT 18

static __always_inline __u32 stream_set(__u64 sector)
{
	/* Fibonacci hashing of the bucket number: neighbouring buckets spread out. */
	return (((sector >> seq_bucket_shift) * 0x9E3779B97F4A7C15ULL) >> 58) &
	       (IOAZ_STREAM_SETS - 1);
}

static __always_inline bool continues(__u64 head, __u64 sector, __u64 clock)
{
	__u64 end = head >> IOAZ_HEAD_SHIFT;

	return head && ((clock - head) & 0xffff) < IOAZ_STREAM_AGE &&
	       sector + seq_tolerance_sectors >= end && sector <= end + seq_tolerance_sectors;
}

/* Removes and returns the head of set `set` that `sector` continues, or 0. */
static __always_inline __u64 take_head(struct ioaz_cpu_state *st, __u32 set, __u64 sector,
				       __u64 clock)
{
	__u64 *w = &st->stream_end[(set & (IOAZ_STREAM_SETS - 1)) * IOAZ_STREAM_WAYS];
	__u64 h = w[0];

	if (continues(h, sector, clock)) {
		w[0] = w[1];
		w[1] = 0;
		return h;
	}
	h = w[1];
	if (continues(h, sector, clock)) {
		w[1] = 0;
		return h;
	}
	return 0;
}

/*
 * How many bios to count sequential for this one (0, 1, or
 * IOAZ_STREAM_CONFIRM when it confirms the stream), and files its end as a
 * head, on this CPU and as the thread's own. `clock` is this CPU's bio count
 * for the device (ioaz_cpu_state.clock).
 */
static __always_inline __u32 continues_stream(struct ioaz_cpu_state *st,
					      struct ioaz_task_stream *ts, __u32 dev,
					      __u64 sector, __u64 end, __u64 clock)
{
	__u64 lo = sector > seq_tolerance_sectors ? sector - seq_tolerance_sectors : 0;
	__u32 set_lo = stream_set(lo), set_hi = stream_set(sector + seq_tolerance_sectors);
	__u64 h, run = 0;
	bool hit = false;
	__u32 seq = 0;
	__u64 *w;

	h = take_head(st, set_lo, sector, clock);
	if (!h && set_hi != set_lo)
		h = take_head(st, set_hi, sector, clock);
	if (h) {
		hit = true;
		run = (h >> 16) & 3;
	} else if (ts && ts->dev == dev && sector + seq_tolerance_sectors >= ts->end &&
		   sector <= ts->end + seq_tolerance_sectors) {
		hit = true;	/* the thread's own stream, left on another CPU */
		run = ts->run & 3;
	}
	if (hit) {
		seq = run == 2 ? IOAZ_STREAM_CONFIRM : run == 3 ? 1 : 0;
		run = run < 3 ? run + 1 : 3;
	}
	w = &st->stream_end[stream_set(end) * IOAZ_STREAM_WAYS];
	w[1] = w[0];
	w[0] = end << IOAZ_HEAD_SHIFT | run << 16 | (clock & 0xffff);
	if (ts) {
		ts->dev = dev;
		ts->run = run;
		ts->end = end;
	}
	return seq;
}

/* Adds a thread's pending bios to its count in `procs` (id: tgid << 32 | tid). */
static __always_inline void flush_proc(__u32 dev, __u64 id, __u64 bios)
{
	struct ioaz_proc_key pk = { .dev = dev, .tgid = id >> 32, .tid = (__u32)id };
	struct ioaz_proc_val pv = { .bios = bios }, *p;

	p = bpf_map_lookup_elem(&procs, &pk);
	if (p)
		p->bios += bios;
	else
		bpf_map_update_elem(&procs, &pk, &pv, BPF_NOEXIST);
}

SEC("tp_btf/block_bio_queue")
int on_bio_queue(unsigned long long *ctx)
{
	struct bio *bio = ioaz_last_arg(ctx, nargs_bio_queue);
	struct ioaz_dev *d;
	struct ioaz_task_stream *ts;
	__u64 sector, id;
	__u32 dev, seq;

	if (!bio_is_rw(bio))
		return 0;
	/* Keyed by the whole disk: after partition remapping the sector is disk-absolute. */
	dev = gendisk_dev(ioaz_bio_disk(bio));
	if (!dev)
		return 0;
	d = dev_of(dev);
	if (!d)
		return 0;
	sector = bio->bi_iter.bi_sector;
	ts = bpf_task_storage_get(&task_stream, bpf_get_current_task_btf(), 0,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	seq = continues_stream(&d->cpu, ts, dev, sector, sector + (bio->bi_iter.bi_size >> 9),
			       ++d->cpu.clock);
	if (!counting)
		return 0;	/* warming up: the table is filled, nothing counted */
	d->stats.bios++;
	d->stats.bios_seq += seq;

	id = bpf_get_current_pid_tgid();
	if (bpf_get_current_task_btf()->flags & IOAZ_PF_IO_WORKER)
		id = (id & ~0xffffffffULL) | (id >> 32);
	if (id != d->cpu.proc_id) {
		if (d->cpu.proc_pending)
			flush_proc(dev, d->cpu.proc_id, d->cpu.proc_pending);
		d->cpu.proc_id = id;
		d->cpu.proc_pending = 0;
	}
	d->cpu.proc_pending++;
	return 0;
}

/* The sampled period (0 or 1) a time falls in, or -1. */
static __always_inline int slot_of(__u64 t)
{
	if (t >= lat_from[0] && t < lat_until[0])
		return 0;
	if (t >= lat_from[1] && t < lat_until[1])
		return 1;
	return -1;
}

static __always_inline void slot_add(int slot, bool done)
{
	__u32 key = slot;
	struct ioaz_slot *s = bpf_map_lookup_elem(&slots, &key);

	if (!s)
		return;
	if (done)
		s->done++;
	else
		s->started++;
}

/*
 * A new request for a bio, attached only while a sampled period counts: the
 * requests the period started, so user space can tell when all are done.
 */
SEC("tp_btf/block_getrq")
int on_getrq(unsigned long long *ctx)
{
	int slot = slot_of(bpf_ktime_get_ns());

	if (slot >= 0)
		slot_add(slot, false);
	return 0;
}

static __always_inline int count_merge(__u32 dev, bool bio_merge)
{
	struct ioaz_dev *d;

	if (!dev || !counting)
		return 0;
	d = dev_of(dev);
	if (!d)
		return 0;
	if (bio_merge)
		d->stats.bio_merges++;
	else
		d->stats.rq_merges++;
	return 0;
}

SEC("tp_btf/block_bio_backmerge")
int on_bio_backmerge(unsigned long long *ctx)
{
	struct bio *bio = ioaz_last_arg(ctx, nargs_bio_merge);

	return count_merge(gendisk_dev(ioaz_bio_disk(bio)), true);
}

SEC("tp_btf/block_bio_frontmerge")
int on_bio_frontmerge(unsigned long long *ctx)
{
	struct bio *bio = ioaz_last_arg(ctx, nargs_bio_merge);

	return count_merge(gendisk_dev(ioaz_bio_disk(bio)), true);
}

SEC("tp_btf/block_rq_merge")
int on_rq_merge(unsigned long long *ctx)
{
	struct request *rq = ioaz_last_arg(ctx, nargs_rq_merge);

	return count_merge(disk_dev(rq), false);
}

/*
 * No shared in-flight counter: one touched by every request on every CPU
 * costs more than the whole probe budget. lat_sum_ns gives the time-averaged
 * number of requests in the block layer instead (Little's law: sum of
 * latencies / window length, as iostat's aqu-sz).
 */
SEC("tp_btf/block_rq_complete")
int BPF_PROG(on_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{
	__u64 now, start, issued, delta;
	struct ioaz_dev_stats *s;
	struct ioaz_dev *d;
	__u32 dev;
	int dir, slot;

	/*
	 * A driver may complete a request in parts: each part fires this
	 * tracepoint before __data_len is reduced by it, so the part that
	 * covers all that is left is the request's last.
	 */
	if (nr_bytes < rq->__data_len)
		return 0;
	/* First, as it is all a sampled probe does for most requests. */
	start = rq->start_time_ns;
	slot = slot_of(start);
	if (slot < 0)
		return 0;	/* sampled, and not submitted in a counted period */
	if (track_slots && rq->bio)	/* flush, passthrough: no block_getrq */
		slot_add(slot, true);
	dev = disk_dev(rq);
	if (!dev)
		return 0;
	d = dev_of(dev);
	if (!d)
		return 0;
	s = &d->stats;
	dir = rq_dir(rq);
	if (dir >= 0 && dir < IOAZ_DIRS) {
		s->completed[dir]++;
		s->completed_bytes[dir] += nr_bytes;
	}
	if (nr_bytes)
		size_add(s->size_hist, nr_bytes);

	now = bpf_ktime_get_ns();
	if (start && start <= now) {
		delta = now - start;
		s->lat_sum_ns += delta;
		hist_add(s->lat_hist, IOAZ_LAT_SLOTS, delta);
	} else {
		s->lat_untimed++;
	}
	issued = rq->io_start_time_ns;
	if (issued && issued <= now) {
		delta = now - issued;
		s->svc_count++;
		s->svc_sum_ns += delta;
		hist_add(s->svc_hist, IOAZ_LAT_SLOTS, delta);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
