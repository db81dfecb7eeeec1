/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One submitted bio, as `ioaz-lab record` writes it to its ring buffer
 * (agent/ioaz/probe/recorder.py mirrors this layout).
 */
#ifndef __IOAZ_RECORD_H
#define __IOAZ_RECORD_H

struct ioaz_trace_event {
	__u64 ts_ns;		/* bpf_ktime_get_ns at submission */
	__u64 sector;		/* disk-absolute start sector */
	__u32 nr_sector;
	__u32 tgid;		/* submitting process */
	__u32 dev;		/* whole disk, major << 20 | minor */
	__u8 write;		/* 0 read, 1 write */
	__u8 sync;		/* REQ_SYNC */
	__u16 pad;
};

#endif /* __IOAZ_RECORD_H */
