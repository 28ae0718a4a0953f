/*
 * job.c - the jobs this process is in, found without its environment
 * (job.h): job records, the container's contract file, the site's per-user
 * cap. Looked up once, at the first driver call: a program that never
 * calls the driver reads nothing here.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/siteconf.h"
#include "common/text.h"
#include "hook/config.h"
#include "hook/job.h"
#include "hook/log.h"
#include "registry/proc.h"
#include "registry/registry.h"

static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;
static struct vr_outer_job outers[VR_OUTER_MAX];
static int nouter;
static int adopted_owner_set;
static uid_t adopted_owner;

/* Everything found, innermost first: the records, then the contract file,
 * then the user's cap. Static: a job's texts are large for a thread's
 * stack, and this runs once. */
static struct vr_job found[VR_JOBS_MAX + 2];
static const char *found_what[VR_JOBS_MAX + 2];

/* ---- the contract file */

/* Believed when root owns it and nobody else may write it, or when it is on
 * a read-only mount (a rootless container shows root's file as nobody's). */
static int trusted(int fd, const struct stat *st)
{
	struct statvfs vfs;
	if (!S_ISREG(st->st_mode))
		return 0;
	if (st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH)))
		return 1;
	return fstatvfs(fd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY);
}

/* One NAME=value line of the contract file into j (the names a job has). */
static void contract_line(struct vr_job *j, const char *name, const char *v, int *bad)
{
	struct {
		const char *name;
		char *field;
		size_t len;
	} map[] = {
	    {VR_ENV_LIMIT, j->limit, sizeof j->limit},
	    {VR_ENV_GROUP, j->group, sizeof j->group},
	    {VR_ENV_REGISTRY_DIR, j->dir, sizeof j->dir},
	    {VR_ENV_COUNT, j->count, sizeof j->count},
	};
	for (size_t i = 0; i < VR_ARRAY_LEN(map); i++)
		if (!strcmp(name, map[i].name) && vr_text_copy(map[i].field, map[i].len, v) != 0)
			*bad = 1;
}

/*
 * The container's contract (VR_CONTRACT_FILE) into j, its other variables
 * (spill, growth, guarantee) applied to the configuration when this
 * process adopts it (apply). 1 when there is one to believe, 0 when not
 * (said when it exists but is not believed or cannot be read).
 */
static int contract_file(struct vr_job *j, int apply)
{
	char text[VR_JOB_FILE_MAX];
	int fd = open(VR_CONTRACT_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return 0;
	struct stat st;
	ssize_t n = -1;
	int ok = fstat(fd, &st) == 0 && trusted(fd, &st);
	if (ok && st.st_size < (off_t)sizeof text)
		n = pread(fd, text, sizeof text - 1, 0);
	close(fd);
	if (!ok || n < 0) {
		vr_log(VR_LOG_ERROR, "%s is not used: %s", VR_CONTRACT_FILE,
		       ok ? "it cannot be read, or is too large"
		          : "it must be root's and writable by nobody else, or mounted read-only");
		return 0;
	}
	text[n] = '\0';
	memset(j, 0, sizeof *j);
	int bad = 0;
	char *save = NULL;
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(l, '=');
		if (l[0] == '#' || !eq)
			continue;
		*eq = '\0';
		contract_line(j, l, eq + 1, &bad);
		if (apply && strncmp(l, "VRAMCTL_", 8) == 0 && strcmp(l, VR_ENV_LIMIT) &&
		    strcmp(l, VR_ENV_GROUP) && strcmp(l, VR_ENV_REGISTRY_DIR) &&
		    strcmp(l, VR_ENV_COUNT))
			(void)vr_config_set(l, eq + 1);
	}
	if (bad || !j->limit[0]) {
		/* A contract that cannot be read must not become no cap. */
		snprintf(j->limit, sizeof j->limit, "%s", bad ? "?" : "");
		if (bad)
			vr_log(VR_LOG_ERROR, "%s: a value is too long", VR_CONTRACT_FILE);
		return bad;
	}
	return 1;
}

/*
 * A cap but no group, in a container: every container has a PID 1, so a
 * group named after the PID would collide in books shared with the host.
 * The container's PID namespace names the group instead ("pidns-<inode>"):
 * unique among live namespaces on the host, and shared by every process of
 * the container, which is then one job with one cap. An inode a dead
 * container's namespace had can come back, but a group with no live member
 * is reset when joined (registry.h), so no earlier cap carries over.
 * Returns 0 and fills buf, or -1 in the host's own PID namespace (inode
 * VR_PID_INIT_INO: registry/proc.h) or when it cannot be read.
 */
int vr_job_container_group(char *buf, size_t len)
{
	char link[64];
	unsigned long long ino;
	ssize_t n = readlink("/proc/self/ns/pid", link, sizeof link - 1);

	if (n <= 0)
		return -1;
	link[n] = '\0';
	if (sscanf(link, "pid:[%llu]", &ino) != 1 || ino == VR_PID_INIT_INO)
		return -1;
	snprintf(buf, len, "pidns-%llu", ino);
	return 0;
}

/* ---- what was found */

/* The directory a contract's group would use ("" : the default one). */
static void dir_of(const char *dir, char *buf, size_t len)
{
	if (dir[0])
		snprintf(buf, len, "%s", dir);
	else if (vr_default_dir(buf, len) != 0)
		buf[0] = '\0';
}

/* Is j's group the one this process's configuration joins? */
static int is_own_group(const struct vr_job *j)
{
	char a[VR_JOB_TEXT], b[VR_JOB_TEXT], own[sizeof vr_g.group];
	dir_of(j->dir, a, sizeof a);
	dir_of(vr_g.registry_dir, b, sizeof b);
	/* A contract without a group names the container's (books.c). */
	snprintf(own, sizeof own, "%s", vr_g.group);
	if (!own[0] && vr_job_container_group(own, sizeof own) != 0)
		own[0] = '\0';
	return !strcmp(a, b) && !strcmp(j->group, own);
}

/* The site's per-user cap as a job of its own: group user-<uid>. 1 when
 * the site sets one. */
static int user_job(struct vr_job *j)
{
	const char *spec = VR_SITE_TEXT_OF(vr_site_get(), user_limit);
	uid_t uid = getuid();
	/* Root is not a user to share the card with: its daemons (slurmd,
	 * exporters) read NVML and must see the card. */
	if (!spec || uid == 0)
		return 0;
	memset(j, 0, sizeof *j);
	j->uid = (uint32_t)uid;
	snprintf(j->group, sizeof j->group, "user-%u", (unsigned)uid);
	snprintf(j->limit, sizeof j->limit, "%s", spec);
	return vr_user_dir(uid, j->dir, sizeof j->dir) == 0;
}

/* This process takes j as its contract: its environment gave none. */
static void adopt(const struct vr_job *j, const char *what)
{
	char where[96] = "";
	vr_config_set(VR_ENV_LIMIT, j->limit);
	vr_config_set(VR_ENV_GROUP, j->group);
	vr_config_set(VR_ENV_REGISTRY_DIR, j->dir);
	if (j->count[0])
		vr_config_set(VR_ENV_COUNT, j->count);
	if (j->uid != (uint32_t)geteuid() && geteuid() == 0) {
		adopted_owner_set = 1;
		adopted_owner = j->uid;
	}
	if (!strcmp(what, "user")) {
		vr_log(VR_LOG_INFO,
		       "pid %d: no cap in its environment; the site's per-user cap applies "
		       "(user_limit %s, group %s)",
		       (int)getpid(), j->limit, j->group);
		return;
	}
	if (j->group[0])
		snprintf(where, sizeof where, " as part of group %s", j->group);
	vr_log(VR_LOG_WARN,
	       "pid %d: %s is not set (its environment was changed); capped%s, cap %s (%s)",
	       (int)getpid(), VR_ENV_LIMIT, where, j->limit,
	       !strcmp(what, "container") ? "the container's contract, " VR_CONTRACT_FILE
	                                  : "its job's record");
}

static void add_outer(const struct vr_job *j, const char *what)
{
	if (nouter >= VR_OUTER_MAX) {
		vr_log(VR_LOG_ERROR,
		       "pid %d: in more than %d capped jobs; the outermost (group %s) is not "
		       "counted",
		       (int)getpid(), VR_OUTER_MAX, j->group);
		return;
	}
	struct vr_outer_job *o = &outers[nouter++];
	o->what = what;
	o->owner = j->uid;
	snprintf(o->dir, sizeof o->dir, "%s", j->dir);
	snprintf(o->group, sizeof o->group, "%s", j->group);
	snprintf(o->limit, sizeof o->limit, "%s", j->limit);
}

static void resolve(void)
{
	vr_config_init();
	if (vr_g.passthrough || (!vr_g.env_contract && vr_config_foreign())) {
		vr_config_settle(); /* passes everything through */
		return;
	}
	int n = vr_jobs_of(NULL, NULL, NULL, 0, found, VR_JOBS_MAX);
	for (int i = 0; i < n; i++)
		found_what[i] = "job";
	if (contract_file(&found[n], !vr_g.env_contract && n == 0)) {
		/* No group named: the container's own, as the library names
		 * it for the processes that have the contract (books.c). */
		if (!found[n].group[0])
			(void)vr_job_container_group(found[n].group, sizeof found[n].group);
		found_what[n++] = "container";
	}
	if (user_job(&found[n]))
		found_what[n++] = "user";

	int first = 0;
	if (!vr_g.env_contract) {
		if (n > 0)
			adopt(&found[first++], found_what[0]);
		vr_config_settle();
	}
	if (!vr_g.active || vr_g.passthrough || vr_g.limit_bad)
		return;
	for (int i = first; i < n; i++) {
		int dup = is_own_group(&found[i]);
		for (int k = 0; k < nouter && !dup; k++)
			dup = !strcmp(outers[k].dir, found[i].dir) &&
			      !strcmp(outers[k].group, found[i].group);
		if (!dup && found[i].group[0])
			add_outer(&found[i], found_what[i]);
	}
}

void vr_job_resolve(void)
{
	pthread_once(&resolve_once, resolve);
}

int vr_job_outers(const struct vr_outer_job **out)
{
	*out = outers;
	return nouter;
}

int vr_job_owner(uid_t *uid)
{
	*uid = adopted_owner;
	return adopted_owner_set;
}
