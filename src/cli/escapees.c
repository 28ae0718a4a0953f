/*
 * escapees.c - the watcher of a capped job's escapees (escapees.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli/escapees.h"
#include "common/cgroup2.h"
#include "common/compiler.h"
#include "common/nvml_api.h"
#include "common/text.h"
#include "monitor/drvlimit.h"
#include "monitor/model.h"
#include "monitor/nvml.h"
#include "registry/proc.h"

#define MEMBERS_MAX 1024

int cli_watch_open(struct cli_watch *w)
{
	char err[256];
	pthread_mutex_init(&w->lock, NULL);
	if (mon_nvml_open(NULL, &w->nv, err, sizeof err) != 0) {
		w->nv = NULL;
		return -1;
	}
	return 0;
}

/* Why a process of the job is not in its group's books, as far as its
 * /proc says (another user's process may say nothing). */
/* Does the file /proc/PID/name hold text? Read in chunks (a large
 * program's maps run to megabytes). 1, 0, or -1 when it cannot be read. */
static int proc_has(pid_t pid, const char *name, const char *text)
{
	char path[64], buf[1 << 16];
	size_t keep = strlen(text) - 1, have = 0;
	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;
	if (fd < 0)
		return -1;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
		if (n <= 0) {
			found = n < 0 && !have ? -1 : found;
			break;
		}
		have += (size_t)n;
		buf[have] = '\0';
		if (memmem(buf, have, text, keep + 1)) {
			found = 1;
			break;
		}
		/* The last bytes may start the text: kept for the next read. */
		size_t k = have < keep ? have : keep;
		memmove(buf, buf + have - k, k);
		have = k;
	}
	close(fd);
	return found;
}

/* Why a process of the job is not in its group's books, as far as its
 * /proc says (another user's process may say nothing). */
static void why_outside(pid_t pid, char *out, size_t len)
{
	char env[1 << 15];
	int mapped = proc_has(pid, "maps", "libvramctl");
	ssize_t e = vr_proc_read(NULL, pid, "environ", env, sizeof env);
	if (mapped < 0 || e < 0) {
		snprintf(out, len, "its /proc files cannot be read");
		return;
	}
	if (mapped) {
		snprintf(out, len,
		         "the library is loaded but the process is not in the group's "
		         "books: it runs as another user, or could not join them");
		return;
	}
	int preload = 0, limit = 0;
	for (ssize_t i = 0; i < e; i += (ssize_t)strlen(env + i) + 1) {
		preload |= !strncmp(env + i, "LD_PRELOAD=", 11) && strstr(env + i, "libvramctl");
		limit |= !strncmp(env + i, VR_ENV_LIMIT "=", sizeof VR_ENV_LIMIT);
	}
	if (!preload)
		snprintf(out, len, "LD_PRELOAD removed%s", limit ? "" : ", VRAMCTL_LIMIT too");
	else
		snprintf(out, len,
		         "the library is not loaded: a static binary, or its preload "
		         "failed");
}

/* The run's index of the GPU with this UUID, else NVML's. */
static int gpu_of(const struct cli_watch *j, const struct mon_model *m, int dev)
{
	for (int i = 0; i < j->ndev; i++)
		if (!strcasecmp(j->devs[i].uuid, m->devs[dev].uuid))
			return j->devs[i].index;
	return m->devs[dev].index;
}

/* Would the driver's own limit stop it (R615+: vramctl run --enforce)? */
static int driver_could(const struct cli_watch *j, const char *uuid, pid_t pid)
{
	char cg[VR_CGROUP2_LEN], ns[VR_CGROUP2_LEN + 32], err[128];
	struct mon_drvlimit l;
	if (vr_cgroup2_read(NULL, pid, cg, sizeof cg) != 0 || vr_cgroup2_ns(cg, ns, sizeof ns) != 0)
		return 0;
	return mon_drvlimit_get(j->nv, uuid, ns, &l, err, sizeof err) == NVML_SUCCESS;
}

/* The escapee's entry (remembered: the report lists them), new or not. */
static struct rep_escapee *remember(struct cli_watch *j, pid_t pid, uint64_t start, int *fresh)
{
	*fresh = 0;
	for (int i = 0; i < j->nescapees; i++)
		if (j->escapees[i].pid == pid && j->escapees[i].start == start)
			return &j->escapees[i];
	if (j->nescapees >= REP_ESCAPED_MAX)
		return NULL;
	struct rep_escapee *e = &j->escapees[j->nescapees++];
	memset(e, 0, sizeof *e);
	e->pid = pid;
	e->start = start;
	*fresh = 1;
	return e;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A process of the job that is not a member: an escapee now (the library
 * is not loaded in it), or once it has stayed outside the group for
 * CLI_WATCH_GRACE_MS with the library loaded (until then it may be joining
 * its group: its context is on the GPU before its first allocation). */
static int outside(struct cli_watch *j, pid_t pid)
{
	uint64_t start;
	if (proc_has(pid, "maps", "libvramctl") != 1 || vr_proc_start_time(NULL, pid, &start) != 0)
		return 1;
	uint64_t now = now_ns();
	int k, oldest = 0;
	for (k = 0; k < j->npending; k++) {
		if (j->pending[k].pid == pid && j->pending[k].start == start)
			return now - j->pending[k].since_ns >= CLI_WATCH_GRACE_MS * 1000000ull;
		if (j->pending[k].since_ns < j->pending[oldest].since_ns)
			oldest = k;
	}
	k = j->npending < (int)VR_ARRAY_LEN(j->pending) ? j->npending++ : oldest;
	j->pending[k].pid = pid;
	j->pending[k].start = start;
	j->pending[k].since_ns = now;
	return 0;
}

static int is_member(const int32_t *pids, int n, pid_t pid)
{
	for (int i = 0; i < n; i++)
		if (pids[i] == pid)
			return 1;
	return 0;
}

/* One escapee on GPU dev of m: remembered and, the first time, said. */
static void saw(struct cli_watch *j, const struct mon_model *m, const struct mon_proc *p,
                uint64_t bytes)
{
	uint64_t start = 0;
	int fresh;
	if (vr_proc_start_time(NULL, p->host_pid, &start) != 0)
		return; /* gone meanwhile */
	pthread_mutex_lock(&j->lock);
	struct rep_escapee *e = remember(j, p->host_pid, start, &fresh);
	if (e && fresh) {
		vr_proc_cmdline(NULL, p->host_pid, 1, e->command, sizeof e->command);
		why_outside(p->host_pid, e->why, sizeof e->why);
		snprintf(e->uuid, sizeof e->uuid, "%.47s", m->devs[p->device].uuid);
		e->gpu = gpu_of(j, m, p->device);
	}
	if (e && bytes > e->peak)
		e->peak = bytes;
	pthread_mutex_unlock(&j->lock);
	if (!e || !fresh)
		return;
	char cmd[160], size[32];
	vr_text_escape(cmd, sizeof cmd, e->command[0] ? e->command : "?");
	fprintf(stderr,
	        "vramctl: pid %d (%s) runs outside the cap (%s): %s on GPU %d, counted against "
	        "group %s%s\n",
	        (int)e->pid, cmd, e->why, vr_format_size(bytes, size, sizeof size), e->gpu,
	        j->group,
	        driver_could(j, e->uuid, e->pid)
	            ? "; the driver's own limit would stop it (vramctl run --enforce both)"
	            : "");
}

/* Charges bytes on the GPU with this UUID text to the group (the
 * launcher's overhead there). The books are touched only when the charge
 * changes: a run without escapees never writes to them. */
static void charge(struct cli_watch *j, const struct mon_device *dev, uint64_t bytes)
{
	unsigned char raw[VR_UUID_LEN];
	uint64_t want = UINT64_MAX, cap;
	int index = -1, slot = -1;
	if (vr_parse_uuid(dev->uuid, raw) != 0)
		return;
	for (int i = 0; i < j->ncharged && slot < 0; i++)
		if (!memcmp(j->charged[i].uuid, raw, VR_UUID_LEN))
			slot = i;
	if (slot < 0 && (!bytes || j->ncharged >= VR_MAX_DEVICES))
		return;
	if (slot < 0) {
		slot = j->ncharged++;
		memcpy(j->charged[slot].uuid, raw, VR_UUID_LEN);
		j->charged[slot].bytes = 0;
	}
	if (j->charged[slot].bytes == bytes)
		return;
	for (int i = 0; i < j->ndev; i++)
		if (!strcasecmp(j->devs[i].uuid, dev->uuid))
			index = j->devs[i].index;
	if (!vr_limits_cap_for(j->lim, index, dev->uuid, dev->total, &want))
		want = UINT64_MAX;
	int idx = vr_device(j->member, raw, want, &cap);
	if (idx >= 0 && vr_overhead_set(j->member, idx, bytes, NULL) == 0)
		j->charged[slot].bytes = bytes;
}

/* One look: the job's processes on each GPU that are not members. */
/* One look, with room for the members' PIDs. */
static void look(struct cli_watch *j, int32_t *pids)
{
	struct mon_model m;
	memset(&m, 0, sizeof m);
	if (mon_nvml_read(j->nv, &m) != 0)
		return;
	int n = vr_member_pids(j->member, pids, MEMBERS_MAX);
	if (n < 0)
		n = 0;
	uint64_t *sum = calloc((size_t)m.ndevs + 1, sizeof *sum);
	for (int i = 0; sum && i < m.nprocs; i++) {
		const struct mon_proc *p = &m.procs[i];
		unsigned need = MON_P_NVML | MON_P_HOST_PID | MON_P_DEVICE;
		if ((p->valid & need) != need || p->host_pid == getpid() ||
		    is_member(pids, n, p->host_pid))
			continue;
		int in = (j->tree.kind && vr_job_holds(&j->tree, NULL, p->host_pid)) ||
		         (j->cg.kind && vr_job_holds(&j->cg, NULL, p->host_pid));
		if (!in || !outside(j, p->host_pid))
			continue;
		uint64_t bytes = (p->valid & MON_P_NVML_USED) ? p->nvml_used : 0;
		sum[p->device] += bytes;
		saw(j, &m, p, bytes);
	}
	/* Every GPU the group has a charge on is set, to 0 when nobody is
	 * outside any more (an escapee that exits gives its charge back). */
	for (int d = 0; sum && d < m.ndevs; d++)
		if (m.devs[d].valid & MON_DEV_PROCS)
			charge(j, &m.devs[d], sum[d]);
	free(sum);
	mon_model_clear(&m);
}

static void *watch(void *arg)
{
	struct cli_watch *j = arg;
	int32_t *pids = malloc(MEMBERS_MAX * sizeof *pids);
	struct pollfd pfd = {.fd = j->wake[0], .events = POLLIN};
	while (pids) {
		look(j, pids);
		if (poll(&pfd, 1, CLI_WATCH_MS) != 0)
			break;
	}
	free(pids);
	return NULL;
}

int cli_watch_start(struct cli_watch *j)
{
	if (!j->nv && cli_watch_open(j) != 0)
		return -1;
	if (pipe2(j->wake, O_CLOEXEC) != 0)
		return -1;
	/* Signals for vramctl (forwarded to the command) stay on the main
	 * thread. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	j->running = pthread_create(&j->thread, NULL, watch, j) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!j->running) {
		close(j->wake[0]);
		close(j->wake[1]);
		return -1;
	}
	return 0;
}

void cli_watch_look(struct cli_watch *w)
{
	int32_t *pids = malloc(MEMBERS_MAX * sizeof *pids);
	if (pids && w->nv)
		look(w, pids);
	free(pids);
}

void cli_watch_stop(struct cli_watch *w)
{
	if (w->running) {
		if (write(w->wake[1], "x", 1) != 1) {
			/* The pipe is ours: it cannot be full. */
		}
		pthread_join(w->thread, NULL);
		w->running = 0;
		close(w->wake[0]);
		close(w->wake[1]);
	}
	if (w->nv) {
		mon_nvml_close(w->nv);
		w->nv = NULL;
	}
}
