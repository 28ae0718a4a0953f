/*
 * report.c - the run's report (docs/report.md, "The report"): per device
 * the cap in force at the end (and the caps `vramctl limit` changed while
 * the run ran, from the group's books), the group's peak of allocations
 * and on the card, the overhead and the right size; per member how it
 * ended, its peak and when, counts, denials, pinned and spilled memory,
 * and the blocks it still held at exit, largest first, with call sites
 * under --stacks. Text on stderr (or FILE), JSON (json-c) for FILE.json.
 *
 * This file runs the run's side (the record directory, the drain thread,
 * reaping, writing the outputs); what the report says is report_facts.c,
 * its text report_text.c, its JSON report_json.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/contract.h"
#include "common/exit.h"
#include "common/size.h"
#include "common/text.h"
#include "registry/caps.h"
#include "registry/util.h"
#include "report/members.h"
#include "report/report.h"
#include "report/report_facts.h"
#include "report/report_json.h"
#include "report/report_text.h"
#include "report/symbols.h"
#include "report/trace.h"

struct reaped {
	pid_t pid;
	int status;
};

struct rep_run {
	struct rep_opts o;
	int report_fd, json;
	char dir[PATH_MAX];
	int sock; /* the run's socket in dir: members send their records there */
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
	/* The group's count of cap changes when the run started (those from
	 * it on were made while it ran); changes_known 0: it could not be read. */
	uint64_t changes_from;
	int changes_known;
	int nescaped;
	struct rep_escapee escaped[REP_ESCAPED_MAX];
	/* The group's peaks as the trace drew them (traced[d]: it saw d). */
	uint64_t trace_peak[VR_REC_DEVS], trace_card[VR_REC_DEVS];
	int traced[VR_REC_DEVS];
};

void rep_escaped(struct rep_run *r, const struct rep_escapee *e)
{
	if (r && r->nescaped < REP_ESCAPED_MAX)
		r->escaped[r->nescaped++] = *e;
}

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
	struct pollfd p = {.fd = r->sock, .events = POLLIN};
	while (!atomic_load(&r->stop)) {
		pthread_mutex_lock(&r->lock);
		rep_members_scan(&r->ms, r->sock);
		if (r->trace)
			rep_trace_drain(r->trace, &r->ms, mono_ns());
		pthread_mutex_unlock(&r->lock);
		/* A new record wakes it at once (members wait while the socket's
		 * queue is full); the trace's ring is drained every 20 ms. */
		poll(&p, 1, 20);
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
	if (r->sock >= 0)
		close(r->sock);
	if (r->dir[0])
		remove_dir(r->dir);
	rep_members_free(&r->ms);
	pthread_mutex_destroy(&r->lock);
	free(r->reaped);
	free(r->command);
	free(r);
}

/* The run's socket, VR_REC_SOCKET in its directory: members send their
 * records' descriptors there (docs/report.md). 0, or -1 after a message. */
static int open_socket(struct rep_run *r)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int dfd = -1, rc = -1;
	/* A path too long for an address (a long TMPDIR) is bound through the
	 * directory's descriptor; the members do the same. */
	if (snprintf(a.sun_path, sizeof a.sun_path, "%s/%s", r->dir, VR_REC_SOCKET) >=
	    (int)sizeof a.sun_path) {
		dfd = open(r->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		snprintf(a.sun_path, sizeof a.sun_path, "/proc/self/fd/%d/%s", dfd, VR_REC_SOCKET);
	}
	r->sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (r->sock >= 0 && bind(r->sock, (struct sockaddr *)&a, sizeof a) == 0)
		rc = 0;
	else
		fprintf(stderr, "vramctl: cannot make the run's socket in %s: %s\n", r->dir,
		        strerror(errno));
	if (dfd >= 0)
		close(dfd);
	return rc;
}

struct rep_run *rep_prepare(const struct rep_opts *o, int argc, char *const argv[], vr_member *reg)
{
	struct rep_run *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->o = *o;
	r->report_fd = -1;
	r->sock = -1;
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
	if (open_socket(r) < 0) {
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
	char spec[VR_GROUP_SPEC_MAX];
	int64_t nch = reg ? vr_caps_changed(reg, spec, sizeof spec) : -1;
	if (nch >= 0) {
		r->changes_from = (uint64_t)nch;
		r->changes_known = 1;
	}
	r->t0 = mono_ns();
	if (trace_fd >= 0) {
		r->trace = rep_trace_new(trace_fd, o->trace_path, o->trace_max, r->t0, r->command);
		if (!r->trace) {
			close(trace_fd);
			fprintf(stderr, "vramctl: --trace %s: out of memory\n", o->trace_path);
			goto fail;
		}
	}
	/* The thread receives the members' records (and drains the trace). It
	 * starts with every signal blocked: signals for vramctl (forwarded to
	 * the command) stay on the main thread. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int err = pthread_create(&r->drainer, NULL, drain_loop, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		fprintf(stderr, "vramctl: cannot start the run's record thread: %s\n",
		        strerror(err));
		goto fail;
	}
	r->drainer_on = 1;
	return r;
fail:
	run_free(r);
	return NULL;
}

/* The run's devices: the members' sums (rep_sum_devices), and the group's
 * caps in force at the end and peaks from the registry where the CLI is a
 * member (reg). */
static void collect_devices(struct rep_run *r, vr_member *reg, struct devsum *ds)
{
	rep_sum_devices(&r->ms, ds);
	for (int d = 0; d < VR_REC_DEVS && reg; d++) {
		uint64_t cap;
		struct vr_reg_sample s;
		if (!ds[d].used)
			continue;
		int idx = vr_device(reg, ds[d].uuid, UINT64_MAX, &cap);
		if (idx < 0)
			continue;
		/* A member that ended before a change kept the cap it knew. */
		ds[d].cap = cap;
		if (vr_sample(reg, idx, &s) != 0)
			continue;
		/* The books count what the cap counts: the card where the
		 * overhead was measured (then their peak is of allocations only
		 * if there was none), else the allocations. */
		if (ds[d].card_members && s.peak >= ds[d].card_peak) {
			ds[d].card_peak = s.peak;
			ds[d].card_exact = 1;
		}
		if ((!ds[d].card_members || !ds[d].overhead_peak) && s.peak >= ds[d].peak) {
			ds[d].peak = s.peak;
			ds[d].peak_exact = 1;
		}
	}
	/* The trace added the members' allocations up in time order: the
	 * group's peak of allocations, the one its picture shows. */
	for (int d = 0; d < VR_REC_DEVS; d++)
		if (ds[d].used && !ds[d].peak_exact && r->traced[d] &&
		    r->trace_peak[d] >= ds[d].peak) {
			ds[d].peak = r->trace_peak[d];
			ds[d].peak_exact = 1;
		}
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

void rep_reaped(struct rep_run *r, pid_t pid, int status)
{
	note_reaped(r, pid, status);
}

int rep_finish(struct rep_run *r, pid_t child, int wstatus, int exit_rc, vr_member *reg)
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
	rep_members_scan(&r->ms, r->sock);
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
	int child_rc = child <= 0             ? exit_rc
	               : WIFEXITED(wstatus)   ? WEXITSTATUS(wstatus)
	               : WIFSIGNALED(wstatus) ? VR_EXIT_SIGNAL + WTERMSIG(wstatus)
	                                      : VR_EXIT_ERROR;
	if (r->trace) {
		rep_trace_drain(r->trace, &r->ms, t_end);
		for (int i = 0; i < r->ms.n; i++) {
			struct rep_member *m = &r->ms.v[i];
			struct ending e;
			rep_how_ended(m, &e);
			uint64_t gone = rep_member_gone(m, t_end);
			if (gone)
				rep_trace_end(r->trace, m, gone, e.text);
		}
		for (int d = 0; d < VR_REC_DEVS; d++)
			r->traced[d] =
			    rep_trace_peaks(r->trace, d, &r->trace_peak[d], &r->trace_card[d]);
		if (rep_trace_close(r->trace) != 0) {
			fprintf(stderr,
			        "vramctl: --trace %s: the trace could not be written: %s "
			        "(the exit status is the command's)\n",
			        r->o.trace_path, strerror(errno));
			rc = -1;
		}
		r->trace = NULL;
	}
	if (r->o.report) {
		struct devsum ds[VR_REC_DEVS];
		collect_devices(r, reg, ds);
		struct rep_symbols *sy = r->o.stacks ? rep_symbols_new() : NULL;
		struct vramctl_cap_change ch[VR_CAP_CHANGES_KEPT];
		struct rep_view v = {.command = r->command,
		                     .t0 = r->t0,
		                     .ms = r->ms,
		                     .started = child > 0,
		                     .nescaped = r->nescaped,
		                     .escaped = r->escaped};
		/* The launcher is still a member: the group's books say which
		 * caps changed while the run ran. */
		uint64_t total = 0;
		int n = r->changes_known && reg
		            ? vr_caps_history(reg, r->changes_from, ch, VR_CAP_CHANGES_KEPT, &total)
		            : -1;
		if (n >= 0 && total >= r->changes_from) {
			v.changes = ch;
			v.nchanges = n;
			v.changes_total = total - r->changes_from;
		}
		v.changes_damaged = n == -EBADMSG;
		rep_cap_history(&v, ds);
		if (r->json) {
			json_object *j = rep_json_report(&v, ds, child_rc, t_end, sy);
			if (json_object_to_fd(r->report_fd, j, JSON_C_TO_STRING_PRETTY) != 0 ||
			    write(r->report_fd, "\n", 1) != 1) {
				fprintf(stderr,
				        "vramctl: --report=%s: the report could not be written: %s "
				        "(the exit status is the command's)\n",
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
				rep_text_report(&v, f, ds, child_rc, t_end, sy);
				if ((f != stderr ? fclose(f) : fflush(f)) != 0) {
					fprintf(stderr,
					        "vramctl: --report%s%s: the report could not be "
					        "written: %s (the exit status is the command's)\n",
					        r->o.report_path ? "=" : "",
					        r->o.report_path ? r->o.report_path : "",
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
