// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ioaz block-layer probe: cumulative per-device counters and log2 histograms,
 * read by user space once a window. No per-event traffic to user space.
 *
 * Where each number is taken, and why there:
 *  - requests, bytes, latency, depth: at block_rq_issue / block_rq_complete,
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

/* Shared across CPUs without a lock (tracing programs cannot take
 * bpf_spin_lock): a race can misjudge one bio, never corrupt a counter. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, IOAZ_MAX_DEVS);
	__type(key, __u32);
	__type(value, struct ioaz_streams);
} streams SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
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

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, IOAZ_MAX_DEVS);
	__type(key, __u32);
	__type(value, __u64);
} inflight SEC(".maps");

static const struct ioaz_dev_stats zero_stats;
static const struct ioaz_streams zero_streams;
static const __u64 zero_u64;

static __always_inline struct ioaz_dev_stats *stats_of(__u32 dev)
{
	struct ioaz_dev_stats *s = bpf_map_lookup_elem(&dev_stats, &dev);

	if (s)
		return s;
	bpf_map_update_elem(&dev_stats, &dev, &zero_stats, BPF_NOEXIST);
	return bpf_map_lookup_elem(&dev_stats, &dev);
}

static __always_inline __u32 log2_slot(__u64 v, __u32 slots)
{
	__u32 r = 0;

	/* floor(log2(v)), 0 for v <= 1; a bounded loop the verifier accepts. */
	for (int i = 0; i < 63 && v > 1; i++) {
		v >>= 1;
		r++;
	}
	return r < slots ? r : slots - 1;
}

static __always_inline int rq_dir(struct request *rq)
{
	/* REQ_OP_MASK has been the low 8 bits of cmd_flags since v4.10. */
	__u32 op = BPF_CORE_READ(rq, cmd_flags) & 0xff;

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
	major = BPF_CORE_READ(disk, major);
	minor = BPF_CORE_READ(disk, first_minor);
	return ((__u32)major << 20) | (__u32)minor;
}

/* Reads and writes with data: flushes, discards and empty bios say nothing about the pattern. */
static __always_inline bool bio_is_rw(struct bio *bio)
{
	__u32 op = BPF_CORE_READ(bio, bi_opf) & 0xff;

	return (op == 0 || op == 1) && BPF_CORE_READ(bio, bi_iter.bi_size) > 0;
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
	struct ioaz_proc_val pv = {}, *p;
	struct ioaz_dev_stats *s;
	__u64 now = bpf_ktime_get_ns();
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
	sector = BPF_CORE_READ(bio, bi_iter.bi_sector);
	s->bios++;
	if (continues_stream(dev, sector, sector + (BPF_CORE_READ(bio, bi_iter.bi_size) >> 9)))
		s->bios_seq++;

	pk.dev = dev;
	pk.tgid = bpf_get_current_pid_tgid() >> 32;
	p = bpf_map_lookup_elem(&procs, &pk);
	if (p) {
		p->last_ns = now;
		__sync_fetch_and_add(&p->bios, 1);
	} else {
		pv.last_ns = now;
		pv.bios = 1;
		bpf_map_update_elem(&procs, &pk, &pv, BPF_ANY);
	}
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
	__u32 bytes = BPF_CORE_READ(rq, __data_len);
	int dir = rq_dir(rq);
	struct ioaz_dev_stats *s;
	__u64 *depth, d = 1;
	bool requeued;

	if (!dev)
		return 0;
	/* A requeued request is issued again: count it in flight only once. */
	requeued = bpf_map_lookup_elem(&start, &key) != NULL;
	bpf_map_update_elem(&start, &key, &now, BPF_ANY);

	depth = bpf_map_lookup_elem(&inflight, &dev);
	if (!depth) {
		bpf_map_update_elem(&inflight, &dev, &zero_u64, BPF_NOEXIST);
		depth = bpf_map_lookup_elem(&inflight, &dev);
	}
	if (depth)
		d = requeued ? *depth : __sync_fetch_and_add(depth, 1) + 1;

	s = stats_of(dev);
	if (!s)
		return 0;
	if (dir >= 0 && dir < IOAZ_DIRS) {
		s->issued[dir]++;
		s->issued_bytes[dir] += bytes;
	}
	s->depth_sum += d;
	if (bytes)
		s->size_hist[log2_slot(bytes, IOAZ_SIZE_SLOTS)]++;
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(on_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq;
	__u64 *tsp, delta, *depth;
	__u32 dev;
	int dir;
	struct ioaz_dev_stats *s;

	/* Requests issued before the probe was attached are not ours to count. */
	tsp = bpf_map_lookup_elem(&start, &key);
	if (!tsp)
		return 0;
	delta = bpf_ktime_get_ns() - *tsp;
	bpf_map_delete_elem(&start, &key);

	dev = disk_dev(rq);
	depth = bpf_map_lookup_elem(&inflight, &dev);
	if (depth && *depth > 0)
		__sync_fetch_and_add(depth, -1);

	s = stats_of(dev);
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
