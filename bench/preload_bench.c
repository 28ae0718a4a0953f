/*
 * preload_bench - what the machine's preload (`vramctl preload enable`)
 * costs a program that never calls the driver (a benchmark: it prints
 * figures and asserts nothing). PROGRAM (default /bin/true) is started and
 * waited for, in batches that alternate, so the machine's load weighs on
 * every side alike:
 *
 *   direct     nothing preloaded;
 *   empty      a library with nothing in it preloaded: what loading any
 *              one small library costs (the floor);
 *   vramctl    vramctl's library preloaded.
 *
 * With --file (root, in a private mount namespace: bench/preload_bench.sh
 * makes one) the library goes in /etc/ld.so.preload, rewritten before each
 * batch, as `vramctl preload enable` leaves it; without, in LD_PRELOAD,
 * which ld.so loads the same way. The best and the median of each, and the
 * ratios to direct and to empty.
 *
 *   preload_bench [--file] LIB EMPTY [PROGRAM]
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/timing.h"

extern char **environ;

#define BATCHES 40
#define PER     10
#define MODES   3

/* The machine's preload file holds text ("" : removed). */
static int set_file(const char *text)
{
	if (!*text)
		return unlink("/etc/ld.so.preload") == 0 || access("/etc/ld.so.preload", F_OK) != 0
		           ? 0
		           : -1;
	FILE *f = fopen("/etc/ld.so.preload", "w");
	if (!f)
		return -1;
	fprintf(f, "%s\n", text);
	return fclose(f);
}

int main(int argc, char **argv)
{
	int file = argc > 1 && !strcmp(argv[1], "--file");
	if (argc - file < 3) {
		fprintf(stderr, "usage: preload_bench [--file] LIB EMPTY [PROGRAM]\n");
		return 2;
	}
	const char *lib = argv[1 + file], *empty = argv[2 + file];
	static char true_path[] = "/bin/true";
	char *prog = argc - file > 3 ? argv[3 + file] : true_path;
	const char *name[MODES] = {"direct", "empty", "vramctl"};
	const char *preload[MODES] = {"", empty, lib};
	static double t[MODES][BATCHES * PER];
	char *args[] = {prog, NULL};
	for (int b = 0; b < BATCHES; b++) {
		for (int m = 0; m < MODES; m++) {
			if (file ? set_file(preload[m]) != 0
			         : (*preload[m] ? setenv("LD_PRELOAD", preload[m], 1)
			                        : unsetenv("LD_PRELOAD")) != 0) {
				perror(file ? "/etc/ld.so.preload" : "LD_PRELOAD");
				return 1;
			}
			for (int i = 0; i < PER; i++) {
				pid_t pid;
				int st;
				double t0 = bench_now_ns();
				if (posix_spawn(&pid, prog, NULL, NULL, args, environ) != 0 ||
				    waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
				    WEXITSTATUS(st)) {
					fprintf(stderr, "preload_bench: %s failed\n", prog);
					return 1;
				}
				t[m][b * PER + i] = bench_now_ns() - t0;
			}
		}
	}
	if (file)
		set_file("");
	double best[MODES], med[MODES];
	for (int m = 0; m < MODES; m++) {
		qsort(t[m], BATCHES * PER, sizeof t[m][0], bench_cmp_double);
		best[m] = t[m][0];
		med[m] = t[m][BATCHES * PER / 2];
	}
	printf("%s, %d starts each, preloaded through %s\n", prog, BATCHES * PER,
	       file ? "/etc/ld.so.preload" : "LD_PRELOAD");
	for (int m = 0; m < MODES; m++)
		printf(
		    "  %-8s best %7.3f ms  median %7.3f ms  x%.3f direct  x%.3f empty (median)\n",
		    name[m], best[m] / 1e6, med[m] / 1e6, med[m] / med[0], med[m] / med[1]);
	return 0;
}
