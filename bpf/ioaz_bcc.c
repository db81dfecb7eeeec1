// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ioaz's probe for BCC: the counters of ioaz.bpf.c, in the same map layouts
 * (ioaz.h), for kernels that have their headers installed but no BTF, where
 * the CO-RE object cannot load. BCC compiles it when ioazd starts, against
 * /lib/modules/$(uname -r)/build (agent/ioaz/probe/bcc_object.py); the
 * stream detector and the histograms are the CO-RE probe's own
 * (counting.bpf.h), so both read a workload alike.
 *
 * What differs, and why:
 *  - bios, merges and new requests come from the classic tracepoints, whose
 *    fields (dev, sector, nr_sector, rwbs) are read by name from the
 *    tracepoint's format and have kept their meaning across versions. Their
 *    dev is the partition's; user space adds partitions into their disk.
 *  - the completion needs what only struct request holds (its timestamps and
 *    remaining length): the raw tracepoint, with the struct as these headers
 *    lay it out;
 *  - each thread's last bio is kept in an LRU hash keyed by thread: task
 *    storage needs a BTF task pointer;
 *  - the sampler's switches (ioaz.bpf.c's globals) live in the one-entry
 *    array `ctl`: BCC has no global data. All zero, as it is when loaded,
 *    means paused: nothing counted, no completion recorded.
 *  - seq_tolerance_sectors and seq_bucket_shift come as -D macros.
 */
#include <uapi/linux/ptrace.h>
#include <linux/version.h>
#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/sched.h>
#include "ioaz.h"
#include "counting.bpf.h"

/* What user space switches while the probe runs (sampler.py: set_global). */
struct ioaz_ctl {
	u64 counting;
	u64 lat_from[2];
	u64 lat_until[2];
	u64 track_slots;
	u64 track_made;		/* as ioaz.bpf.c's */
};

BPF_ARRAY(ctl, struct ioaz_ctl, 1);
BPF_F_TABLE("percpu_hash", u32, struct ioaz_dev, dev_stats, IOAZ_MAX_DEVS, BPF_F_NO_PREALLOC);
BPF_TABLE("lru_percpu_hash", struct ioaz_proc_key, struct ioaz_proc_val, procs, IOAZ_MAX_PROCS);
BPF_TABLE("lru_hash", u32, struct ioaz_task_stream, task_stream, 16384);
BPF_PERCPU_ARRAY(slots, struct ioaz_slot, 2);
/* A zeroed device value to create entries from: too big for the 512-byte stack. */
BPF_ARRAY(zero_dev, struct ioaz_dev, 1);

static __always_inline struct ioaz_ctl *ctl_get(void)
{
	int k = 0;

	return ctl.lookup(&k);
}

static __always_inline struct ioaz_dev *dev_of(u32 dev)
{
	struct ioaz_dev *d = dev_stats.lookup(&dev), *z;
	int k = 0;

	if (d)
		return d;
	z = zero_dev.lookup(&k);
	if (!z)
		return 0;
	dev_stats.insert(&dev, z);
	return dev_stats.lookup(&dev);
}

/*
 * A read or a write with data, by the tracepoint's rwbs string: an optional
 * 'F' (a preflush ahead of the data), then the operation's letter.
 */
static __always_inline bool rwbs_is_rw(const char *rwbs, u32 nr_sector)
{
	char c = rwbs[0] == 'F' ? rwbs[1] : rwbs[0];

	return nr_sector > 0 && (c == 'R' || c == 'W');
}

/*
 * Read, write or other (enum ioaz_dir) by the rwbs string, data or none: an
 * empty preflush write ("FW") completes as a write too (op_dir).
 */
static __always_inline int rwbs_dir(const char *rwbs)
{
	char c = rwbs[0] == 'F' ? rwbs[1] : rwbs[0];

	return c == 'R' ? IOAZ_DIR_READ : c == 'W' ? IOAZ_DIR_WRITE : IOAZ_DIR_OTHER;
}

static __always_inline void flush_proc(u32 dev, u64 id, u64 bios)
{
	struct ioaz_proc_key pk = { .dev = dev, .tgid = id >> 32, .tid = (u32)id };
	struct ioaz_proc_val pv = { .bios = bios }, *p;

	p = procs.lookup(&pk);
	if (p)
		p->bios += bios;
	else
		procs.insert(&pk, &pv);
}

static __always_inline struct ioaz_task_stream *thread_stream(u32 tid)
{
	struct ioaz_task_stream *ts = task_stream.lookup(&tid), fresh = {};

	if (ts)
		return ts;
	task_stream.insert(&tid, &fresh);
	return task_stream.lookup(&tid);
}

TRACEPOINT_PROBE(block, block_bio_queue)
{
	struct ioaz_task_stream *ts;
	struct task_struct *task;
	struct ioaz_ctl *c;
	struct ioaz_dev *d;
	u64 sector, id, pending, flush_id = 0;
	u32 dev = args->dev, seq, flags = 0;

	if (!rwbs_is_rw(args->rwbs, args->nr_sector) || !dev)
		return 0;
	c = ctl_get();
	d = dev_of(dev);
	if (!c || !d)
		return 0;
	sector = args->sector;
	id = bpf_get_current_pid_tgid();
	ts = thread_stream((u32)id);
	seq = continues_stream(&d->cpu, ts, dev, sector, sector + args->nr_sector,
			       ++d->cpu.clock);
	if (!c->counting)
		return 0;	/* warming up: the table is filled, nothing counted */
	task = (struct task_struct *)bpf_get_current_task();
	bpf_probe_read_kernel(&flags, sizeof(flags), &task->flags);
	pending = count_bio(d, seq, submitter_id(id, flags), &flush_id);
	if (pending)
		flush_proc(dev, flush_id, pending);
	return 0;
}

static __always_inline int slot_of(struct ioaz_ctl *c, u64 t)
{
	return period_of(t, c->lat_from[0], c->lat_until[0], c->lat_from[1], c->lat_until[1]);
}

static __always_inline void slot_add(int slot, bool done)
{
	int key = slot;
	struct ioaz_slot *s = slots.lookup(&key);

	if (!s)
		return;
	if (done)
		s->done++;
	else
		s->started++;
}

TRACEPOINT_PROBE(block, block_getrq)
{
	struct ioaz_ctl *c = ctl_get();
	struct ioaz_dev *d;
	int slot;

	if (!c)
		return 0;
	if (c->track_slots) {
		slot = slot_of(c, bpf_ktime_get_ns());
		if (slot >= 0)
			slot_add(slot, false);
	}
	/* the requests made, for the count in flight (ioaz.h, in_flight) */
	if (!c->track_made || !args->dev)
		return 0;
	d = dev_of(args->dev);
	if (d)
		count_made(&d->stats, rwbs_dir(args->rwbs), 1);
	return 0;
}

static __always_inline int on_merge(u32 dev, bool bio_merge)
{
	struct ioaz_ctl *c = ctl_get();
	struct ioaz_dev *d;

	if (!dev || !c || !c->counting)
		return 0;
	d = dev_of(dev);
	if (d)
		count_merge(&d->stats, bio_merge);
	return 0;
}

TRACEPOINT_PROBE(block, block_bio_backmerge)
{
	return on_merge(args->dev, true);
}

TRACEPOINT_PROBE(block, block_bio_frontmerge)
{
	return on_merge(args->dev, true);
}

TRACEPOINT_PROBE(block, block_rq_merge)
{
	struct ioaz_ctl *c = ctl_get();
	struct ioaz_dev *d;

	/* merged away, it will not complete: unmade whatever `counting` says */
	if (c && c->track_made && args->dev) {
		d = dev_of(args->dev);
		if (d)
			count_made(&d->stats, rwbs_dir(args->rwbs), -1);
	}
	return on_merge(args->dev, false);
}

/*
 * The disk of a request: rq->q->disk since v5.17 (f3fa33acca9f, "block:
 * remove the ->rq_disk field in struct request"), rq->rq_disk before. The
 * headers BCC compiles against are the running kernel's own, so their
 * version says which; a kernel that backported the change fails to compile
 * here, loudly, rather than reading the wrong field.
 */
static __always_inline u32 rq_devt(struct request *rq)
{
	struct gendisk *disk = 0;
	int major = 0, first_minor = 0;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(5, 17, 0)
	struct request_queue *q = 0;

	bpf_probe_read_kernel(&q, sizeof(q), &rq->q);
	if (q)
		bpf_probe_read_kernel(&disk, sizeof(disk), &q->disk);
#else
	bpf_probe_read_kernel(&disk, sizeof(disk), &rq->rq_disk);
#endif
	if (!disk)
		return 0;
	bpf_probe_read_kernel(&major, sizeof(major), &disk->major);
	bpf_probe_read_kernel(&first_minor, sizeof(first_minor), &disk->first_minor);
	return ((u32)major << 20) | (u32)first_minor;
}

/* block_rq_complete(struct request *rq, blk_status_t error, unsigned int nr_bytes) */
RAW_TRACEPOINT_PROBE(block_rq_complete)
{
	struct request *rq = (struct request *)ctx->args[0];
	u32 nr_bytes = (u32)ctx->args[2], data_len = 0, dev, cmd_flags = 0;
	u64 start = 0, issued = 0;
	struct ioaz_ctl *c = ctl_get();
	struct ioaz_dev *d;
	void *bio = 0;
	int slot;

	if (!c)
		return 0;
	/* Only the part that covers all that is left is the request's last. */
	bpf_probe_read_kernel(&data_len, sizeof(data_len), &rq->__data_len);
	if (nr_bytes < data_len)
		return 0;
	bpf_probe_read_kernel(&start, sizeof(start), &rq->start_time_ns);
	slot = slot_of(c, start);
	if (slot < 0 && !c->track_made)
		return 0;	/* sampled, and not submitted in a counted period */
	bpf_probe_read_kernel(&bio, sizeof(bio), &rq->bio);
	if (slot >= 0 && c->track_slots && bio)	/* flush, passthrough: no block_getrq */
		slot_add(slot, true);
	dev = rq_devt(rq);
	if (!dev)
		return 0;
	d = dev_of(dev);
	if (!d)
		return 0;
	bpf_probe_read_kernel(&cmd_flags, sizeof(cmd_flags), &rq->cmd_flags);
	if (c->track_made && bio)	/* made at block_getrq, so not a flush's own */
		count_made(&d->stats, op_dir(cmd_flags & REQ_OP_MASK), -1);
	if (slot < 0)
		return 0;
	bpf_probe_read_kernel(&issued, sizeof(issued), &rq->io_start_time_ns);
	count_completion(&d->stats, op_dir(cmd_flags & REQ_OP_MASK), nr_bytes, start, issued,
			 bpf_ktime_get_ns());
	return 0;
}
