/*
 * cgcheck.c - recorded cgroups checked against the kernel (cgcheck.h).
 *
 * The mounts come from one read of mountinfo: a cgroup2 mount serves the
 * "0::" line, a cgroup (v1) mount the line whose controllers (or
 * "name=...") are all among its super options. A cgroup's processes come
 * from one read of its cgroup.procs (PIDs in this process's PID
 * namespace), kept sorted in a table by path for the life of the set.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "monitor/cgcheck.h"
#include "registry/util.h"

#define MAX_MOUNTS 32

struct mount {
	int v2;
	char opts[256];  /* the super options, ",rw,memory," (commas around each) */
	char root[512];  /* the hierarchy's directory mounted there */
	char point[512]; /* where */
};

/* A table of entries by a string key (open addressing; the entries are
 * allocated one by one, so pointers to them stay valid as it grows). Each
 * entry begins with its key. */
struct strtab {
	char ***v; /* each entry: a pointer to its key, the entry's first field */
	size_t cap, used;
};

struct procs {
	char *path; /* the key */
	pid_t *pid; /* sorted; NULL when unreadable */
	size_t n;
};

/* A text checked before: the cgroups its lines name (members of one job
 * mostly share one text, so it is parsed once, not once per member). */
#define MAX_LINES 16
struct text {
	char *text; /* the key */
	int nlines; /* -1: a line that cannot be checked here */
	const struct procs *line[MAX_LINES];
};

struct mon_cgcheck {
	int loaded; /* the mounts and the namespace were read */
	char self[256];
	uint64_t cgns;
	int nmounts;
	struct mount m[MAX_MOUNTS];
	struct strtab cgroups; /* struct procs by path */
	struct strtab texts;   /* struct text by text */
};

struct mon_cgcheck *mon_cgcheck_new(const char *self)
{
	struct mon_cgcheck *c = calloc(1, sizeof(*c));
	if (c)
		snprintf(c->self, sizeof(c->self), "%s", self ? self : "/proc/self");
	return c;
}

void mon_cgcheck_free(struct mon_cgcheck *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->cgroups.cap; i++) {
		struct procs *e = (struct procs *)c->cgroups.v[i];
		if (e) {
			free(e->path);
			free(e->pid);
			free(e);
		}
	}
	free(c->cgroups.v);
	for (size_t i = 0; i < c->texts.cap; i++) {
		struct text *x = (struct text *)c->texts.v[i];
		if (x) {
			free(x->text);
			free(x);
		}
	}
	free(c->texts.v);
	free(c);
}

/* Copies a mountinfo field (octal escapes, "\040" for a space, undone) into
 * out; 0, or -1 when it does not fit. */
static int unescape(const char *f, size_t n, char *out, size_t len)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		char ch = f[i];
		if (ch == '\\' && i + 3 < n) {
			ch =
			    (char)((f[i + 1] - '0') * 64 + (f[i + 2] - '0') * 8 + (f[i + 3] - '0'));
			i += 3;
		}
		if (k + 1 >= len)
			return -1;
		out[k++] = ch;
	}
	out[k] = '\0';
	return 0;
}

/* One mountinfo line into *mt: 1 for a cgroup or cgroup2 mount, else 0. */
static int parse_mount(const char *line, struct mount *mt)
{
	const char *f[11];
	size_t fl[11];
	int nf = 0;
	const char *p = line;
	/* Fields 1-6, then the optional ones up to "-", then type, source, options. */
	while (*p && *p != '\n' && nf < 11) {
		while (*p == ' ')
			p++;
		const char *s = p;
		while (*p && *p != ' ' && *p != '\n')
			p++;
		if (p == s)
			break;
		if (nf == 6 && (p - s != 1 || *s != '-'))
			continue; /* an optional field */
		f[nf] = s;
		fl[nf++] = (size_t)(p - s);
	}
	if (nf != 10)
		return 0;
	int v2 = fl[7] == 7 && !memcmp(f[7], "cgroup2", 7);
	if (!v2 && !(fl[7] == 6 && !memcmp(f[7], "cgroup", 6)))
		return 0;
	mt->v2 = v2;
	if (unescape(f[3], fl[3], mt->root, sizeof(mt->root)) < 0 ||
	    unescape(f[4], fl[4], mt->point, sizeof(mt->point)) < 0 || fl[9] + 3 > sizeof(mt->opts))
		return 0;
	snprintf(mt->opts, sizeof(mt->opts), ",%.*s,", (int)fl[9], f[9]);
	return 1;
}

static void load(struct mon_cgcheck *c)
{
	char path[320];
	struct stat st;
	c->loaded = 1;
	snprintf(path, sizeof(path), "%s/ns/cgroup", c->self);
	if (stat(path, &st) == 0)
		c->cgns = (uint64_t)st.st_ino;
	snprintf(path, sizeof(path), "%s/mountinfo", c->self);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	char *line = NULL;
	size_t len = 0;
	while (getline(&line, &len, f) > 0 && c->nmounts < MAX_MOUNTS)
		c->nmounts += parse_mount(line, &c->m[c->nmounts]);
	free(line);
	fclose(f);
}

/* The mount serving one line's controllers ("" for the v2 line): NULL when
 * this process has none. */
static const struct mount *mount_for(const struct mon_cgcheck *c, const char *ctl, size_t n)
{
	for (int i = 0; i < c->nmounts; i++) {
		const struct mount *mt = &c->m[i];
		if (!n) {
			if (mt->v2)
				return mt;
			continue;
		}
		if (mt->v2)
			continue;
		int all = 1;
		for (size_t s = 0; all && s < n;) {
			size_t e = s;
			while (e < n && ctl[e] != ',')
				e++;
			char tok[80];
			if (e - s + 3 > sizeof(tok))
				return NULL;
			snprintf(tok, sizeof(tok), ",%.*s,", (int)(e - s), ctl + s);
			all = strstr(mt->opts, tok) != NULL;
			s = e + 1;
		}
		if (all)
			return mt;
	}
	return NULL;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return x < y ? -1 : x > y;
}

/* cgroup.procs of the cgroup directory dir, sorted; NULL when unreadable. */
static pid_t *read_procs(const char *dir, size_t *n)
{
	char path[PATH_MAX];
	*n = 0;
	if (snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >= (int)sizeof(path))
		return NULL;
	size_t len;
	char *buf = vr_read_all(path, &len);
	if (!buf)
		return NULL;
	size_t lines = 1;
	for (size_t i = 0; i < len; i++)
		lines += buf[i] == '\n';
	pid_t *v = malloc(lines * sizeof(*v));
	if (v) {
		for (char *p = buf, *end; *p; p = end) {
			long x = strtol(p, &end, 10);
			if (end == p)
				break;
			if (x > 0)
				v[(*n)++] = (pid_t)x;
		}
		qsort(v, *n, sizeof(*v), cmp_pid);
	}
	free(buf);
	return v;
}

static uint64_t hash_of(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* Where key's entry is in t, or the empty place for it (t grown first so
 * that one is free). NULL: no memory. */
static char ***strtab_place(struct strtab *t, const char *key)
{
	if ((t->used + 1) * 2 > t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 64;
		char ***nv = calloc(ncap, sizeof(*nv));
		if (!nv)
			return NULL;
		for (size_t i = 0; i < t->cap; i++) {
			if (!t->v[i])
				continue;
			size_t k = hash_of(*t->v[i]) & (ncap - 1);
			while (nv[k])
				k = (k + 1) & (ncap - 1);
			nv[k] = t->v[i];
		}
		free(t->v);
		t->v = nv;
		t->cap = ncap;
	}
	size_t k = hash_of(key) & (t->cap - 1);
	while (t->v[k] && strcmp(*t->v[k], key))
		k = (k + 1) & (t->cap - 1);
	return &t->v[k];
}

/* The entry of cgroup directory dir, read on first use; NULL: no memory. */
static const struct procs *procs_of(struct mon_cgcheck *c, const char *dir)
{
	char ***slot = strtab_place(&c->cgroups, dir);
	if (!slot)
		return NULL;
	if (!*slot) {
		struct procs *e = calloc(1, sizeof(*e));
		if (!e || !(e->path = strdup(dir))) {
			free(e);
			return NULL;
		}
		e->pid = read_procs(dir, &e->n);
		*slot = &e->path;
		c->cgroups.used++;
	}
	return (const struct procs *)*slot;
}

/* The cgroup of one line (ctl: its controllers, path: its cgroup) with its
 * processes; NULL when it cannot be checked here. */
static const struct procs *line_cgroup(struct mon_cgcheck *c, const char *ctl, size_t nctl,
                                       const char *path, size_t npath)
{
	const struct mount *mt = mount_for(c, ctl, nctl);
	if (!mt || !npath || path[0] != '/')
		return NULL;
	/* The path below the mount's root ("/" mounts the whole hierarchy). */
	size_t rl = strcmp(mt->root, "/") ? strlen(mt->root) : 0;
	if (npath < rl || memcmp(path, mt->root, rl) || (npath > rl && rl && path[rl] != '/'))
		return NULL;
	char dir[PATH_MAX];
	int w = snprintf(dir, sizeof(dir), "%s%.*s", mt->point, (int)(npath - rl), path + rl);
	if (w < 0 || (size_t)w >= sizeof(dir))
		return NULL;
	const struct procs *e = procs_of(c, dir);
	return e && e->pid ? e : NULL;
}

/* t's lines' cgroups into x (x->nlines -1 when one cannot be checked). */
static void parse_text(struct mon_cgcheck *c, const char *text, struct text *x)
{
	x->nlines = 0;
	for (const char *line = text; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *c1 = memchr(line, ':', len);
		const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
		const struct procs *e = c2 && x->nlines < MAX_LINES
		                            ? line_cgroup(c, c1 + 1, (size_t)(c2 - c1 - 1), c2 + 1,
		                                          len - (size_t)(c2 + 1 - line))
		                            : NULL;
		if (!e) {
			x->nlines = -1;
			return;
		}
		x->line[x->nlines++] = e;
		line = nl ? nl + 1 : line + len;
	}
}

/* The entry of text, parsed on first use; NULL: no memory. */
static const struct text *text_of(struct mon_cgcheck *c, const char *text)
{
	char ***slot = strtab_place(&c->texts, text);
	if (!slot)
		return NULL;
	if (!*slot) {
		struct text *x = calloc(1, sizeof(*x));
		if (!x || !(x->text = strdup(text))) {
			free(x);
			return NULL;
		}
		*slot = &x->text;
		c->texts.used++;
		parse_text(c, text, x);
	}
	return (const struct text *)*slot;
}

int mon_cgcheck_holds(struct mon_cgcheck *c, uint64_t cgns, const char *text, pid_t pid)
{
	if (!c || !text || !text[0] || pid <= 0)
		return 0;
	if (!c->loaded)
		load(c);
	if (!cgns || cgns != c->cgns)
		return 0;
	const struct text *x = text_of(c, text);
	if (!x || x->nlines <= 0)
		return 0;
	for (int i = 0; i < x->nlines; i++)
		if (!bsearch(&pid, x->line[i]->pid, x->line[i]->n, sizeof(pid), cmp_pid))
			return 0;
	return 1;
}
