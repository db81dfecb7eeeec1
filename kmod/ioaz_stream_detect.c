// SPDX-License-Identifier: GPL-2.0
/*
 * stream: Xu & Jiang's Figure 2, the part that needs no elevator operation.
 * Which earlier request (parent) a new one continues, what a completed
 * request leaves behind for its child, when the disk waits for that child
 * and when the wait ends. ioaz_stream.c calls it from insert, finish and
 * dispatch, and sets up the wait's timer with ss_timer_fn.
 */
#include <linux/hrtimer.h>
#include <linux/math.h>
#include <linux/kernel.h>

#include "ioaz_stream.h"

/*
 * calculate_service_time() of Figure 2: a square-root seek curve from
 * svc_min_us (adjacent) to svc_max_us (svc_full_sectors or more away),
 * backward seeks backseek_penalty % of that (section 3.2: +50 %).
 */
static u64 ss_service_ns(struct stream_data *sd, sector_t from, sector_t to)
{
	u64 dist = to >= from ? to - from : from - to;
	u64 span = sd->svc_max_us > sd->svc_min_us ?
		   sd->svc_max_us - sd->svc_min_us : 0;
	u64 full = max_t(u64, sd->svc_full_sectors, 1);
	u64 us;

	if (dist >= full)
		us = sd->svc_max_us;
	else
		us = sd->svc_min_us +
		     div64_u64(span * int_sqrt64(div64_u64(dist << 20, full)),
			       1024);
	if (to < from)
		us = div_u64(us * sd->backseek_pct, 100);
	return us * NSEC_PER_USEC;
}

void ss_end_wait(struct stream_data *sd)
{
	lockdep_assert_held(&sd->vd.lock);
	sd->wait_idx = -1;
	sd->wait_gen++;
	/* a running callback sees the new generation and does nothing */
	hrtimer_try_to_cancel(&sd->timer);
}

/* Figure 2, "upon arrival of request new_R" */
void ss_on_arrival(struct stream_data *sd, struct request *rq, u64 now)
{
	unsigned int size = 1;
	int i, best = -1;

	lockdep_assert_held(&sd->vd.lock);

	for (i = 0; i < SS_PARENTS; i++) {
		struct ss_parent *p = &sd->parents[i];
		u64 cost;

		if (!p->used)
			continue;
		if (p->deadline_ns < now) {
			if (i != sd->wait_idx)
				p->used = false;
			continue;
		}
		cost = now - p->done_ns + ss_service_ns(sd, p->pos,
							 blk_rq_pos(rq));
		if (cost >= p->svc_ns)
			continue;
		/*
		 * The child of the parent we idle for ends the wait even when
		 * another parent of the same stream has as large a size (several
		 * completions handled before the submitter's next request).
		 */
		if (i == sd->wait_idx) {
			best = i;
			break;
		}
		if (best < 0 || p->size > sd->parents[best].size)
			best = i;
	}
	if (best >= 0) {
		size = sd->parents[best].size + 1;
		if (best == sd->wait_idx) {
			ss_end_wait(sd);
			sd->urgent = rq;
			sd->vd.stats.waits_paid++;
		}
		sd->parents[best].used = false;
	}
	ss_rq_set(rq, 0, size);
}

/*
 * Whether the pending request @next continues, past the requests still in
 * flight, the stream that ended at @pos: it starts at most one request's
 * length beyond per request the gate counts besides the one completing
 * (none: only right at @pos).
 */
static bool ss_runs_ahead(struct stream_data *sd, sector_t pos,
			  struct request *next)
{
	int others = atomic_read(&sd->vd.gate.inflight) - 1;

	if (blk_rq_pos(next) < pos)
		return false;
	return blk_rq_pos(next) - pos <=
	       (u64)max(others, 0) * blk_rq_sectors(next);
}

/* Figure 2, "upon completion of request R" */
void ss_on_complete(struct stream_data *sd, struct request *rq, u64 now)
{
	struct vr_data *vd = &sd->vd;
	sector_t pos = ss_rq_end(rq);
	struct request *pending = vr_choose(vd);
	struct ss_parent *p = NULL;
	unsigned int size = ss_rq_size(rq);
	int i, idx = 0;

	lockdep_assert_held(&sd->vd.lock);

	for (i = 0; i < SS_PARENTS; i++) {
		if (!sd->parents[i].used) {
			idx = i;
			p = &sd->parents[i];
			break;
		}
		if (sd->parents[i].deadline_ns < sd->parents[idx].deadline_ns &&
		    i != sd->wait_idx)
			idx = i;
	}
	if (!p) {
		if (idx == sd->wait_idx)
			return;
		p = &sd->parents[idx];
	}
	p->pos = pos;
	p->done_ns = now;
	/* no pending request: the disk is idle anyway, allow the widest window */
	p->svc_ns = pending ? ss_service_ns(sd, pos, blk_rq_pos(pending)) :
			      (u64)sd->svc_max_us * NSEC_PER_USEC;
	p->deadline_ns = now + p->svc_ns;
	p->size = size;
	p->used = true;

	if (!sd->idle || size < sd->threshold)
		return;
	/*
	 * Waiting pays only when the child can come after this completion: an
	 * asynchronous request's submitter did not wait for it, and a pending
	 * request that lies ahead within what the stream's other requests in
	 * flight span was issued by a submitter that runs ahead of the disk:
	 * its next request is already here, and the base serves it next.
	 */
	if (!op_is_sync(rq->cmd_flags) ||
	    (pending && ss_runs_ahead(sd, pos, pending)))
		return;
	/* Deadline's decision to serve an expired request comes first */
	if (vd->deadlines && vr_earliest_expired(vd, now)) {
		vd->stats.waits_cut++;
		sd->in_stream = false;
		return;
	}
	if (!sd->in_stream) {
		sd->in_stream = true;
		sd->slice_start = now;
	} else if (now - sd->slice_start >=
		   (u64)sd->slice_ms * NSEC_PER_MSEC) {
		/* slice used up: serve the pending choice instead of waiting */
		vd->stats.waits_cut++;
		sd->in_stream = false;
		return;
	}
	if (sd->wait_idx >= 0)
		ss_end_wait(sd);
	sd->wait_idx = idx;
	vd->stats.waits++;
	hrtimer_start(&sd->timer, ns_to_ktime(p->svc_ns), HRTIMER_MODE_REL);
	/* the callback fires at or after this, and checks it to know it is ours */
	sd->wait_until = ktime_to_ns(hrtimer_get_expires(&sd->timer));
}

enum hrtimer_restart ss_timer_fn(struct hrtimer *timer)
{
	struct stream_data *sd = container_of(timer, struct stream_data, timer);
	struct request_queue *q = sd->vd.q;
	enum hrtimer_restart ret = HRTIMER_NORESTART;
	unsigned long irqflags;
	bool run = false;

	spin_lock_irqsave(&sd->vd.lock, irqflags);
	/*
	 * While this callback waited for the lock, the wait may have ended and
	 * a new one been armed on this timer: then it is not ours to end.
	 */
	if (sd->wait_idx >= 0 && !hrtimer_is_queued(timer) &&
	    ktime_get_ns() >= sd->wait_until) {
		struct ss_parent *p = &sd->parents[sd->wait_idx];

		if ((u64)p->size * 100 >=
		    (u64)sd->threshold * (100 + sd->tolerance_pct) &&
		    sd->tolerance_pct) {
			/* a long stream gets a second chance (Figure 2) */
			u64 extra = div_u64(p->svc_ns * sd->tolerance_pct, 100);

			p->svc_ns += extra;
			p->deadline_ns = p->done_ns + p->svc_ns;
			p->size = sd->threshold;
			hrtimer_forward_now(timer, ns_to_ktime(extra));
			sd->wait_until = ktime_to_ns(hrtimer_get_expires(timer));
			ret = HRTIMER_RESTART;
		} else {
			p->used = false;
			sd->wait_idx = -1;
			sd->wait_gen++;
			sd->vd.stats.waits_timeout++;
			run = true;
		}
	}
	spin_unlock_irqrestore(&sd->vd.lock, irqflags);
	if (run)
		blk_mq_run_hw_queues(q, true);
	return ret;
}
