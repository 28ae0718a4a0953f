/*
 * run_job.c - `vramctl run` as a job: its records, its cgroup, the
 * subreaper and the watcher of escapees (run_job.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/run_job.h"
#include "common/cgroup2.h"
#include "common/nvml_api.h"
#include "common/text.h"
#include "monitor/drvlimit.h"
#include "monitor/model.h"
#include "monitor/nvml.h"
#include "registry/proc.h"

/* How often the watcher looks: an escapee is charged within twice this. */
#define WATCH_MS    500
#define MEMBERS_MAX 1024

/* ---- the records */

static void fill(struct vr_job *rec, int kind, const char *dir, const char *group,
                 const char *spec, const char *count)
{
	memset(rec, 0, sizeof *rec);
	rec->kind = kind;
	rec->uid = (uint32_t)geteuid();
	snprintf(rec->dir, sizeof rec->dir, "%s", dir);
	snprintf(rec->group, sizeof rec->group, "%s", group);
	snprintf(rec->limit, sizeof rec->limit, "%s", spec);
	snprintf(rec->count, sizeof rec->count, "%s", count ? count : "");
}

/* Publishes rec into path; an unfit jobs directory is said once (a missing
 * one only to root, who could make it: a user's run without it still has
 * its watcher). 0 or -1. */
static int publish(struct vr_job *rec, char *path, size_t len)
{
	static int said;
	char err[512];
	int rc = vr_jobs_prepare(NULL, err, sizeof err);
	if (rc == 0)
		rc = vr_job_publish(NULL, rec, path, len, err, sizeof err);
	if (rc == 0)
		return 0;
	path[0] = '\0';
	rec->kind = 0;
	if (!said++ && (rc != -ENOENT || geteuid() == 0))
		fprintf(stderr,
		        "vramctl: cannot record this run as a job (%s): a process of it that "
		        "clears its environment is counted against the cap, not held by it\n",
		        err);
	return -1;
}

/* A cgroup of the run's own, where vramctl may make one: vramctl moves in,
 * so the command is born there, and a process moved in from outside (an ssh
 * session adopted as pam_slurm_adopt does) is in the job. */
static void make_cgroup(struct run_job *j)
{
	const char *root = vr_cgroup2_hierarchy();
	char own[VR_CGROUP2_LEN];
	if (!root || vr_cgroup2_of(0, own, sizeof own) != 0)
		return;
	if (!strcmp(own, "/"))
		own[0] = '\0';
	snprintf(j->home, sizeof j->home, "%s%s", root, own);
	snprintf(j->cg_dir, sizeof j->cg_dir, "%s%s/vramctl-job-%d", root, own, (int)getpid());
	if (mkdir(j->cg_dir, 0755) != 0) {
		j->cg_dir[0] = '\0';
		return;
	}
	if (vr_cgroup2_move(j->cg_dir, 0) != 0) {
		rmdir(j->cg_dir);
		j->cg_dir[0] = '\0';
	}
}

/* The cgroup this process is in now, recorded as the job's. */
static void record_cgroup(struct run_job *j, const char *dir, const char *group,
                          const char *spec, const char *count)
{
	char path[VR_CGROUP2_LEN];
	const char *root = vr_cgroup2_hierarchy();
	if (!root || vr_cgroup2_of(0, path, sizeof path) != 0 || !strcmp(path, "/"))
		return;
	snprintf(j->cg_full, sizeof j->cg_full, "%s%s", root, path);
	fill(&j->cg, VR_JOB_CGROUP, dir, group, spec, count);
	snprintf(j->cg.hier, sizeof j->cg.hier, "v2");
	snprintf(j->cg.cgroup, sizeof j->cg.cgroup, "%s", path);
	j->cg.watcher = j->tree.watcher;
	publish(&j->cg, j->cg_path, sizeof j->cg_path);
}

/* ---- the watcher */

/* Why a process of the job is not in its group's books, as far as its
 * /proc says (another user's process may say nothing). */
static void why_outside(pid_t pid, char *out, size_t len)
{
	char maps[1 << 16], env[1 << 15];
	ssize_t n = vr_proc_read(NULL, pid, "maps", maps, sizeof maps);
	ssize_t e = vr_proc_read(NULL, pid, "environ", env, sizeof env);
	if (n <= 0 || e < 0) {
		snprintf(out, len, "its /proc files cannot be read");
		return;
	}
	if (strstr(maps, "libvramctl")) {
		snprintf(out, len, "the library is loaded but the process is not in the group's "
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
		snprintf(out, len, "the library is not loaded: a static binary, or its preload "
		                   "failed");
}

/* The run's index of the GPU with this UUID, else NVML's. */
static int gpu_of(const struct run_job *j, const struct mon_model *m, int dev)
{
	for (int i = 0; i < j->ndev; i++)
		if (!strcasecmp(j->devs[i].uuid, m->devs[dev].uuid))
			return j->devs[i].index;
	return m->devs[dev].index;
}

/* Would the driver's own limit stop it (R615+: vramctl run --enforce)? */
static int driver_could(const struct run_job *j, const char *uuid, pid_t pid)
{
	char cg[VR_CGROUP2_LEN], ns[VR_CGROUP2_LEN + 32], err[128];
	struct mon_drvlimit l;
	if (vr_cgroup2_read(NULL, pid, cg, sizeof cg) != 0 || vr_cgroup2_ns(cg, ns, sizeof ns) != 0)
		return 0;
	return mon_drvlimit_get(j->nv, uuid, ns, &l, err, sizeof err) == NVML_SUCCESS;
}

/* The escapee's entry (remembered: the report lists them), new or not. */
static struct rep_escapee *remember(struct run_job *j, pid_t pid, uint64_t start, int *fresh)
{
	*fresh = 0;
	for (int i = 0; i < j->nescapees; i++)
		if (j->escapees[i].pid == pid && j->escapees[i].start == start)
			return &j->escapees[i];
	if (j->nescapees >= RUN_ESCAPEES)
		return NULL;
	struct rep_escapee *e = &j->escapees[j->nescapees++];
	memset(e, 0, sizeof *e);
	e->pid = pid;
	e->start = start;
	*fresh = 1;
	return e;
}

static int is_member(const int32_t *pids, int n, pid_t pid)
{
	for (int i = 0; i < n; i++)
		if (pids[i] == pid)
			return 1;
	return 0;
}

/* One escapee on GPU dev of m: remembered and, the first time, said. */
static void saw(struct run_job *j, const struct mon_model *m, const struct mon_proc *p,
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
	        (int)e->pid, cmd, e->why, vr_format_size(bytes, size, sizeof size), e->gpu, j->group,
	        driver_could(j, e->uuid, e->pid)
	            ? "; the driver's own limit would stop it (vramctl run --enforce both)"
	            : "");
}

/* Charges bytes on the GPU with this UUID text to the group (the
 * launcher's overhead there). The books are touched only when the charge
 * changes: a run without escapees never writes to them. */
static void charge(struct run_job *j, const struct mon_device *dev, uint64_t bytes)
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
static void look(struct run_job *j, int32_t *pids)
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
		if (!in)
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
	struct run_job *j = arg;
	int32_t *pids = malloc(MEMBERS_MAX * sizeof *pids);
	struct pollfd pfd = {.fd = j->wake[0], .events = POLLIN};
	while (pids) {
		look(j, pids);
		if (poll(&pfd, 1, WATCH_MS) != 0)
			break;
	}
	free(pids);
	return NULL;
}

static void start_watcher(struct run_job *j)
{
	char err[256];
	if (mon_nvml_open(NULL, &j->nv, err, sizeof err) != 0) {
		j->nv = NULL;
		return; /* no NVML: nothing on a GPU can be seen either */
	}
	if (pipe2(j->wake, O_CLOEXEC) != 0) {
		mon_nvml_close(j->nv);
		j->nv = NULL;
		return;
	}
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
		mon_nvml_close(j->nv);
		j->nv = NULL;
	}
}

void run_job_begin(struct run_job *j, vr_member *member, const char *dir, const char *group,
                   const char *spec, const struct vr_limits *lim, const char *count,
                   const struct vr_launch_dev *devs, int ndev, const char *drv_cgroup,
                   int exec_self)
{
	char dirbuf[PATH_MAX];
	memset(j, 0, sizeof *j);
	pthread_mutex_init(&j->lock, NULL);
	j->member = member;
	j->lim = lim;
	j->devs = devs;
	j->ndev = ndev < 0 ? 0 : ndev;
	j->group = group;
	if (!member || vr_dir_or_default(&dir, dirbuf, sizeof dirbuf) != 0)
		return;
	/* With --exec the command is this process: the tree's root. */
	fill(&j->tree, VR_JOB_TREE, dir, group, spec, count);
	j->tree.root_pid = (int32_t)getpid();
	if (vr_proc_start_time(NULL, 0, &j->tree.root_start) != 0)
		j->tree.kind = 0;
	if (!exec_self) {
		j->tree.watcher = (int32_t)getpid();
		/* Orphaned descendants come back to vramctl: they stay in the
		 * tree while the run lasts (spawn.c reaps them). */
		prctl(PR_SET_CHILD_SUBREAPER, 1);
	}
	if (j->tree.kind)
		publish(&j->tree, j->tree_path, sizeof j->tree_path);
	if (!drv_cgroup && !exec_self)
		make_cgroup(j);
	if (drv_cgroup || j->cg_dir[0])
		record_cgroup(j, dir, group, spec, count);
	if (!exec_self)
		start_watcher(j);
}

/* Has the cgroup directory a process other than this one? */
static int others_in(const char *dir)
{
	char path[PATH_MAX + 16], text[4096];
	snprintf(path, sizeof path, "%s/cgroup.procs", dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, text, sizeof text - 1);
	close(fd);
	text[n > 0 ? n : 0] = '\0';
	for (char *p = text; *p;) {
		char *end;
		long pid = strtol(p, &end, 10);
		if (end == p)
			break;
		if (pid != getpid())
			return 1;
		p = end + (*end == '\n');
	}
	return n >= (ssize_t)sizeof text - 1;
}

void run_job_end(struct run_job *j)
{
	if (j->running) {
		if (write(j->wake[1], "x", 1) != 1) {
			/* The pipe is ours: it cannot be full. */
		}
		pthread_join(j->thread, NULL);
		j->running = 0;
		close(j->wake[0]);
		close(j->wake[1]);
	}
	if (j->nv) {
		mon_nvml_close(j->nv);
		j->nv = NULL;
	}
	if (j->tree_path[0])
		vr_job_withdraw(j->tree_path);
	j->tree_path[0] = '\0';
	/* Processes of the run still in its cgroup keep the cgroup and its
	 * record: they are still in the job. */
	if (j->cg_full[0] && others_in(j->cg_full))
		return;
	if (j->cg_path[0])
		vr_job_withdraw(j->cg_path);
	j->cg_path[0] = '\0';
	if (j->cg_dir[0] && vr_cgroup2_move(j->home, 0) == 0)
		rmdir(j->cg_dir);
	j->cg_dir[0] = '\0';
}
