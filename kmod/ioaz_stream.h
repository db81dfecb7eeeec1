/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The stream elevator's data, shared by its elevator operations
 * (ioaz_stream.c) and Figure 2's bookkeeping of parents, children and the
 * wait for a stream's next request (ioaz_stream_detect.c).
 */
#ifndef IOAZ_STREAM_H
#define IOAZ_STREAM_H

#include "ioaz_sched.h"

#define SS_PARENTS	32

struct ss_parent {
	sector_t pos;		/* head position after the parent was served */
	u64 done_ns;
	u64 svc_ns;		/* service(parent, pending) at completion */
	u64 deadline_ns;	/* done_ns + svc_ns: no child after this */
	unsigned int size;	/* stream length ending at this request */
	bool used;
};

struct stream_data {
	struct vr_data vd;	/* first: the vr sysfs knobs cast to it */

	struct ss_parent parents[SS_PARENTS];
	int wait_idx;		/* parent we idle for, or -1 */
	u64 wait_until;
	unsigned int wait_gen;
	struct hrtimer timer;
	struct request *urgent;	/* child that ended a wait: serve next */
	bool in_stream;		/* serving an established stream */
	u64 slice_start;

	/* tunables */
	unsigned int threshold;
	unsigned int slice_ms;
	unsigned int tolerance_pct;
	unsigned int backseek_pct;
	unsigned int svc_min_us;
	unsigned int svc_max_us;
	u64 svc_full_sectors;
	unsigned int idle;
};

/*
 * rq->elv.priv[1]: the stream length this request ends (low bits) and, from
 * its dispatch on, the sector after it (high bits). The block layer has
 * zeroed blk_rq_sectors() by the time finish_request() runs, so where the
 * request ended has to be kept from its dispatch.
 */
#define SS_SIZE_BITS	16
#define SS_SIZE_MAX	((1UL << SS_SIZE_BITS) - 1)

static inline unsigned int ss_rq_size(struct request *rq)
{
	return (uintptr_t)rq->elv.priv[1] & SS_SIZE_MAX;
}

static inline sector_t ss_rq_end(struct request *rq)
{
	return (uintptr_t)rq->elv.priv[1] >> SS_SIZE_BITS;
}

static inline void ss_rq_set(struct request *rq, sector_t end,
			     unsigned int size)
{
	BUILD_BUG_ON(sizeof(uintptr_t) < 8);	/* 48 bits of sector */
	rq->elv.priv[1] = (void *)(((uintptr_t)end << SS_SIZE_BITS) |
				   min_t(uintptr_t, size, SS_SIZE_MAX));
}

/* ioaz_stream_detect.c; every one but the timer with sd->vd.lock held */
void ss_end_wait(struct stream_data *sd);
void ss_on_arrival(struct stream_data *sd, struct request *rq, u64 now);
void ss_on_complete(struct stream_data *sd, struct request *rq, u64 now);
enum hrtimer_restart ss_timer_fn(struct hrtimer *timer);

#endif /* IOAZ_STREAM_H */
