// SPDX-License-Identifier: GPL-2.0
/*
 * iotool: the load generator that runs inside the test VM (linked static).
 *
 *   iotool vector DEV SPEC        submit the requests of a dispatch-order vector
 *   iotool rand DEV SECS DEPTH WRITE_PCT SEED
 *                                 random 4 KiB O_DIRECT I/O, DEPTH in flight
 *   iotool seq DEV START_SECTOR SECS
 *                                 one synchronous sequential 4 KiB reader
 *   iotool randsync DEV SECS SEED one synchronous random 4 KiB reader
 *
 * SPEC lines: "P sector sectors op" (the priming request) then
 * "R id sector sectors op arrive_ms", op being r or w. Every request is its
 * own io_submit() so the block layer cannot plug-merge them and arrival order
 * is the order of the lines. Output lines are "key value" for the harness.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAXREQ 256
#define BS 4096

static int io_setup(unsigned int nr, aio_context_t *ctx)
{
	return syscall(SYS_io_setup, nr, ctx);
}

static int io_submit(aio_context_t ctx, long nr, struct iocb **iocbs)
{
	return syscall(SYS_io_submit, ctx, nr, iocbs);
}

static int io_getevents(aio_context_t ctx, long min, long max,
			struct io_event *ev)
{
	return syscall(SYS_io_getevents, ctx, min, max, ev, NULL);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { t / 1000000000ull, t % 1000000000ull };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void *xbuf(size_t n)
{
	void *p;

	if (posix_memalign(&p, BS, n))
		exit(2);
	memset(p, 0x5a, n);
	return p;
}

static uint64_t rng = 88172645463325252ull;

static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void prep(struct iocb *cb, int fd, int write, void *buf, uint64_t sector,
		 unsigned int sectors, uint64_t data)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_fildes = fd;
	cb->aio_lio_opcode = write ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
	cb->aio_buf = (uint64_t)(uintptr_t)buf;
	cb->aio_nbytes = sectors * 512ull;
	cb->aio_offset = sector * 512ull;
	cb->aio_data = data;
}

/*
 * Wait until the device has started the priming request: without a plug the
 * block layer dispatches from a kworker, and the vector's requests must not
 * reach the scheduler before the priming request has left it.
 */
static void wait_started(const char *dev)
{
	const char *name = strrchr(dev, '/') ? strrchr(dev, '/') + 1 : dev;
	char path[128];

	snprintf(path, sizeof(path), "/sys/block/%s/inflight", name);
	for (int i = 0; i < 2000; i++) {
		unsigned int r = 0, w = 0;
		FILE *f = fopen(path, "r");

		if (!f)
			return;
		if (fscanf(f, "%u %u", &r, &w) != 2)
			r = w = 0;
		fclose(f);
		if (r + w)
			return;
		usleep(500);
	}
}

static int cmd_vector(const char *dev, const char *spec)
{
	static struct iocb cbs[MAXREQ];
	static uint64_t arrive[MAXREQ];
	struct io_event ev[MAXREQ];
	aio_context_t ctx = 0;
	char line[256], id[64], op;
	unsigned long long sector;
	unsigned int sectors, ms;
	int n = 0, done = 0, fd, errors = 0;
	FILE *f = fopen(spec, "r");
	uint64_t t0;

	fd = open(dev, O_RDWR | O_DIRECT);
	if (fd < 0 || !f || io_setup(MAXREQ, &ctx)) {
		perror("vector setup");
		return 2;
	}
	while (fgets(line, sizeof(line), f) && n < MAXREQ) {
		if (sscanf(line, "P %llu %u %c", &sector, &sectors, &op) == 3) {
			ms = 0;
		} else if (sscanf(line, "R %63s %llu %u %c %u", id, &sector,
				  &sectors, &op, &ms) != 5) {
			continue;
		}
		prep(&cbs[n], fd, op == 'w', xbuf(sectors * 512), sector,
		     sectors, n);
		arrive[n] = ms * 1000000ull;
		n++;
	}
	t0 = now_ns();
	for (int i = 0; i < n; i++) {
		struct iocb *p = &cbs[i];

		if (arrive[i])
			sleep_until(t0 + arrive[i]);
		if (io_submit(ctx, 1, &p) != 1) {
			perror("io_submit");
			return 2;
		}
		/*
		 * The vector's clock starts with the priming request on the
		 * device: on a loaded TCG host the kworker may take tens of ms
		 * to dispatch it, which would shift every completion against
		 * the arrivals.
		 */
		if (i == 0) {
			wait_started(dev);
			t0 = now_ns();
		}
	}
	while (done < n) {
		int got = io_getevents(ctx, 1, MAXREQ, ev);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return 2;
		for (int i = 0; i < got; i++)
			if ((long long)ev[i].res != (long long)cbs[ev[i].data].aio_nbytes)
				errors++;
		done += got;
	}
	printf("submitted %d\ncompleted %d\nerrors %d\nelapsed_ms %llu\n", n,
	       done, errors, (unsigned long long)((now_ns() - t0) / 1000000));
	return errors ? 1 : 0;
}

static uint64_t dev_sectors(int fd)
{
	uint64_t bytes = 0;

	if (ioctl(fd, BLKGETSIZE64, &bytes))
		return 0;
	return bytes / 512;
}

static int cmd_rand(const char *dev, int secs, int depth, int write_pct,
		    unsigned long seed)
{
	static struct iocb cbs[MAXREQ];
	struct iocb *ptrs[MAXREQ];
	struct io_event ev[MAXREQ];
	aio_context_t ctx = 0;
	unsigned long long submitted = 0, completed = 0, errors = 0;
	int fd = open(dev, O_RDWR | O_DIRECT), inflight = 0;
	uint64_t span, t0, end;
	char *buf;

	if (fd < 0 || depth < 1 || depth > MAXREQ || io_setup(MAXREQ, &ctx)) {
		perror("rand setup");
		return 2;
	}
	rng ^= seed * 0x9e3779b97f4a7c15ull;
	span = dev_sectors(fd) / 8;
	buf = xbuf((size_t)BS * depth);
	t0 = now_ns();
	end = t0 + secs * 1000000000ull;
	for (int i = 0; i < depth; i++) {
		prep(&cbs[i], fd, (int)(xorshift() % 100) < write_pct,
		     buf + (size_t)i * BS, (xorshift() % span) * 8, 8, i);
		ptrs[i] = &cbs[i];
	}
	if (io_submit(ctx, depth, ptrs) != depth)
		return 2;
	submitted = depth;
	inflight = depth;
	while (inflight) {
		int got = io_getevents(ctx, 1, depth, ev);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return 2;
		for (int i = 0; i < got; i++) {
			int k = ev[i].data;
			struct iocb *p = &cbs[k];

			completed++;
			inflight--;
			if ((long long)ev[i].res != BS)
				errors++;
			if (now_ns() >= end)
				continue;
			prep(p, fd, (int)(xorshift() % 100) < write_pct,
			     buf + (size_t)k * BS, (xorshift() % span) * 8, 8, k);
			if (io_submit(ctx, 1, &p) != 1) {
				errors++;
				continue;
			}
			submitted++;
			inflight++;
		}
	}
	double s = (now_ns() - t0) / 1e9;

	printf("submitted %llu\ncompleted %llu\nerrors %llu\niops %.0f\n",
	       submitted, completed, errors, completed / s);
	return errors ? 1 : 0;
}

/* sync readers: report count and the worst latency they saw */
static int cmd_sync(const char *dev, int random, uint64_t start, int secs,
		    unsigned long seed)
{
	int fd = open(dev, O_RDONLY | O_DIRECT);
	uint64_t span, pos = start, n = 0, worst = 0, t0, end;
	char *buf = xbuf(BS);

	if (fd < 0) {
		perror("open");
		return 2;
	}
	rng ^= seed * 0x9e3779b97f4a7c15ull;
	span = dev_sectors(fd) / 8;
	t0 = now_ns();
	end = t0 + secs * 1000000000ull;
	while (now_ns() < end) {
		uint64_t a, lat;

		if (random)
			pos = (xorshift() % span) * 8;
		a = now_ns();
		if (pread(fd, buf, BS, pos * 512) != BS) {
			perror("pread");
			return 1;
		}
		lat = now_ns() - a;
		if (lat > worst)
			worst = lat;
		n++;
		pos += 8;
	}
	printf("reads %llu\nmax_latency_us %llu\n", (unsigned long long)n,
	       (unsigned long long)(worst / 1000));
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(argv[1], "vector"))
		return cmd_vector(argv[2], argv[3]);
	if (argc == 7 && !strcmp(argv[1], "rand"))
		return cmd_rand(argv[2], atoi(argv[3]), atoi(argv[4]),
				atoi(argv[5]), strtoul(argv[6], NULL, 10));
	if (argc == 5 && !strcmp(argv[1], "seq"))
		return cmd_sync(argv[2], 0, strtoull(argv[3], NULL, 10),
				atoi(argv[4]), 0);
	if (argc == 5 && !strcmp(argv[1], "randsync"))
		return cmd_sync(argv[2], 1, 0, atoi(argv[3]),
				strtoul(argv[4], NULL, 10));
	fprintf(stderr, "usage: see the comment at the top of iotool.c\n");
	return 2;
}
