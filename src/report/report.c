/*
 * report.c - the run's report (docs/report.md, "The report"): per device
 * the cap, the group's peak and the right size; per member how it ended,
 * its peak and when, counts, denials, pinned and spilled memory, and the
 * blocks it still held at exit, largest first, with call sites under
 * --stacks. Text on stderr (or FILE), JSON (json-c) for FILE.json.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/contract.h"
#include "common/exit.h"
#include "common/size.h"
#include "common/text.h"
#include "registry/util.h"
#include "report/members.h"
#include "report/report.h"
#include "report/symbols.h"
#include "report/trace.h"

#define TEXT_LEAKS  20 /* blocks listed per member and device in the text */
#define TEXT_FRAMES 6

struct reaped {
	pid_t pid;
	int status;
};

struct rep_run {
	struct rep_opts o;
	int report_fd, json;
	char dir[PATH_MAX];
	char *command;
	uint64_t t0;
	struct rep_members ms;
	struct rep_trace *trace;
	pthread_t drainer;
	int drainer_on;
	atomic_int stop;
	pthread_mutex_t lock;
	struct reaped *reaped;
	int nreaped;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static char *join_args(int argc, char *const argv[])
{
	size_t len = 1;
	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	char *s = malloc(len), *p = s;
	if (!s)
		return NULL;
	*p = '\0';
	for (int i = 0; i < argc; i++)
		p += sprintf(p, "%s%s", i ? " " : "", argv[i]);
	return s;
}

static int ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);
	return a >= b && !strcmp(s + a - b, tail);
}

static int open_output(const char *opt, const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0)
		fprintf(stderr, "vramctl: %s %s: cannot write: %s\n", opt, path, strerror(errno));
	return fd;
}

static void *drain_loop(void *arg)
{
	struct rep_run *r = arg;
	const struct timespec pause = {0, 20 * 1000 * 1000};
	while (!atomic_load(&r->stop)) {
		pthread_mutex_lock(&r->lock);
		rep_members_scan(&r->ms, r->dir);
		rep_trace_drain(r->trace, &r->ms, mono_ns());
		pthread_mutex_unlock(&r->lock);
		nanosleep(&pause, NULL);
	}
	return NULL;
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)) != NULL)
			if (e->d_name[0] != '.')
				unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
	}
	rmdir(dir);
}

static void run_free(struct rep_run *r)
{
	if (r->report_fd >= 0)
		close(r->report_fd);
	if (r->dir[0])
		remove_dir(r->dir);
	rep_members_free(&r->ms);
	pthread_mutex_destroy(&r->lock);
	free(r->reaped);
	free(r->command);
	free(r);
}

struct rep_run *rep_prepare(const struct rep_opts *o, int argc, char *const argv[])
{
	struct rep_run *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->o = *o;
	r->report_fd = -1;
	pthread_mutex_init(&r->lock, NULL);
	r->command = join_args(argc, argv);
	if (!r->command)
		goto fail;
	if (o->report_path) {
		r->json = ends_with(o->report_path, ".json");
		if ((r->report_fd = open_output("--report", o->report_path)) < 0)
			goto fail;
	}
	int trace_fd = -1;
	if (o->trace_path && (trace_fd = open_output("--trace", o->trace_path)) < 0)
		goto fail;
	const char *tmp = getenv("TMPDIR");
	snprintf(r->dir, sizeof r->dir, "%s/vramctl-record-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(r->dir)) {
		fprintf(stderr, "vramctl: cannot make the run's record directory %s: %s\n", r->dir,
		        strerror(errno));
		r->dir[0] = '\0';
		if (trace_fd >= 0)
			close(trace_fd);
		goto fail;
	}
	char flags[64];
	snprintf(flags, sizeof flags, "%s%s%s", o->report || o->stacks ? "report," : "",
	         o->trace_path ? "trace," : "", o->stacks ? "stacks" : "");
	setenv(VR_ENV_RECORD_DIR, r->dir, 1);
	setenv(VR_ENV_RECORD, flags, 1);
	/* Orphaned members come back to vramctl, so their statuses are known. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	r->t0 = mono_ns();
	if (trace_fd >= 0) {
		r->trace = rep_trace_new(trace_fd, o->trace_path, o->trace_max, r->t0, r->command);
		if (!r->trace) {
			close(trace_fd);
			fprintf(stderr, "vramctl: --trace %s: out of memory\n", o->trace_path);
			goto fail;
		}
		/* The thread starts with every signal blocked: signals for
		 * vramctl (forwarded to the command) stay on the main thread. */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		if (pthread_create(&r->drainer, NULL, drain_loop, r) == 0)
			r->drainer_on = 1;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	return r;
fail:
	run_free(r);
	return NULL;
}

/* ---- how each member ended --------------------------------------------- */

enum end_kind { END_EXIT, END_SIGNAL, END_EXITED, END_RUNNING, END_VANISHED };

struct ending {
	enum end_kind kind;
	int code; /* exit status or signal */
	char text[160];
};

static void how_ended(const struct rep_member *m, struct ending *e)
{
	if (m->reaped && WIFEXITED(m->wstatus)) {
		e->kind = END_EXIT;
		e->code = WEXITSTATUS(m->wstatus);
		snprintf(e->text, sizeof e->text, "exit status %d", e->code);
	} else if (m->reaped && WIFSIGNALED(m->wstatus)) {
		e->kind = END_SIGNAL;
		e->code = WTERMSIG(m->wstatus);
		snprintf(e->text, sizeof e->text, "killed by signal %d (SIG%s)", e->code,
		         sigabbrev_np(e->code) ? sigabbrev_np(e->code) : "?");
	} else if (m->h->end == VR_REC_EXITED) {
		e->kind = END_EXITED;
		e->code = -1;
		snprintf(e->text, sizeof e->text,
		         "exited (its exit handlers ran; the status went to its parent)");
	} else if (rep_member_alive(m->h)) {
		e->kind = END_RUNNING;
		e->code = -1;
		snprintf(e->text, sizeof e->text, "still running when the command ended");
	} else {
		e->kind = END_VANISHED;
		e->code = -1;
		snprintf(e->text, sizeof e->text,
		         "ended without running exit handlers (a signal, _exit or exec; its "
		         "parent saw the status)");
	}
}

static const char *end_key(enum end_kind k)
{
	static const char *const keys[] = {"exit", "signal", "exited", "running", "vanished"};
	return keys[k];
}

/* ---- devices of the run -------------------------------------------------- */

struct devsum {
	int used;
	unsigned char uuid[16];
	uint64_t cap, peak, denials, denied_max, denied_need, spilled_peak;
	int peak_exact; /* the registry's group peak (else: the largest member peak) */
};

static void uuid_text(const unsigned char *u, char *out, size_t len)
{
	vr_format_uuid(u, out, len);
}

static void collect_devices(struct rep_run *r, vr_member *reg, struct devsum *ds)
{
	memset(ds, 0, sizeof(struct devsum) * VR_REC_DEVS);
	for (int i = 0; i < r->ms.n; i++) {
		const struct vr_rec_hdr *h = r->ms.v[i].h;
		for (int d = 0; d < VR_REC_DEVS; d++) {
			const struct vr_rec_dev *x = &h->dev[d];
			if (!x->used)
				continue;
			if (!ds[d].used) {
				ds[d].used = 1;
				memcpy(ds[d].uuid, x->uuid, 16);
				ds[d].cap = x->cap;
			}
			if (x->peak > ds[d].peak)
				ds[d].peak = x->peak;
			ds[d].denials += x->denials;
			if (x->denied_max > ds[d].denied_max)
				ds[d].denied_max = x->denied_max;
			if (x->denied_need > ds[d].denied_need)
				ds[d].denied_need = x->denied_need;
			if (x->spilled_peak > ds[d].spilled_peak)
				ds[d].spilled_peak = x->spilled_peak;
		}
	}
	for (int d = 0; d < VR_REC_DEVS && reg; d++) {
		uint64_t cap;
		struct vr_books_sample s;
		if (!ds[d].used)
			continue;
		int idx = vr_device(reg, ds[d].uuid, UINT64_MAX, &cap);
		if (idx >= 0 && vr_sample(reg, idx, &s) == 0 && s.peak >= ds[d].peak) {
			ds[d].peak = s.peak;
			ds[d].peak_exact = 1;
		}
	}
}

/* The smallest cap in whole MiB that holds bytes. */
static uint64_t right_size(uint64_t bytes)
{
	const uint64_t mib = 1024 * 1024;
	return (bytes + mib - 1) / mib * mib;
}

/* ---- blocks held at exit ------------------------------------------------ */

static const char *kind_name(int k)
{
	static const char *const names[VR_KIND_COUNT] = {
	    "?",           "linear", "vmm",        "array",   "mipmapped-array",
	    "pinned-host", "graph",  "graph-exec", "spilled", "spilled-vmm"};
	return k > 0 && k < VR_KIND_COUNT ? names[k] : "?";
}

static int by_size_desc(const void *a, const void *b)
{
	const struct vr_rec_leak *x = a, *y = b;
	return x->bytes > y->bytes ? -1 : x->bytes < y->bytes;
}

/* The member's held blocks, largest first (malloc'ed copy). */
static struct vr_rec_leak *sorted_leaks(const struct vr_rec_hdr *h, uint32_t *n)
{
	const struct vr_rec_leak *l = rep_leaks(h, n);
	struct vr_rec_leak *c = *n ? malloc(*n * sizeof *c) : NULL;
	if (!c) {
		*n = 0;
		return NULL;
	}
	memcpy(c, l, *n * sizeof *c);
	qsort(c, *n, sizeof *c, by_size_desc);
	return c;
}

static const char *framework_names(uint32_t fw, char *buf, size_t len)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} t[] = {{VR_FW_TORCH, "PyTorch"},
	         {VR_FW_TF, "TensorFlow"},
	         {VR_FW_JAX, "JAX"},
	         {VR_FW_CUPY, "CuPy"}};
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (fw & t[i].bit) {
			int k =
			    snprintf(buf + used, len - used, "%s%s", used ? ", " : "", t[i].name);
			if (k > 0 && (size_t)k < len - used)
				used += (size_t)k;
		}
	return buf;
}

/* A call site's frames, symbolised. Returns the frame count. */
static int site_frames(struct rep_symbols *sy, const struct vr_rec_hdr *h, uint32_t site1,
                       struct rep_frame *out, char paths[][256])
{
	const struct vr_rec_site *s = rep_site(h, site1);
	if (!s)
		return 0;
	int n = s->nframes > VR_REC_FRAMES ? VR_REC_FRAMES : s->nframes;
	for (int i = 0; i < n; i++) {
		const struct vr_rec_module *mod = rep_module(h, s->module[i]);
		if (mod)
			snprintf(paths[i], 256, "%.*s", (int)sizeof mod->path, mod->path);
		else
			paths[i][0] = '\0';
		rep_symbolise(sy, paths[i][0] ? paths[i] : NULL, mod ? mod->base : 0, s->pc[i],
		              &out[i]);
		if (!paths[i][0])
			out[i].offset = s->pc[i];
	}
	return n;
}

static void frame_text(const struct rep_frame *f, char *buf, size_t len)
{
	const char *mod = f->module ? strrchr(f->module, '/') : NULL;
	mod = mod ? mod + 1 : (f->module ? f->module : "?");
	if (f->function && f->file)
		snprintf(buf, len, "%s (%s:%d)", f->function, f->file, f->line);
	else if (f->function)
		snprintf(buf, len, "%s (%s)", f->function, mod);
	else
		snprintf(buf, len, "%s+0x%" PRIx64, mod, f->offset);
}

/* ---- text ------------------------------------------------------------------ */

static double secs(const struct rep_run *r, uint64_t t)
{
	return t > r->t0 ? (double)(t - r->t0) / 1e9 : 0.0;
}

static void text_report(struct rep_run *r, FILE *f, const struct devsum *ds, int child_rc,
                        uint64_t t_end, struct rep_symbols *sy)
{
	char a[32], b[32], c[32], uu[48];
	size_t clen = 4 * strlen(r->command) + 1;
	char *head = malloc(clen);
	fprintf(f, "vramctl report: %s (%s %d) ran %.2f s\n",
	        head ? vr_text_escape(head, clen, r->command) : "?",
	        child_rc >= VR_EXIT_SIGNAL ? "died, status" : "exit status", child_rc,
	        secs(r, t_end));
	free(head);
	if (r->ms.n == 0)
		fprintf(f, "  no process of the run used a GPU under vramctl\n");
	for (int d = 0; d < VR_REC_DEVS; d++) {
		if (!ds[d].used)
			continue;
		uuid_text(ds[d].uuid, uu, sizeof uu);
		fprintf(f, "GPU %d (%s): cap %s; the group's peak %s%s\n", d, uu,
		        ds[d].cap == UINT64_MAX ? "none" : vr_format_size(ds[d].cap, a, sizeof a),
		        vr_format_size(ds[d].peak, b, sizeof b),
		        ds[d].peak_exact ? "" : " (the largest member's; the group's is unknown)");
		uint64_t rs = right_size(ds[d].peak);
		fprintf(f, "  right size: --limit %d=%" PRIu64 "M holds what this run used\n", d,
		        rs >> 20);
		if (ds[d].denials)
			fprintf(f,
			        "  %" PRIu64
			        " request%s refused (the largest %s); to grant %s too, "
			        "the cap must be at least %s (--limit %d=%" PRIu64 "M)\n",
			        ds[d].denials, ds[d].denials == 1 ? " was" : "s were",
			        vr_format_size(ds[d].denied_max, a, sizeof a),
			        ds[d].denials == 1 ? "it" : "them",
			        vr_format_size(ds[d].denied_need, c, sizeof c), d,
			        right_size(ds[d].denied_need) >> 20);
		if (ds[d].spilled_peak)
			fprintf(f, "  spilled to host memory: peak %s\n",
			        vr_format_size(ds[d].spilled_peak, a, sizeof a));
	}
	for (int i = 0; i < r->ms.n; i++) {
		const struct rep_member *m = &r->ms.v[i];
		const struct vr_rec_hdr *h = m->h;
		struct ending e;
		char fw[64];
		how_ended(m, &e);
		char cmd[4 * sizeof h->command + 1];
		vr_text_escape(cmd, sizeof cmd, h->command); /* the process's own text */
		fprintf(f, "process %d %s: %s\n", h->pid, cmd, e.text);
		uint32_t nl = 0;
		struct vr_rec_leak *lk = sorted_leaks(h, &nl);
		int cache = h->frameworks != 0;
		for (int d = 0; d < VR_REC_DEVS; d++) {
			const struct vr_rec_dev *x = &h->dev[d];
			if (!x->used)
				continue;
			fprintf(f,
			        "  GPU %d: peak %s at %.2f s; %" PRIu64 " allocation%s, %" PRIu64
			        " free%s",
			        d, vr_format_size(x->peak, a, sizeof a), secs(r, x->peak_ns),
			        x->allocs, x->allocs == 1 ? "" : "s", x->frees,
			        x->frees == 1 ? "" : "s");
			if (x->denials)
				fprintf(f, "; %" PRIu64 " denied (the largest %s)", x->denials,
				        vr_format_size(x->denied_max, b, sizeof b));
			fputc('\n', f);
			if (x->spilled_peak)
				fprintf(f, "    spilled to host memory: peak %s, %s at the end\n",
				        vr_format_size(x->spilled_peak, a, sizeof a),
				        vr_format_size(x->spilled, b, sizeof b));
			if (h->end != VR_REC_EXITED) {
				if (x->in_use)
					fprintf(f,
					        "    held %s when it ended (blocks not listed: its "
					        "exit "
					        "handlers did not run)\n",
					        vr_format_size(x->in_use, a, sizeof a));
				continue;
			}
			uint64_t listed = 0, count = 0;
			for (uint32_t k = 0; k < nl; k++)
				if (lk[k].dev == d && lk[k].kind != VR_KIND_HOST) {
					listed += lk[k].bytes;
					count++;
				}
			if (count)
				fprintf(f,
				        "    still allocated at exit: %" PRIu64 " block%s, %s%s\n",
				        count, count == 1 ? "" : "s",
				        vr_format_size(listed, a, sizeof a),
				        cache ? "" : " (leaks, largest first)");
			if (count && cache)
				fprintf(f,
				        "    (%s loaded: its caching allocator keeps freed blocks "
				        "until exit; a cache, not a leak)\n",
				        framework_names(h->frameworks, fw, sizeof fw));
			uint64_t shown = 0;
			for (uint32_t k = 0; k < nl && shown < TEXT_LEAKS; k++) {
				if (lk[k].dev != d || lk[k].kind == VR_KIND_HOST)
					continue;
				shown++;
				struct rep_frame fr[VR_REC_FRAMES];
				char paths[VR_REC_FRAMES][256], ft[512];
				int nf = site_frames(sy, h, lk[k].site, fr, paths);
				fprintf(f, "      %10s  %-*s",
				        vr_format_size(lk[k].bytes, a, sizeof a), nf ? 12 : 0,
				        kind_name(lk[k].kind));
				for (int j = 0; j < nf && j < TEXT_FRAMES; j++) {
					frame_text(&fr[j], ft, sizeof ft);
					fprintf(f, "%s%s",
					        j ? "\n                                  by "
					          : "  at ",
					        ft);
				}
				fputc('\n', f);
			}
			if (count > shown)
				fprintf(f, "      ... and %" PRIu64 " more block%s\n",
				        count - shown, count - shown == 1 ? "" : "s");
			if (x->in_use > listed)
				fprintf(
				    f,
				    "    held in stream-ordered memory pools at exit: %s (a cache, "
				    "not a leak)\n",
				    vr_format_size(x->in_use - listed, a, sizeof a));
		}
		if (h->leaks_more_count)
			fprintf(f, "  %" PRIu64 " more blocks (%s) not itemised\n",
			        h->leaks_more_count,
			        vr_format_size(h->leaks_more_bytes, a, sizeof a));
		if (h->pinned_peak)
			fprintf(f, "  pinned host memory: peak %s, %s at %s\n",
			        vr_format_size(h->pinned_peak, a, sizeof a),
			        vr_format_size(h->pinned, b, sizeof b),
			        h->end == VR_REC_EXITED ? "exit" : "the end");
		free(lk);
	}
}

/* ---- JSON ------------------------------------------------------------------ */

static json_object *ju(uint64_t v)
{
	return json_object_new_uint64(v);
}

static json_object *json_report(struct rep_run *r, const struct devsum *ds, int child_rc,
                                uint64_t t_end, struct rep_symbols *sy)
{
	char uu[48], fw[64];
	json_object *root = json_object_new_object();
	json_object_object_add(root, "schema_version", json_object_new_int(1));
	json_object_object_add(root, "command", json_object_new_string(r->command));
	json_object_object_add(root, "exit_status", json_object_new_int(child_rc));
	json_object_object_add(root, "duration_s", json_object_new_double(secs(r, t_end)));
	json_object *devs = json_object_new_array();
	for (int d = 0; d < VR_REC_DEVS; d++) {
		if (!ds[d].used)
			continue;
		json_object *o = json_object_new_object();
		uuid_text(ds[d].uuid, uu, sizeof uu);
		json_object_object_add(o, "index", json_object_new_int(d));
		json_object_object_add(o, "uuid", json_object_new_string(uu));
		json_object_object_add(o, "cap_bytes",
		                       ds[d].cap == UINT64_MAX ? NULL : ju(ds[d].cap));
		json_object_object_add(o, "peak_bytes", ju(ds[d].peak));
		json_object_object_add(o, "peak_is_group",
		                       json_object_new_boolean(ds[d].peak_exact));
		json_object_object_add(o, "right_size_bytes", ju(right_size(ds[d].peak)));
		json_object_object_add(o, "denials", ju(ds[d].denials));
		json_object_object_add(o, "largest_denied_bytes", ju(ds[d].denied_max));
		json_object_object_add(o, "denied_need_bytes", ju(ds[d].denied_need));
		json_object_object_add(o, "spilled_peak_bytes", ju(ds[d].spilled_peak));
		json_object_array_add(devs, o);
	}
	json_object_object_add(root, "devices", devs);
	json_object *procs = json_object_new_array();
	for (int i = 0; i < r->ms.n; i++) {
		const struct rep_member *m = &r->ms.v[i];
		const struct vr_rec_hdr *h = m->h;
		struct ending e;
		how_ended(m, &e);
		json_object *p = json_object_new_object();
		json_object_object_add(p, "pid", json_object_new_int(h->pid));
		json_object_object_add(p, "command", json_object_new_string(h->command));
		json_object_object_add(p, "ended", json_object_new_string(end_key(e.kind)));
		json_object_object_add(p, "exit_status",
		                       e.kind == END_EXIT ? json_object_new_int(e.code) : NULL);
		json_object_object_add(p, "signal",
		                       e.kind == END_SIGNAL ? json_object_new_int(e.code) : NULL);
		json_object_object_add(p, "ended_text", json_object_new_string(e.text));
		json_object_object_add(p, "start_s",
		                       json_object_new_double(secs(r, h->start_mono_ns)));
		json_object_object_add(p, "exit_handlers_ran",
		                       json_object_new_boolean(h->end == VR_REC_EXITED));
		json_object_object_add(
		    p, "frameworks",
		    json_object_new_string(framework_names(h->frameworks, fw, sizeof fw)));
		json_object_object_add(p, "pinned_peak_bytes", ju(h->pinned_peak));
		json_object_object_add(p, "pinned_at_end_bytes", ju(h->pinned));
		uint32_t nl = 0;
		struct vr_rec_leak *lk = sorted_leaks(h, &nl);
		json_object *pd = json_object_new_array();
		for (int d = 0; d < VR_REC_DEVS; d++) {
			const struct vr_rec_dev *x = &h->dev[d];
			if (!x->used)
				continue;
			uint64_t listed = 0;
			for (uint32_t k = 0; k < nl; k++)
				if (lk[k].dev == d && lk[k].kind != VR_KIND_HOST)
					listed += lk[k].bytes;
			json_object *o = json_object_new_object();
			json_object_object_add(o, "index", json_object_new_int(d));
			json_object_object_add(o, "peak_bytes", ju(x->peak));
			json_object_object_add(o, "peak_s",
			                       json_object_new_double(secs(r, x->peak_ns)));
			json_object_object_add(o, "allocations", ju(x->allocs));
			json_object_object_add(o, "frees", ju(x->frees));
			json_object_object_add(o, "denials", ju(x->denials));
			json_object_object_add(o, "largest_denied_bytes", ju(x->denied_max));
			json_object_object_add(o, "in_use_at_end_bytes", ju(x->in_use));
			json_object_object_add(o, "held_in_blocks_bytes", ju(listed));
			json_object_object_add(o, "held_in_pools_bytes",
			                       ju(h->end == VR_REC_EXITED && x->in_use > listed
			                              ? x->in_use - listed
			                              : 0));
			json_object_object_add(o, "spilled_peak_bytes", ju(x->spilled_peak));
			json_object_object_add(o, "spilled_at_end_bytes", ju(x->spilled));
			json_object_array_add(pd, o);
		}
		json_object_object_add(p, "devices", pd);
		json_object *blocks = json_object_new_array();
		for (uint32_t k = 0; k < nl; k++) {
			json_object *o = json_object_new_object();
			json_object_object_add(
			    o, "device", lk[k].dev < 0 ? NULL : json_object_new_int(lk[k].dev));
			json_object_object_add(o, "bytes", ju(lk[k].bytes));
			json_object_object_add(o, "kind",
			                       json_object_new_string(kind_name(lk[k].kind)));
			json_object_object_add(o, "cause",
			                       json_object_new_string(lk[k].kind == VR_KIND_HOST
			                                                  ? "pinned"
			                                              : h->frameworks ? "cache"
			                                                              : "leak"));
			struct rep_frame fr[VR_REC_FRAMES];
			char paths[VR_REC_FRAMES][256], addr[32];
			int nf = site_frames(sy, h, lk[k].site, fr, paths);
			json_object *st = json_object_new_array();
			for (int j = 0; j < nf; j++) {
				json_object *fo = json_object_new_object();
				json_object_object_add(
				    fo, "module",
				    fr[j].module ? json_object_new_string(fr[j].module) : NULL);
				snprintf(addr, sizeof addr, "0x%" PRIx64, fr[j].offset);
				json_object_object_add(fo, "offset", json_object_new_string(addr));
				json_object_object_add(
				    fo, "function",
				    fr[j].function ? json_object_new_string(fr[j].function) : NULL);
				json_object_object_add(
				    fo, "file",
				    fr[j].file ? json_object_new_string(fr[j].file) : NULL);
				json_object_object_add(fo, "line",
				                       fr[j].file ? json_object_new_int(fr[j].line)
				                                  : NULL);
				json_object_array_add(st, fo);
			}
			json_object_object_add(o, "stack", st);
			json_object_array_add(blocks, o);
		}
		json_object_object_add(p, "held_at_exit", blocks);
		json_object_object_add(p, "held_not_itemised_count", ju(h->leaks_more_count));
		json_object_object_add(p, "held_not_itemised_bytes", ju(h->leaks_more_bytes));
		free(lk);
		json_object_array_add(procs, p);
	}
	json_object_object_add(root, "processes", procs);
	return root;
}

/* ---- the end of the run ---------------------------------------------------- */

static void note_reaped(struct rep_run *r, pid_t pid, int status)
{
	struct reaped *n = realloc(r->reaped, (size_t)(r->nreaped + 1) * sizeof *n);
	if (!n)
		return;
	r->reaped = n;
	r->reaped[r->nreaped++] = (struct reaped){pid, status};
}

int rep_finish(struct rep_run *r, pid_t child, int wstatus, vr_member *reg)
{
	int rc = 0, st;
	pid_t p;
	if (r->drainer_on) {
		atomic_store(&r->stop, 1);
		pthread_join(r->drainer, NULL);
	}
	while ((p = waitpid(-1, &st, WNOHANG)) > 0)
		note_reaped(r, p, st);
	uint64_t t_end = mono_ns();
	rep_members_scan(&r->ms, r->dir);
	for (int i = 0; i < r->nreaped; i++) {
		struct rep_member *m = rep_members_by_pid(&r->ms, r->reaped[i].pid);
		if (m) {
			m->reaped = 1;
			m->wstatus = r->reaped[i].status;
		}
	}
	for (int i = 0; i < r->ms.n; i++)
		rep_member_reap(&r->ms.v[i]);
	struct rep_member *cm = child > 0 ? rep_members_by_pid(&r->ms, child) : NULL;
	if (cm) {
		cm->reaped = 1;
		cm->wstatus = wstatus;
	}
	int child_rc = WIFEXITED(wstatus)     ? WEXITSTATUS(wstatus)
	               : WIFSIGNALED(wstatus) ? VR_EXIT_SIGNAL + WTERMSIG(wstatus)
	                                      : VR_EXIT_ERROR;
	if (r->trace) {
		rep_trace_drain(r->trace, &r->ms, t_end);
		for (int i = 0; i < r->ms.n; i++) {
			struct rep_member *m = &r->ms.v[i];
			struct ending e;
			how_ended(m, &e);
			uint64_t gone = rep_member_gone(m, t_end);
			if (gone)
				rep_trace_end(r->trace, m, gone, e.text);
		}
		if (rep_trace_close(r->trace) != 0) {
			fprintf(stderr, "vramctl: --trace %s: writing failed: %s\n",
			        r->o.trace_path, strerror(errno));
			rc = -1;
		}
		r->trace = NULL;
	}
	if (r->o.report) {
		struct devsum ds[VR_REC_DEVS];
		collect_devices(r, reg, ds);
		struct rep_symbols *sy = r->o.stacks ? rep_symbols_new() : NULL;
		if (r->json) {
			json_object *j = json_report(r, ds, child_rc, t_end, sy);
			if (json_object_to_fd(r->report_fd, j, JSON_C_TO_STRING_PRETTY) != 0 ||
			    write(r->report_fd, "\n", 1) != 1) {
				fprintf(stderr, "vramctl: --report=%s: writing failed: %s\n",
				        r->o.report_path, strerror(errno));
				rc = -1;
			}
			json_object_put(j);
		} else {
			FILE *f = stderr;
			if (r->report_fd >= 0) {
				f = fdopen(r->report_fd, "w");
				if (f)
					r->report_fd = -1;
			}
			if (f) {
				text_report(r, f, ds, child_rc, t_end, sy);
				if ((f != stderr ? fclose(f) : fflush(f)) != 0) {
					fprintf(stderr, "vramctl: --report: writing failed: %s\n",
					        strerror(errno));
					rc = -1;
				}
			}
		}
		rep_symbols_free(sy);
	}
	run_free(r);
	return rc;
}
