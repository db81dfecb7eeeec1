/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ioaz_sched: the FIFO, V(R) and stream elevators for blk-mq.
 *
 * FIFO and V(R) follow Carroll, "I/O Scheduling on RAID" (2008), sections
 * 3.1 and 3.2; stream follows Xu & Jiang, "Stream Scheduling", Figure 2.
 */
#ifndef IOAZ_SCHED_H
#define IOAZ_SCHED_H

#include <linux/blkdev.h>
#include <linux/blk-mq.h>
#include <linux/hrtimer.h>
#include <linux/rbtree.h>
#include <linux/spinlock.h>

#include "elevator.h"
#include "blk.h"
#include "blk-mq.h"
#include "blk-mq-sched.h"

#include <trace/events/block.h>

#include "ioaz_probe.h"

/*
 * The elevator API changed its insert flags in 6.4 (bool at_head became
 * blk_insert_t); ioaz_probe.h, written by probe.sh from the headers we
 * build against, says which one we have.
 */
#ifdef IOAZ_HAVE_BLK_INSERT_T
#define ioaz_insert_t blk_insert_t
#define IOAZ_AT_HEAD(flags) ((flags) & BLK_MQ_INSERT_AT_HEAD)
#else
#define ioaz_insert_t bool
#define IOAZ_AT_HEAD(flags) (flags)
#endif

/* the flag under which the core calls finish_request for a request */
#ifdef IOAZ_HAVE_RQF_ELVPRIV
#define IOAZ_RQF_FINISHES RQF_ELVPRIV
#else
#define IOAZ_RQF_FINISHES RQF_USE_SCHED
#endif

/*
 * init_sched: by 6.18 the core allocates the elevator_queue and passes it in
 * (IOAZ_HAVE_INIT_SCHED_EQ); before, it passed the elevator_type and the
 * elevator allocated the queue itself with elevator_alloc(). Each elevator's
 * init_sched takes `struct ioaz_init_arg *` and calls ioaz_init_sched() with
 * its setup(q, eq), which fills eq->elevator_data, sets q->elevator and, if
 * it fails, frees what it allocated (not eq).
 */
#ifdef IOAZ_HAVE_INIT_SCHED_EQ
#define ioaz_init_arg elevator_queue
#else
#define ioaz_init_arg elevator_type
#endif
int ioaz_init_sched(struct request_queue *q, struct ioaz_init_arg *arg,
		    int (*setup)(struct request_queue *q,
				 struct elevator_queue *eq));

/* rq->elv.priv[0] bits: what this scheduler already did with a request */
#define IOAZ_RQ_SEEN		1UL	/* inserted once; a requeue is not new */
#define IOAZ_RQ_INFLIGHT	2UL	/* counted in ioaz_gate.inflight */
#define IOAZ_RQ_QUEUED		4UL	/* on our tree/lists, in nr_queued */

static inline unsigned long ioaz_rq_flags(struct request *rq)
{
	return (unsigned long)rq->elv.priv[0];
}

static inline void ioaz_rq_set(struct request *rq, unsigned long bit)
{
	rq->elv.priv[0] = (void *)(ioaz_rq_flags(rq) | bit);
}

static inline void ioaz_rq_clear(struct request *rq, unsigned long bit)
{
	rq->elv.priv[0] = (void *)(ioaz_rq_flags(rq) & ~bit);
}

/* every elevator's prepare_request: a new request carries nothing of ours */
void ioaz_prepare_request(struct request *rq);

/*
 * The papers' schedulers decide when the disk is free. blk-mq would take one
 * request from the elevator while the device is still busy and park it on
 * hctx->dispatch, deciding one service time early; the gate keeps requests in
 * the elevator until the device has room for them.
 */
struct ioaz_gate {
	atomic_t inflight;
	bool waiting;		/* has_work said no because of the gate */
	unsigned int max_inflight;	/* a lower cap than the device's; 0: none */
};

/* What a scheduler did: read-only counters in debugfs (IOAZ_DEBUGFS_U64 below). */
struct ioaz_stats {
	u64 inserted;
	u64 dispatched;
	u64 merged;
	u64 expired;		/* dispatched because their deadline passed */
	u64 waits;		/* stream: idle waits started */
	u64 waits_paid;		/* stream: the child arrived during the wait */
	u64 waits_timeout;	/* stream: the wait ended without a child */
	u64 waits_cut;		/* stream: a wait refused or ended by expiry/slice */
};

bool ioaz_gate_open(struct request_queue *q, struct ioaz_gate *g);
void ioaz_gate_dispatched(struct ioaz_gate *g, struct request *rq);
bool ioaz_gate_done(struct request_queue *q, struct ioaz_gate *g,
		    struct request *rq);

/* sysfs helpers shared by the three elevators */
int ioaz_parse_uint(const char *page, unsigned int min, unsigned int max,
		    unsigned int *out);
int ioaz_parse_u64(const char *page, u64 min, u64 max, u64 *out);

extern struct elevator_type ioaz_fifo_type;
extern struct elevator_type ioaz_vr_type;
extern struct elevator_type ioaz_stream_type;

/* The V(R) engine, shared by vr and stream (stream runs on top of it). */
struct vr_data {
	spinlock_t lock;
	struct rb_root sort;		/* queued requests by start sector */
	struct list_head fifo[2];	/* by deadline: [0] sync, [1] async */
	struct list_head dispatch;	/* at-head insertions, served first */
	unsigned long nr_queued;

	sector_t head;			/* end of the last dispatched request */
	bool dir_up;			/* direction of the last head move */
	unsigned int batching;		/* dispatches in the current batch */
	bool new_batch;			/* next dispatch starts a batch */

	/* tunables (Carroll Table 3.1) */
	unsigned int rev_penalty;
	unsigned int fifo_batch;
	unsigned int expire_ms[2];	/* sync_expire, async_expire */
	unsigned int deadlines;

	struct ioaz_gate gate;
	struct ioaz_stats stats;
	struct request_queue *q;
};

void vr_data_init(struct vr_data *vd, struct request_queue *q);
bool vr_insert_one(struct vr_data *vd, struct request *rq, bool at_head,
		   struct list_head *free);
void vr_remove(struct vr_data *vd, struct request *rq);
struct request *vr_choose(struct vr_data *vd);
struct request *vr_earliest_expired(struct vr_data *vd, u64 now);
void vr_account_dispatch(struct vr_data *vd, struct request *rq);
bool vr_has_queued(struct vr_data *vd);
struct request *vr_dispatch_locked(struct vr_data *vd);
bool vr_bio_merge_locked(struct vr_data *vd, struct bio *bio,
			 unsigned int nr_segs, struct request **free);
int vr_request_merge(struct request_queue *q, struct request **rq,
		     struct bio *bio);
void vr_request_merged_locked(struct vr_data *vd, struct request *req,
			      enum elv_merge type);
void vr_requests_merged_locked(struct vr_data *vd, struct request *req,
			       struct request *next);

/* sysfs show/store of the V(R) knobs, reused by stream (vr_data first) */
#define IOAZ_DECLARE_KNOB(name)						\
	ssize_t vr_##name##_show(struct elevator_queue *e, char *page);	\
	ssize_t vr_##name##_store(struct elevator_queue *e,		\
				  const char *page, size_t count)
IOAZ_DECLARE_KNOB(rev_penalty);
IOAZ_DECLARE_KNOB(fifo_batch);
IOAZ_DECLARE_KNOB(sync_expire);
IOAZ_DECLARE_KNOB(async_expire);
IOAZ_DECLARE_KNOB(deadlines);

#define IOAZ_KNOB_ATTR(name) __ATTR(name, 0644, vr_##name##_show, vr_##name##_store)

/*
 * The counters live where mq-deadline keeps its internal state, in debugfs
 * (/sys/kernel/debug/block/<disk>/sched/<name>), so that queue/iosched/ holds
 * only what an administrator may tune. `expr` reads one counter of queue q.
 */
#ifdef CONFIG_BLK_DEBUG_FS
#include <linux/seq_file.h>
#include "blk-mq-debugfs.h"

#define IOAZ_DEBUGFS_U64(pfx, name, expr)				\
static int pfx##_##name##_show(void *data, struct seq_file *m)		\
{									\
	struct request_queue *q = data;					\
									\
	seq_printf(m, "%llu\n", (unsigned long long)READ_ONCE(expr));	\
	return 0;							\
}
#define IOAZ_DEBUGFS_ATTR(pfx, name) { #name, 0400, pfx##_##name##_show }
#endif

#endif /* IOAZ_SCHED_H */
