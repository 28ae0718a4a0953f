/*
 * status.c - `vramctl status`: every GPU and GPU process against its cap,
 * once (table, JSON or Prometheus text) or again and again (--watch: a
 * table redrawn on a terminal, as `nvidia-smi -l`; JSON lines in a pipe).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "common/exit.h"
#include "common/text.h"
#include "monitor/collect.h"
#include "monitor/format.h"

enum fmt { FMT_TABLE, FMT_JSON, FMT_PROM };

static void status_usage(FILE *f)
{
	fprintf(f, "usage: vramctl status [--json | --format table|json|prom] [--watch "
	           "[SECONDS]]\n"
	           "                      [--registry DIR]\n"
	           "\n"
	           "Shows every GPU (NVML) and every GPU process: capped ones with their "
	           "group,\n"
	           "cap, what they allocated, what the card holds for them and the "
	           "overhead\n"
	           "(context, modules, driver use), and peak; uncapped ones with NVML's "
	           "usage.\n"
	           "\n"
	           "  --json             JSON (schema in vramctl-status(1))\n"
	           "  --format FMT       table (default), json, or prom (Prometheus text)\n"
	           "  --watch [SECONDS]  again every SECONDS (default 1): the table redrawn on a\n"
	           "                     terminal, else one JSON object per line (--format\n"
	           "                     table or json to choose)\n"
	           "  --registry DIR     registry directory (default "
	           "$VRAMCTL_REGISTRY_DIR,\n"
	           "                     $XDG_RUNTIME_DIR/vramctl, /tmp/vramctl-UID)\n"
	           "\n"
	           "NVML is loaded from $VRAMCTL_NVML, else libnvidia-ml.so.1.\n");
}

static int emit(FILE *f, const struct mon_model *m, enum fmt fmt, int compact)
{
	switch (fmt) {
	case FMT_JSON:
		return mon_format_json(f, m, compact);
	case FMT_PROM:
		return mon_format_prom(f, m);
	default:
		return mon_format_table(f, m);
	}
}

int cmd_status(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},        {"format", required_argument, NULL, 'f'},
	    {"watch", optional_argument, NULL, 'w'}, {"registry", required_argument, NULL, 'r'},
	    {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
	};
	enum fmt fmt = FMT_TABLE;
	int fmt_given = 0, watch = 0;
	double interval = 1.0;
	const char *registry = NULL;
	int c;
	const char *word = "";
	optind = 1;
	while ((c = cli_getopt(argc, argv, "+:jf:w::r:h", opts, &word)) != -1) {
		switch (c) {
		case 'j':
			fmt = FMT_JSON;
			fmt_given = 1;
			break;
		case 'f':
			if (!strcmp(optarg, "table"))
				fmt = FMT_TABLE;
			else if (!strcmp(optarg, "json"))
				fmt = FMT_JSON;
			else if (!strcmp(optarg, "prom") || !strcmp(optarg, "prometheus"))
				fmt = FMT_PROM;
			else {
				fprintf(
				    stderr,
				    "vramctl: status: unknown format '%s' (table, json, prom)\n",
				    optarg);
				return VR_EXIT_ERROR;
			}
			fmt_given = 1;
			break;
		case 'w': {
			watch = 1;
			/* "--watch 2" as well as "--watch=2": take a following number. */
			const char *arg = optarg;
			if (!arg && optind < argc && argv[optind][0] >= '0' &&
			    argv[optind][0] <= '9')
				arg = argv[optind++];
			if (arg) {
				char *end;
				errno = 0;
				interval = strtod(arg, &end);
				if (errno || *end || !(interval > 0) || interval > 86400) {
					fprintf(stderr,
					        "vramctl: status: bad --watch interval '%s' "
					        "(seconds, > 0)\n",
					        arg);
					return VR_EXIT_ERROR;
				}
			}
			break;
		}
		case 'r':
			registry = optarg;
			break;
		case 'h':
			status_usage(stdout);
			return 0;
		default:
			return cli_option_error("status", c, word);
		}
	}
	if (optind < argc)
		return cli_usage_error("status", "unexpected argument '%s'", argv[optind]);
	if (watch && fmt == FMT_PROM) {
		fprintf(stderr, "vramctl: status: --watch shows a table or JSON lines; for "
		                "Prometheus, vramctl export serves the metrics\n");
		return VR_EXIT_ERROR;
	}
	/* --watch: the table a terminal's user expects, redrawn in place;
	 * JSON lines for a program reading a pipe (as before the table). */
	if (watch && !fmt_given)
		fmt = isatty(STDOUT_FILENO) ? FMT_TABLE : FMT_JSON;
	int redraw = watch && fmt == FMT_TABLE && isatty(STDOUT_FILENO);

	char nverr[256] = "";
	struct mon_nvml *nv = NULL;
	mon_nvml_open(NULL, &nv, nverr, sizeof(nverr));
	struct mon_sources src = {.nvml = nv, .nvml_error = nverr, .registry_dir = registry};
	int rc = 0;
	for (;;) {
		struct mon_model m = {0};
		if (mon_collect(&src, &m) < 0) {
			fprintf(stderr, "vramctl: status: out of memory\n");
			rc = VR_EXIT_ERROR;
			break;
		}
		if (watch && fmt == FMT_TABLE) {
			/* Each table under the time it was read: on a terminal in
			 * place of the last (cursor home, clear), else after it. */
			char when[40];
			vr_format_utc((uint64_t)time(NULL), when, sizeof(when));
			printf("%svramctl status --watch %g s  %s\n", redraw ? "\033[H\033[2J" : "",
			       interval, when);
		}
		int w = emit(stdout, &m, fmt, watch);
		if (w >= 0 && watch && fmt == FMT_TABLE && !redraw)
			putchar('\n');
		mon_model_clear(&m);
		if (fflush(stdout) != 0 || w < 0) {
			/* A reader that went away (| head) ends a watch quietly. */
			rc = watch && errno == EPIPE ? 0 : VR_EXIT_ERROR;
			break;
		}
		if (!watch)
			break;
		struct timespec ts = {.tv_sec = (time_t)interval,
		                      .tv_nsec =
		                          (long)((interval - (double)(time_t)interval) * 1e9)};
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	mon_nvml_close(nv);
	return rc;
}
