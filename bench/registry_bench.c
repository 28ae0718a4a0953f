/*
 * registry_bench - the shared registry's own costs (a benchmark: it prints
 * figures and asserts nothing).
 *
 *   1. an uncontended vr_reserve + vr_release pair, one process, one thread,
 *      beside an empty call through a function pointer (the floor);
 *   2. the same pair with 4 processes x 2 threads on one group;
 *   3. attach time: one vr_join creating the region, one joining it; and a
 *      join and a leave beside a member of another process (which hands the
 *      books over through the group's socket), best and median of 300;
 *   4. 256 processes released at once to join one group: time until the
 *      last has joined;
 *   5. vramctl_snapshot_take with 1,000 live members;
 *   6. waiting for room (#36), the case: a member of a 1 GiB group
 *      holds 800 MiB, another waits for 600; the time from the release to
 *      the waiter's grant (its wake-up through the segment's futex, the
 *      default 250 ms slice left as it is), best, median and worst of 200.
 *      `registry_bench wake` runs this stage alone.
 *
 * Runs in a fresh registry directory under $TMPDIR (or /tmp).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "registry/registry.h"
#include "vramctl/registry.h"

#define PAIRS    5000000L
#define PAIRS_MT 1000000L

static char dir[4096];
static const unsigned char uuid0[VR_UUID_LEN] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
static vr_member *member;

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static vr_member *join(const char *group)
{
	struct vr_join_opts o = {.dir = dir, .group = group, .limit_spec = "64G"};
	vr_member *m = NULL;
	char err[256];
	int rc = vr_join(&o, &m, NULL, err, sizeof(err));
	if (rc != 0) {
		fprintf(stderr, "registry_bench: join %s: %s\n", group, err);
		exit(1);
	}
	return m;
}

static void empty(int dev, uint64_t bytes)
{
	(void)dev;
	(void)bytes;
	__asm__ volatile("" ::: "memory");
}

static double pairs(vr_member *m, long n)
{
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		if (vr_reserve(m, 0, 4096, NULL) == 0)
			vr_release(m, 0, 4096);
	}
	return (now_ns() - t0) / (double)n;
}

static void *thread_pairs(void *arg)
{
	double *out = arg;
	*out = pairs(member, PAIRS_MT);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* A join and a leave, 300 times, beside a member of another process. */
static void join_beside(void)
{
	enum { N = 300 };
	static double tj[N], tl[N];
	int p[2];
	if (pipe(p))
		exit(1);
	pid_t c = fork();
	if (c == 0) {
		join("bench-beside");
		if (write(p[1], "y", 1) < 0)
			_exit(1);
		pause();
		_exit(0);
	}
	char b;
	if (read(p[0], &b, 1) != 1)
		exit(1);
	for (int i = 0; i < N; i++) {
		double t0 = now_ns();
		vr_member *m = join("bench-beside");
		double t1 = now_ns();
		vr_leave(m);
		tj[i] = t1 - t0;
		tl[i] = now_ns() - t1;
	}
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	close(p[0]);
	close(p[1]);
	qsort(tj, N, sizeof(double), cmp_double);
	qsort(tl, N, sizeof(double), cmp_double);
	printf("join beside a member of another process: %.1f us best, %.1f us median; leave %.1f "
	       "us best, %.1f us median (%d each)\n",
	       tj[0] / 1e3, tj[N / 2] / 1e3, tl[0] / 1e3, tl[N / 2] / 1e3, N);
}

/* Stage 6: a waiter in another process, served by our release. */
static void wake_after_free(void)
{
	enum { N = 200 };
	static double t[N];
	const uint64_t MiB = 1ull << 20, cap = 1024 * MiB;
	int down[2], up[2];
	if (pipe(down) || pipe(up))
		exit(1);
	vr_member *m = join("bench-wake");
	vr_device(m, uuid0, cap, NULL);
	pid_t c = fork();
	if (c == 0) {
		close(down[1]);
		close(up[0]);
		vr_member *w = join("bench-wake");
		vr_device(w, uuid0, cap, NULL);
		char cmd;
		while (read(down[0], &cmd, 1) == 1) {
			struct vr_wait wt;
			double granted = -1;
			if (vr_wait_enter(w, 0, 600 * MiB, &wt) == 0) {
				uint64_t end = (uint64_t)now_ns() + 5000000000ull;
				int rc;
				while ((rc = vr_wait_turn(w, &wt)) == 0 && (uint64_t)now_ns() < end)
					vr_wait_sleep(w, &wt, end);
				if (rc == 1)
					granted = now_ns();
				vr_wait_exit(w, &wt, rc == 1);
				if (rc == 1)
					vr_release(w, 0, 600 * MiB);
			}
			if (write(up[1], &granted, sizeof granted) != (ssize_t)sizeof granted)
				_exit(1);
		}
		_exit(0);
	}
	int n = 0;
	for (int i = 0; i < N; i++) {
		if (vr_reserve(m, 0, 800 * MiB, NULL) != 0 || write(down[1], "w", 1) != 1)
			break;
		struct timespec settle = {0, 20000000}; /* it waits, asleep */
		nanosleep(&settle, NULL);
		double freed = now_ns(), granted;
		vr_release(m, 0, 800 * MiB);
		if (read(up[0], &granted, sizeof granted) != (ssize_t)sizeof granted || granted < 0)
			break;
		t[n++] = granted - freed;
	}
	close(down[1]);
	waitpid(c, NULL, 0);
	close(down[0]);
	close(up[0]);
	close(up[1]);
	vr_leave(m);
	if (n == 0) {
		printf("wait for room: no wait was served\n");
		return;
	}
	qsort(t, (size_t)n, sizeof(double), cmp_double);
	printf("wait for room (600 of 1 GiB, 800 held): release to grant %.1f us best, %.1f us "
	       "median, %.1f us worst (%d)\n",
	       t[0] / 1e3, t[n / 2] / 1e3, t[n - 1] / 1e3, n);
}

/* 4 processes x 2 threads; each thread's ns per pair comes back on a pipe. */
static void contended(void)
{
	int start[2], res[2];
	if (pipe(start) || pipe(res))
		exit(1);
	pid_t pid[4];
	for (int p = 0; p < 4; p++) {
		pid[p] = fork();
		if (pid[p] == 0) {
			close(start[1]);
			member = join("bench-mt");
			vr_device(member, uuid0, UINT64_MAX, NULL);
			char c;
			if (read(start[0], &c, 1) < 0) /* EOF: go */
				_exit(1);
			pthread_t t[2];
			double ns[2];
			for (int i = 0; i < 2; i++)
				pthread_create(&t[i], NULL, thread_pairs, &ns[i]);
			for (int i = 0; i < 2; i++)
				pthread_join(t[i], NULL);
			if (write(res[1], ns, sizeof(ns)) < 0)
				_exit(1);
			vr_leave(member);
			_exit(0);
		}
	}
	close(start[0]);
	close(res[1]);
	double t0 = now_ns();
	close(start[1]);
	double sum = 0, worst = 0;
	for (int p = 0; p < 4; p++) {
		double ns[2];
		if (read(res[0], ns, sizeof(ns)) != (ssize_t)sizeof(ns))
			break;
		for (int i = 0; i < 2; i++) {
			sum += ns[i];
			if (ns[i] > worst)
				worst = ns[i];
		}
	}
	double wall = now_ns() - t0;
	for (int p = 0; p < 4; p++)
		waitpid(pid[p], NULL, 0);
	printf("reserve+release, 4 processes x 2 threads: %.1f ns per pair per thread (mean; worst "
	       "thread %.1f), %.1f ns per pair overall\n",
	       sum / 8, worst, wall / (8.0 * PAIRS_MT));
}

/* Forks n members of group that join when released and hold until told.
 * Returns the time from release until the last one joined (ns). */
static double attach_many(const char *group, int n, pid_t *pids, int *hold_w)
{
	int start[2], up[2], hold[2];
	if (pipe(start) || pipe(up) || pipe(hold))
		exit(1);
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			close(start[1]);
			close(hold[1]);
			char c;
			if (read(start[0], &c, 1) < 0)
				_exit(1);
			vr_member *m = join(group);
			vr_device(m, uuid0, UINT64_MAX, NULL);
			vr_reserve(m, 0, 1 << 20, NULL);
			if (write(up[1], "j", 1) < 0)
				_exit(1);
			while (read(hold[0], &c, 1) > 0)
				;
			vr_leave(m);
			_exit(0);
		}
	}
	close(start[0]);
	close(up[1]);
	close(hold[0]);
	double t0 = now_ns();
	close(start[1]);
	char c;
	for (int i = 0; i < n; i++)
		if (read(up[0], &c, 1) != 1)
			break;
	double t = now_ns() - t0;
	close(up[0]);
	*hold_w = hold[1];
	return t;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* forked members never print it again */
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/registry-bench.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	if (argc > 1 && !strcmp(argv[1], "wake")) {
		wake_after_free();
		vr_group_remove(dir, "bench-wake");
		rmdir(dir);
		return 0;
	}
	struct rlimit rl;
	if (getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 2000)
		fprintf(stderr,
		        "registry_bench: RLIMIT_NPROC is %lu; stage 5 needs 1,000 processes\n",
		        (unsigned long)rl.rlim_cur);

	/* 1. Uncontended pair. */
	double t0 = now_ns();
	vr_member *m = join("bench");
	double cold = now_ns() - t0;
	vr_device(m, uuid0, UINT64_MAX, NULL);
	void (*volatile fp)(int, uint64_t) = empty;
	t0 = now_ns();
	for (long i = 0; i < PAIRS; i++) {
		fp(0, 4096);
		fp(0, 4096);
	}
	double floor_ns = (now_ns() - t0) / PAIRS;
	pairs(m, PAIRS / 10); /* warm up */
	double one = pairs(m, PAIRS);
	printf("reserve+release, 1 process 1 thread: %.1f ns per pair (two empty calls: %.1f ns)\n",
	       one, floor_ns);

	/* 3. Attach, cold (creates the region) and warm. */
	t0 = now_ns();
	vr_member *m2 = join("bench");
	double warm = now_ns() - t0;
	vr_leave(m2);
	vr_leave(m);
	printf("attach, one process: %.1f us creating the region, %.1f us joining it\n", cold / 1e3,
	       warm / 1e3);
	join_beside();

	/* 2. Contended. */
	contended();

	/* 4. 256 at once. */
	static pid_t pids[1000];
	int hold_a, hold_b;
	double t256 = attach_many("bench-256", 256, pids, &hold_a);
	printf("attach, 256 processes released at once: %.1f ms until the last joined\n",
	       t256 / 1e6);

	/* 5. Snapshot with 1,000 members (744 more in another group). */
	attach_many("bench-744", 744, pids + 256, &hold_b);
	struct vramctl_snapshot *s = NULL;
	double best = 1e18, total = 0;
	int runs = 20, nprocs = 0;
	for (int r = 0; r < runs; r++) {
		t0 = now_ns();
		if (vramctl_snapshot_take(dir, &s) != 0)
			break;
		double t = now_ns() - t0;
		nprocs = s->nprocs;
		vramctl_snapshot_free(s);
		total += t;
		if (t < best)
			best = t;
	}
	printf("snapshot of %d live members: %.2f ms best, %.2f ms mean of %d\n", nprocs,
	       best / 1e6, total / runs / 1e6, runs);
	close(hold_a);
	close(hold_b);
	while (wait(NULL) > 0)
		;

	/* 6. Waiting for room. */
	wake_after_free();
	vr_group_remove(dir, "bench-wake");
	vr_group_remove(dir, "bench");
	vr_group_remove(dir, "bench-mt");
	vr_group_remove(dir, "bench-beside");
	vr_group_remove(dir, "bench-256");
	vr_group_remove(dir, "bench-744");
	rmdir(dir);
	return 0;
}
