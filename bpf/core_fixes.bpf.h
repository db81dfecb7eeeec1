/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Every kernel-version difference ioaz.bpf.c meets, in one place, each decided
 * by CO-RE (BTF of the running kernel), never by a version number.
 */
#ifndef __IOAZ_CORE_FIXES_BPF_H
#define __IOAZ_CORE_FIXES_BPF_H

#include <bpf/bpf_core_read.h>

/*
 * Linux v5.17 ("block: remove the ->rq_disk field in struct request") moved
 * the disk of a request from rq->rq_disk to rq->q->disk. The ___old flavour
 * describes the older layout; libbpf resolves whichever the kernel has.
 */
struct request___old {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

static __always_inline struct gendisk *ioaz_rq_disk(struct request *rq)
{
	struct request___old *old = (void *)rq;

	if (bpf_core_field_exists(old->rq_disk))
		return BPF_CORE_READ(old, rq_disk);
	return rq->q->disk;
}

/*
 * Linux v5.12 ("block: add a bi_bdev field to struct bio") replaced
 * bio->bi_disk with bio->bi_bdev (whose bd_disk is the whole disk).
 */
struct bio___old {
	struct gendisk *bi_disk;
} __attribute__((preserve_access_index));

static __always_inline struct gendisk *ioaz_bio_disk(struct bio *bio)
{
	struct bio___old *old = (void *)bio;

	if (bpf_core_field_exists(old->bi_disk))
		return BPF_CORE_READ(old, bi_disk);
	return bio->bi_bdev->bd_disk;
}

/*
 * Linux v5.11 ("block: remove the request_queue argument to the block_bio_*
 * and block_rq_* tracepoints", Christoph Hellwig's series) dropped the leading
 * queue (and, for the bio merge tracepoints, request) arguments: the object we
 * want is the LAST argument in every version. The loader counts each
 * tracepoint's arguments in the kernel's BTF (btf_trace_<name> prototypes)
 * and sets these before load; the verifier then drops the dead branches.
 */
const volatile __u32 nargs_bio_queue = 1;
const volatile __u32 nargs_bio_merge = 1;
const volatile __u32 nargs_rq_merge = 1;

static __always_inline void *ioaz_last_arg(unsigned long long *ctx, __u32 nargs)
{
	if (nargs >= 3)
		return (void *)ctx[2];
	if (nargs == 2)
		return (void *)ctx[1];
	return (void *)ctx[0];
}

#endif /* __IOAZ_CORE_FIXES_BPF_H */
