// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ioaz block-layer probe: cumulative per-device counters and log2 histograms,
 * read by user space once a window. No per-event traffic to user space.
 *
 * Where each number is taken, and why there:
 *  - requests, bytes, latency: at block_rq_issue / block_rq_complete,
 *    which fire for every request whatever the scheduler (block_rq_insert
 *    only fires for requests that pass through a scheduler queue);
 *  - sequentiality and the submitting process: at block_bio_queue, where the
 *    current task is still the submitter (at issue it is often a kworker) and
 *    before merging has changed request boundaries, so neither depends on the
 *    scheduler in use.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ioaz.h"
#include "core_fixes.bpf.h"

/* A bio within this many sectors of a stream's end continues that stream. */
const volatile __u64 seq_tolerance_sectors = 64;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, IOAZ_MAX_DEVS);
	__type(key, __u32);
	__type(value, struct ioaz_dev_stats);
} dev_stats SEC(".maps");

/*
 * One stream table per CPU: a table shared by all CPUs is written on every
 * bio and its cache line would bounce between CPUs on each one (measured:
 * the largest part of the probe's cost at 140k IOPS on two cores). A
 * process that migrates to another CPU is judged random once, then its
 * stream is found again on the new CPU's table.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, IOAZ_MAX_DEVS);
	__type(key, __u32);
	__type(value, struct ioaz_streams);
} streams SEC(".maps");

/* Per-CPU bio counts per (device, process): no shared counter to bounce. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, IOAZ_MAX_PROCS);
	__type(key, struct ioaz_proc_key);
	__type(value, struct ioaz_proc_val);
} procs SEC(".maps");

/* Issue time of each request in flight, keyed by its address. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, IOAZ_MAX_INFLIGHT);
	__type(key, __u64);
	__type(value, __u64);
} start SEC(".maps");


static const struct ioaz_dev_stats zero_stats;
static const struct ioaz_streams zero_streams;

static __always_inline struct ioaz_dev_stats *stats_of(__u32 dev)
{
	struct ioaz_dev_stats *s = bpf_map_lookup_elem(&dev_stats, &dev);

	if (s)
		return s;
	bpf_map_update_elem(&dev_stats, &dev, &zero_stats, BPF_NOEXIST);
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

static __always_inline __u32 log2_slot(__u64 v, __u32 slots)
{
	__u32 r = log2_u64(v);

	return r < slots ? r : slots - 1;
}

static __always_inline int rq_dir(struct request *rq)
{
	/* REQ_OP_MASK has been the low 8 bits of cmd_flags since v4.10. */
	__u32 op = rq->cmd_flags & 0xff;

	switch (op) {
	case 0:		/* REQ_OP_READ */
		return IOAZ_DIR_READ;
	case 1:		/* REQ_OP_WRITE */
	case 9:		/* REQ_OP_WRITE_ZEROES */
		return IOAZ_DIR_WRITE;
	case 2:		/* REQ_OP_FLUSH */
		return IOAZ_DIR_FLUSH;
	case 3:		/* REQ_OP_DISCARD */
	case 5:		/* REQ_OP_SECURE_ERASE */
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
	__u32 op = bio->bi_opf & 0xff;

	return (op == 0 || op == 1) && bio->bi_iter.bi_size > 0;
}

/* Kernel dev_t encoding (major << 20 | minor) of a request's whole disk. */
static __always_inline __u32 disk_dev(struct request *rq)
{
	return gendisk_dev(ioaz_rq_disk(rq));
}

static __always_inline bool continues_stream(__u32 dev, __u64 sector, __u64 end)
{
	struct ioaz_streams *st = bpf_map_lookup_elem(&streams, &dev);
	__u32 slot;

	if (!st) {
		bpf_map_update_elem(&streams, &dev, &zero_streams, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&streams, &dev);
		if (!st)
			return false;
	}
	for (int i = 0; i < IOAZ_STREAMS; i++) {
		__u64 head = st->end[i];

		if (head && sector + seq_tolerance_sectors >= head &&
		    sector <= head + seq_tolerance_sectors) {
			st->end[i] = end;
			return true;
		}
	}
	/* A new stream replaces the oldest one. */
	slot = st->next % IOAZ_STREAMS;
	st->end[slot] = end;
	st->next = slot + 1;
	return false;
}

SEC("tp_btf/block_bio_queue")
int on_bio_queue(unsigned long long *ctx)
{
	struct bio *bio = ioaz_last_arg(ctx, nargs_bio_queue);
	struct ioaz_proc_key pk = {};
	struct ioaz_proc_val pv = { .bios = 1 }, *p;
	struct ioaz_dev_stats *s;
	__u64 sector;
	__u32 dev;

	if (!bio_is_rw(bio))
		return 0;
	/* Keyed by the whole disk: after partition remapping the sector is disk-absolute. */
	dev = gendisk_dev(ioaz_bio_disk(bio));
	if (!dev)
		return 0;
	s = stats_of(dev);
	if (!s)
		return 0;
	sector = bio->bi_iter.bi_sector;
	s->bios++;
	if (continues_stream(dev, sector, sector + (bio->bi_iter.bi_size >> 9)))
		s->bios_seq++;

	pk.dev = dev;
	pk.tgid = bpf_get_current_pid_tgid() >> 32;
	p = bpf_map_lookup_elem(&procs, &pk);
	if (p)
		p->bios++;
	else
		bpf_map_update_elem(&procs, &pk, &pv, BPF_NOEXIST);
	return 0;
}

static __always_inline int count_merge(__u32 dev, bool bio_merge)
{
	struct ioaz_dev_stats *s;

	if (!dev)
		return 0;
	s = stats_of(dev);
	if (!s)
		return 0;
	if (bio_merge)
		s->bio_merges++;
	else
		s->rq_merges++;
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

SEC("tp_btf/block_rq_issue")
int on_rq_issue(unsigned long long *ctx)
{
	struct request *rq = ioaz_last_arg(ctx, nargs_rq_issue);
	__u64 key = (__u64)rq;
	__u64 now = bpf_ktime_get_ns();
	__u32 dev = disk_dev(rq);
	__u32 bytes = rq->__data_len;
	int dir = rq_dir(rq);
	struct ioaz_dev_stats *s;

	if (!dev)
		return 0;
	/*
	 * A requeued request is issued again: NOEXIST keeps its first issue
	 * time, so its latency includes the requeue, as the submitter saw it.
	 */
	bpf_map_update_elem(&start, &key, &now, BPF_NOEXIST);

	s = stats_of(dev);
	if (!s)
		return 0;
	if (dir >= 0 && dir < IOAZ_DIRS) {
		s->issued[dir]++;
		s->issued_bytes[dir] += bytes;
	}
	if (bytes)
		s->size_hist[log2_slot(bytes, IOAZ_SIZE_SLOTS)]++;
	return 0;
}

/*
 * No shared in-flight counter: one touched by every request on every CPU
 * costs more than the whole probe budget. lat_sum_ns gives the time-averaged
 * in-flight count instead (Little's law: sum of latencies / window length).
 */
SEC("tp_btf/block_rq_complete")
int BPF_PROG(on_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq;
	__u64 *tsp, delta;
	int dir;
	struct ioaz_dev_stats *s;

	/* Requests issued before the probe was attached are not ours to count. */
	tsp = bpf_map_lookup_elem(&start, &key);
	if (!tsp)
		return 0;
	delta = bpf_ktime_get_ns() - *tsp;
	bpf_map_delete_elem(&start, &key);

	s = stats_of(disk_dev(rq));
	if (!s)
		return 0;
	dir = rq_dir(rq);
	if (dir >= 0 && dir < IOAZ_DIRS) {
		s->completed[dir]++;
		s->completed_bytes[dir] += nr_bytes;
	}
	s->lat_sum_ns += delta;
	s->lat_hist[log2_slot(delta, IOAZ_LAT_SLOTS)]++;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
