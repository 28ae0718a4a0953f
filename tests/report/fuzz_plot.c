/*
 * fuzz_plot.c - a fuzz target for `vramctl plot` (src/report/plot_*.c): any
 * bytes as a trace must be read and drawn, or refused, in bounded time and
 * memory, with no crash.
 *
 * Two ways to run it:
 *   - with libFuzzer (`make fuzz-plot`, clang): LLVMFuzzerTestOneInput is the
 *     target, seeds in tests/report/fuzz/;
 *   - as a plain program (the test suite, tests/report/fuzz_plot.sh):
 *     `fuzz_plot RUNS SEED...` reads each seed, then RUNS inputs made from
 *     the seeds by a fixed-seed mutator (numbers swapped for extreme ones,
 *     lines repeated, reversed, cut, bytes flipped). An input that takes
 *     over 20 s (SIGALRM) or leaves the process over 1 GiB resident fails.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cairo.h>
#include <fontconfig/fontconfig.h>

#include "report/plot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char svg_path[512];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("trace", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	char path[64], err[512];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	if (!svg_path[0])
		snprintf(svg_path, sizeof svg_path, "%s/fuzz-%d.svg",
		         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	struct pl_trace t;
	if (pl_read(path, &t, err, sizeof err) == 0) {
		pl_draw(&t, svg_path, err, sizeof err);
		pl_free(&t);
	}
	close(fd);
	unlink(svg_path);
	return 0;
}

#ifndef VR_LIBFUZZER
struct buf {
	char *p;
	size_t n, cap;
};

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		b->cap = (b->n + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

static const char *extremes[] = {"1e400",
                                 "-1e400",
                                 "1e308",
                                 "-1",
                                 "NaN",
                                 "0",
                                 "-0",
                                 "9223372036854775807",
                                 "18446744073709551616",
                                 "1e-320",
                                 "4294967296",
                                 "1000000015",
                                 "\"x\"",
                                 "null",
                                 "[]",
                                 "{}"};

/* One mutation of seed s into out. */
static void mutate(const struct buf *s, struct buf *out)
{
	out->n = 0;
	size_t at = s->n ? next() % s->n : 0;
	switch (next() % 6) {
	case 0: /* a number swapped for an extreme one */
		while (at < s->n && !(s->p[at] >= '0' && s->p[at] <= '9'))
			at++;
		put(out, s->p, at);
		{
			size_t end = at;
			while (end < s->n && strchr("0123456789.e+-", s->p[end]))
				end++;
			const char *x = extremes[next() % (sizeof extremes / sizeof *extremes)];
			put(out, x, strlen(x));
			put(out, s->p + end, s->n - end);
		}
		break;
	case 1: /* the file cut anywhere */
		put(out, s->p, at);
		break;
	case 2: /* a byte changed */
		put(out, s->p, s->n);
		if (out->n)
			out->p[at] = (char)next();
		break;
	case 3: { /* one line repeated many times */
		size_t a = at, e = at;
		while (a > 0 && s->p[a - 1] != '\n')
			a--;
		while (e < s->n && s->p[e] != '\n')
			e++;
		put(out, s->p, e);
		for (int i = 0, k = (int)(next() % 2000); i < k; i++) {
			put(out, "\n", 1);
			put(out, s->p + a, e - a);
		}
		put(out, s->p + e, s->n - e);
		break;
	}
	case 4: { /* the lines in reverse order (the header line stays first) */
		size_t first = 0;
		while (first < s->n && s->p[first] != '\n')
			first++;
		put(out, s->p, first < s->n ? first + 1 : first);
		size_t e = s->n;
		while (e > first + 1) {
			size_t a = e - 1;
			while (a > first + 1 && s->p[a - 1] != '\n')
				a--;
			put(out, s->p + a, e - a);
			if (e - a && s->p[e - 1] != '\n')
				put(out, "\n", 1);
			e = a;
		}
		break;
	}
	default: /* random bytes inserted */
		put(out, s->p, at);
		for (int i = 0, k = (int)(next() % 16); i < k; i++) {
			char c = (char)next();
			put(out, &c, 1);
		}
		put(out, s->p + at, s->n - at);
	}
}

static void too_long(int sig)
{
	(void)sig;
	static const char msg[] = "fuzz_plot: an input took over 20 s\n";
	(void)!write(2, msg, sizeof msg - 1);
	_exit(1);
}

static int run_one(const struct buf *in, const char *what)
{
	alarm(20);
	LLVMFuzzerTestOneInput((const uint8_t *)in->p, in->n);
	alarm(0);
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0 && ru.ru_maxrss > 1024L * 1024) {
		fprintf(stderr, "fuzz_plot: %s left the process at %ld MiB resident\n", what,
		        ru.ru_maxrss / 1024);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: fuzz_plot RUNS SEED...\n");
		return 2;
	}
	signal(SIGALRM, too_long);
	long runs = strtol(argv[1], NULL, 10);
	int nseeds = argc - 2;
	struct buf *seeds = calloc((size_t)nseeds, sizeof *seeds), out = {0};
	for (int i = 0; i < nseeds; i++) {
		FILE *f = fopen(argv[i + 2], "re");
		if (!f) {
			perror(argv[i + 2]);
			return 2;
		}
		char chunk[4096];
		size_t n;
		while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
			put(&seeds[i], chunk, n);
		fclose(f);
		if (!seeds[i].p)
			put(&seeds[i], "", 0);
		if (run_one(&seeds[i], argv[i + 2]) != 0)
			return 1;
	}
	for (long r = 0; r < runs; r++) {
		mutate(&seeds[next() % (uint64_t)nseeds], &out);
		char what[64];
		snprintf(what, sizeof what, "mutation %ld", r);
		if (run_one(&out, what) != 0) {
			FILE *f = fopen("fuzz-failed.json", "we");
			if (f) {
				fwrite(out.p, 1, out.n, f);
				fclose(f);
			}
			return 1;
		}
	}
	printf("fuzz_plot: %d seeds and %ld mutations read and drawn\n", nseeds, runs);
	for (int i = 0; i < nseeds; i++)
		free(seeds[i].p);
	free(seeds);
	free(out.p);
	/* cairo's and fontconfig's caches, as vramctl plot releases them. */
	cairo_debug_reset_static_data();
	FcFini();
	return 0;
}
#endif
