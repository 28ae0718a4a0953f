/*
 * plot_read.c - reads a Chrome trace-event JSON file with json-c. vramctl's
 * traces hold one event per line after a header line, so they are parsed a
 * line at a time (a million events never sit in memory as JSON objects);
 * any other trace is parsed whole. Only what the plot needs is kept:
 * counters "in use" and "cap" of the device tracks, "GPU n in use" of the
 * process tracks, the instant events "denied" and "spill", and the names.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/text.h"
#include "report/plot.h"
#include "report/trace.h"

struct reader {
	struct pl_trace *t;
	long dev_base;
	/* process names by pid, until the series are made */
	struct {
		long pid;
		char name[160];
	} * names;
	size_t nnames;
};

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
	for (size_t i = 0; i < r->nnames; i++)
		if (r->names[i].pid == pid)
			return r->names[i].name;
	return NULL;
}

static struct pl_series *proc_series(struct reader *r, long pid, int dev)
{
	struct pl_trace *t = r->t;
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].pid == pid && t->procs[i].dev == dev)
			return &t->procs[i];
	struct pl_series *np = realloc(t->procs, (t->nprocs + 1) * sizeof *np);
	if (!np)
		return NULL;
	t->procs = np;
	struct pl_series *s = &t->procs[t->nprocs++];
	memset(s, 0, sizeof *s);
	s->pid = pid;
	s->dev = dev;
	const char *n = name_of(r, pid);
	snprintf(s->label, sizeof s->label, "%s", n ? n : "");
	return s;
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
		void *nn = realloc(r->names, (r->nnames + 1) * sizeof *r->names);
		if (!nn)
			return -1;
		r->names = nn;
		r->names[r->nnames].pid = pid;
		snprintf(r->names[r->nnames].name, sizeof r->names[0].name, "%s", n);
		r->nnames++;
		return 0;
	}
	if (!num(e, "ts", &ts))
		return 0;
	double sec = ts / 1e6;
	if (sec > t->t_max)
		t->t_max = sec;
	int is_dev = pid >= r->dev_base && pid < r->dev_base + PL_MAX_DEVS;
	int dev = is_dev ? (int)(pid - r->dev_base) : -1;
	if (ph[0] == 'C' && args && num(args, "bytes", &v)) {
		if (is_dev && !strcmp(name, "in use"))
			return push(&t->group[dev], sec, v);
		if (is_dev && !strcmp(name, "cap"))
			return push(&t->cap[dev], sec, v);
		int d;
		if (!is_dev && sscanf(name, "GPU %d in use", &d) == 1 && d >= 0 &&
		    d < PL_MAX_DEVS) {
			struct pl_series *s = proc_series(r, pid, d);
			return s ? push(s, sec, v) : -1;
		}
		return 0;
	}
	if ((ph[0] == 'i' || ph[0] == 'I') && is_dev &&
	    (!strcmp(name, "denied") || !strcmp(name, "spill"))) {
		if (t->nmarks == t->mark_cap) {
			size_t nc = t->mark_cap ? t->mark_cap * 2 : 64;
			struct pl_mark *nm = realloc(t->marks, nc * sizeof *nm);
			if (!nm)
				return -1;
			t->marks = nm;
			t->mark_cap = nc;
		}
		double b = 0;
		if (args)
			num(args, "bytes", &b);
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
	if (num(od, "device_pid_base", &base))
		r->dev_base = (long)base;
}

static int read_whole(struct reader *r, const char *path, char *err, size_t errlen)
{
	json_object *doc = json_object_from_file(path);
	if (!doc) {
		vr_seterr(err, errlen, "%s is not JSON (%s)", path, json_util_get_last_err());
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

static void sort_series(struct pl_series *s);

static const char head_tail[] = "\"traceEvents\":[";

int pl_read(const char *path, struct pl_trace *t, char *err, size_t errlen)
{
	struct reader r = {.t = t, .dev_base = VR_TRACE_DEV_PID};
	memset(t, 0, sizeof *t);
	FILE *f = fopen(path, "re");
	if (!f) {
		vr_seterr(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, f);
	int rc = 0;
	if (n <= 0) {
		vr_seterr(err, errlen, "%s is empty", path);
		rc = -1;
	} else {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		size_t hl = sizeof head_tail - 1;
		if ((size_t)n > hl && line[0] == '{' && !strcmp(line + n - hl, head_tail)) {
			/* vramctl's layout: the header, then one event per line. */
			char *doc = malloc((size_t)n + 3);
			if (!doc) {
				rc = -1;
			} else {
				memcpy(doc, line, (size_t)n);
				memcpy(doc + n, "]}", 3);
				json_object *h = json_tokener_parse(doc);
				free(doc);
				if (h) {
					take_header(&r, h);
					json_object_put(h);
				}
			}
			long lineno = 1;
			int closed = 0;
			while (rc == 0 && (n = getline(&line, &cap, f)) > 0) {
				lineno++;
				while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
					line[--n] = '\0';
				const char *p = line[0] == ',' ? line + 1 : line;
				if (!strcmp(p, "]}")) {
					closed = 1;
					break;
				}
				enum json_tokener_error je;
				json_object *e = json_tokener_parse_verbose(p, &je);
				if (!e) {
					vr_seterr(err, errlen, "%s line %ld: not a JSON event (%s)",
					          path, lineno, json_tokener_error_desc(je));
					rc = -1;
					break;
				}
				if (take(&r, e) != 0) {
					vr_seterr(err, errlen, "out of memory");
					rc = -1;
				}
				json_object_put(e);
			}
			if (rc == 0 && !closed) {
				vr_seterr(err, errlen,
				          "%s ends early (line %ld): a trace cut short?", path,
				          lineno);
				rc = -1;
			}
		} else {
			rc = read_whole(&r, path, err, errlen);
		}
	}
	free(line);
	fclose(f);
	free(r.names);
	if (rc == 0) {
		for (int d = 0; d < PL_MAX_DEVS; d++) {
			sort_series(&t->group[d]);
			sort_series(&t->cap[d]);
		}
		for (size_t i = 0; i < t->nprocs; i++)
			sort_series(&t->procs[i]);
		int any = 0;
		for (int d = 0; d < PL_MAX_DEVS; d++)
			any |= t->group[d].n > 0;
		if (!any && !t->nprocs) {
			vr_seterr(err, errlen, "%s holds no memory counters (not a vramctl trace?)",
			          path);
			rc = -1;
		}
	}
	if (rc != 0)
		pl_free(t);
	return rc;
}

/* Events come in drain order, not quite time order: sort each series by
 * time, keeping the file's order for equal times (an insertion sort: the
 * input is nearly sorted already). */
static void sort_series(struct pl_series *s)
{
	for (size_t i = 1; i < s->n; i++) {
		double t = s->t[i], v = s->v[i];
		size_t j = i;
		while (j > 0 && s->t[j - 1] > t) {
			s->t[j] = s->t[j - 1];
			s->v[j] = s->v[j - 1];
			j--;
		}
		s->t[j] = t;
		s->v[j] = v;
	}
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
		series_free(&t->cap[d]);
	}
	for (size_t i = 0; i < t->nprocs; i++)
		series_free(&t->procs[i]);
	free(t->procs);
	free(t->marks);
	t->procs = NULL;
	t->marks = NULL;
	t->nprocs = t->nmarks = 0;
}
