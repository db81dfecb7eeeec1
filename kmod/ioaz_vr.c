// SPDX-License-Identifier: GPL-2.0
/*
 * vr: V(R) as Carroll implemented it (Carroll 2008, section 3.2, Table 3.1).
 *
 * Reads and writes are scheduled together from one sector-sorted tree. The
 * next request is the nearer of the two neighbours of the head, the one
 * behind the head direction costing rev_penalty times its distance
 * (1 = SSTF, 0 = SCAN). Deadlines are checked only when a batch of
 * fifo_batch dispatches starts, so expiries cannot degenerate into FIFO
 * (the "deadline avalanche"). The same engine is the base of stream.
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/slab.h>

#include "ioaz_sched.h"

/* Carroll 2008, Table 3.1: the defaults of the V(R) tunables */
static const unsigned int vr_default_rev_penalty = 10;
static const unsigned int vr_default_fifo_batch = 16;
static const unsigned int vr_default_sync_expire_ms = 500;
static const unsigned int vr_default_async_expire_ms = 5000;

void vr_data_init(struct vr_data *vd, struct request_queue *q)
{
	spin_lock_init(&vd->lock);
	vd->sort = RB_ROOT;
	INIT_LIST_HEAD(&vd->fifo[0]);
	INIT_LIST_HEAD(&vd->fifo[1]);
	INIT_LIST_HEAD(&vd->dispatch);
	vd->head = 0;
	vd->dir_up = true;
	vd->new_batch = true;
	vd->rev_penalty = vr_default_rev_penalty;
	vd->fifo_batch = vr_default_fifo_batch;
	vd->expire_ms[0] = vr_default_sync_expire_ms;
	vd->expire_ms[1] = vr_default_async_expire_ms;
	vd->deadlines = 1;
	vd->q = q;
}

bool vr_has_queued(struct vr_data *vd)
{
	return READ_ONCE(vd->nr_queued) != 0;
}

/* Returns false if the request was merged into a queued one (now in @free). */
bool vr_insert_one(struct vr_data *vd, struct request *rq, bool at_head,
		   struct list_head *free)
{
	struct request_queue *q = vd->q;

	lockdep_assert_held(&vd->lock);

	if (!(ioaz_rq_flags(rq) & IOAZ_RQ_SEEN)) {
		ioaz_rq_set(rq, IOAZ_RQ_SEEN);
		vd->stats.inserted++;
	}
	if (blk_mq_sched_try_insert_merge(q, rq, free))
		return false;

	trace_block_rq_insert(rq);
	ioaz_rq_set(rq, IOAZ_RQ_QUEUED);
	vd->nr_queued++;
	if (at_head) {
		list_add(&rq->queuelist, &vd->dispatch);
		rq->fifo_time = ktime_get_ns();
		return true;
	}
	elv_rb_add(&vd->sort, rq);
	if (rq_mergeable(rq)) {
		elv_rqhash_add(q, rq);
		if (!q->last_merge)
			q->last_merge = rq;
	}
	/* one expiry per list, so appending keeps each list in deadline order */
	rq->fifo_time = ktime_get_ns() +
		(u64)vd->expire_ms[rq_is_sync(rq) ? 0 : 1] * NSEC_PER_MSEC;
	list_add_tail(&rq->queuelist, &vd->fifo[rq_is_sync(rq) ? 0 : 1]);
	return true;
}

void vr_remove(struct vr_data *vd, struct request *rq)
{
	struct request_queue *q = vd->q;

	lockdep_assert_held(&vd->lock);
	list_del_init(&rq->queuelist);
	if (!RB_EMPTY_NODE(&rq->rb_node))
		elv_rb_del(&vd->sort, rq);
	elv_rqhash_del(q, rq);
	if (q->last_merge == rq)
		q->last_merge = NULL;
	if (ioaz_rq_flags(rq) & IOAZ_RQ_QUEUED) {
		ioaz_rq_clear(rq, IOAZ_RQ_QUEUED);
		vd->nr_queued--;
	}
}

/* lowest queued request starting at or after @sector */
static struct request *vr_ceiling(struct vr_data *vd, sector_t sector)
{
	struct rb_node *node = vd->sort.rb_node;
	struct request *best = NULL;

	while (node) {
		struct request *rq = rb_entry_rq(node);

		if (blk_rq_pos(rq) >= sector) {
			best = rq;
			node = node->rb_left;
		} else {
			node = node->rb_right;
		}
	}
	return best;
}

/* The V(R) choice from the head; NULL if the tree is empty. */
struct request *vr_choose(struct vr_data *vd)
{
	struct request *next, *prev;
	struct rb_node *node;
	u64 d_next, d_prev, fwd, rev;
	struct request *fwd_rq, *rev_rq;

	lockdep_assert_held(&vd->lock);

	next = vr_ceiling(vd, vd->head);
	if (next) {
		node = rb_prev(&next->rb_node);
		prev = node ? rb_entry_rq(node) : NULL;
	} else {
		node = rb_last(&vd->sort);
		prev = node ? rb_entry_rq(node) : NULL;
	}
	if (!next || !prev)
		return next ? next : prev;

	d_next = blk_rq_pos(next) - vd->head;
	d_prev = vd->head - blk_rq_pos(prev);
	if (vd->dir_up) {
		fwd = d_next;
		rev = d_prev;
		fwd_rq = next;
		rev_rq = prev;
	} else {
		fwd = d_prev;
		rev = d_next;
		fwd_rq = prev;
		rev_rq = next;
	}
	/* R = 0 is Carroll's alias for V(infinity), i.e. SCAN */
	if (vd->rev_penalty == 0)
		return fwd_rq;
	if (check_mul_overflow(rev, (u64)vd->rev_penalty, &rev))
		rev = U64_MAX;
	/* a tie keeps the direction */
	return rev < fwd ? rev_rq : fwd_rq;
}

struct request *vr_earliest_expired(struct vr_data *vd, u64 now)
{
	struct request *best = NULL;
	int i;

	lockdep_assert_held(&vd->lock);
	for (i = 0; i < 2; i++) {
		struct request *rq;

		if (list_empty(&vd->fifo[i]))
			continue;
		rq = list_first_entry(&vd->fifo[i], struct request, queuelist);
		if (!best || rq->fifo_time < best->fifo_time)
			best = rq;
	}
	if (best && best->fifo_time <= now)
		return best;
	return NULL;
}

/* Bookkeeping after @rq was removed and handed to the device. */
void vr_account_dispatch(struct vr_data *vd, struct request *rq)
{
	lockdep_assert_held(&vd->lock);
	vd->dir_up = blk_rq_pos(rq) >= vd->head;
	vd->head = blk_rq_pos(rq) + blk_rq_sectors(rq);
	vd->batching++;
	vd->stats.dispatched++;
	if (!vd->nr_queued)
		vd->new_batch = true;
	ioaz_gate_dispatched(&vd->gate, rq);
}

struct request *vr_dispatch_locked(struct vr_data *vd)
{
	struct request *rq = NULL;

	lockdep_assert_held(&vd->lock);

	if (!vd->nr_queued || !ioaz_gate_open(vd->q, &vd->gate))
		return NULL;

	if (!list_empty(&vd->dispatch)) {
		rq = list_first_entry(&vd->dispatch, struct request, queuelist);
		goto out;
	}
	if (vd->new_batch || vd->batching >= vd->fifo_batch) {
		vd->new_batch = false;
		vd->batching = 0;
		if (vd->deadlines) {
			rq = vr_earliest_expired(vd, ktime_get_ns());
			if (rq)
				vd->stats.expired++;
		}
	}
	if (!rq)
		rq = vr_choose(vd);
	if (WARN_ON_ONCE(!rq))
		return NULL;
out:
	vr_remove(vd, rq);
	vr_account_dispatch(vd, rq);
	return rq;
}

bool vr_bio_merge_locked(struct vr_data *vd, struct bio *bio,
			 unsigned int nr_segs, struct request **free)
{
	lockdep_assert_held(&vd->lock);
	return blk_mq_sched_try_merge(vd->q, bio, nr_segs, free);
}

/* front merge: a queued request starting where the bio ends */
int vr_request_merge(struct request_queue *q, struct request **rq,
		     struct bio *bio)
{
	struct vr_data *vd = q->elevator->elevator_data;
	struct request *found;

	found = elv_rb_find(&vd->sort, bio_end_sector(bio));
	if (found && elv_bio_merge_ok(found, bio)) {
		*rq = found;
		if (blk_discard_mergable(found))
			return ELEVATOR_DISCARD_MERGE;
		return ELEVATOR_FRONT_MERGE;
	}
	return ELEVATOR_NO_MERGE;
}

void vr_request_merged_locked(struct vr_data *vd, struct request *req,
			      enum elv_merge type)
{
	lockdep_assert_held(&vd->lock);
	vd->stats.merged++;
	if (type == ELEVATOR_FRONT_MERGE) {
		elv_rb_del(&vd->sort, req);
		elv_rb_add(&vd->sort, req);
	}
}

void vr_requests_merged_locked(struct vr_data *vd, struct request *req,
			       struct request *next)
{
	lockdep_assert_held(&vd->lock);
	vd->stats.merged++;
	/* the survivor inherits the earlier deadline and its FIFO place */
	if (!list_empty(&req->queuelist) && !list_empty(&next->queuelist) &&
	    next->fifo_time < req->fifo_time) {
		list_move(&req->queuelist, &next->queuelist);
		req->fifo_time = next->fifo_time;
	}
	vr_remove(vd, next);
}

/* ---- the vr elevator ---- */

static int vr_setup(struct request_queue *q, struct elevator_queue *eq)
{
	struct vr_data *vd;

	vd = kzalloc_node(sizeof(*vd), GFP_KERNEL, q->node);
	if (!vd)
		return -ENOMEM;
	vr_data_init(vd, q);
	eq->elevator_data = vd;
	q->elevator = eq;
	return 0;
}

static int vr_init_sched(struct request_queue *q, struct ioaz_init_arg *arg)
{
	return ioaz_init_sched(q, arg, vr_setup);
}

static void vr_exit_sched(struct elevator_queue *e)
{
	struct vr_data *vd = e->elevator_data;

	WARN_ON_ONCE(vd->nr_queued);
	kfree(vd);
}

static void vr_insert_requests(struct blk_mq_hw_ctx *hctx,
			       struct list_head *list, ioaz_insert_t flags)
{
	struct vr_data *vd = hctx->queue->elevator->elevator_data;
	unsigned long irqflags;
	LIST_HEAD(free);

	spin_lock_irqsave(&vd->lock, irqflags);
	while (!list_empty(list)) {
		struct request *rq = list_first_entry(list, struct request,
						      queuelist);

		list_del_init(&rq->queuelist);
		vr_insert_one(vd, rq, IOAZ_AT_HEAD(flags), &free);
	}
	spin_unlock_irqrestore(&vd->lock, irqflags);
	blk_mq_free_requests(&free);
}

static struct request *vr_dispatch_request(struct blk_mq_hw_ctx *hctx)
{
	struct vr_data *vd = hctx->queue->elevator->elevator_data;
	unsigned long irqflags;
	struct request *rq;

	spin_lock_irqsave(&vd->lock, irqflags);
	rq = vr_dispatch_locked(vd);
	spin_unlock_irqrestore(&vd->lock, irqflags);
	return rq;
}

static bool vr_has_work(struct blk_mq_hw_ctx *hctx)
{
	struct vr_data *vd = hctx->queue->elevator->elevator_data;

	return vr_has_queued(vd) && ioaz_gate_open(vd->q, &vd->gate);
}

static bool vr_bio_merge(struct request_queue *q, struct bio *bio,
			 unsigned int nr_segs)
{
	struct vr_data *vd = q->elevator->elevator_data;
	struct request *free = NULL;
	unsigned long irqflags;
	bool ret;

	spin_lock_irqsave(&vd->lock, irqflags);
	ret = vr_bio_merge_locked(vd, bio, nr_segs, &free);
	spin_unlock_irqrestore(&vd->lock, irqflags);
	if (free)
		blk_mq_free_request(free);
	return ret;
}

static void vr_request_merged(struct request_queue *q, struct request *req,
			      enum elv_merge type)
{
	vr_request_merged_locked(q->elevator->elevator_data, req, type);
}

static void vr_requests_merged(struct request_queue *q, struct request *req,
			       struct request *next)
{
	vr_requests_merged_locked(q->elevator->elevator_data, req, next);
}

static void vr_finish_request(struct request *rq)
{
	struct vr_data *vd = rq->q->elevator->elevator_data;

	ioaz_gate_done(rq->q, &vd->gate, rq);
}

/* ---- sysfs: Table 3.1 knobs (shared with stream); debugfs: counters ---- */

#define VR_KNOB(name, field, min, max)					\
ssize_t vr_##name##_show(struct elevator_queue *e, char *page)		\
{									\
	struct vr_data *vd = e->elevator_data;				\
									\
	return sysfs_emit(page, "%u\n", READ_ONCE(vd->field));		\
}									\
ssize_t vr_##name##_store(struct elevator_queue *e, const char *page,	\
			  size_t count)					\
{									\
	struct vr_data *vd = e->elevator_data;				\
	unsigned int v;							\
	int ret = ioaz_parse_uint(page, min, max, &v);			\
									\
	if (ret)							\
		return ret;						\
	WRITE_ONCE(vd->field, v);					\
	return count;							\
}
VR_KNOB(rev_penalty, rev_penalty, 0, 1000000)
VR_KNOB(fifo_batch, fifo_batch, 1, 65536)
VR_KNOB(sync_expire, expire_ms[0], 1, 3600000)
VR_KNOB(async_expire, expire_ms[1], 1, 3600000)
VR_KNOB(deadlines, deadlines, 0, 1)

static struct elv_fs_entry vr_attrs[] = {
	IOAZ_KNOB_ATTR(rev_penalty),
	IOAZ_KNOB_ATTR(fifo_batch),
	IOAZ_KNOB_ATTR(sync_expire),
	IOAZ_KNOB_ATTR(async_expire),
	IOAZ_KNOB_ATTR(deadlines),
	__ATTR_NULL
};
#undef VR_KNOB

#ifdef CONFIG_BLK_DEBUG_FS
#define VR_DATA(q) ((struct vr_data *)(q)->elevator->elevator_data)
IOAZ_DEBUGFS_U64(vrs, inserted, VR_DATA(q)->stats.inserted)
IOAZ_DEBUGFS_U64(vrs, dispatched, VR_DATA(q)->stats.dispatched)
IOAZ_DEBUGFS_U64(vrs, merged, VR_DATA(q)->stats.merged)
IOAZ_DEBUGFS_U64(vrs, expired, VR_DATA(q)->stats.expired)
IOAZ_DEBUGFS_U64(vrs, queued, VR_DATA(q)->nr_queued)
#undef VR_DATA

static const struct blk_mq_debugfs_attr vr_debugfs_attrs[] = {
	IOAZ_DEBUGFS_ATTR(vrs, inserted),
	IOAZ_DEBUGFS_ATTR(vrs, dispatched),
	IOAZ_DEBUGFS_ATTR(vrs, merged),
	IOAZ_DEBUGFS_ATTR(vrs, expired),
	IOAZ_DEBUGFS_ATTR(vrs, queued),
	{},
};
#endif

struct elevator_type ioaz_vr_type = {
	.ops = {
		.init_sched		= vr_init_sched,
		.exit_sched		= vr_exit_sched,
		.prepare_request	= ioaz_prepare_request,
		.insert_requests	= vr_insert_requests,
		.dispatch_request	= vr_dispatch_request,
		.has_work		= vr_has_work,
		.bio_merge		= vr_bio_merge,
		.request_merge		= vr_request_merge,
		.request_merged		= vr_request_merged,
		.requests_merged	= vr_requests_merged,
		.next_request		= elv_rb_latter_request,
		.former_request		= elv_rb_former_request,
		.finish_request		= vr_finish_request,
		.requeue_request	= vr_finish_request,
	},
	.elevator_attrs = vr_attrs,
#ifdef CONFIG_BLK_DEBUG_FS
	.queue_debugfs_attrs = vr_debugfs_attrs,
#endif
	.elevator_name = "vr",
	.elevator_owner = THIS_MODULE,
};
