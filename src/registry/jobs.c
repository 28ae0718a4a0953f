/*
 * jobs.c - job records (see jobs.h): published by launchers, found by a
 * process from /proc alone, believed only with the kernel's proof.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cgroup2.h"
#include "common/size.h"
#include "registry/jobs.h"
#include "registry/proc.h"
#include "registry/util.h"

#define JOB_MAGIC "vramctl-job 1"
/* How far up a process's ancestors, and how many stale records one publish
 * looks at: bounds, not expectations. */
#define CHAIN_MAX 128
#define SWEEP_MAX 256

const char *vr_jobs_dir(const char *dir)
{
	return dir && *dir ? dir : VR_JOBS_DIR;
}

/* ---- the directory */

static int dir_fit(const char *dir, const struct stat *st, char *err, size_t errlen)
{
	if (!S_ISDIR(st->st_mode)) {
		vr_seterr(err, errlen, "%s is not a directory", dir);
		return -ENOTDIR;
	}
	if (st->st_uid != 0 && st->st_uid != geteuid()) {
		vr_seterr(err, errlen,
		          "%s is owned by uid %u, not by root: its owner could remove "
		          "every job's record",
		          dir, (unsigned)st->st_uid);
		return -EPERM;
	}
	if ((st->st_mode & S_IWOTH) && !(st->st_mode & S_ISVTX)) {
		vr_seterr(err, errlen,
		          "%s is writable by every user but not sticky (mode %04o): "
		          "anyone could remove a job's record",
		          dir, (unsigned)(st->st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

int vr_jobs_check(const char *dir, char *err, size_t errlen)
{
	struct stat st;
	dir = vr_jobs_dir(dir);
	if (lstat(dir, &st) != 0) {
		int e = errno;
		vr_seterr(err, errlen, "%s: %s", dir, strerror(e));
		return -e;
	}
	if (S_ISLNK(st.st_mode)) {
		vr_seterr(err, errlen, "%s is a symlink: refusing", dir);
		return -ELOOP;
	}
	return dir_fit(dir, &st, err, errlen);
}

/* mkdir with exactly mode (the umask is not touched: chmod after). */
static int make_dir(const char *path, mode_t mode)
{
	if (mkdir(path, mode) != 0)
		return errno == EEXIST ? 0 : -errno;
	return chmod(path, mode) == 0 ? 0 : -errno;
}

int vr_jobs_prepare(const char *dir, char *err, size_t errlen)
{
	char parent[VR_JOB_TEXT];
	dir = vr_jobs_dir(dir);
	const char *slash = strrchr(dir, '/');
	struct stat st;
	if (lstat(dir, &st) != 0 && errno == ENOENT && geteuid() == 0 && slash && slash != dir &&
	    (size_t)(slash - dir) < sizeof parent) {
		memcpy(parent, dir, (size_t)(slash - dir));
		parent[slash - dir] = '\0';
		int rc = make_dir(parent, 0755);
		if (rc == 0)
			rc = make_dir(dir, 01777);
		if (rc < 0) {
			vr_seterr(err, errlen, "cannot make %s: %s", dir, strerror(-rc));
			return rc;
		}
	}
	return vr_jobs_check(dir, err, errlen);
}

/* ---- the record's text */

/* FNV-1a, 64 bits: a cgroup's name in the directory (checked against the
 * record's own fields when read). */
static uint64_t fnv64(const char *a, const char *b)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (const char *s = a; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	h = (h ^ ':') * 0x100000001b3ull;
	for (const char *s = b; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static int tree_name(int32_t pid, uint64_t start, char *buf, size_t len)
{
	int n = snprintf(buf, len, "tree-%d-%llu.job", (int)pid, (unsigned long long)start);
	return n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

static int cgroup_name(const char *hier, const char *path, char *buf, size_t len)
{
	int n = snprintf(buf, len, "cg-%016llx.job", (unsigned long long)fnv64(hier, path));
	return n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

int vr_job_name(const struct vr_job *j, char *buf, size_t len)
{
	return j->kind == VR_JOB_TREE ? tree_name(j->root_pid, j->root_start, buf, len)
	                              : cgroup_name(j->hier, j->cgroup, buf, len);
}

int vr_job_same_group(const struct vr_job *a, const struct vr_job *b)
{
	return !strcmp(a->dir, b->dir) && !strcmp(a->group, b->group);
}

static int one_line(const char *s)
{
	return !strpbrk(s, "\n\r");
}

int vr_job_format(const struct vr_job *j, char *buf, size_t len)
{
	char id[VR_JOB_TEXT + 96];
	if (j->kind == VR_JOB_TREE && j->root_pid > 0)
		snprintf(id, sizeof id, "kind tree\nroot %d %llu\n", (int)j->root_pid,
		         (unsigned long long)j->root_start);
	else if (j->kind == VR_JOB_CGROUP && j->hier[0] && j->cgroup[0] == '/' &&
	         one_line(j->hier) && !strchr(j->hier, ' ') && one_line(j->cgroup))
		snprintf(id, sizeof id, "kind cgroup\ncgroup %s %s\n", j->hier, j->cgroup);
	else
		return -EINVAL;
	if (!one_line(j->dir) || !one_line(j->group) || !one_line(j->limit) || !one_line(j->count))
		return -EINVAL;
	int n = snprintf(buf, len, JOB_MAGIC "\n%suid %u\ngroup %s\ndir %s\nlimit %s\n%s%s%s", id,
	                 (unsigned)j->uid, j->group, j->dir, j->limit, j->count[0] ? "count " : "",
	                 j->count, j->count[0] ? "\n" : "");
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	if (j->watcher > 0) {
		int k = snprintf(buf + n, len - (size_t)n, "watcher %d\n", (int)j->watcher);
		if (k < 0 || (size_t)k >= len - (size_t)n)
			return -ENAMETOOLONG;
		n += k;
	}
	return n;
}

/* Copies value into a field of size len: 0, or -1 when it does not fit. */
static int take(char *field, size_t len, const char *value)
{
	return vr_text_copy(field, len, value) == 0 ? 0 : -1;
}

/* One "key value" line into j. 0, 1 for an unknown key (ignored: a newer
 * writer's), -1 when the value is wrong. */
static int parse_line(struct vr_job *j, const char *key, char *v)
{
	char *end;
	if (!strcmp(key, "kind")) {
		j->kind = !strcmp(v, "tree")     ? VR_JOB_TREE
		          : !strcmp(v, "cgroup") ? VR_JOB_CGROUP
		                                 : 0;
		return j->kind ? 0 : -1;
	}
	if (!strcmp(key, "root")) {
		long pid = strtol(v, &end, 10);
		if (end == v || *end != ' ' || pid <= 0 || pid > INT32_MAX)
			return -1;
		j->root_pid = (int32_t)pid;
		v = end + 1;
		j->root_start = strtoull(v, &end, 10);
		return end == v || *end ? -1 : 0;
	}
	if (!strcmp(key, "cgroup")) {
		char *sp = strchr(v, ' ');
		if (!sp)
			return -1;
		*sp = '\0';
		return take(j->hier, sizeof j->hier, v) || sp[1] != '/' ||
		               take(j->cgroup, sizeof j->cgroup, sp + 1)
		           ? -1
		           : 0;
	}
	if (!strcmp(key, "uid")) {
		unsigned long u = strtoul(v, &end, 10);
		if (end == v || *end || u > UINT32_MAX)
			return -1;
		j->uid = (uint32_t)u;
		return 0;
	}
	if (!strcmp(key, "watcher")) {
		long w = strtol(v, &end, 10);
		if (end == v || *end || w < 0 || w > INT32_MAX)
			return -1;
		j->watcher = (int32_t)w;
		return 0;
	}
	if (!strcmp(key, "group"))
		return take(j->group, sizeof j->group, v);
	if (!strcmp(key, "dir"))
		return take(j->dir, sizeof j->dir, v);
	if (!strcmp(key, "limit"))
		return take(j->limit, sizeof j->limit, v);
	if (!strcmp(key, "count"))
		return take(j->count, sizeof j->count, v);
	return 1;
}

int vr_job_parse(const char *text, size_t len, struct vr_job *j, char *err, size_t errlen)
{
	char line[VR_JOB_SPEC + 64];
	size_t pos = 0;
	int n = 0, have_uid = 0;
	memset(j, 0, sizeof *j);
	while (pos < len) {
		size_t end = pos;
		while (end < len && text[end] != '\n')
			end++;
		if (end - pos >= sizeof line) {
			vr_seterr(err, errlen, "line %d is too long", n + 1);
			return -EBADMSG;
		}
		memcpy(line, text + pos, end - pos);
		line[end - pos] = '\0';
		int nul = strlen(line) != end - pos;
		pos = end + 1;
		if (n++ == 0) {
			if (strcmp(line, JOB_MAGIC) != 0) {
				vr_seterr(err, errlen, "not a job record of this version");
				return -EBADMSG;
			}
			continue;
		}
		if (!line[0])
			continue;
		char *sp = strchr(line, ' ');
		if (!sp || nul) {
			vr_seterr(err, errlen, "line %d: expected 'key value'", n);
			return -EBADMSG;
		}
		*sp = '\0';
		have_uid |= !strcmp(line, "uid");
		if (parse_line(j, line, sp + 1) < 0) {
			vr_seterr(err, errlen, "line %d: a bad %s", n, line);
			return -EBADMSG;
		}
	}
	const char *why = NULL;
	char gerr[200];
	struct vr_limits l;
	if (!j->kind || (j->kind == VR_JOB_TREE && !j->root_pid) ||
	    (j->kind == VR_JOB_CGROUP && !j->cgroup[0]))
		why = "no identity (kind, root or cgroup)";
	else if (!have_uid)
		why = "no uid";
	else if (vr_group_name_check(j->group, gerr, sizeof gerr) < 0)
		why = "a bad group name";
	else if (j->dir[0] != '/')
		why = "a directory that is not an absolute path";
	else if (vr_parse_limits(j->limit, &l, NULL, 0) < 0)
		why = "a cap that cannot be read";
	else if (j->count[0] && strcmp(j->count, "card") && strcmp(j->count, "allocations"))
		why = "a bad count";
	if (why) {
		vr_seterr(err, errlen, "%s", why);
		return -EBADMSG;
	}
	return 0;
}

/* ---- publishing */

/* A tree record whose root process is gone (or is another process now). */
static int stale_tree(const char *name)
{
	int pid;
	unsigned long long start;
	uint64_t now;
	char tail[8];
	if (sscanf(name, "tree-%d-%llu%7s", &pid, &start, tail) != 3 || strcmp(tail, ".job"))
		return 0;
	return vr_proc_start_time(NULL, pid, &now) != 0 || now != start;
}

static int read_record(int dfd, const char *dir, const char *name, struct vr_job *j, uid_t *owner);
static const char *v2_root(const char *given);

/* A cgroup record whose cgroup is gone, or is a run's own
 * (`vramctl-job-PID`, made by `vramctl run` as root) that nobody is in any
 * more: that cgroup is removed (rmdir refuses one with a process or a
 * child cgroup) and the record is stale. Other cgroup records are removed
 * by their publishers (the Slurm epilog). */
static int stale_cgroup(int dfd, const char *name)
{
	struct vr_job j;
	uid_t owner;
	char p[VR_JOB_TEXT + 128];
	struct stat st;
	if (read_record(dfd, "", name, &j, &owner) != 0 || j.kind != VR_JOB_CGROUP ||
	    strcmp(j.hier, "v2") != 0)
		return 0;
	snprintf(p, sizeof p, "%s%s", v2_root(NULL), j.cgroup);
	if (stat(p, &st) != 0)
		return errno == ENOENT;
	const char *base = strrchr(j.cgroup, '/');
	return base && !strncmp(base + 1, "vramctl-job-", 12) && rmdir(p) == 0;
}

/* Removes the stale records of dfd the caller may remove (at most
 * SWEEP_MAX looked at): a dead root's tree records, and cgroup records of
 * cgroups that are gone or were a run's own and are empty. */
static void sweep(int dfd)
{
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *e;
	for (int seen = 0; seen < SWEEP_MAX && (e = readdir(d)) != NULL; seen++) {
		struct stat st;
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    (st.st_uid != geteuid() && geteuid() != 0))
			continue;
		if ((!strncmp(e->d_name, "tree-", 5) && stale_tree(e->d_name)) ||
		    (!strncmp(e->d_name, "cg-", 3) && stale_cgroup(dfd, e->d_name)))
			(void)unlinkat(dfd, e->d_name, 0);
	}
	closedir(d);
}

int vr_job_publish(const char *dir, const struct vr_job *j, char *path, size_t plen, char *err,
                   size_t errlen)
{
	char text[VR_JOB_FILE_MAX], name[96], tmp[128];
	dir = vr_jobs_dir(dir);
	int len = vr_job_format(j, text, sizeof text);
	if (len < 0 || vr_job_name(j, name, sizeof name) < 0) {
		vr_seterr(err, errlen, "the job cannot be written as a record");
		return len < 0 ? len : -ENAMETOOLONG;
	}
	int rc = vr_jobs_check(dir, err, errlen);
	if (rc < 0)
		return rc;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		rc = -errno;
		vr_seterr(err, errlen, "cannot open %s: %s", dir, strerror(-rc));
		return rc;
	}
	sweep(dfd);
	struct vr_tmp_file f = {.dfd = dfd,
	                        .dir = dir,
	                        .name = name,
	                        .what = "job record",
	                        .stem = "job",
	                        .mode = 0644,
	                        .buf = text,
	                        .len = (size_t)len};
	int fd = vr_tmp_write(&f, tmp, sizeof tmp, err, errlen);
	if (fd < 0) {
		close(dfd);
		return fd;
	}
	close(fd);
	if (renameat(dfd, tmp, dfd, name) != 0) {
		rc = -errno;
		unlinkat(dfd, tmp, 0);
		vr_seterr(err, errlen, "cannot publish the job record %s/%s: %s", dir, name,
		          strerror(-rc));
	} else if (snprintf(path, plen, "%s/%s", dir, name) >= (int)plen) {
		rc = -ENAMETOOLONG;
		vr_seterr(err, errlen, "the job record's path is too long");
	}
	close(dfd);
	return rc;
}

int vr_job_withdraw(const char *path)
{
	return path && path[0] && unlink(path) != 0 ? -errno : 0;
}

/* ---- finding a process's jobs */

/* The record dir/name read into *j, with its file's owner. 0 or -errno. */
static int read_record(int dfd, const char *dir, const char *name, struct vr_job *j, uid_t *owner)
{
	char text[VR_JOB_FILE_MAX];
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	struct stat st;
	ssize_t n = -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < (off_t)sizeof text)
		n = pread(fd, text, sizeof text - 1, 0);
	close(fd);
	if (n < 0 || vr_job_parse(text, (size_t)n, j, NULL, 0) != 0)
		return -EBADMSG;
	*owner = st.st_uid;
	snprintf(j->path, sizeof j->path, "%s/%s", dir, name);
	return 0;
}

/* Appends j unless a job of the same group is there. */
static int add(struct vr_job *out, int n, int got, const struct vr_job *j)
{
	for (int i = 0; i < got; i++)
		if (vr_job_same_group(&out[i], j))
			return got;
	if (got < n)
		out[got++] = *j;
	return got;
}

/* Where the cgroup v2 hierarchy is mounted (given, else found). */
static const char *v2_root(const char *given)
{
	const char *r = given && *given ? given : vr_cgroup2_hierarchy();
	return r ? r : VR_CGROUP2_MOUNT;
}

/* The owner of the cgroup's directory, or (uid_t)-1. */
static uid_t cgroup_owner(const char *v2, const char *hier, const char *path)
{
	char p[VR_JOB_TEXT + 128];
	struct stat st;
	if (!strcmp(hier, "v2"))
		snprintf(p, sizeof p, "%s%s", v2, path);
	else
		snprintf(p, sizeof p, "/sys/fs/cgroup/%s%s", hier, path);
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode) ? st.st_uid : (uid_t)-1;
}

/* Is the record j, in a file owned by owner, to be believed? */
static int believed(const struct vr_job *j, uid_t owner, const char *proc, const char *v2)
{
	struct vr_proc_status ps;
	if (owner == 0)
		return 1;
	if (owner != j->uid)
		return 0;
	if (j->kind == VR_JOB_TREE)
		return vr_proc_status(proc, j->root_pid, &ps) == 0 && (ps.have & VR_PROC_UID) &&
		       ps.uid == owner;
	return cgroup_owner(v2, j->hier, j->cgroup) == owner;
}

/* Tree records along pid's chain of ancestors. */
static int tree_jobs(int dfd, const char *dir, const char *proc, pid_t pid, struct vr_job *out,
                     int n, int got)
{
	struct vr_job j;
	for (int depth = 0; depth < CHAIN_MAX && pid > 0 && got < n; depth++) {
		pid_t ppid;
		uint64_t start;
		char name[96];
		uid_t owner;
		if (vr_proc_parent(proc, pid, &ppid, &start) != 0)
			break;
		if (tree_name(pid, start, name, sizeof name) == 0 &&
		    read_record(dfd, dir, name, &j, &owner) == 0 && j.kind == VR_JOB_TREE &&
		    j.root_pid == pid && j.root_start == start && believed(&j, owner, proc, NULL))
			got = add(out, n, got, &j);
		if (ppid == pid)
			break;
		pid = ppid;
	}
	return got;
}

/* Cgroup records of one hierarchy's path and its ancestors (not "/"). */
static int cgroup_path_jobs(int dfd, const char *dir, const char *v2, const char *hier, char *path,
                            struct vr_job *out, int n, int got)
{
	struct vr_job j;
	while (path[0] == '/' && path[1] && got < n) {
		char name[96];
		uid_t owner;
		if (cgroup_name(hier, path, name, sizeof name) == 0 &&
		    read_record(dfd, dir, name, &j, &owner) == 0 && j.kind == VR_JOB_CGROUP &&
		    !strcmp(j.hier, hier) && !strcmp(j.cgroup, path) &&
		    believed(&j, owner, NULL, v2))
			got = add(out, n, got, &j);
		char *slash = strrchr(path, '/');
		if (slash == path)
			break;
		*slash = '\0';
	}
	return got;
}

/* Cgroup records of every hierarchy pid is in (v2 first). */
static int cgroup_jobs(int dfd, const char *dir, const char *proc, const char *v2, pid_t pid,
                       struct vr_job *out, int n, int got)
{
	char text[4096];
	if (vr_proc_read(proc, pid, "cgroup", text, sizeof text) <= 0)
		return got;
	for (int pass = 0; pass < 2; pass++) {
		char *save = NULL, copy[sizeof text];
		memcpy(copy, text, sizeof copy);
		for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
			if (!c2)
				continue;
			*c1 = *c2 = '\0';
			int unified = !strcmp(l, "0") && c1 + 1 == c2;
			if (unified != (pass == 0) || (!unified && !c1[1]))
				continue;
			char path[VR_JOB_TEXT];
			if (vr_text_copy(path, sizeof path, c2 + 1) != 0)
				continue;
			got = cgroup_path_jobs(dfd, dir, v2, unified ? "v2" : c1 + 1, path, out, n,
			                       got);
		}
	}
	return got;
}

/* pid's path in hierarchy hier ("v2" or v1 controllers) into out. */
static int cgroup_of(const char *proc, pid_t pid, const char *hier, char *out, size_t len)
{
	char text[4096];
	if (vr_proc_read(proc, pid, "cgroup", text, sizeof text) <= 0)
		return -1;
	char *save = NULL;
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c1 = *c2 = '\0';
		int unified = !strcmp(l, "0") && c1 + 1 == c2;
		if (unified ? !strcmp(hier, "v2") : !strcmp(hier, c1 + 1))
			return vr_text_copy(out, len, c2 + 1) == 0 ? 0 : -1;
	}
	return -1;
}

int vr_job_holds(const struct vr_job *j, const char *proc_root, pid_t pid)
{
	if (j->kind == VR_JOB_CGROUP) {
		char path[VR_JOB_TEXT];
		size_t n = strlen(j->cgroup);
		return cgroup_of(proc_root, pid, j->hier, path, sizeof path) == 0 &&
		       !strncmp(path, j->cgroup, n) && (path[n] == '\0' || path[n] == '/');
	}
	for (int depth = 0; depth < CHAIN_MAX && pid > 0; depth++) {
		pid_t ppid;
		uint64_t start;
		if (vr_proc_parent(proc_root, pid, &ppid, &start) != 0)
			return 0;
		if (pid == j->root_pid && start == j->root_start)
			return 1;
		if (ppid == pid)
			break;
		pid = ppid;
	}
	return 0;
}

/* Calls visit for every record of the group in the jobs directory (at most
 * SWEEP_MAX looked at), until it returns non-zero; returns that, or 0. */
static int each_of_group(const char *dir, const char *gdir, const char *group,
                         int (*visit)(int dfd, const char *name, struct vr_job *j, void *ctx),
                         void *ctx)
{
	dir = vr_jobs_dir(dir);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd = dfd >= 0 ? dup(dfd) : -1;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	int rc = 0;
	if (!d) {
		if (fd >= 0)
			close(fd);
		if (dfd >= 0)
			close(dfd);
		return 0;
	}
	struct dirent *e;
	struct vr_job j;
	uid_t owner;
	for (int seen = 0; !rc && seen < SWEEP_MAX && (e = readdir(d)) != NULL; seen++) {
		size_t n = strlen(e->d_name);
		if (n < 5 || strcmp(e->d_name + n - 4, ".job") != 0 ||
		    read_record(dfd, dir, e->d_name, &j, &owner) != 0 ||
		    strcmp(j.group, group) != 0 || strcmp(j.dir, gdir) != 0 ||
		    !believed(&j, owner, NULL, v2_root(NULL)))
			continue;
		rc = visit(dfd, e->d_name, &j, ctx);
	}
	closedir(d);
	close(dfd);
	return rc;
}

static int take_first(int dfd, const char *name, struct vr_job *j, void *ctx)
{
	(void)dfd;
	(void)name;
	*(struct vr_job *)ctx = *j;
	return 1;
}

int vr_jobs_of_group(const char *dir, const char *gdir, const char *group, struct vr_job *out)
{
	return each_of_group(dir, gdir, group, take_first, out);
}

static int remove_one(int dfd, const char *name, struct vr_job *j, void *ctx)
{
	(void)j;
	if (unlinkat(dfd, name, 0) == 0)
		(*(int *)ctx)++;
	return 0;
}

int vr_jobs_withdraw_group(const char *dir, const char *gdir, const char *group)
{
	int n = 0;
	each_of_group(dir, gdir, group, remove_one, &n);
	return n;
}

int vr_jobs_of(const char *dir, const char *proc_root, const char *cgroup_root, pid_t pid,
               struct vr_job *out, int n)
{
	dir = vr_jobs_dir(dir);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	if (pid <= 0)
		pid = getpid();
	int got = tree_jobs(dfd, dir, proc_root, pid, out, n, 0);
	got = cgroup_jobs(dfd, dir, proc_root, v2_root(cgroup_root), pid, out, n, got);
	close(dfd);
	return got;
}
