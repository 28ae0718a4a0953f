/*
 * trace.c - Chrome trace-event JSON of a run (docs/report.md, "The trace").
 *
 * One document: a first line with displayTimeUnit and otherData, then
 * "traceEvents" with one event per line, so that a reader can stream it
 * (vramctl plot does) while viewers read it as plain JSON. Events:
 *
 *   per device (Chrome "process" VR_TRACE_DEV_PID + ordinal, named "GPU n"):
 *     counters "in use" (the group's allocations, summed over members),
 *     "on card" (what the cap counts: allocations + overhead, where the
 *     members measured their overhead), "spilled" (host memory served past
 *     the cap, where any was) and "cap"; instant events "denied" (a
 *     refusal: an allocation's, or a new context's) and "spill" (args:
 *     bytes, pid);
 *   per member (its own pid, named "PID command"):
 *     counters "GPU n in use" (its bytes after each allocation or free)
 *     and "GPU n on card" (with its overhead, once measured),
 *     instant events "process start", "process exit" (args: how it ended),
 *     and "allocations summed" / "frees summed" where more than
 *     VR_REC_PER_INTERVAL events fell in one VR_REC_INTERVAL (args: count,
 *     bytes).
 *
 * Bounded on disk by rotation: when FILE reaches half the bound it is
 * closed as a complete document, renamed FILE.1 (replacing an older one),
 * and FILE starts again with the names and current counters. Only a
 * regular file rotates, under its real name (a symlink to it stays a
 * symlink to the new file); a device, a FIFO or a terminal (/dev/null,
 * /dev/stdout) holds nothing on disk and is never renamed or replaced. A
 * file replaced by another between two rotations is not touched: the trace
 * ends there, said as a failed write.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "report/trace.h"

struct rep_trace {
	FILE *f;
	char *path;
	char *command;
	uint64_t max, written, t0;
	int first, failed, rotations;
	int rotates;    /* a regular file: rotated at the bound */
	dev_t file_dev; /* the file rotation may rename: this one, no other */
	ino_t file_ino;
	uint64_t group[VR_REC_DEVS];
	uint64_t overhead[VR_REC_DEVS]; /* the members' overheads, summed */
	uint64_t spilled[VR_REC_DEVS];
	uint64_t cap[VR_REC_DEVS];
	uint64_t peak[VR_REC_DEVS], card_peak[VR_REC_DEVS];
	int dev_seen[VR_REC_DEVS];
	int card[VR_REC_DEVS]; /* a member measured its overhead: "on card" drawn */
	int spill[VR_REC_DEVS];
	struct rep_members *ms; /* for re-naming after a rotation */
	uint64_t last_ts;
};

struct batch_ev {
	struct vr_rec_ev ev; /* type 0: the member is gone, its memory back */
	struct rep_member *m;
	size_t order; /* ring order: equal times keep it */
};

static void put(struct rep_trace *t, json_object *o)
{
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	int n = fprintf(t->f, "%s%s\n", t->first ? "" : ",", s);
	json_object_put(o);
	t->first = 0;
	if (n < 0)
		t->failed = 1;
	else
		t->written += (uint64_t)n;
}

static json_object *event(struct rep_trace *t, const char *name, const char *ph, long pid,
                          uint64_t when)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "ph", json_object_new_string(ph));
	json_object_object_add(o, "pid", json_object_new_int64(pid));
	json_object_object_add(o, "tid", json_object_new_int64(pid));
	double us = when > t->t0 ? (double)(when - t->t0) / 1000.0 : 0.0;
	json_object_object_add(o, "ts", json_object_new_double(us));
	if (ph[0] == 'i')
		json_object_object_add(o, "s", json_object_new_string("p"));
	if (when > t->last_ts)
		t->last_ts = when;
	return o;
}

static json_object *args1(const char *k, uint64_t v)
{
	json_object *a = json_object_new_object();
	json_object_object_add(a, k, json_object_new_uint64(v));
	return a;
}

static void counter(struct rep_trace *t, const char *name, long pid, uint64_t when, uint64_t v)
{
	json_object *o = event(t, name, "C", pid, when);
	json_object_object_add(o, "args", args1("bytes", v));
	put(t, o);
}

static void meta(struct rep_trace *t, long pid, const char *name, int sort)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string("process_name"));
	json_object_object_add(o, "ph", json_object_new_string("M"));
	json_object_object_add(o, "pid", json_object_new_int64(pid));
	json_object *a = json_object_new_object();
	json_object_object_add(a, "name", json_object_new_string(name));
	json_object_object_add(o, "args", a);
	put(t, o);
	o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string("process_sort_index"));
	json_object_object_add(o, "ph", json_object_new_string("M"));
	json_object_object_add(o, "pid", json_object_new_int64(pid));
	json_object_object_add(o, "args", args1("sort_index", (uint64_t)sort));
	put(t, o);
}

static void name_member(struct rep_trace *t, struct rep_member *m)
{
	char name[200];
	snprintf(name, sizeof name, "%d %.150s", m->h->pid, m->h->command);
	meta(t, m->h->pid, name, 100);
}

static void name_device(struct rep_trace *t, int d, const struct vr_rec_dev *r)
{
	char name[96], uuid[48] = "";
	static const char hex[] = "0123456789abcdef";
	char *p = uuid;
	p += sprintf(p, "GPU-");
	for (int i = 0; i < 16; i++) {
		*p++ = hex[r->uuid[i] >> 4];
		*p++ = hex[r->uuid[i] & 15];
		if (i == 3 || i == 5 || i == 7 || i == 9)
			*p++ = '-';
	}
	*p = '\0';
	snprintf(name, sizeof name, "GPU %d (%s)", d, uuid);
	meta(t, VR_TRACE_DEV_PID + d, name, d);
}

static void header(struct rep_trace *t)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "displayTimeUnit", json_object_new_string("ms"));
	json_object *od = json_object_new_object();
	json_object_object_add(od, "generator", json_object_new_string("vramctl"));
	/* 2: the "on card" and "spilled" counters. */
	json_object_object_add(od, "trace_format", json_object_new_int(2));
	json_object_object_add(od, "command", json_object_new_string(t->command));
	json_object_object_add(od, "interval_ns", json_object_new_uint64(VR_REC_INTERVAL));
	json_object_object_add(od, "single_events_per_interval",
	                       json_object_new_int(VR_REC_PER_INTERVAL));
	json_object_object_add(od, "device_pid_base", json_object_new_int64(VR_TRACE_DEV_PID));
	json_object_object_add(od, "part", json_object_new_int(t->rotations + 1));
	json_object_object_add(o, "otherData", od);
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	/* The object without its closing brace, then the events' array. */
	int n = fprintf(t->f, "%.*s,\"traceEvents\":[\n", (int)strlen(s) - 1, s);
	json_object_put(o);
	t->written = n > 0 ? (uint64_t)n : 0;
	t->first = 1;
}

static int finish_file(struct rep_trace *t)
{
	if (fprintf(t->f, "]}\n") < 0)
		t->failed = 1;
	if (fclose(t->f) != 0)
		t->failed = 1;
	t->f = NULL;
	return t->failed ? -1 : 0;
}

/* Whether path names the regular file open as f, and not another. */
static int still_ours(struct rep_trace *t)
{
	struct stat st;
	return lstat(t->path, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == t->file_dev &&
	       st.st_ino == t->file_ino;
}

/* Makes t->path the file itself (a symlink's target) and says whether it
 * rotates: a regular file does; anything else is written in place. */
static void take_file(struct rep_trace *t, int fd)
{
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return;
	char *real = realpath(t->path, NULL);
	if (real) {
		free(t->path);
		t->path = real;
	}
	t->file_dev = st.st_dev;
	t->file_ino = st.st_ino;
	t->rotates = still_ours(t);
}

/* FILE is full: it becomes FILE.1, FILE starts again. */
static void rotate(struct rep_trace *t)
{
	char old[4096];
	int ours = still_ours(t);
	if (finish_file(t) != 0)
		return;
	if (!ours) {
		t->failed = 1;
		return;
	}
	snprintf(old, sizeof old, "%s.1", t->path);
	if (rename(t->path, old) != 0) {
		t->failed = 1;
		return;
	}
	/* A new file, never one someone put there since the rename. */
	int fd = open(t->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	struct stat st;
	t->f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!t->f || fstat(fd, &st) != 0) {
		if (t->f)
			fclose(t->f);
		else if (fd >= 0)
			close(fd);
		t->f = NULL;
		t->failed = 1;
		return;
	}
	t->file_dev = st.st_dev;
	t->file_ino = st.st_ino;
	t->rotations++;
	header(t);
	for (int d = 0; d < VR_REC_DEVS; d++) {
		if (!t->dev_seen[d])
			continue;
		for (int i = 0; i < t->ms->n; i++)
			if (t->ms->v[i].h->dev[d].used) {
				name_device(t, d, &t->ms->v[i].h->dev[d]);
				break;
			}
		counter(t, "in use", VR_TRACE_DEV_PID + d, t->last_ts, t->group[d]);
		if (t->card[d])
			counter(t, "on card", VR_TRACE_DEV_PID + d, t->last_ts,
			        t->group[d] + t->overhead[d]);
		if (t->spill[d])
			counter(t, "spilled", VR_TRACE_DEV_PID + d, t->last_ts, t->spilled[d]);
		if (t->cap[d] != UINT64_MAX)
			counter(t, "cap", VR_TRACE_DEV_PID + d, t->last_ts, t->cap[d]);
	}
	for (int i = 0; i < t->ms->n; i++)
		if (t->ms->v[i].started)
			name_member(t, &t->ms->v[i]);
}

struct rep_trace *rep_trace_new(int fd, const char *path, uint64_t max, uint64_t t0,
                                const char *command)
{
	struct rep_trace *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->f = fdopen(fd, "w");
	t->path = strdup(path);
	t->command = strdup(command);
	if (!t->f || !t->path || !t->command) {
		if (t->f)
			fclose(t->f);
		free(t->path);
		free(t->command);
		free(t);
		return NULL;
	}
	take_file(t, fd);
	t->max = max;
	t->t0 = t0;
	t->last_ts = t0;
	header(t);
	return t;
}

static int by_time(const void *a, const void *b)
{
	const struct batch_ev *x = a, *y = b;
	if (x->ev.t_ns != y->ev.t_ns)
		return x->ev.t_ns < y->ev.t_ns ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static void start_member(struct rep_trace *t, struct rep_member *m)
{
	m->started = 1;
	name_member(t, m);
	put(t, event(t, "process start", "i", m->h->pid, m->h->start_mono_ns));
}

static void device_seen(struct rep_trace *t, struct rep_member *m, int d, uint64_t when)
{
	if (t->dev_seen[d])
		return;
	t->dev_seen[d] = 1;
	t->cap[d] = m->h->dev[d].cap;
	name_device(t, d, &m->h->dev[d]);
	counter(t, "in use", VR_TRACE_DEV_PID + d, when, 0);
	if (t->cap[d] != UINT64_MAX)
		counter(t, "cap", VR_TRACE_DEV_PID + d, when, t->cap[d]);
}

/* The counters of member m and of the group on device d at `when`:
 * allocations, and on the card where overhead was measured. */
static void counters(struct rep_trace *t, struct rep_member *m, int d, uint64_t when)
{
	char name[32];
	snprintf(name, sizeof name, "GPU %d in use", d);
	counter(t, name, m->h->pid, when, m->in_use[d]);
	counter(t, "in use", VR_TRACE_DEV_PID + d, when, t->group[d]);
	if (t->group[d] > t->peak[d])
		t->peak[d] = t->group[d];
	if (!t->card[d])
		return;
	if (m->card[d]) {
		snprintf(name, sizeof name, "GPU %d on card", d);
		counter(t, name, m->h->pid, when, m->in_use[d] + m->overhead[d]);
	}
	uint64_t card = t->group[d] + t->overhead[d];
	counter(t, "on card", VR_TRACE_DEV_PID + d, when, card);
	if (card > t->card_peak[d])
		t->card_peak[d] = card;
}

static void spill_counter(struct rep_trace *t, int d, uint64_t when)
{
	t->spill[d] = 1;
	counter(t, "spilled", VR_TRACE_DEV_PID + d, when, t->spilled[d]);
}

/* Whatever a gone member held goes with it (the driver tears its contexts
 * down): its counters drop to 0 at `when`. */
static void release(struct rep_trace *t, struct rep_member *m, uint64_t when)
{
	m->released = 1;
	for (int d = 0; d < VR_REC_DEVS; d++) {
		if (m->spilled[d]) {
			t->spilled[d] -= m->spilled[d];
			m->spilled[d] = 0;
			spill_counter(t, d, when);
		}
		if (!m->in_use[d] && !m->overhead[d])
			continue;
		t->group[d] -= m->in_use[d];
		t->overhead[d] -= m->overhead[d];
		m->in_use[d] = m->overhead[d] = 0;
		counters(t, m, d, when);
	}
}

static void emit(struct rep_trace *t, struct rep_member *m, const struct vr_rec_ev *e)
{
	if (e->type == 0) {
		release(t, m, e->t_ns);
		return;
	}
	int d = e->dev;
	if (d >= VR_REC_DEVS)
		return;
	device_seen(t, m, d, e->t_ns);
	json_object *o, *a;
	switch (e->type) {
	case VR_EV_SUM_ALLOC:
	case VR_EV_SUM_FREE:
		o = event(t, e->type == VR_EV_SUM_ALLOC ? "allocations summed" : "frees summed",
		          "i", m->h->pid, e->t_ns);
		a = args1("count", e->count);
		json_object_object_add(a, "bytes", json_object_new_uint64(e->bytes));
		json_object_object_add(a, "device", json_object_new_int(d));
		json_object_object_add(o, "args", a);
		put(t, o);
		__attribute__((fallthrough)); /* and the counters */
	case VR_EV_ALLOC:
	case VR_EV_FREE:
		t->group[d] += e->in_use - m->in_use[d];
		m->in_use[d] = e->in_use;
		counters(t, m, d, e->t_ns);
		break;
	case VR_EV_OVERHEAD:
		t->card[d] = 1;
		m->card[d] = 1;
		t->overhead[d] += e->bytes - m->overhead[d];
		m->overhead[d] = e->bytes;
		counters(t, m, d, e->t_ns);
		break;
	case VR_EV_UNSPILL:
		t->spilled[d] += e->in_use - m->spilled[d];
		m->spilled[d] = e->in_use;
		spill_counter(t, d, e->t_ns);
		break;
	case VR_EV_SPILL:
		t->spilled[d] += e->in_use - m->spilled[d];
		m->spilled[d] = e->in_use;
		spill_counter(t, d, e->t_ns);
		__attribute__((fallthrough)); /* and its mark */
	case VR_EV_DENY:
		o = event(t, e->type == VR_EV_DENY ? "denied" : "spill", "i", VR_TRACE_DEV_PID + d,
		          e->t_ns);
		a = args1("bytes", e->bytes);
		json_object_object_add(a, "pid", json_object_new_int(m->h->pid));
		json_object_object_add(o, "args", a);
		put(t, o);
		break;
	case VR_EV_WAIT:
	case VR_EV_PARK:
		/* A span on the member's line: the wait from its start to
		 * its end, the park or restore likewise. */
		o = event(t,
		          e->type == VR_EV_WAIT
		              ? (e->kind ? "waited (granted)" : "waited (refused)")
		          : e->kind ? "parked"
		                    : "restored",
		          "X", m->h->pid, e->t_ns - (uint64_t)e->count * 1000000u);
		json_object_object_add(o, "dur", json_object_new_double((double)e->count * 1000.0));
		a = args1("bytes", e->bytes);
		json_object_object_add(a, "device", json_object_new_int(d));
		json_object_object_add(o, "args", a);
		put(t, o);
		break;
	default:
		break;
	}
}

static int batch_add(struct batch_ev **b, size_t *n, size_t *cap, struct rep_member *m,
                     const struct vr_rec_ev *e)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 4096;
		struct batch_ev *nb = realloc(*b, nc * sizeof *nb);
		if (!nb)
			return -1;
		*b = nb;
		*cap = nc;
	}
	(*b)[*n] = (struct batch_ev){.ev = *e, .m = m, .order = *n};
	(*n)++;
	return 0;
}

int rep_trace_drain(struct rep_trace *t, struct rep_members *ms, uint64_t now)
{
	t->ms = ms;
	size_t n = 0, cap = 0;
	struct batch_ev *b = NULL;
	for (int i = 0; i < ms->n; i++) {
		struct rep_member *m = &ms->v[i];
		struct vr_rec_hdr *h = m->h;
		if (!(h->flags & VR_REC_F_TRACE))
			continue;
		if (!m->started)
			start_member(t, m);
		_Atomic uint64_t *tail = (_Atomic uint64_t *)&h->tail;
		uint64_t head =
		    atomic_load_explicit((_Atomic uint64_t *)&h->head, memory_order_acquire);
		uint64_t at = atomic_load_explicit(tail, memory_order_relaxed);
		const struct vr_rec_ev *ring = VR_REC_SECTION(h, VR_REC_OFF_RING, struct vr_rec_ev);
		for (; at < head; at++) {
			const struct vr_rec_ev *e = &ring[at % VR_REC_RING];
			if (atomic_load_explicit((_Atomic uint64_t *)&e->seq,
			                         memory_order_acquire) != at + 1)
				break; /* still being written: the next drain takes it */
			if (batch_add(&b, &n, &cap, m, e) != 0)
				break;
		}
		atomic_store_explicit(tail, at, memory_order_release);
		/* Gone, and everything it wrote read: its memory is back. */
		uint64_t gone;
		if (!m->released && at == head && (gone = rep_member_gone(m, now)) != 0) {
			struct vr_rec_ev rel = {.t_ns = gone};
			batch_add(&b, &n, &cap, m, &rel);
			m->released = 1; /* emitted below, in time order */
		}
	}
	if (n)
		qsort(b, n, sizeof *b, by_time);
	for (size_t i = 0; i < n; i++) {
		emit(t, b[i].m, &b[i].ev);
		if (t->max && t->rotates && t->written >= t->max / 2 && t->f)
			rotate(t);
		if (!t->f)
			break;
	}
	free(b);
	if (t->f && fflush(t->f) != 0)
		t->failed = 1;
	return t->failed ? -1 : 0;
}

void rep_trace_end(struct rep_trace *t, struct rep_member *m, uint64_t when, const char *how)
{
	if (!t->f || m->ended || !(m->h->flags & VR_REC_F_TRACE))
		return;
	if (!m->started)
		start_member(t, m);
	m->ended = 1;
	json_object *o = event(t, "process exit", "i", m->h->pid, when);
	json_object *a = json_object_new_object();
	json_object_object_add(a, "ended", json_object_new_string(how));
	json_object_object_add(o, "args", a);
	put(t, o);
	if (!m->released)
		release(t, m, when);
}

int rep_trace_peaks(const struct rep_trace *t, int d, uint64_t *alloc, uint64_t *card)
{
	if (d < 0 || d >= VR_REC_DEVS || !t->dev_seen[d])
		return 0;
	*alloc = t->peak[d];
	*card = t->card[d] ? t->card_peak[d] : 0;
	return 1;
}

int rep_trace_close(struct rep_trace *t)
{
	int rc = t->f ? finish_file(t) : -1;
	if (t->failed)
		rc = -1;
	free(t->path);
	free(t->command);
	free(t);
	return rc;
}
