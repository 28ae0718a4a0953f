/*
 * completion_spec.c - reading a command's --help for completion
 * (completion_spec.h): the "usage:" line, the "commands:" list and the
 * option lines, each option's value kind from its metavariable.
 */
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/completion_spec.h"
#include "common/compiler.h"
#include "common/exit.h"

/* Runs this binary with args + "--help"; its stdout into buf. 0 or -1. */
static int read_help(int nargs, char **args, char *buf, size_t len)
{
	char self[4096];
	char name[] = "vramctl", help[] = "--help", *argv[16];
	int p[2], status;
	size_t got = 0;
	pid_t pid;
	ssize_t n;

	n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0 || nargs > 13 || pipe(p) < 0)
		return -1;
	self[n] = '\0';
	argv[0] = name;
	for (int i = 0; i < nargs; i++)
		argv[1 + i] = args[i];
	argv[1 + nargs] = help;
	argv[2 + nargs] = NULL;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		alarm(5); /* a help text never takes long */
		execv(self, argv);
		_exit(VR_EXIT_NOTFOUND);
	}
	close(p[1]);
	while (got + 1 < len && (n = read(p[0], buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(p[0]);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	return 0;
}

static enum arg_kind kind_of(const char *opt, const char *meta, char *choices, size_t clen)
{
	if (strchr(meta, '|')) {
		snprintf(choices, clen, "%s", meta);
		return ARG_CHOICE;
	}
	if (!strcmp(meta, "SPEC") || !strcmp(opt, "--limit") || !strcmp(opt, "-l"))
		return ARG_SPEC;
	if (!strcmp(meta, "GROUP") || !strcmp(opt, "--group"))
		return ARG_GROUP;
	if (!strcmp(meta, "DEV") || !strcmp(meta, "GPU") || !strcmp(meta, "DEVICE"))
		return ARG_DEV;
	if (!strcmp(meta, "KERNEL"))
		return ARG_KERNEL;
	if (!strcmp(meta, "DIR"))
		return ARG_DIR;
	if (!strcmp(meta, "FILE") || !strcmp(meta, "PATH"))
		return ARG_FILE;
	if (!strcmp(meta, "COMMAND"))
		return ARG_COMMAND;
	return ARG_OTHER;
}

struct opt *cli_spec_find_opt(struct spec *s, const char *name)
{
	for (int i = 0; i < s->nopts; i++)
		if (!strcmp(s->opts[i].name, name))
			return &s->opts[i];
	return NULL;
}

static struct opt *add_opt(struct spec *s, const char *name)
{
	struct opt *o = cli_spec_find_opt(s, name);

	if (o || s->nopts == MAX_ITEMS || strlen(name) >= SPEC_NAME_MAX)
		return o;
	o = &s->opts[s->nopts++];
	memset(o, 0, sizeof *o);
	snprintf(o->name, sizeof o->name, "%s", name);
	return o;
}

/* A metavariable: "SPEC", "[SECONDS]", "ADDR:PORT", "table|json|prom". */
static int is_meta(const char *t)
{
	if (*t == '[')
		t++;
	return *t && *t != '-' && *t != '|' && (isupper((unsigned char)*t) || strchr(t, '|'));
}

/* Strips "[", "]", "...", "," around a token; returns what closed it. */
static char *strip(char *t, int *closed)
{
	size_t n;

	while (*t == '[')
		t++;
	*closed = 0;
	for (n = strlen(t); n > 0 && strchr("],.", t[n - 1]); n--)
		*closed = 1;
	t[n] = '\0';
	return t;
}

/*
 * One region of tokens: the usage line after the command's words, or an
 * option line before its description. Options with their values, and (in
 * usage) the positionals.
 */
static void parse_tokens(struct spec *s, char *text, int usage)
{
	char *tok[64], *save = NULL, *t;
	int n = 0;
	struct opt *alias[4];
	int nalias = 0;

	for (t = strtok_r(text, " \t", &save); t && n < 64; t = strtok_r(NULL, " \t", &save))
		tok[n++] = t;
	for (int i = 0; i < n; i++) {
		int closed, optional = tok[i][0] == '[', alias_next;
		char *raw = tok[i], *w;

		alias_next = raw[strlen(raw) - 1] == ',';
		w = strip(raw, &closed);
		(void)optional;
		if (!*w || !strcmp(w, "|") || !strcmp(w, "ARG"))
			continue;
		if (w[0] == '-' && w[1]) {
			char *eq = strchr(w, '='), *alt, *save2 = NULL, meta[128] = "";
			struct opt *last = NULL;
			int opt_value = 0;

			if (eq) {
				/* "--opt=VALUE", or "--opt[=VALUE]": an optional value. */
				int c3;

				opt_value = eq > w && eq[-1] == '[';
				eq[opt_value ? -1 : 0] = '\0';
				snprintf(meta, sizeof meta, "%s", strip(eq + 1, &c3));
			} else if (!closed && !alias_next && i + 1 < n && is_meta(tok[i + 1])) {
				char *m = tok[++i];
				int c2;

				opt_value = m[0] == '[';
				snprintf(meta, sizeof meta, "%s", strip(m, &c2));
			}
			/* "--user|--sys-prefix|--system": alternatives. */
			for (alt = strtok_r(w, "|", &save2); alt;
			     alt = strtok_r(NULL, "|", &save2)) {
				last = add_opt(s, alt);
				/* "--format FMT" after "--format table|json|prom": keep the
				 * choices. */
				if (!last || !meta[0] || last->kind == ARG_CHOICE)
					continue;
				last->kind =
				    kind_of(alt, meta, last->choices, sizeof last->choices);
				last->optional = opt_value;
			}
			if (alias_next && last && nalias < 4) {
				alias[nalias++] = last;
			} else if (last && meta[0]) {
				for (int a = 0; a < nalias; a++) {
					alias[a]->kind = last->kind;
					alias[a]->optional = last->optional;
					snprintf(alias[a]->choices, sizeof alias[a]->choices, "%s",
					         last->choices);
				}
				nalias = 0;
			} else {
				nalias = 0;
			}
			continue;
		}
		if (usage && s->npos < (int)VR_ARRAY_LEN(s->pos)) {
			struct opt *p = &s->pos[s->npos++];

			memset(p, 0, sizeof *p);
			p->kind = kind_of("", w, p->choices, sizeof p->choices);
		}
	}
}

/* Reads the help of "vramctl PATH..." into s. 0, or -1 when there is none. */
int cli_spec_load(struct spec *s, int npath, char **path)
{
	static char buf[32768];
	char *line, *save;
	int in_usage = 0, in_cmds = 0;

	memset(s, 0, sizeof *s);
	if (read_help(npath, path, buf, sizeof buf) < 0)
		return -1;
	/* strsep, not strtok: a blank line ends the usage and commands blocks. */
	for (save = buf; (line = strsep(&save, "\n"));) {
		char *p = line;

		while (*p == ' ' || *p == '\t')
			p++;
		if (!strncmp(line, "usage:", 6)) {
			/* Skip "usage: vramctl" and the command's own words. */
			char *q = line + 6;

			for (int w = 0; w < 1 + npath; w++) {
				while (*q == ' ')
					q++;
				while (*q && *q != ' ')
					q++;
			}
			parse_tokens(s, q, 1);
			in_usage = 1;
			in_cmds = 0;
			continue;
		}
		/* The usage's continuation lines: indented, up to a blank line. */
		if (in_usage && p != line && *p) {
			parse_tokens(s, p, 1);
			continue;
		}
		in_usage = 0;
		if (!strcmp(p, "commands:")) {
			in_cmds = 1;
			continue;
		}
		if (in_cmds && p != line && *p && *p != '-') {
			char *e = p;

			while (*e && *e != ' ')
				e++;
			if (s->ncmds < MAX_ITEMS && e - p < SPEC_NAME_MAX) {
				memcpy(s->cmds[s->ncmds], p, (size_t)(e - p));
				s->cmds[s->ncmds++][e - p] = '\0';
			}
			continue;
		}
		in_cmds = 0;
		if (p != line && *p == '-') {
			char *gap = strstr(p, "  ");

			if (gap)
				*gap = '\0';
			parse_tokens(s, p, 0);
		}
	}
	return 0;
}
