// SPDX-License-Identifier: GPL-2.0
/*
 * fifo: strict first come, first served (Carroll 2008, section 3.1).
 * Requests are never merged and never reordered, so the effect of merging
 * and sorting can be measured against it.
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "ioaz_sched.h"

struct fifo_data {
	spinlock_t lock;
	struct list_head queue;
	unsigned long nr_queued;
	bool set_nomerges;	/* we turned QUEUE_FLAG_NOMERGES on */
	struct ioaz_gate gate;
	struct ioaz_stats stats;
	struct request_queue *q;
};

static int fifo_setup(struct request_queue *q, struct elevator_queue *eq)
{
	struct fifo_data *fd;

	fd = kzalloc_node(sizeof(*fd), GFP_KERNEL, q->node);
	if (!fd)
		return -ENOMEM;
	spin_lock_init(&fd->lock);
	INIT_LIST_HEAD(&fd->queue);
	fd->q = q;
	eq->elevator_data = fd;

	/*
	 * The plug merges adjacent bios before any elevator hook is asked
	 * (blk_attempt_plug_merge ignores allow_merge), so FIFO can only keep
	 * its promise with the queue's nomerges flag. Restored on exit.
	 */
	if (!blk_queue_nomerges(q)) {
		blk_queue_flag_set(QUEUE_FLAG_NOMERGES, q);
		fd->set_nomerges = true;
	}
	q->elevator = eq;
	return 0;
}

static int fifo_init_sched(struct request_queue *q, struct ioaz_init_arg *arg)
{
	return ioaz_init_sched(q, arg, fifo_setup);
}

static void fifo_exit_sched(struct elevator_queue *e)
{
	struct fifo_data *fd = e->elevator_data;

	WARN_ON_ONCE(!list_empty(&fd->queue));
	if (fd->set_nomerges)
		blk_queue_flag_clear(QUEUE_FLAG_NOMERGES, fd->q);
	kfree(fd);
}

static bool fifo_allow_merge(struct request_queue *q, struct request *rq,
			     struct bio *bio)
{
	return false;
}

static bool fifo_bio_merge(struct request_queue *q, struct bio *bio,
			   unsigned int nr_segs)
{
	return false;
}

static int fifo_request_merge(struct request_queue *q, struct request **rq,
			      struct bio *bio)
{
	return ELEVATOR_NO_MERGE;
}

static void fifo_insert_requests(struct blk_mq_hw_ctx *hctx,
				 struct list_head *list, ioaz_insert_t flags)
{
	struct fifo_data *fd = hctx->queue->elevator->elevator_data;
	unsigned long irqflags;

	spin_lock_irqsave(&fd->lock, irqflags);
	while (!list_empty(list)) {
		struct request *rq = list_first_entry(list, struct request,
						      queuelist);

		list_del_init(&rq->queuelist);
		if (!(ioaz_rq_flags(rq) & IOAZ_RQ_SEEN)) {
			ioaz_rq_set(rq, IOAZ_RQ_SEEN);
			fd->stats.inserted++;
		}
		trace_block_rq_insert(rq);
		/* a requeue or a flush goes back to the front, as it came */
		if (IOAZ_AT_HEAD(flags))
			list_add(&rq->queuelist, &fd->queue);
		else
			list_add_tail(&rq->queuelist, &fd->queue);
		fd->nr_queued++;
	}
	spin_unlock_irqrestore(&fd->lock, irqflags);
}

static struct request *fifo_dispatch_request(struct blk_mq_hw_ctx *hctx)
{
	struct fifo_data *fd = hctx->queue->elevator->elevator_data;
	struct request *rq = NULL;
	unsigned long irqflags;

	spin_lock_irqsave(&fd->lock, irqflags);
	if (!list_empty(&fd->queue) && ioaz_gate_open(fd->q, &fd->gate)) {
		rq = list_first_entry(&fd->queue, struct request, queuelist);
		list_del_init(&rq->queuelist);
		fd->nr_queued--;
		fd->stats.dispatched++;
		ioaz_gate_dispatched(&fd->gate, rq);
	}
	spin_unlock_irqrestore(&fd->lock, irqflags);
	return rq;
}

static bool fifo_has_work(struct blk_mq_hw_ctx *hctx)
{
	struct fifo_data *fd = hctx->queue->elevator->elevator_data;

	if (!READ_ONCE(fd->nr_queued))
		return false;
	return ioaz_gate_open(fd->q, &fd->gate);
}

static void fifo_finish_request(struct request *rq)
{
	struct fifo_data *fd = rq->q->elevator->elevator_data;

	ioaz_gate_done(rq->q, &fd->gate, rq);
}

static void fifo_requeue_request(struct request *rq)
{
	fifo_finish_request(rq);
}

/* fifo has nothing to tune: no queue/iosched/, its counters in debugfs */
#ifdef CONFIG_BLK_DEBUG_FS
#define FIFO_DATA(q) ((struct fifo_data *)(q)->elevator->elevator_data)
IOAZ_DEBUGFS_U64(fifo, inserted, FIFO_DATA(q)->stats.inserted)
IOAZ_DEBUGFS_U64(fifo, dispatched, FIFO_DATA(q)->stats.dispatched)
IOAZ_DEBUGFS_U64(fifo, merged, FIFO_DATA(q)->stats.merged)
IOAZ_DEBUGFS_U64(fifo, queued, FIFO_DATA(q)->nr_queued)
#undef FIFO_DATA

static const struct blk_mq_debugfs_attr fifo_debugfs_attrs[] = {
	IOAZ_DEBUGFS_ATTR(fifo, inserted),
	IOAZ_DEBUGFS_ATTR(fifo, dispatched),
	IOAZ_DEBUGFS_ATTR(fifo, merged),
	IOAZ_DEBUGFS_ATTR(fifo, queued),
	{},
};
#endif

struct elevator_type ioaz_fifo_type = {
	.ops = {
		.init_sched		= fifo_init_sched,
		.exit_sched		= fifo_exit_sched,
		.allow_merge		= fifo_allow_merge,
		.bio_merge		= fifo_bio_merge,
		.request_merge		= fifo_request_merge,
		.prepare_request	= ioaz_prepare_request,
		.insert_requests	= fifo_insert_requests,
		.dispatch_request	= fifo_dispatch_request,
		.has_work		= fifo_has_work,
		.finish_request		= fifo_finish_request,
		.requeue_request	= fifo_requeue_request,
	},
#ifdef CONFIG_BLK_DEBUG_FS
	.queue_debugfs_attrs = fifo_debugfs_attrs,
#endif
	.elevator_name = "fifo",
	.elevator_owner = THIS_MODULE,
};
