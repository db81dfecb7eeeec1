/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Map value layouts shared by ioaz.bpf.c and the Python reader
 * (agent/ioaz/probe/layout.py mirrors this file; tests compare the sizes).
 * Fixed-width fields only, all __u64 in the stats struct, so the reader can
 * treat a value as an array of u64.
 */
#ifndef __IOAZ_H
#define __IOAZ_H

#define IOAZ_DIRS		5	/* read, write, discard, flush, other */
#define IOAZ_LAT_SLOTS		48	/* log2(ns): up to ~39 hours */
#define IOAZ_SIZE_SLOTS		32	/* powers of two and between: size_hist_add() */
#define IOAZ_SIZE_MIN_LOG2	9	/* slot 0: up to 512 bytes */
#define IOAZ_STREAM_SETS	64	/* stream heads per device and CPU: 64 sets of 2, */
#define IOAZ_STREAM_WAYS	2	/* room for 16 live heads and strays */
#define IOAZ_MAX_DEVS		256
#define IOAZ_MAX_PROCS		8192

enum ioaz_dir {
	IOAZ_DIR_READ,
	IOAZ_DIR_WRITE,
	IOAZ_DIR_DISCARD,
	IOAZ_DIR_FLUSH,
	IOAZ_DIR_OTHER,
};

/*
 * Cumulative per-device counters, one copy per CPU, summed by user space.
 * Requests are counted once, at their final completion, whatever the
 * scheduler. Latency is submit-to-complete, from the timestamp the block
 * layer itself puts in every request it accounts (rq->start_time_ns, the
 * one /proc/diskstats' times come from): what the submitting process waits,
 * and no per-request map to pay for. Service time (issue-to-complete) is
 * taken from rq->io_start_time_ns, which the kernel sets only on queues
 * that keep I/O statistics (writeback throttling, kyber, blk-iolatency);
 * svc_count says how many requests had it.
 */
struct ioaz_dev_stats {
	__u64 completed[IOAZ_DIRS];
	__u64 completed_bytes[IOAZ_DIRS];
	__u64 bios;		/* read/write bios submitted (block_bio_queue) */
	__u64 bios_seq;		/* of which continued a stream of three or more */
	__u64 bio_merges;	/* bios merged into a queued request */
	__u64 rq_merges;	/* requests merged into another request */
	__u64 lat_sum_ns;	/* sum of submit-to-complete latency (also the
				 * time-integral of requests in the block layer) */
	__u64 lat_untimed;	/* completions without a submit timestamp */
	__u64 lat_read_ns;	/* of lat_sum_ns, the reads': their time-integral
				 * alone, as diskstats' "ms spent reading" */
	__u64 svc_count;	/* completions with an issue timestamp */
	__u64 svc_sum_ns;	/* sum of their issue-to-complete times */
	/*
	 * Read and write requests in flight: made (block_getrq), less those
	 * merged into another (block_rq_merge) and those completed. A CPU's
	 * count wraps below zero (a request made on one CPU completes on
	 * another); the sum over CPUs, modulo 2^64, is right, less the requests
	 * already in flight when the probe attached (agent/ioaz/probe/
	 * in_flight.py). Counted while track_made is 1.
	 */
	__u64 in_flight[2];
	__u64 lat_hist[IOAZ_LAT_SLOTS];
	__u64 svc_hist[IOAZ_LAT_SLOTS];
	__u64 size_hist[IOAZ_SIZE_SLOTS];
};

/*
 * Per-CPU working state of one device, kept beside its counters so one map
 * lookup serves a bio: the end sectors of recent streams, a 2-way
 * set-associative table indexed by a hash of the end sector's bucket (see
 * continues_stream), and the bios of the last submitting thread not yet
 * added to `procs` (user space adds proc_pending to proc_id's count;
 * proc_id is bpf_get_current_pid_tgid(), tgid << 32 | tid).
 */
struct ioaz_cpu_state {
	__u64 stream_end[IOAZ_STREAM_SETS * IOAZ_STREAM_WAYS];
	__u64 clock;		/* this CPU's bios of the device, counted or not */
	__u64 proc_id;
	__u64 proc_pending;
};

struct ioaz_dev {
	struct ioaz_dev_stats stats;
	struct ioaz_cpu_state cpu;
};

/*
 * Requests of one sampled period (user space's slot 0 or 1): started at
 * block_getrq while the period counts, done at block_rq_complete. When done
 * has caught up with started, every request of the period has completed and
 * user space may detach block_rq_complete until the next period.
 */
struct ioaz_slot {
	__u64 started;
	__u64 done;
};

struct ioaz_proc_key {
	__u32 dev;
	__u32 tgid;		/* the process */
	__u32 tid;		/* the thread that submitted */
	__u32 pad;
};

struct ioaz_proc_val {
	__u64 bios;		/* bios submitted (flushed from proc_pending) */
};

#endif /* __IOAZ_H */
