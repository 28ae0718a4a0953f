/*
 * options.c - how the commands read their options (options.h): one
 * implementation, so they accept the same syntax and say the same messages.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli/options.h"
#include "common/compiler.h"
#include "common/contract.h"
#include "common/exit.h"
#include "common/size.h"

int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
               const char **word)
{
	int at = optind; /* the word getopt reads now (also inside a bundle) */
	int c;

	opterr = 0;
	c = getopt_long(argc, argv, shortopts, longopts, NULL);
	/* A value given as the next word that is "--" or a long option was
	 * not meant as the value ("--trace --report", "--limit -- cmd"): the
	 * option had none. Such a value goes with '=' (--trace=--odd). A word
	 * with one '-' ("-1G", "-x") stays a value, which its own check
	 * refuses by name where it is wrong. */
	if (c > 1 && c != ':' && c != '?' && optarg && at + 1 < argc && optarg == argv[at + 1] &&
	    optarg[0] == '-' && optarg[1] == '-') {
		*word = argv[at];
		optind = at + 1; /* the word not taken, for the caller's message */
		return ':';
	}
	if ((c == ':' || c == '?') && at < argc)
		*word = argv[at];
	else if (c > 1 && optarg && at < argc && argv[at][0] == '-' && argv[at][1] == c &&
	         argv[at][2] == '=' && optarg == argv[at] + 2)
		optarg++;
	return c;
}

/*
 * Adds the items of one --limit (or --guarantee) to *all. The size grammar's own messages name
 * the bad item; a message that starts by repeating the whole argument loses
 * that repetition, since the argument is already quoted in front.
 */
int cli_add_limit(struct vr_limits *all, const char *arg)
{
	return cli_add_spec(all, "--limit", arg);
}

int cli_add_spec(struct vr_limits *all, const char *opt, const char *arg)
{
	struct vr_limits one;
	char err[256], prefix[128];
	const char *msg = err;

	if (vr_parse_limits(arg, &one, err, sizeof(err)) < 0) {
		snprintf(prefix, sizeof(prefix), "'%s': ", arg);
		if (!strncmp(err, prefix, strlen(prefix)))
			msg = err + strlen(prefix);
		/* The grammar's words are a cap's; a guarantee is said as one. */
		if (!strcmp(opt, "--guarantee") &&
		    !strcmp(msg, "a cap must be more than zero bytes"))
			msg = "a guarantee must be more than zero bytes (leave --guarantee out for "
			      "none)";
		fprintf(stderr, "vramctl: %s '%s': %s\n", opt, arg, msg);
		return -1;
	}
	for (int i = 0; i < one.count; i++) {
		for (int j = 0; j < all->count; j++) {
			if (strcasecmp(all->item[j].dev, one.item[i].dev) != 0)
				continue;
			if (one.item[i].dev[0])
				fprintf(stderr, "vramctl: %s '%s': device '%s' given twice\n", opt,
				        arg, one.item[i].dev);
			else
				fprintf(stderr,
				        "vramctl: %s '%s': the %s for every device given twice\n",
				        opt, arg, strcmp(opt, "--limit") ? opt + 2 : "cap");
			return -1;
		}
		if (all->count == VR_MAX_LIMITS) {
			fprintf(stderr, "vramctl: %s: too many items (at most %d)\n", opt,
			        VR_MAX_LIMITS);
			return -1;
		}
		all->item[all->count++] = one.item[i];
	}
	return 0;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	fprintf(stderr, "vramctl: %s: %s ('vramctl %s --help')\n", cmd, what, cmd);
	return VR_EXIT_ERROR;
}

int cli_option_error(const char *cmd, int c, const char *word)
{
	if (c == ':')
		return cli_usage_error(cmd, "%s needs a value", word);
	if (word[0] == '-' && word[1] == '-' && strchr(word, '='))
		return cli_usage_error(cmd, "'%s': unknown option, or one that takes no value",
		                       word);
	return cli_usage_error(cmd, "unknown option '%s'", word);
}
