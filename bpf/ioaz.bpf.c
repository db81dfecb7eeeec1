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
 *    scheduler in use;
 *  - the requests in flight: made at block_getrq, less those merged away
 *    (block_rq_merge) and those completed, so that the requests an elevator
 *    holds past a window count before they complete (ioaz.h, in_flight).
 *
 * Cost is the design constraint (a fast device spends a few microseconds of
 * CPU per request): three programs per request (sampled, two for a sample
 * of the requests and none for the rest), one per-CPU map lookup each,
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

#include "counting.bpf.h"

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
 * Each thread's last bio (struct ioaz_task_stream, counting.bpf.h), task-local, so no
 * CPU writes what another reads. (Task storage in tracing programs: v5.11,
 * a10787e6d58c, "bpf: Enable task local storage for tracing programs".)
 */
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
/*
 * Count the requests in flight (ioaz.h, in_flight): 1 unsampled; sampled, 1
 * while every request is seen (the sampler's full periods) and 0 for good
 * after the first period that is not, whose makes and completions were
 * partly missed.
 */
volatile __u64 track_made = 1;

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

static __always_inline int rq_dir(struct request *rq)
{
	return op_dir(rq->cmd_flags & IOAZ_REQ_OP_MASK);
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
	__u64 sector, id, pending, flush_id = 0;
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
	id = submitter_id(bpf_get_current_pid_tgid(), bpf_get_current_task_btf()->flags);
	pending = count_bio(d, seq, id, &flush_id);
	if (pending)
		flush_proc(dev, flush_id, pending);
	return 0;
}

/* The sampled period (0 or 1) a time falls in, or -1. */
static __always_inline int slot_of(__u64 t)
{
	return period_of(t, lat_from[0], lat_until[0], lat_from[1], lat_until[1]);
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
 * A new request for a bio: the requests made, by direction, for the count in
 * flight (track_made); sampled, the requests the period started, so user
 * space can tell when all are done (track_slots).
 */
SEC("tp_btf/block_getrq")
int on_getrq(unsigned long long *ctx)
{
	struct bio *bio;
	struct ioaz_dev *d;
	__u32 dev;
	int slot;

	if (track_slots) {
		slot = slot_of(bpf_ktime_get_ns());
		if (slot >= 0)
			slot_add(slot, false);
	}
	if (!track_made)
		return 0;
	bio = (void *)(nargs_getrq >= 2 ? ctx[1] : ctx[0]);
	dev = gendisk_dev(ioaz_bio_disk(bio));
	if (!dev)
		return 0;
	d = dev_of(dev);
	if (d)
		count_made(&d->stats, op_dir(bio->bi_opf & IOAZ_REQ_OP_MASK), 1);
	return 0;
}

static __always_inline int on_merge(__u32 dev, bool bio_merge)
{
	struct ioaz_dev *d;

	if (!dev || !counting)
		return 0;
	d = dev_of(dev);
	if (d)
		count_merge(&d->stats, bio_merge);
	return 0;
}

SEC("tp_btf/block_bio_backmerge")
int on_bio_backmerge(unsigned long long *ctx)
{
	struct bio *bio = ioaz_last_arg(ctx, nargs_bio_merge);

	return on_merge(gendisk_dev(ioaz_bio_disk(bio)), true);
}

SEC("tp_btf/block_bio_frontmerge")
int on_bio_frontmerge(unsigned long long *ctx)
{
	struct bio *bio = ioaz_last_arg(ctx, nargs_bio_merge);

	return on_merge(gendisk_dev(ioaz_bio_disk(bio)), true);
}

SEC("tp_btf/block_rq_merge")
int on_rq_merge(unsigned long long *ctx)
{
	struct request *rq = ioaz_last_arg(ctx, nargs_rq_merge);
	__u32 dev = disk_dev(rq);
	struct ioaz_dev *d;

	if (!dev)
		return 0;
	d = dev_of(dev);
	if (!d)
		return 0;
	/* merged away, it will not complete: unmade whatever `counting` says */
	if (track_made)
		count_made(&d->stats, rq_dir(rq), -1);
	if (counting)
		count_merge(&d->stats, false);
	return 0;
}

/*
 * No shared in-flight counter: one touched by every request on every CPU
 * costs more than the whole probe budget. lat_sum_ns gives the time-averaged
 * number of requests in the block layer (Little's law: sum of latencies /
 * window length, as iostat's aqu-sz); the per-CPU in_flight, summed, the
 * number at the instant user space reads.
 */
SEC("tp_btf/block_rq_complete")
int BPF_PROG(on_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{
	struct ioaz_dev *d;
	__u64 start;
	__u32 dev;
	int slot;

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
	if (slot < 0 && !track_made)
		return 0;	/* sampled, and not submitted in a counted period */
	if (slot >= 0 && track_slots && rq->bio)	/* flush, passthrough: no block_getrq */
		slot_add(slot, true);
	dev = disk_dev(rq);
	if (!dev)
		return 0;
	d = dev_of(dev);
	if (!d)
		return 0;
	if (track_made && rq->bio)	/* made at block_getrq, so not a flush's own */
		count_made(&d->stats, rq_dir(rq), -1);
	if (slot < 0)
		return 0;
	count_completion(&d->stats, rq_dir(rq), nr_bytes, start, rq->io_start_time_ns,
			 bpf_ktime_get_ns());
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
