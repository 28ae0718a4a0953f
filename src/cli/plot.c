/*
 * plot.c - `vramctl plot TRACE -o OUT.svg|OUT.png`: draws a trace written
 * by `vramctl run --trace` (src/report/plot_*.c).
 */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "common/exit.h"
#include "report/plot.h"

#include <cairo.h>
#include <fontconfig/fontconfig.h>

static void plot_usage(FILE *f)
{
	fprintf(f, "usage: vramctl plot TRACE -o OUT.svg|OUT.png\n"
	           "\n"
	           "Draws a trace written by 'vramctl run --trace': memory in use per GPU and\n"
	           "per process over time, the cap, the peak, denials and spills.\n"
	           "See vramctl-plot(1).\n");
}

int cmd_plot(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *in = NULL, *out = NULL, *word = "";
	int c;
	optind = 1;
	/* '-': the trace comes back in its place among the options (as 1). */
	while ((c = cli_getopt(argc, argv, "-:o:h", opts, &word)) != -1) {
		if (c == 'h') {
			plot_usage(stdout);
			return 0;
		}
		if (c == 'o') {
			out = optarg;
		} else if (c == ':' || c == '?') {
			return cli_option_error("plot", c, word);
		} else if (!in) {
			in = optarg;
		} else {
			return cli_usage_error("plot", "one trace at a time: '%s'", optarg);
		}
	}
	if (optind < argc) { /* after "--", which plot does not take */
		return cli_usage_error("plot", "unknown option '%s'", argv[optind - 1]);
	}
	if (!in)
		return cli_usage_error("plot", "no trace given");
	if (!out)
		return cli_usage_error("plot", "no -o OUT given");
	struct pl_trace t;
	char err[512];
	if (pl_read(in, &t, err, sizeof err) != 0) {
		fprintf(stderr, "vramctl: plot: %s\n", err);
		return VR_EXIT_ERROR;
	}
	if (t.cut_line > 0)
		fprintf(
		    stderr,
		    "vramctl: plot: %s ends early, after line %ld: a trace cut short; drawing what "
		    "it holds\n",
		    in, t.cut_line);
	if (t.skipped > 0)
		fprintf(
		    stderr,
		    "vramctl: plot: %s: %zu event%s skipped (a time, size or PID that no trace of "
		    "vramctl holds: not finite, negative or absurd, or past %d processes)\n",
		    in, t.skipped, t.skipped == 1 ? "" : "s", PL_MAX_PROCS);
	int rc = pl_draw(&t, out, err, sizeof err);
	pl_free(&t);
	/* cairo's and fontconfig's caches, released so that leak checkers see
	 * what is ours (their documented way to do so). */
	cairo_debug_reset_static_data();
	FcFini();
	if (rc != 0) {
		fprintf(stderr, "vramctl: plot: %s\n", err);
		return VR_EXIT_ERROR;
	}
	return 0;
}
