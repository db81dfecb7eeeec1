// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * probeload: the probe's loader for the test VM (linked static; the VM has no
 * Python). It does what agent/ioaz/probe/ does, in C: reads each tracepoint's
 * argument count from the kernel's BTF (btf_trace_* prototypes), sets the
 * object's settings, loads and attaches every program, then runs a command
 * and prints the counters it saw, one "key value" line each:
 *
 *   probeload OBJ -- CMD [ARG...]
 *
 *   loaded 1 / programs N            the object loaded and N programs attached
 *   dev MAJ:MIN read R write W bios B seq S lat L untimed U svc V procs P
 *
 * Exit status: 0 when CMD ran and the maps were read, 1 on any failure
 * (with "error ..." naming what failed).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "../../bpf/ioaz.h"

#define MAX_LINKS 16
#define MAX_PROCS 4096

static int fail(const char *what, int err)
{
	printf("error %s: %s\n", what, strerror(err < 0 ? -err : err));
	return 1;
}

/* Arguments of a tracepoint as BPF sees them: the prototype's, less its __data. */
static int tracepoint_nargs(const struct btf *vmlinux, const char *tp)
{
	const struct btf_type *t;
	char name[128];
	int id;

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	id = btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF);
	if (id < 0)
		return -1;
	t = btf__type_by_id(vmlinux, btf__type_by_id(vmlinux, id)->type);
	if (!t || !btf_is_ptr(t))
		return -1;
	t = btf__type_by_id(vmlinux, t->type);
	if (!t || !btf_is_func_proto(t))
		return -1;
	return btf_vlen(t) - 1;
}

/* Sets a `const volatile` variable of the object's .rodata before load. */
static int set_rodata(struct bpf_object *obj, const char *var, uint64_t value)
{
	struct bpf_map *map = bpf_object__find_map_by_name(obj, ".rodata");
	const struct btf *btf = bpf_object__btf(obj);
	const struct btf_var_secinfo *vs;
	const struct btf_type *sec;
	size_t size;
	char *data;
	int id, i;

	if (!map || !btf)
		return -ENOENT;
	/* libbpf 1.1 returns it const; it is writable until load */
	data = (char *)bpf_map__initial_value(map, &size);
	id = btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC);
	if (!data || id < 0)
		return -ENOENT;
	sec = btf__type_by_id(btf, id);
	vs = btf_var_secinfos(sec);
	for (i = 0; i < btf_vlen(sec); i++, vs++) {
		const struct btf_type *v = btf__type_by_id(btf, vs->type);

		if (strcmp(btf__name_by_offset(btf, v->name_off), var))
			continue;
		if (vs->offset + vs->size > size)
			return -EINVAL;
		if (vs->size == 4) {
			uint32_t v32 = value;

			memcpy(data + vs->offset, &v32, 4);
		} else if (vs->size == 8) {
			memcpy(data + vs->offset, &value, 8);
		} else {
			return -EINVAL;
		}
		return 0;
	}
	return -ENOENT;
}

static int run(char **argv)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

struct proc_count {
	__u32 dev, tgid;
	__u64 bios;
};

static void add_proc(struct proc_count *pc, int *n, __u32 dev, __u32 tgid, __u64 bios)
{
	for (int i = 0; i < *n; i++) {
		if (pc[i].dev == dev && pc[i].tgid == tgid) {
			pc[i].bios += bios;
			return;
		}
	}
	if (*n < MAX_PROCS)
		pc[(*n)++] = (struct proc_count){ dev, tgid, bios };
}

static int dump(struct bpf_object *obj)
{
	int ncpu = libbpf_num_possible_cpus();
	int stats_fd = bpf_map__fd(bpf_object__find_map_by_name(obj, "dev_stats"));
	int procs_fd = bpf_map__fd(bpf_object__find_map_by_name(obj, "procs"));
	struct ioaz_proc_key pk, *pprev = NULL;
	static struct proc_count pc[MAX_PROCS];
	struct ioaz_dev *vals;
	__u32 key, *prev = NULL;
	__u64 *pvals;
	int npc = 0;

	if (ncpu <= 0 || stats_fd < 0 || procs_fd < 0)
		return -ENOENT;
	vals = calloc(ncpu, sizeof(*vals));
	pvals = calloc(ncpu, sizeof(*pvals));
	if (!vals || !pvals)
		return -ENOMEM;
	while (bpf_map_get_next_key(procs_fd, pprev, &pk) == 0) {
		if (bpf_map_lookup_elem(procs_fd, &pk, pvals) == 0)
			for (int c = 0; c < ncpu; c++)
				add_proc(pc, &npc, pk.dev, pk.tgid, pvals[c]);
		pprev = &pk;
	}
	while (bpf_map_get_next_key(stats_fd, prev, &key) == 0) {
		__u64 rd = 0, wr = 0, bios = 0, seq = 0, lat = 0, untimed = 0, svc = 0;
		int procs = 0;

		prev = &key;
		if (bpf_map_lookup_elem(stats_fd, &key, vals))
			continue;
		for (int c = 0; c < ncpu; c++) {
			struct ioaz_dev_stats *s = &vals[c].stats;

			rd += s->completed[IOAZ_DIR_READ];
			wr += s->completed[IOAZ_DIR_WRITE];
			bios += s->bios;
			seq += s->bios_seq;
			untimed += s->lat_untimed;
			svc += s->svc_count;
			for (int i = 0; i < IOAZ_LAT_SLOTS; i++)
				lat += s->lat_hist[i];
			if (vals[c].cpu.proc_pending)
				add_proc(pc, &npc, key, vals[c].cpu.proc_id >> 32,
					 vals[c].cpu.proc_pending);
		}
		for (int i = 0; i < npc; i++)
			procs += pc[i].dev == key && pc[i].bios > 0;
		printf("dev %u:%u read %llu write %llu bios %llu seq %llu lat %llu untimed %llu "
		       "svc %llu procs %d\n", key >> 20, key & 0xfffff,
		       (unsigned long long)rd, (unsigned long long)wr, (unsigned long long)bios,
		       (unsigned long long)seq, (unsigned long long)lat,
		       (unsigned long long)untimed, (unsigned long long)svc, procs);
	}
	free(vals);
	free(pvals);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const tps[][2] = {
		{ "nargs_bio_queue", "block_bio_queue" },
		{ "nargs_bio_merge", "block_bio_backmerge" },
		{ "nargs_rq_merge", "block_rq_merge" },
	};
	struct bpf_link *links[MAX_LINKS];
	struct bpf_program *prog;
	struct bpf_object *obj;
	struct btf *vmlinux;
	int nlinks = 0, err, rc;

	if (argc < 4 || strcmp(argv[2], "--")) {
		fprintf(stderr, "usage: probeload OBJ -- CMD [ARG...]\n");
		return 2;
	}
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		return fail("vmlinux BTF", errno);
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj)
		return fail(argv[1], errno);
	for (unsigned int i = 0; i < sizeof(tps) / sizeof(tps[0]); i++) {
		int n = tracepoint_nargs(vmlinux, tps[i][1]);

		if (n < 1)
			return fail(tps[i][1], ENOENT);
		printf("nargs_%s %d\n", tps[i][1], n);
		err = set_rodata(obj, tps[i][0], n);
		if (err)
			return fail(tps[i][0], err);
	}
	err = bpf_object__load(obj);
	if (err)
		return fail("load", err);
	printf("loaded 1\n");
	bpf_object__for_each_program(prog, obj) {
		if (nlinks == MAX_LINKS)
			return fail("too many programs", E2BIG);
		links[nlinks] = bpf_program__attach(prog);
		if (!links[nlinks])
			return fail(bpf_program__name(prog), errno);
		nlinks++;
	}
	printf("programs %d\n", nlinks);
	fflush(stdout);
	rc = run(argv + 3);
	printf("command_status %d\n", rc);
	err = dump(obj);
	if (err)
		return fail("reading maps", err);
	while (nlinks)
		bpf_link__destroy(links[--nlinks]);
	bpf_object__close(obj);
	btf__free(vmlinux);
	return 0;
}
