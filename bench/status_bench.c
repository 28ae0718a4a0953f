/*
 * status_bench - how long `vramctl status --json` takes with many process
 * records (a benchmark: it prints figures and asserts nothing).
 *
 *   status_bench [-n RECORDS] [-r RUNS] [-x SHELL-COMMAND] [VRAMCTL]
 *
 * Forks RECORDS processes (default 1000) that join groups of 100 through the
 * registry API, each reserving some memory on one simulated GPU UUID, and
 * hold their membership until the benchmark ends (they block on a pipe).
 * Then runs `VRAMCTL status --json` RUNS times (default 20) with the
 * registry directory pointing at them and prints min / median / max wall
 * time. With -x, runs the shell command instead (with VRAMCTL_REGISTRY_DIR
 * set), so other benchmarks (bench/top_bench.sh) can use the same records.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "registry/registry.h"

extern char **environ;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* A child: joins, reserves, says ready, waits for the end. */
static void member(const char *dir, int i, int ready_fd, int hold_fd)
{
	char group[32], err[256];
	snprintf(group, sizeof(group), "bench-%03d", i / 100);
	struct vr_join_opts o = {.dir = dir, .group = group, .limit_spec = "8G"};
	vr_member *m = NULL;
	if (vr_join(&o, &m, NULL, err, sizeof(err)) != 0) {
		fprintf(stderr, "status_bench: join %s: %s\n", group, err);
		_exit(1);
	}
	unsigned char uuid[VR_UUID_LEN] = {0x0e, 0x0e, 0x0e, 0x0e, 0x11, 0x11, 0x22, 0x22,
	                                   0x33, 0x33, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44};
	uint64_t cap;
	int d = vr_device(m, uuid, 8ULL << 30, &cap);
	if (d >= 0)
		vr_reserve(m, d, (uint64_t)(1 + i % 50) << 20, NULL);
	char c = 'r';
	if (write(ready_fd, &c, 1) != 1)
		_exit(1);
	while (read(hold_fd, &c, 1) > 0)
		;
	_exit(0);
}

int main(int argc, char **argv)
{
	int n = 1000, runs = 20, opt;
	const char *exec_cmd = NULL;
	while ((opt = getopt(argc, argv, "n:r:x:")) != -1) {
		if (opt == 'n')
			n = atoi(optarg);
		else if (opt == 'r')
			runs = atoi(optarg);
		else if (opt == 'x')
			exec_cmd = optarg;
		else
			return 2;
	}
	/* Without VRAMCTL: $VR_BUILD/vramctl (as `make bench` runs it). */
	static char defpath[4096];
	const char *vb = getenv("VR_BUILD");
	const char *vramctl = optind < argc ? argv[optind] : NULL;
	if (!vramctl && vb) {
		snprintf(defpath, sizeof(defpath), "%s/vramctl", vb);
		vramctl = defpath;
	}
	if (!vramctl && !exec_cmd) {
		fprintf(stderr, "usage: status_bench [-n RECORDS] [-r RUNS] [-x CMD] VRAMCTL\n");
		return 2;
	}
	if (runs < 1)
		runs = 1;
	char dir[] = "/tmp/vramctl-status-bench.XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	setenv("VRAMCTL_REGISTRY_DIR", dir, 1);

	int ready[2], hold[2];
	/* Close-on-exec: what the benchmark runs must not hold the members' pipes. */
	if (pipe2(ready, O_CLOEXEC) || pipe2(hold, O_CLOEXEC)) {
		perror("pipe");
		return 1;
	}
	double t0 = now_ms();
	pid_t *kids = calloc((size_t)n, sizeof(*kids));
	int started = 0;
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0) {
			perror("fork");
			break;
		}
		if (p == 0) {
			close(ready[0]);
			close(hold[1]);
			member(dir, i, ready[1], hold[0]);
		}
		kids[started++] = p;
	}
	close(ready[1]);
	close(hold[0]);
	int got = 0;
	char c;
	while (got < started && read(ready[0], &c, 1) == 1)
		got++;
	printf("status_bench: %d processes joined %d groups in %.0f ms\n", got, (got + 99) / 100,
	       now_ms() - t0);

	int rc = 0;
	if (exec_cmd) {
		rc = system(exec_cmd);
		rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : 1;
	} else {
		double *t = calloc((size_t)runs, sizeof(*t));
		char *args[] = {(char *)vramctl, (char *)"status", (char *)"--json", NULL};
		posix_spawn_file_actions_t fa;
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
		posix_spawn_file_actions_addclose(&fa, ready[0]);
		posix_spawn_file_actions_addclose(&fa, hold[1]);
		for (int r = 0; r < runs; r++) {
			double s = now_ms();
			pid_t p;
			int st;
			if (posix_spawn(&p, args[0], &fa, NULL, args, environ) != 0) {
				perror("posix_spawn");
				rc = 1;
				break;
			}
			waitpid(p, &st, 0);
			t[r] = now_ms() - s;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				fprintf(stderr, "status_bench: vramctl status failed\n");
				rc = 1;
			}
		}
		posix_spawn_file_actions_destroy(&fa);
		qsort(t, (size_t)runs, sizeof(*t), cmp_double);
		printf("status_bench: vramctl status --json, %d records, %d runs: min %.2f ms, "
		       "median %.2f ms, max %.2f ms (target <= 5 ms on a quiet machine, min: %s; "
		       "median: %s)\n",
		       got, runs, t[0], t[runs / 2], t[runs - 1], t[0] <= 5.0 ? "met" : "not met",
		       t[runs / 2] <= 5.0 ? "met" : "not met");
		free(t);
	}
	close(hold[1]); /* the members see EOF, leave and exit */
	for (int i = 0; i < started; i++)
		waitpid(kids[i], NULL, 0);
	free(kids);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "status_bench: could not remove %s\n", dir);
	return rc;
}
