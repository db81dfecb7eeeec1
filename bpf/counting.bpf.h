/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What one bio or request adds to the counters, shared by the CO-RE probe
 * (ioaz.bpf.c) and the BCC probe (ioaz_bcc.c): the histograms' slots, a
 * request's direction, the stream detector, a bio's submitter and a
 * completion's counts. Nothing here touches a map or a kernel struct (only
 * ioaz.h's), so both compile it as it is. The includer defines
 * seq_tolerance_sectors and seq_bucket_shift first (settings in .rodata for
 * CO-RE, macros for BCC) and provides the __u32/__u64 types and REQ_OP_*.
 */
#ifndef __IOAZ_COUNTING_BPF_H
#define __IOAZ_COUNTING_BPF_H

#ifndef barrier_var
#define barrier_var(var) asm volatile("" : "+r"(var))
#endif

/*
 * The last bio of each thread: where its stream ends and how far it has run
 * (`run` as a stream head's, below). A synchronous reader often wakes on
 * another CPU than the one it last submitted from, and a per-CPU stream
 * table alone then calls each of its bios random. The CO-RE probe keeps it
 * in task storage, the BCC probe in a map keyed by thread.
 */
struct ioaz_task_stream {
	__u32 dev;
	__u32 run;
	__u64 end;
};

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
static __always_inline void size_hist_add(__u64 *hist, __u64 v)
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

/* The direction (enum ioaz_dir) of a request operation (REQ_OP_*). */
static __always_inline int op_dir(__u32 op)
{
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


/*
 * io_uring's io-wq workers (PF_IO_WORKER in include/linux/sched.h) submit what would have blocked
 * the ring's owner; create_io_thread() gives them CLONE_IO, so they share its I/O context and a
 * scheduler queues their requests as the owner's. They count as the process's main thread, not as
 * submitters of their own (4 fio io_uring jobs at depth 32 read 8 threads without this).
 */
#define IOAZ_PF_IO_WORKER 0x00000010

/* The submitter of a bio: tgid << 32 | tid, an io-wq worker as its process's main thread. */
static __always_inline __u64 submitter_id(__u64 pid_tgid, __u32 task_flags)
{
	if (task_flags & IOAZ_PF_IO_WORKER)
		return (pid_tgid & ~0xffffffffULL) | (pid_tgid >> 32);
	return pid_tgid;
}

/*
 * Counts a counted bio of submitter `id` on this CPU. Its bios wait in proc_pending while the
 * same thread submits; when another does, returns the previous thread's pending count and its id
 * in *flush_id, for the caller to add to its `procs` map (0: nothing to add).
 */
static __always_inline __u64 count_bio(struct ioaz_dev *d, __u32 seq, __u64 id, __u64 *flush_id)
{
	__u64 flush = 0;

	d->stats.bios++;
	d->stats.bios_seq += seq;
	if (id != d->cpu.proc_id) {
		flush = d->cpu.proc_pending;
		*flush_id = d->cpu.proc_id;
		d->cpu.proc_id = id;
		d->cpu.proc_pending = 0;
	}
	d->cpu.proc_pending++;
	return flush;
}

/* A merge: of a bio into a queued request (bio_merge), or of two requests. */
static __always_inline void count_merge(struct ioaz_dev_stats *s, bool bio_merge)
{
	if (bio_merge)
		s->bio_merges++;
	else
		s->rq_merges++;
}

/*
 * A read or write request made (one), or merged away or completed (minus
 * one): the requests in flight (ioaz.h). Atomic though per CPU: a completion
 * interrupts a submission on the same CPU, and a plain add the interrupted
 * program stores after it loses the completion's, for good (a lost
 * completion is a request in flight forever; a lost latency is one sample).
 */
static __always_inline void count_made(struct ioaz_dev_stats *s, int dir, __s64 n)
{
	if (dir == IOAZ_DIR_READ || dir == IOAZ_DIR_WRITE)
		__sync_fetch_and_add(&s->in_flight[dir], n);
}

/* The sampled period (0 or 1) a time falls in, or -1: [from[i], until[i]). */
static __always_inline int period_of(__u64 t, __u64 from0, __u64 until0, __u64 from1,
				     __u64 until1)
{
	if (t >= from0 && t < until0)
		return 0;
	if (t >= from1 && t < until1)
		return 1;
	return -1;
}

/*
 * A request's final completion: its direction and bytes, its size, its latency from the block
 * layer's submit stamp (start; 0: untimed) and its service time from the issue stamp (issued;
 * 0 where the queue keeps no I/O statistics), both up to `now`.
 */
static __always_inline void count_completion(struct ioaz_dev_stats *s, int dir, __u32 nr_bytes,
					     __u64 start, __u64 issued, __u64 now)
{
	__u64 delta;

	if (dir >= 0 && dir < IOAZ_DIRS) {
		s->completed[dir]++;
		s->completed_bytes[dir] += nr_bytes;
	}
	if (nr_bytes)
		size_hist_add(s->size_hist, nr_bytes);
	if (start && start <= now) {
		delta = now - start;
		s->lat_sum_ns += delta;
		if (dir == IOAZ_DIR_READ)
			s->lat_read_ns += delta;
		hist_add(s->lat_hist, IOAZ_LAT_SLOTS, delta);
	} else {
		s->lat_untimed++;
	}
	if (issued && issued <= now) {
		delta = now - issued;
		s->svc_count++;
		s->svc_sum_ns += delta;
		hist_add(s->svc_hist, IOAZ_LAT_SLOTS, delta);
	}
}

#endif /* __IOAZ_COUNTING_BPF_H */
