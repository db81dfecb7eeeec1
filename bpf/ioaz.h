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
#define IOAZ_SIZE_SLOTS		32	/* log2(bytes) */
#define IOAZ_STREAMS		32	/* stream heads remembered per device: more than the 16+ class */
#define IOAZ_MAX_DEVS		256
#define IOAZ_MAX_PROCS		8192
#define IOAZ_MAX_INFLIGHT	65536	/* requests in flight tracked at once */

enum ioaz_dir {
	IOAZ_DIR_READ,
	IOAZ_DIR_WRITE,
	IOAZ_DIR_DISCARD,
	IOAZ_DIR_FLUSH,
	IOAZ_DIR_OTHER,
};

/* Cumulative per-device counters, one copy per CPU, summed by user space. */
struct ioaz_dev_stats {
	__u64 issued[IOAZ_DIRS];
	__u64 issued_bytes[IOAZ_DIRS];
	__u64 completed[IOAZ_DIRS];
	__u64 completed_bytes[IOAZ_DIRS];
	__u64 bios;		/* read/write bios submitted (block_bio_queue) */
	__u64 bios_seq;		/* of which continued one of the stream heads */
	__u64 bio_merges;	/* bios merged into a queued request */
	__u64 rq_merges;	/* requests merged into another request */
	__u64 lat_sum_ns;	/* sum of issue-to-complete latency (also the
				 * time-integral of the in-flight count) */
	__u64 lat_hist[IOAZ_LAT_SLOTS];
	__u64 size_hist[IOAZ_SIZE_SLOTS];
};

/* The end sectors of the last few sequential streams of one device. */
struct ioaz_streams {
	__u64 end[IOAZ_STREAMS];
	__u32 next;		/* slot replaced by the next new stream */
	__u32 pad;
};

struct ioaz_proc_key {
	__u32 dev;
	__u32 tgid;
};

struct ioaz_proc_val {
	__u64 bios;		/* bios submitted; user space counts the window's delta */
};

#endif /* __IOAZ_H */
