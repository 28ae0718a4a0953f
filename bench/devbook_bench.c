/*
 * devbook_bench - what the device book costs a process, beside 1, 100 and
 * 1,000 others on the GPU (a benchmark: it prints figures and asserts
 * nothing; #38). As root (it writes a book), in a directory of its own.
 *
 * One group holds a guarantee on the GPU; the others are processes of that
 * group, each with bytes on the card published in its held counts, beside
 * BORROWERS more with a borrow in flight (a lock on the board) on every
 * row. Then, ROUNDS times each, in this process:
 *
 *   join     open the book, map it, find the group's entry, close it
 *   borrow   what a borrow asks of the book: its bytes on the board, the
 *            others' pending bytes, the other groups' unused guarantees,
 *            its bytes off the board again (NVML's free memory aside)
 *   release  a guaranteed member's block placed and freed: its held count
 *            up and down
 *
 * best and median in microseconds, per row of others; the target is the
 * same figures on every row (the cost does not grow with the machine).
 *
 *   devbook_bench [ROUNDS]
 *   devbook_bench --hold DIR   (for guarantee_storm.sh: a guarantee of 40 GiB
 *                               on the do-nothing driver's GPU, in DIR's book,
 *                               held until stdin ends)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "registry/devbook.h"
#include "registry/proc.h"

#define GiB       (1ull << 30)
#define CAP       (80 * GiB)
#define BORROWERS 4

static char dir[64];
static const unsigned char uuid[16] = {0xbe, 0x4c, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
static const uint64_t ident = 0x1234;

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int card_free(void *arg, uint64_t *f)
{
	(void)arg;
	*f = CAP;
	return 0;
}

/* A process on the GPU: a member of the group holding 64 MiB, or a
 * borrower with 64 MiB in flight; stays until killed. */
static pid_t other(int borrower, int ready)
{
	pid_t p = fork();
	if (p != 0)
		return p;
	struct vr_devbook *b = NULL;
	char err[256];
	struct vr_devholder self = {.pid = getpid()};
	vr_proc_start_time(NULL, 0, &self.start);
	if (vr_devbook_open(dir, uuid, &b, err, sizeof err) != 0)
		_exit(1);
	if (borrower)
		vr_devbook_pending_add(b, 64 << 20);
	else if (vr_devbook_find(b, 0, ident, &self, 1) > 0)
		vr_devbook_held(b, 64 << 20);
	if (write(ready, "k", 1) != 1)
		_exit(1);
	pause();
	_exit(0);
}

static void row(int n, int rounds)
{
	pid_t *kids = calloc((size_t)n, sizeof *kids);
	double *t[3];
	int fds[2];
	if (!kids || pipe(fds) != 0)
		exit(1);
	for (int k = 0; k < 3; k++)
		t[k] = calloc((size_t)rounds, sizeof(double));
	n += BORROWERS;
	kids = realloc(kids, (size_t)n * sizeof *kids);
	if (!kids)
		exit(1);
	for (int i = 0; i < n; i++)
		kids[i] = other(i < BORROWERS, fds[1]);
	for (int i = 0; i < n; i++) {
		char c;
		if (read(fds[0], &c, 1) != 1)
			exit(1);
	}
	struct vr_devholder self = {.pid = getpid()};
	vr_proc_start_time(NULL, 0, &self.start);
	char err[256];
	struct vr_devbook *mine = NULL;
	if (vr_devbook_open(dir, uuid, &mine, err, sizeof err) != 0 ||
	    vr_devbook_find(mine, 0, ident, &self, 1) <= 0) {
		fprintf(stderr, "devbook_bench: %s\n", err);
		exit(1);
	}
	for (int r = 0; r < rounds; r++) {
		struct vr_devbook *b = NULL;
		double a = now_us();
		vr_devbook_open(dir, uuid, &b, err, sizeof err);
		vr_devbook_find(b, 1, ident, &self, 0);
		vr_devbook_close(b);
		double z = now_us();
		t[0][r] = z - a;
		uint64_t pend;
		struct vr_devbook_state st;
		a = now_us();
		vr_devbook_pending_add(mine, 1 << 20);
		vr_devbook_pending_others(mine, &pend);
		vr_devbook_state(mine, &st);
		vr_devbook_pending_sub(mine, 1 << 20);
		z = now_us();
		t[1][r] = z - a;
		a = now_us();
		vr_devbook_held(mine, 2 << 20);
		vr_devbook_held(mine, -(2 << 20));
		t[2][r] = now_us() - a;
	}
	printf("%5d others |", n - BORROWERS);
	for (int k = 0; k < 3; k++) {
		qsort(t[k], (size_t)rounds, sizeof(double), cmp);
		printf(" %8.2f %8.2f |", t[k][0], t[k][rounds / 2]);
		free(t[k]);
	}
	printf("\n");
	fflush(stdout);
	vr_devbook_close(mine);
	for (int i = 0; i < n; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
	close(fds[0]);
	close(fds[1]);
	free(kids);
}

/* --hold DIR: the guarantee guarantee_storm.sh's processes borrow beside. */
static int hold(const char *where)
{
	unsigned char null_gpu[16];
	memset(null_gpu, 0x42, sizeof null_gpu); /* bench/alloc_bench_driver.c's */
	char err[512], c;
	uint64_t given;
	struct vr_devbook_ask a = {.capacity = CAP,
	                           .ident = ident,
	                           .guarantee = 40 * GiB,
	                           .group = "storm",
	                           .holder = {.pid = getpid()},
	                           .card_free = card_free};
	vr_proc_start_time(NULL, 0, &a.holder.start);
	if (vr_devbook_admit(where, null_gpu, &a, &given, err, sizeof err) != 0) {
		fprintf(stderr, "devbook_bench: %s\n", err);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	vr_devbook_end(where, null_gpu, 0, ident);
	return 0;
}

int main(int argc, char **argv)
{
	if (geteuid() != 0) {
		fprintf(stderr, "devbook_bench: run as root (it writes a device book)\n");
		return 1;
	}
	if (argc == 3 && !strcmp(argv[1], "--hold"))
		return hold(argv[2]);
	int rounds = argc > 1 ? atoi(argv[1]) : 2000;
	snprintf(dir, sizeof dir, "/tmp/devbook-bench.XXXXXX");
	if (!mkdtemp(dir) || chmod(dir, 0755) != 0)
		return 1;
	char err[512];
	uint64_t given;
	struct vr_devbook_ask a = {.capacity = CAP,
	                           .ident = ident,
	                           .guarantee = 40 * GiB,
	                           .group = "bench",
	                           .holder = {.pid = getpid()},
	                           .card_free = card_free};
	vr_proc_start_time(NULL, 0, &a.holder.start);
	if (vr_devbook_admit(dir, uuid, &a, &given, err, sizeof err) != 0) {
		fprintf(stderr, "devbook_bench: %s\n", err);
		return 1;
	}
	printf("device book: microseconds per operation, best and median of %d; beside %d "
	       "borrows in flight\n",
	       rounds, BORROWERS);
	printf("             |     join          |     borrow        |     release       |\n");
	static const int ns[] = {1, 100, 1000};
	for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
		row(ns[i], rounds);
	vr_devbook_end(dir, uuid, 0, ident);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : 1;
}
