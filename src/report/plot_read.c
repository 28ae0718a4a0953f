/*
 * plot_read.c - reads a Chrome trace-event JSON file with json-c. vramctl's
 * traces hold one event per line after a header line, so they are parsed a
 * line at a time (a million events never sit in memory as JSON objects);
 * any other trace is parsed whole. Only what the plot needs is kept:
 * counters "in use", "on card", "spilled" and "cap" of the device tracks,
 * "GPU n in use" and "GPU n on card" of the process tracks, the instant
 * events "denied" and "spill", and the names.
 *
 * The file may come from anyone, so reading ends in bounded time and memory
 * on any input: an event whose time or size is not finite or is absurd is
 * skipped (and counted), lines are read into a fixed buffer, at most
 * PL_MAX_PROCS processes are kept (found by hashing, not by a walk), a
 * trace not in vramctl's layout is parsed whole only up to PL_MAX_WHOLE
 * bytes, and the series are sorted in O(n log n) whatever their order.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "common/text.h"
#include "report/plot.h"
#include "report/trace.h"

/* Beyond these, a value is not one vramctl writes: its event is skipped. */
#define PL_MAX_TS_US 1e15                  /* about 31 years after the trace began */
#define PL_MAX_BYTES 1152921504606846976.0 /* 1 EiB */
#define PL_MAX_PID   4194304.0   /* the kernel's pid_max limit (and past it, device tracks) */
#define PL_MAX_LINE  65536       /* one event of vramctl's layout; longer lines are skipped */
#define PL_MAX_WHOLE (64L << 20) /* a trace in another layout is parsed whole up to this */

/* An open-addressed table from a key to an index + 1 (0: empty slot). */
struct index_map {
	unsigned long *keys;
	size_t *vals, cap;
};

struct reader {
	struct pl_trace *t;
	long dev_base;
	/* process names by pid, until the series are made */
	struct {
		long pid;
		char name[160];
	} * names;
	size_t nnames, names_cap;
	struct index_map by_name, by_proc;
};

static size_t map_slot(const struct index_map *m, unsigned long key)
{
	unsigned long h = key * 0x9e3779b97f4a7c15UL;
	size_t i = (size_t)(h >> 20) & (m->cap - 1);
	while (m->vals[i] && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

/* The index stored for key, or -1. */
static long map_get(const struct index_map *m, unsigned long key)
{
	if (!m->cap)
		return -1;
	size_t i = map_slot(m, key);
	return m->vals[i] ? (long)m->vals[i] - 1 : -1;
}

/* Stores key -> val (a new key). Returns 0, or -1 when memory ran out. */
static int map_put(struct index_map *m, unsigned long key, size_t val, size_t count)
{
	if ((count + 1) * 2 > m->cap) {
		struct index_map n = {.cap = m->cap ? m->cap * 2 : 64};
		n.keys = calloc(n.cap, sizeof *n.keys);
		n.vals = calloc(n.cap, sizeof *n.vals);
		if (!n.keys || !n.vals) {
			free(n.keys);
			free(n.vals);
			return -1;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->vals[i]) {
				size_t j = map_slot(&n, m->keys[i]);
				n.keys[j] = m->keys[i];
				n.vals[j] = m->vals[i];
			}
		free(m->keys);
		free(m->vals);
		*m = n;
	}
	size_t i = map_slot(m, key);
	m->keys[i] = key;
	m->vals[i] = val + 1;
	return 0;
}

static void map_free(struct index_map *m)
{
	free(m->keys);
	free(m->vals);
	*m = (struct index_map){0};
}

/* Grows *arr (of elements of size el) to hold one more than n. */
static int grow(void *arr, size_t *cap, size_t n, size_t el)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 64;
	void *na = realloc(*(void **)arr, nc * el);
	if (!na)
		return -1;
	*(void **)arr = na;
	*cap = nc;
	return 0;
}

static int push(struct pl_series *s, double t, double v)
{
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 256;
		double *nt = realloc(s->t, nc * sizeof *nt);
		if (!nt)
			return -1;
		s->t = nt;
		double *nv = realloc(s->v, nc * sizeof *nv);
		if (!nv)
			return -1;
		s->v = nv;
		s->cap = nc;
	}
	s->t[s->n] = t;
	s->v[s->n] = v;
	s->n++;
	return 0;
}

static const char *str(json_object *o, const char *key)
{
	json_object *v;
	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
	           ? json_object_get_string(v)
	           : NULL;
}

static int num(json_object *o, const char *key, double *out)
{
	json_object *v;
	if (!json_object_object_get_ex(o, key, &v) ||
	    !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
		return 0;
	*out = json_object_get_double(v);
	return 1;
}

static const char *name_of(struct reader *r, long pid)
{
	long i = map_get(&r->by_name, (unsigned long)pid);
	return i >= 0 ? r->names[i].name : NULL;
}

/* The series of process pid on device dev; NULL when memory ran out or
 * PL_MAX_PROCS are kept already (then *full is set). */
static struct pl_series *proc_series(struct reader *r, long pid, int dev, int card, int *full)
{
	struct pl_trace *t = r->t;
	unsigned long key = ((unsigned long)pid * PL_MAX_DEVS + (unsigned long)dev) * 2 + !!card;
	long i = map_get(&r->by_proc, key);
	if (i >= 0)
		return &t->procs[i];
	if (t->nprocs >= PL_MAX_PROCS) {
		*full = 1;
		return NULL;
	}
	if (grow(&t->procs, &t->procs_cap, t->nprocs, sizeof *t->procs) != 0 ||
	    map_put(&r->by_proc, key, t->nprocs, t->nprocs) != 0)
		return NULL;
	struct pl_series *s = &t->procs[t->nprocs++];
	memset(s, 0, sizeof *s);
	s->pid = pid;
	s->dev = dev;
	s->card = card;
	const char *n = name_of(r, pid);
	snprintf(s->label, sizeof s->label, "%s", n ? n : "");
	return s;
}

/* A value vramctl could have written: finite, at least 0, at most max. */
static int sane(double v, double max)
{
	return v >= 0 && v <= max; /* false for NaN too */
}

/* One event. Returns 0, or -1 when memory ran out. */
static int take(struct reader *r, json_object *e)
{
	struct pl_trace *t = r->t;
	const char *ph = str(e, "ph"), *name = str(e, "name");
	double pid_d = 0, ts = 0, v;
	json_object *args = NULL;
	if (!ph || !name || !num(e, "pid", &pid_d))
		return 0;
	if (!sane(pid_d, PL_MAX_PID + (double)r->dev_base + PL_MAX_DEVS)) {
		t->skipped++;
		return 0;
	}
	long pid = (long)pid_d;
	json_object_object_get_ex(e, "args", &args);
	t->events++;
	if (ph[0] == 'M') {
		const char *n = args ? str(args, "name") : NULL;
		if (!n || strcmp(name, "process_name"))
			return 0;
		if (pid >= r->dev_base && pid < r->dev_base + PL_MAX_DEVS) {
			snprintf(t->dev_label[pid - r->dev_base], sizeof t->dev_label[0], "%s", n);
			return 0;
		}
		if (map_get(&r->by_name, (unsigned long)pid) >= 0 || r->nnames >= PL_MAX_PROCS)
			return 0;
		if (grow(&r->names, &r->names_cap, r->nnames, sizeof *r->names) != 0 ||
		    map_put(&r->by_name, (unsigned long)pid, r->nnames, r->nnames) != 0)
			return -1;
		r->names[r->nnames].pid = pid;
		snprintf(r->names[r->nnames].name, sizeof r->names[0].name, "%s", n);
		r->nnames++;
		return 0;
	}
	if (!num(e, "ts", &ts))
		return 0;
	if (!sane(ts, PL_MAX_TS_US)) {
		t->skipped++;
		return 0;
	}
	double sec = ts / 1e6;
	if (sec > t->t_max)
		t->t_max = sec;
	int is_dev = pid >= r->dev_base && pid < r->dev_base + PL_MAX_DEVS;
	int dev = is_dev ? (int)(pid - r->dev_base) : -1;
	if (ph[0] == 'C' && args && num(args, "bytes", &v)) {
		if (!sane(v, PL_MAX_BYTES)) {
			t->skipped++;
			return 0;
		}
		if (is_dev && !strcmp(name, "in use"))
			return push(&t->group[dev], sec, v);
		if (is_dev && !strcmp(name, "on card"))
			return push(&t->card[dev], sec, v);
		if (is_dev && !strcmp(name, "spilled"))
			return push(&t->spilled[dev], sec, v);
		if (is_dev && !strcmp(name, "cap"))
			return push(&t->cap[dev], sec, v);
		int d, at = 0;
		char what[8] = "";
		if (!is_dev && sscanf(name, "GPU %d %7[a-z ]%n", &d, what, &at) == 2 && !name[at] &&
		    (!strcmp(what, "in use") || !strcmp(what, "on card")) && d >= 0 &&
		    d < PL_MAX_DEVS) {
			int full = 0;
			struct pl_series *s = proc_series(r, pid, d, what[0] == 'o', &full);
			if (full)
				t->skipped++;
			return s ? push(s, sec, v) : full ? 0 : -1;
		}
		return 0;
	}
	if ((ph[0] == 'i' || ph[0] == 'I') && is_dev &&
	    (!strcmp(name, "denied") || !strcmp(name, "spill"))) {
		double b = 0;
		if (args && num(args, "bytes", &b) && !sane(b, PL_MAX_BYTES)) {
			t->skipped++;
			return 0;
		}
		if (grow(&t->marks, &t->mark_cap, t->nmarks, sizeof *t->marks) != 0)
			return -1;
		t->marks[t->nmarks++] =
		    (struct pl_mark){.t = sec, .dev = dev, .spill = name[0] == 's', .bytes = b};
	}
	return 0;
}

static void take_header(struct reader *r, json_object *doc)
{
	json_object *od;
	if (!json_object_object_get_ex(doc, "otherData", &od))
		return;
	const char *c = str(od, "command");
	if (c)
		snprintf(r->t->command, sizeof r->t->command, "%s", c);
	double base;
	if (num(od, "device_pid_base", &base) && sane(base, 2 * (double)VR_TRACE_DEV_PID))
		r->dev_base = (long)base;
}

/* The last error of json-c's file reader, on one line. */
static const char *json_file_error(char *buf, size_t len)
{
	snprintf(buf, len, "%s", json_util_get_last_err() ? json_util_get_last_err() : "");
	for (char *c = buf; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = *(c + 1) ? ' ' : '\0';
	return buf;
}

static int read_whole(struct reader *r, const char *path, char *err, size_t errlen)
{
	char why[256];
	json_object *doc = json_object_from_file(path);
	if (!doc) {
		vr_seterr(err, errlen, "%s is not JSON (%s)", path,
		          json_file_error(why, sizeof why));
		return -1;
	}
	json_object *evs = doc;
	if (json_object_is_type(doc, json_type_object)) {
		take_header(r, doc);
		if (!json_object_object_get_ex(doc, "traceEvents", &evs))
			evs = NULL;
	}
	if (!evs || !json_object_is_type(evs, json_type_array)) {
		json_object_put(doc);
		vr_seterr(err, errlen, "%s has no traceEvents array", path);
		return -1;
	}
	size_t n = json_object_array_length(evs);
	for (size_t i = 0; i < n; i++)
		if (take(r, json_object_array_get_idx(evs, i)) != 0) {
			json_object_put(doc);
			vr_seterr(err, errlen, "out of memory");
			return -1;
		}
	json_object_put(doc);
	return 0;
}

/*
 * Reads one line into buf (at most len - 1 bytes, without its end of line).
 * Returns 1 for a line, 0 at the end of the file; a longer line is consumed
 * whole and *too_long set; *ended is set when the line had its '\n'.
 */
static int read_line(FILE *f, char *buf, size_t len, int *too_long, int *ended)
{
	*too_long = *ended = 0;
	if (!fgets(buf, (int)len, f))
		return 0;
	size_t n = strlen(buf);
	while (n == len - 1 && buf[n - 1] != '\n') {
		*too_long = 1;
		char rest[4096];
		if (!fgets(rest, sizeof rest, f))
			break;
		n = strlen(rest);
		if (n && rest[n - 1] == '\n') {
			*ended = 1;
			break;
		}
		n = len - 1;
	}
	if (*too_long)
		return 1;
	*ended = n > 0 && buf[n - 1] == '\n';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	return 1;
}

static const char head_tail[] = "\"traceEvents\":[";

/* vramctl's layout: the header line is in buf; then one event per line,
 * up to "]}". Returns 0 or -1 with err set. */
static int read_lines(struct reader *r, FILE *f, const char *path, char *buf, size_t len, char *err,
                      size_t errlen)
{
	size_t n = strlen(buf);
	char *doc = malloc(n + 3);
	if (!doc) {
		vr_seterr(err, errlen, "out of memory");
		return -1;
	}
	memcpy(doc, buf, n);
	memcpy(doc + n, "]}", 3);
	json_object *h = json_tokener_parse(doc);
	free(doc);
	if (h) {
		take_header(r, h);
		json_object_put(h);
	}
	long lineno = 1;
	int too_long, ended;
	while (read_line(f, buf, len, &too_long, &ended)) {
		lineno++;
		if (too_long) {
			r->t->skipped++;
			continue;
		}
		const char *p = buf[0] == ',' ? buf + 1 : buf;
		if (!strcmp(p, "]}"))
			return 0;
		enum json_tokener_error je;
		json_object *e = json_tokener_parse_verbose(p, &je);
		if (!e) {
			/* A last line without its end is what a killed writer leaves. */
			if (!ended && feof(f)) {
				lineno--;
				break;
			}
			vr_seterr(err, errlen, "%s line %ld: not a JSON event (%s)", path, lineno,
			          json_tokener_error_desc(je));
			return -1;
		}
		int rc = take(r, e);
		json_object_put(e);
		if (rc != 0) {
			vr_seterr(err, errlen, "out of memory");
			return -1;
		}
	}
	r->t->cut_line = lineno;
	return 0;
}

static int sort_series(struct pl_series *s);

int pl_read(const char *path, struct pl_trace *t, char *err, size_t errlen)
{
	struct reader r = {.t = t, .dev_base = VR_TRACE_DEV_PID};
	memset(t, 0, sizeof *t);
	FILE *f = fopen(path, "re");
	if (!f) {
		vr_seterr(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	struct stat st;
	char *buf = malloc(PL_MAX_LINE);
	int too_long, ended, rc = -1;
	if (!buf) {
		vr_seterr(err, errlen, "out of memory");
	} else if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		vr_seterr(err, errlen, "%s is a directory, not a trace", path);
	} else if (!read_line(f, buf, PL_MAX_LINE, &too_long, &ended) ||
	           (!too_long && !buf[0] && feof(f))) {
		vr_seterr(err, errlen, "%s is empty", path);
	} else {
		size_t n = too_long ? 0 : strlen(buf), hl = sizeof head_tail - 1;
		if (n > hl && buf[0] == '{' && !strcmp(buf + n - hl, head_tail)) {
			rc = read_lines(&r, f, path, buf, PL_MAX_LINE, err, errlen);
		} else if (S_ISREG(st.st_mode) && st.st_size > PL_MAX_WHOLE) {
			vr_seterr(
			    err, errlen,
			    "%s is not in vramctl's one-event-a-line layout and holds %lld MiB: "
			    "traces in other layouts are read up to %ld MiB",
			    path, (long long)(st.st_size >> 20), PL_MAX_WHOLE >> 20);
		} else {
			rc = read_whole(&r, path, err, errlen);
		}
	}
	free(buf);
	fclose(f);
	/* A process drawn on the card is not drawn again by its allocations. */
	for (size_t i = 0; rc == 0 && i < t->nprocs; i++) {
		const struct pl_series *c = &t->procs[i];
		long k =
		    c->card
		        ? map_get(&r.by_proc,
		                  ((unsigned long)c->pid * PL_MAX_DEVS + (unsigned long)c->dev) * 2)
		        : -1;
		if (k >= 0)
			t->procs[k].hidden = 1;
	}
	free(r.names);
	map_free(&r.by_name);
	map_free(&r.by_proc);
	if (rc == 0) {
		for (int d = 0; d < PL_MAX_DEVS && rc == 0; d++)
			rc = sort_series(&t->group[d]) | sort_series(&t->cap[d]) |
			     sort_series(&t->card[d]) | sort_series(&t->spilled[d]);
		for (size_t i = 0; i < t->nprocs && rc == 0; i++)
			rc = sort_series(&t->procs[i]);
		if (rc != 0)
			vr_seterr(err, errlen, "out of memory");
	}
	if (rc == 0) {
		int any = 0;
		for (int d = 0; d < PL_MAX_DEVS; d++)
			any |= t->group[d].n > 0 || t->card[d].n > 0;
		if (!any && !t->nprocs) {
			if (t->skipped)
				vr_seterr(
				    err, errlen,
				    "%s holds no memory counters that can be drawn (%zu skipped: "
				    "a time, size or PID not finite, negative or absurd)",
				    path, t->skipped);
			else
				vr_seterr(err, errlen,
				          "%s holds no memory counters (not a vramctl trace?)",
				          path);
			rc = -1;
		}
	}
	if (rc != 0)
		pl_free(t);
	return rc;
}

/* Events come in drain order, not quite time order: sort each series by
 * time, keeping the file's order for equal times. A stable merge sort:
 * O(n log n) whatever the order (a file may list its events backwards).
 * Returns 0, or -1 when memory ran out. */
static int sort_series(struct pl_series *s)
{
	size_t n = s->n, i = 1;
	while (i < n && s->t[i - 1] <= s->t[i])
		i++;
	if (i >= n)
		return 0;
	double *tt = malloc(n * sizeof *tt), *tv = malloc(n * sizeof *tv);
	if (!tt || !tv) {
		free(tt);
		free(tv);
		return -1;
	}
	double *at = s->t, *av = s->v, *bt = tt, *bv = tv;
	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t a = lo, b = mid, k = lo;
			while (a < mid || b < hi) {
				size_t from = b >= hi || (a < mid && at[a] <= at[b]) ? a++ : b++;
				bt[k] = at[from];
				bv[k++] = av[from];
			}
		}
		double *x = at;
		at = bt;
		bt = x;
		x = av;
		av = bv;
		bv = x;
	}
	if (at != s->t) {
		memcpy(s->t, at, n * sizeof *at);
		memcpy(s->v, av, n * sizeof *av);
	}
	free(tt);
	free(tv);
	return 0;
}

static void series_free(struct pl_series *s)
{
	free(s->t);
	free(s->v);
	s->t = s->v = NULL;
	s->n = s->cap = 0;
}

void pl_free(struct pl_trace *t)
{
	for (int d = 0; d < PL_MAX_DEVS; d++) {
		series_free(&t->group[d]);
		series_free(&t->card[d]);
		series_free(&t->spilled[d]);
		series_free(&t->cap[d]);
	}
	for (size_t i = 0; i < t->nprocs; i++)
		series_free(&t->procs[i]);
	free(t->procs);
	free(t->marks);
	t->procs = NULL;
	t->marks = NULL;
	t->nprocs = t->nmarks = t->procs_cap = t->mark_cap = 0;
}
