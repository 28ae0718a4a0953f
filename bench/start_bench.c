/*
 * start_bench - what `vramctl run` adds to a command's start (a benchmark:
 * it prints figures and asserts nothing). All in one run, interleaved, so
 * the machine's load weighs on both sides alike:
 *
 *   1. one command started and waited for, ROUNDS times: `true` directly
 *      and `vramctl run --limit 1G -- true`; the best and the median each;
 *   2. 256 commands released at once: 256 x `true` directly, and 256 x
 *      `vramctl run --group G --limit 1G -- true` joining one group; time
 *      until the last has exited.
 *
 *   start_bench VRAMCTL [TRUE]     (TRUE defaults to /bin/true)
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define ROUNDS 200
#define MANY   256

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static pid_t spawn(char *const argv[])
{
	pid_t pid;
	if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0) {
		perror("start_bench: posix_spawn");
		exit(1);
	}
	return pid;
}

static void reap(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "start_bench: a command failed (status %#x)\n", st);
		exit(1);
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* 256 at once: each child waits on a pipe, then execs argv; the clock runs
 * from the release to the last exit. */
static double many(char *const argv[])
{
	int go[2];
	pid_t pids[MANY];
	if (pipe(go) != 0)
		exit(1);
	for (int i = 0; i < MANY; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			char c;
			close(go[1]);
			if (read(go[0], &c, 1) != 0)
				_exit(3);
			execv(argv[0], argv);
			_exit(127);
		}
	}
	close(go[0]);
	usleep(200000); /* all forked and waiting */
	double t0 = now_ns();
	close(go[1]);
	for (int i = 0; i < MANY; i++)
		reap(pids[i]);
	return now_ns() - t0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: start_bench VRAMCTL [TRUE]\n");
		return 2;
	}
	static char bin_true[] = "/bin/true", s_run[] = "run", s_limit[] = "--limit", s_1g[] = "1G",
	            s_dash[] = "--", s_group[] = "--group", s_bench[] = "bench";
	char *tru = argc > 2 ? argv[2] : bin_true;
	const char *tmp = getenv("TMPDIR");
	char dirbuf[4096];
	snprintf(dirbuf, sizeof(dirbuf), "%s/vramctl-start-bench-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(dirbuf))
		return 1;
	setenv("VRAMCTL_REGISTRY_DIR", dirbuf, 1);

	char *direct[] = {tru, NULL};
	char *run[] = {argv[1], s_run, s_limit, s_1g, s_dash, tru, NULL};
	char *group[] = {argv[1], s_run, s_group, s_bench, s_limit, s_1g, s_dash, tru, NULL};
	double d[ROUNDS], r[ROUNDS];
	for (int i = 0; i < 20; i++) { /* warm the page cache */
		reap(spawn(direct));
		reap(spawn(run));
	}
	for (int i = 0; i < ROUNDS; i++) {
		double t0 = now_ns();
		reap(spawn(direct));
		double t1 = now_ns();
		reap(spawn(run));
		double t2 = now_ns();
		d[i] = t1 - t0;
		r[i] = t2 - t1;
	}
	qsort(d, ROUNDS, sizeof(d[0]), cmp);
	qsort(r, ROUNDS, sizeof(r[0]), cmp);
	printf("one command, %d rounds (ms)     best  median\n", ROUNDS);
	printf("  %-28s %6.3f %6.3f\n", "true", d[0] / 1e6, d[ROUNDS / 2] / 1e6);
	printf("  %-28s %6.3f %6.3f\n", "vramctl run --limit 1G true", r[0] / 1e6,
	       r[ROUNDS / 2] / 1e6);
	printf("  added by vramctl run: %.3f ms best, %.3f ms median (target <= 1 ms)\n",
	       (r[0] - d[0]) / 1e6, (r[ROUNDS / 2] - d[ROUNDS / 2]) / 1e6);

	double md = 1e30, mg = 1e30;
	for (int k = 0; k < 3; k++) {
		double x = many(direct), y = many(group);
		md = x < md ? x : md;
		mg = y < mg ? y : mg;
	}
	printf("%d commands released at once, best of 3 (ms): direct %.1f, joining one group "
	       "under vramctl run %.1f\n",
	       MANY, md / 1e6, mg / 1e6);
	printf("  added: %.1f ms per command spread over the machine's CPUs\n",
	       (mg - md) / 1e6 / MANY);
	rmdir(dirbuf);
	return 0;
}
