/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Every kernel-version difference ioaz.bpf.c meets, in one place, each decided
 * by CO-RE (BTF of the running kernel), never by a version number, and each
 * citing the kernel commit that made it.
 */
#ifndef __IOAZ_CORE_FIXES_BPF_H
#define __IOAZ_CORE_FIXES_BPF_H

#include <bpf/bpf_core_read.h>

/*
 * The operation of a request or bio is the low REQ_OP_BITS (8) bits of its
 * flags since v4.10 (ef295ecf090d, "block: better op and flags encoding").
 * REQ_OP_MASK is a macro, absent from vmlinux.h; the operations themselves
 * are enum req_op constants from the kernel's BTF.
 */
#define IOAZ_REQ_OP_MASK 0xff

/*
 * Linux v5.17, f3fa33acca9f ("block: remove the ->rq_disk field in struct
 * request", with d152c682f03c adding the q->disk it points to), moved
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
 * Linux v5.12, 309dca309fc3 ("block: store a block_device pointer in struct
 * bio"), replaced bio->bi_disk with bio->bi_bdev (whose bd_disk is the whole
 * disk).
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
 * Linux v5.11 dropped the leading queue (and, for the bio merge tracepoints,
 * request) arguments: a54895fa057c ("block: remove the request_queue to
 * argument request based tracepoints": block_rq_merge) and e8a676d61c07
 * ("block: simplify and extend the block_bio_merge tracepoint class":
 * block_bio_queue and the bio merges). The object we want is the LAST
 * argument in every version. The loader counts each
 * tracepoint's arguments in the kernel's BTF (btf_trace_<name> prototypes)
 * and sets these before load; the verifier then drops the dead branches.
 */
const volatile __u32 nargs_bio_queue = 1;
const volatile __u32 nargs_bio_merge = 1;
const volatile __u32 nargs_rq_merge = 1;
/*
 * block_getrq was (q, bio, rw) before v5.11 (e8a676d61c07 too): there the
 * bio is the middle argument, not the last.
 */
const volatile __u32 nargs_getrq = 1;

static __always_inline void *ioaz_last_arg(unsigned long long *ctx, __u32 nargs)
{
	if (nargs >= 3)
		return (void *)ctx[2];
	if (nargs == 2)
		return (void *)ctx[1];
	return (void *)ctx[0];
}

#endif /* __IOAZ_CORE_FIXES_BPF_H */
