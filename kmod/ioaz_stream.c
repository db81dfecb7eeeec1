// SPDX-License-Identifier: GPL-2.0
/*
 * stream: Xu & Jiang's stream scheduling (Figure 2) on the V(R) engine.
 *
 * No process information is used. When a request completes it becomes a
 * parent-to-be: a later request is its child if
 *   (arrival - completion) + service(parent, child) < service(parent, pending)
 * where "pending" is the request the base scheduler would serve next. A chain
 * of children of length >= stream_threshold is an established stream; after
 * a request of an established stream completes, the disk waits for its child
 * for at most the service time of the pending choice, a stream is served for
 * at most stream_time_slice, and a request whose deadline passed is served at
 * once (section 3.2: the stream layer respects Deadline's expiries).
 * Service times come from a distance-to-time curve whose parameters are
 * tunables (set by calibration); a backward seek costs backseek_penalty %.
 */
#include <linux/hrtimer.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "ioaz_stream.h"

/*
 * Xu & Jiang, section 3.2: a stream is 4 requests, served for 124 ms, a long
 * stream's wait extended by 50 %, a backward seek 150 % of a forward one.
 */
static const unsigned int ss_default_threshold = 4;
static const unsigned int ss_default_slice_ms = 124;
static const unsigned int ss_default_tolerance_pct = 50;
static const unsigned int ss_default_backseek_pct = 150;
/* a 7200 rpm disk (track to track, full stroke) until calibration says otherwise */
static const unsigned int ss_default_svc_min_us = 100;
static const unsigned int ss_default_svc_max_us = 12000;
static const u64 ss_default_svc_full_sectors = 1ULL << 31;

static int stream_setup(struct request_queue *q, struct elevator_queue *eq)
{
	struct stream_data *sd;

	sd = kzalloc_node(sizeof(*sd), GFP_KERNEL, q->node);
	if (!sd)
		return -ENOMEM;
	vr_data_init(&sd->vd, q);
	sd->wait_idx = -1;
#ifdef IOAZ_HAVE_HRTIMER_SETUP
	hrtimer_setup(&sd->timer, ss_timer_fn, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
#else
	hrtimer_init(&sd->timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	sd->timer.function = ss_timer_fn;
#endif
	sd->threshold = ss_default_threshold;
	sd->slice_ms = ss_default_slice_ms;
	sd->tolerance_pct = ss_default_tolerance_pct;
	sd->backseek_pct = ss_default_backseek_pct;
	sd->svc_min_us = ss_default_svc_min_us;
	sd->svc_max_us = ss_default_svc_max_us;
	sd->svc_full_sectors = ss_default_svc_full_sectors;
	sd->idle = 1;
	eq->elevator_data = sd;
	q->elevator = eq;
	return 0;
}

static int stream_init_sched(struct request_queue *q, struct ioaz_init_arg *arg)
{
	return ioaz_init_sched(q, arg, stream_setup);
}

static void stream_exit_sched(struct elevator_queue *e)
{
	struct stream_data *sd = e->elevator_data;

	hrtimer_cancel(&sd->timer);
	WARN_ON_ONCE(sd->vd.nr_queued);
	kfree(sd);
}

static void stream_insert_requests(struct blk_mq_hw_ctx *hctx,
				   struct list_head *list, ioaz_insert_t flags)
{
	struct stream_data *sd = hctx->queue->elevator->elevator_data;
	unsigned long irqflags;
	LIST_HEAD(free);

	spin_lock_irqsave(&sd->vd.lock, irqflags);
	while (!list_empty(list)) {
		struct request *rq = list_first_entry(list, struct request,
						      queuelist);
		bool fresh = !(ioaz_rq_flags(rq) & IOAZ_RQ_SEEN);

		list_del_init(&rq->queuelist);
		if (!vr_insert_one(&sd->vd, rq, IOAZ_AT_HEAD(flags), &free))
			continue;
		if (fresh && !IOAZ_AT_HEAD(flags))
			ss_on_arrival(sd, rq, ktime_get_ns());
	}
	spin_unlock_irqrestore(&sd->vd.lock, irqflags);
	blk_mq_free_requests(&free);
}

static struct request *ss_take(struct stream_data *sd, struct request *rq)
{
	lockdep_assert_held(&sd->vd.lock);
	if (rq == sd->urgent)
		sd->urgent = NULL;
	vr_remove(&sd->vd, rq);
	vr_account_dispatch(&sd->vd, rq);
	if (ss_rq_size(rq) < sd->threshold)
		sd->in_stream = false;
	return rq;
}

static struct request *stream_dispatch_request(struct blk_mq_hw_ctx *hctx)
{
	struct stream_data *sd = hctx->queue->elevator->elevator_data;
	struct vr_data *vd = &sd->vd;
	struct request *rq = NULL;
	unsigned long irqflags;
	u64 now;

	spin_lock_irqsave(&vd->lock, irqflags);
	if (!vd->nr_queued || !ioaz_gate_open(vd->q, &vd->gate))
		goto out;
	if (!list_empty(&vd->dispatch)) {
		rq = vr_dispatch_locked(vd);
		goto out;
	}
	if (sd->urgent) {
		rq = ss_take(sd, sd->urgent);
		goto out;
	}
	now = ktime_get_ns();
	if (vd->deadlines) {
		rq = vr_earliest_expired(vd, now);
		if (rq) {
			if (sd->wait_idx >= 0) {
				ss_end_wait(sd);
				vd->stats.waits_cut++;
			}
			vd->stats.expired++;
			sd->in_stream = false;
			rq = ss_take(sd, rq);
			goto out;
		}
	}
	if (sd->wait_idx >= 0) {
		if (now < sd->wait_until)
			goto out;	/* idle: the timer or the child runs us */
		ss_end_wait(sd);
		vd->stats.waits_timeout++;
	}
	rq = vr_dispatch_locked(vd);
	if (rq && ss_rq_size(rq) < sd->threshold)
		sd->in_stream = false;
out:
	if (rq)
		ss_rq_set(rq, blk_rq_pos(rq) + blk_rq_sectors(rq), ss_rq_size(rq));
	spin_unlock_irqrestore(&vd->lock, irqflags);
	return rq;
}

static bool stream_has_work(struct blk_mq_hw_ctx *hctx)
{
	struct stream_data *sd = hctx->queue->elevator->elevator_data;

	if (!vr_has_queued(&sd->vd))
		return false;
	/* idle while waiting for a child; past the wait a queue run ends it */
	if (READ_ONCE(sd->wait_idx) >= 0 && !READ_ONCE(sd->urgent) &&
	    ktime_get_ns() < READ_ONCE(sd->wait_until))
		return false;
	return ioaz_gate_open(sd->vd.q, &sd->vd.gate);
}

static void stream_finish_request(struct request *rq)
{
	struct stream_data *sd = rq->q->elevator->elevator_data;
	unsigned long irqflags;

	if (!(ioaz_rq_flags(rq) & IOAZ_RQ_INFLIGHT))
		return;
	spin_lock_irqsave(&sd->vd.lock, irqflags);
	ss_on_complete(sd, rq, ktime_get_ns());
	spin_unlock_irqrestore(&sd->vd.lock, irqflags);
	ioaz_gate_done(rq->q, &sd->vd.gate, rq);
}

static void stream_requeue_request(struct request *rq)
{
	struct stream_data *sd = rq->q->elevator->elevator_data;

	ioaz_gate_done(rq->q, &sd->vd.gate, rq);
}

static bool stream_bio_merge(struct request_queue *q, struct bio *bio,
			     unsigned int nr_segs)
{
	struct stream_data *sd = q->elevator->elevator_data;
	struct request *free = NULL;
	unsigned long irqflags;
	bool ret;

	spin_lock_irqsave(&sd->vd.lock, irqflags);
	ret = vr_bio_merge_locked(&sd->vd, bio, nr_segs, &free);
	spin_unlock_irqrestore(&sd->vd.lock, irqflags);
	if (free)
		blk_mq_free_request(free);
	return ret;
}

static void stream_request_merged(struct request_queue *q, struct request *req,
				  enum elv_merge type)
{
	vr_request_merged_locked(q->elevator->elevator_data, req, type);
}

static void stream_requests_merged(struct request_queue *q,
				   struct request *req, struct request *next)
{
	struct stream_data *sd = q->elevator->elevator_data;

	if (sd->urgent == next)
		sd->urgent = req;
	vr_requests_merged_locked(&sd->vd, req, next);
}

#define SS_KNOB(name, field, min, max)					\
static ssize_t ss_##name##_show(struct elevator_queue *e, char *page)	\
{									\
	struct stream_data *sd = e->elevator_data;			\
									\
	return sysfs_emit(page, "%llu\n", (u64)READ_ONCE(sd->field));	\
}									\
static ssize_t ss_##name##_store(struct elevator_queue *e,		\
				 const char *page, size_t count)	\
{									\
	struct stream_data *sd = e->elevator_data;			\
	u64 v;								\
	int ret = ioaz_parse_u64(page, min, max, &v);			\
									\
	if (ret)							\
		return ret;						\
	WRITE_ONCE(sd->field, v);					\
	return count;							\
}
SS_KNOB(stream_threshold, threshold, 1, 1024)
SS_KNOB(stream_time_slice, slice_ms, 1, 60000)
SS_KNOB(tolerance, tolerance_pct, 0, 1000)
SS_KNOB(backseek_penalty, backseek_pct, 100, 1000)
SS_KNOB(svc_min_us, svc_min_us, 1, 10000000)
SS_KNOB(svc_max_us, svc_max_us, 1, 10000000)
SS_KNOB(svc_full_sectors, svc_full_sectors, 1, 1ULL << 40)
SS_KNOB(stream_idle, idle, 0, 1)
/*
 * A drive that holds requests of several streams at once (NCQ, TCQ) serves
 * them in its own order and seeks between the streams whatever this elevator
 * waits for; with max_inflight 1 the other streams' requests stay here while
 * one stream is served, as on the single-request disks of the paper.
 */
SS_KNOB(max_inflight, vd.gate.max_inflight, 0, 4096)

#define SS_ATTR(name) __ATTR(name, 0644, ss_##name##_show, ss_##name##_store)

static struct elv_fs_entry stream_attrs[] = {
	IOAZ_KNOB_ATTR(rev_penalty),
	IOAZ_KNOB_ATTR(fifo_batch),
	IOAZ_KNOB_ATTR(sync_expire),
	IOAZ_KNOB_ATTR(async_expire),
	IOAZ_KNOB_ATTR(deadlines),
	SS_ATTR(stream_threshold),
	SS_ATTR(stream_time_slice),
	SS_ATTR(tolerance),
	SS_ATTR(backseek_penalty),
	SS_ATTR(svc_min_us),
	SS_ATTR(svc_max_us),
	SS_ATTR(svc_full_sectors),
	SS_ATTR(stream_idle),
	SS_ATTR(max_inflight),
	__ATTR_NULL
};
#undef SS_KNOB
#undef SS_ATTR

#ifdef CONFIG_BLK_DEBUG_FS
#define SS_STATS(q) (((struct stream_data *)(q)->elevator->elevator_data)->vd.stats)
IOAZ_DEBUGFS_U64(sss, inserted, SS_STATS(q).inserted)
IOAZ_DEBUGFS_U64(sss, dispatched, SS_STATS(q).dispatched)
IOAZ_DEBUGFS_U64(sss, merged, SS_STATS(q).merged)
IOAZ_DEBUGFS_U64(sss, expired, SS_STATS(q).expired)
IOAZ_DEBUGFS_U64(sss, waits, SS_STATS(q).waits)
IOAZ_DEBUGFS_U64(sss, waits_paid, SS_STATS(q).waits_paid)
IOAZ_DEBUGFS_U64(sss, waits_timeout, SS_STATS(q).waits_timeout)
IOAZ_DEBUGFS_U64(sss, waits_cut, SS_STATS(q).waits_cut)
#undef SS_STATS

static const struct blk_mq_debugfs_attr stream_debugfs_attrs[] = {
	IOAZ_DEBUGFS_ATTR(sss, inserted),
	IOAZ_DEBUGFS_ATTR(sss, dispatched),
	IOAZ_DEBUGFS_ATTR(sss, merged),
	IOAZ_DEBUGFS_ATTR(sss, expired),
	IOAZ_DEBUGFS_ATTR(sss, waits),
	IOAZ_DEBUGFS_ATTR(sss, waits_paid),
	IOAZ_DEBUGFS_ATTR(sss, waits_timeout),
	IOAZ_DEBUGFS_ATTR(sss, waits_cut),
	{},
};
#endif

struct elevator_type ioaz_stream_type = {
	.ops = {
		.init_sched		= stream_init_sched,
		.exit_sched		= stream_exit_sched,
		.prepare_request	= ioaz_prepare_request,
		.insert_requests	= stream_insert_requests,
		.dispatch_request	= stream_dispatch_request,
		.has_work		= stream_has_work,
		.bio_merge		= stream_bio_merge,
		.request_merge		= vr_request_merge,
		.request_merged		= stream_request_merged,
		.requests_merged	= stream_requests_merged,
		.next_request		= elv_rb_latter_request,
		.former_request		= elv_rb_former_request,
		.finish_request		= stream_finish_request,
		.requeue_request	= stream_requeue_request,
	},
	.elevator_attrs = stream_attrs,
#ifdef CONFIG_BLK_DEBUG_FS
	.queue_debugfs_attrs = stream_debugfs_attrs,
#endif
	.elevator_name = "stream",
	.elevator_owner = THIS_MODULE,
};
