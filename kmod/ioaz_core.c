// SPDX-License-Identifier: GPL-2.0
/*
 * ioaz_sched: module entry, the dispatch gate and sysfs parsing helpers
 * shared by the fifo, vr and stream elevators.
 */
#include <linux/kernel.h>
#include <linux/module.h>

#include "ioaz_sched.h"

/*
 * Room on the device for another request? Requests that the elevator handed
 * out and that have not finished count against the driver tags of the
 * hardware queues that serve ordinary I/O (poll queues only take polled
 * requests, so they must not count: null_blk has one by default).
 */
static unsigned int ioaz_device_depth(struct request_queue *q)
{
	struct blk_mq_tag_set *set = q->tag_set;
	unsigned int queues;

	if (!set)
		return 1;
	queues = set->map[HCTX_TYPE_DEFAULT].nr_queues;
	/* separate read queues (NVMe read_queues=) have tags of their own */
	if (set->nr_maps > HCTX_TYPE_READ &&
	    set->map[HCTX_TYPE_READ].queue_offset !=
	    set->map[HCTX_TYPE_DEFAULT].queue_offset)
		queues += set->map[HCTX_TYPE_READ].nr_queues;
	return max(set->queue_depth, 1U) * max(queues, 1U);
}

/*
 * Called from has_work and dispatch. When the gate is closed, waiting is set
 * before inflight is read again, and ioaz_gate_done() decrements inflight
 * before it reads waiting: with a full barrier on both sides one of them sees
 * the other, so a completion never misses a queue that wants to run.
 */
bool ioaz_gate_open(struct request_queue *q, struct ioaz_gate *g)
{
	unsigned int depth = ioaz_device_depth(q);
	unsigned int cap = READ_ONCE(g->max_inflight);

	if (cap && cap < depth)
		depth = cap;

	if (atomic_read(&g->inflight) < depth)
		return true;
	WRITE_ONCE(g->waiting, true);
	smp_mb(); /* order the waiting store before the inflight load */
	return atomic_read(&g->inflight) < depth;
}

void ioaz_gate_dispatched(struct ioaz_gate *g, struct request *rq)
{
	/* only requests that will see finish_request may hold the gate */
	if (!(rq->rq_flags & IOAZ_RQF_FINISHES))
		return;
	ioaz_rq_set(rq, IOAZ_RQ_INFLIGHT);
	atomic_inc(&g->inflight);
}

/*
 * A request we dispatched finished or was requeued. Returns true if it had
 * been counted. Runs the queue if a dispatch was held back by the gate; the
 * run is asynchronous because we may be in the completion interrupt.
 */
bool ioaz_gate_done(struct request_queue *q, struct ioaz_gate *g,
		    struct request *rq)
{
	if (!(ioaz_rq_flags(rq) & IOAZ_RQ_INFLIGHT))
		return false;
	ioaz_rq_clear(rq, IOAZ_RQ_INFLIGHT);
	atomic_dec(&g->inflight);
	smp_mb__after_atomic(); /* order the decrement before reading waiting */
	if (READ_ONCE(g->waiting)) {
		WRITE_ONCE(g->waiting, false);
		blk_mq_run_hw_queues(q, true);
	}
	return true;
}

/* The elevators' init_sched, for the API at hand (ioaz_sched.h). */
int ioaz_init_sched(struct request_queue *q, struct ioaz_init_arg *arg,
		    int (*setup)(struct request_queue *q,
				 struct elevator_queue *eq))
{
#ifdef IOAZ_HAVE_INIT_SCHED_EQ
	return setup(q, arg);
#else
	struct elevator_queue *eq = elevator_alloc(q, arg);
	int ret;

	if (!eq)
		return -ENOMEM;
	ret = setup(q, eq);
	if (ret)
		kobject_put(&eq->kobj);
	return ret;
#endif
}

/* No flags in priv[0] (ioaz_rq_flags), no stream length in priv[1] (stream). */
void ioaz_prepare_request(struct request *rq)
{
	rq->elv.priv[0] = NULL;
	rq->elv.priv[1] = NULL;
}

/* Bad input or a value out of [min, max]: -EINVAL, the caller keeps the old value. */
int ioaz_parse_uint(const char *page, unsigned int min, unsigned int max,
		    unsigned int *out)
{
	unsigned int v;
	int ret = kstrtouint(page, 10, &v);

	if (ret)
		return -EINVAL;
	if (v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int ioaz_parse_u64(const char *page, u64 min, u64 max, u64 *out)
{
	u64 v;
	int ret = kstrtou64(page, 10, &v);

	if (ret)
		return -EINVAL;
	if (v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static struct elevator_type *ioaz_types[] = {
	&ioaz_fifo_type,
	&ioaz_vr_type,
	&ioaz_stream_type,
};

static int __init ioaz_init(void)
{
	int i, ret;

	for (i = 0; i < ARRAY_SIZE(ioaz_types); i++) {
		ret = elv_register(ioaz_types[i]);
		if (ret)
			goto undo;
	}
	return 0;
undo:
	while (--i >= 0)
		elv_unregister(ioaz_types[i]);
	return ret;
}

static void __exit ioaz_exit(void)
{
	int i;

	for (i = ARRAY_SIZE(ioaz_types) - 1; i >= 0; i--)
		elv_unregister(ioaz_types[i]);
}

module_init(ioaz_init);
module_exit(ioaz_exit);

MODULE_ALIAS("fifo-iosched");
MODULE_ALIAS("vr-iosched");
MODULE_ALIAS("stream-iosched");
MODULE_AUTHOR("ioaz");
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("FIFO (Carroll 3.1), V(R) (Carroll 3.2) and stream (Xu & Jiang) I/O schedulers");
