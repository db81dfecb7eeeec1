// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `ioaz-lab record`: every read/write bio submitted to one disk, one event
 * each through a ring buffer. For recording traces to replay in the
 * simulator only: the always-on probe (ioaz.bpf.c) never sends per-event data.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "record.h"
#include "core_fixes.bpf.h"

/* The disk to record (major << 20 | minor), set before load. */
const volatile __u32 target_dev = 0;

/* REQ_SYNC is bit __REQ_SYNC of bi_opf; its position is read from BTF. */
#define IOAZ_REQ_SYNC (1U << bpf_core_enum_value(enum req_flag_bits, __REQ_SYNC))

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

/* Events dropped because user space fell behind. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} dropped SEC(".maps");

SEC("tp_btf/block_bio_queue")
int on_bio_record(unsigned long long *ctx)
{
	struct bio *bio = ioaz_last_arg(ctx, nargs_bio_queue);
	struct gendisk *disk = ioaz_bio_disk(bio);
	struct ioaz_trace_event *e;
	__u32 op = bio->bi_opf & IOAZ_REQ_OP_MASK, zero = 0;
	__u64 *d;

	if (!disk || (op != REQ_OP_READ && op != REQ_OP_WRITE) || !bio->bi_iter.bi_size)
		return 0;
	if ((((__u32)disk->major << 20) | (__u32)disk->first_minor) != target_dev)
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		d = bpf_map_lookup_elem(&dropped, &zero);
		if (d)
			(*d)++;
		return 0;
	}
	e->ts_ns = bpf_ktime_get_ns();
	e->sector = bio->bi_iter.bi_sector;
	e->nr_sector = bio->bi_iter.bi_size >> 9;
	e->tgid = bpf_get_current_pid_tgid() >> 32;
	e->dev = target_dev;
	e->write = op == REQ_OP_WRITE;
	e->sync = !!(bio->bi_opf & IOAZ_REQ_SYNC);
	e->pad = 0;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
