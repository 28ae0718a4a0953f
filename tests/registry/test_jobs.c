/*
 * test_jobs - job records (registry/jobs.h): a record is found by the
 * process it names and by every process below it, double-forked or not;
 * by a process in its cgroup, moved there from outside; innermost first,
 * one per group; never believed without proof (a tree record of another
 * user, a cgroup record for a cgroup its writer does not own); stale ones
 * swept; bad text refused. Runs in a directory of its own (the machine's
 * /run/vramctl/jobs is not touched); the parts that need root (another
 * user's file, a cgroup of our own) skip without it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry/jobs.h"
#include "registry/proc.h"
#include "tests/test.h"

static char dir[512];

static struct vr_job tree_job(pid_t pid, const char *group)
{
	struct vr_job j;
	memset(&j, 0, sizeof j);
	j.kind = VR_JOB_TREE;
	j.root_pid = pid;
	ASSERT_EQ(vr_proc_start_time(NULL, pid, &j.root_start), 0);
	j.uid = (uint32_t)geteuid();
	snprintf(j.group, sizeof j.group, "%s", group);
	snprintf(j.dir, sizeof j.dir, "/tmp/books-%s", group);
	snprintf(j.limit, sizeof j.limit, "1G");
	return j;
}

static void publish(const struct vr_job *j, char *path, size_t len)
{
	char err[256];
	int rc = vr_job_publish(dir, j, path, len, err, sizeof err);
	if (rc != 0)
		TEST_FAILF("vr_job_publish = %d: %s", rc, err);
}

/* In a forked child (and, with depth, its descendants): how many jobs it
 * finds and the first's group, written to fd. */
static void report_jobs(int fd)
{
	struct vr_job out[VR_JOBS_MAX];
	int n = vr_jobs_of(dir, NULL, NULL, 0, out, VR_JOBS_MAX);
	char line[256];
	int len = snprintf(line, sizeof line, "%d %s %s\n", n, n > 0 ? out[0].group : "-",
	                   n > 1 ? out[1].group : "-");
	if (write(fd, line, (size_t)len) != len)
		_exit(3);
}

/* Runs report_jobs in a grandchild whose parent exits first (a double
 * fork: the grandchild is re-parented, to init or to a subreaper). */
static void found_by_orphan(char *line, size_t len)
{
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	pid_t c = fork();
	if (c == 0) {
		pid_t mid = getpid();
		if (fork() == 0) {
			/* Wait until re-parented (its parent exits at once). */
			for (int i = 0; i < 5000 && getppid() == mid; i++)
				usleep(1000);
			report_jobs(p[1]);
			_exit(0);
		}
		_exit(0);
	}
	close(p[1]);
	waitpid(c, NULL, 0);
	ssize_t n = read(p[0], line, len - 1);
	line[n > 0 ? n : 0] = '\0';
	close(p[0]);
}

static void found_by_child(char *line, size_t len)
{
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	pid_t c = fork();
	if (c == 0) {
		report_jobs(p[1]);
		_exit(0);
	}
	close(p[1]);
	ssize_t n = read(p[0], line, len - 1);
	line[n > 0 ? n : 0] = '\0';
	close(p[0]);
	waitpid(c, NULL, 0);
}

/* In a child (a subreaper with reaper): a record of group for the child
 * itself, then what `find` reports there must be want. */
static void nested(const char *group, int reaper, void (*find)(char *, size_t), const char *want)
{
	pid_t c = fork();
	if (c == 0) {
		char line[256], p2[1024];
		if (reaper && prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
			_exit(2);
		struct vr_job j = tree_job(getpid(), group);
		publish(&j, p2, sizeof p2);
		find(line, sizeof line);
		vr_job_withdraw(p2);
		_exit(strcmp(line, want) == 0 ? 0 : (fprintf(stderr, "%s", line), 1));
	}
	int st;
	ASSERT_EQ(waitpid(c, &st, 0), c);
	ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_text(void)
{
	struct vr_job j = tree_job(getpid(), "esc"), k;
	char text[VR_JOB_FILE_MAX], err[256];
	snprintf(j.count, sizeof j.count, "card");
	j.watcher = 42;
	int n = vr_job_format(&j, text, sizeof text);
	ASSERT_GT(n, 0);
	ASSERT_EQ(vr_job_parse(text, (size_t)n, &k, err, sizeof err), 0);
	ASSERT_EQ(k.kind, VR_JOB_TREE);
	ASSERT_EQ(k.root_pid, j.root_pid);
	ASSERT_UEQ(k.root_start, j.root_start);
	ASSERT_STR_EQ(k.group, "esc");
	ASSERT_STR_EQ(k.dir, j.dir);
	ASSERT_STR_EQ(k.limit, "1G");
	ASSERT_STR_EQ(k.count, "card");
	ASSERT_EQ(k.watcher, 42);

	static const char *const bad[] = {
	    "vramctl-job 2\nkind tree\nroot 1 2\nuid 0\ngroup g\ndir /d\nlimit 1G\n",
	    "vramctl-job 1\nkind tree\nuid 0\ngroup g\ndir /d\nlimit 1G\n",
	    "vramctl-job 1\nkind tree\nroot 1 2\ngroup g\ndir /d\nlimit 1G\n",
	    "vramctl-job 1\nkind tree\nroot 1 2\nuid 0\ngroup .g\ndir /d\nlimit 1G\n",
	    "vramctl-job 1\nkind tree\nroot 1 2\nuid 0\ngroup g\ndir rel\nlimit 1G\n",
	    "vramctl-job 1\nkind tree\nroot 1 2\nuid 0\ngroup g\ndir /d\nlimit 1Q\n",
	    "vramctl-job 1\nkind cgroup\ncgroup v2 rel\nuid 0\ngroup g\ndir /d\nlimit 1G\n",
	    "vramctl-job 1\nkind tree\nroot -4 2\nuid 0\ngroup g\ndir /d\nlimit 1G\n",
	    "vramctl-job 1\nkind tree\nroot 1 2\nuid 0\ngroup g\ndir /d\nlimit 1G\ncount x\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (vr_job_parse(bad[i], strlen(bad[i]), &k, err, sizeof err) != -EBADMSG)
			TEST_FAILF("record %zu was accepted:\n%s", i, bad[i]);
	/* A newer writer's key is ignored. */
	const char *newer = "vramctl-job 1\nkind tree\nroot 1 2\nuid 0\ngroup g\ndir /d\nlimit "
	                    "1G\nfuture yes\n";
	ASSERT_EQ(vr_job_parse(newer, strlen(newer), &k, err, sizeof err), 0);
	/* A newline in a field cannot be written. */
	snprintf(j.dir, sizeof j.dir, "/a\nlimit 100G");
	ASSERT_EQ(vr_job_format(&j, text, sizeof text), -EINVAL);
}

static void test_tree(void)
{
	char path[1024], line[256];
	struct vr_job j = tree_job(getpid(), "outer");
	publish(&j, path, sizeof path);
	found_by_child(line, sizeof line);
	ASSERT_STR_EQ(line, "1 outer -\n");
	found_by_orphan(line, sizeof line);
	/* Re-parented to init, the orphan has left the tree... */
	ASSERT_STR_EQ(line, "0 - -\n");

	/* ...unless its parent's parent is a subreaper, as `vramctl run` is. */
	nested("inner", 1, found_by_orphan, "2 inner outer\n");
	/* One per group: a second record of the same group further up is the
	 * same job. */
	nested("outer", 0, found_by_child, "1 outer -\n");

	ASSERT_EQ(vr_job_withdraw(path), 0);
	found_by_child(line, sizeof line);
	ASSERT_STR_EQ(line, "0 - -\n");
}

/* A dead root's record is swept by the next publish. */
static void test_sweep(void)
{
	char path[1024], mine[1024];
	pid_t c = fork();
	if (c == 0) {
		pause();
		_exit(0);
	}
	struct vr_job j = tree_job(c, "dead");
	publish(&j, path, sizeof path);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	struct stat st;
	ASSERT_EQ(stat(path, &st), 0);
	struct vr_job k = tree_job(getpid(), "alive");
	publish(&k, mine, sizeof mine);
	ASSERT_EQ(stat(path, &st), -1);
	ASSERT_EQ(stat(mine, &st), 0);
	vr_job_withdraw(mine);
}

/* Another user's record for a process of ours is not believed; root's is. */
static void test_proof(void)
{
	struct passwd *pw = getpwnam("vrslurm");
	if (geteuid() != 0 || !pw) {
		printf("note: not root or no user vrslurm: the proof of a record not checked\n");
		return;
	}
	char path[1024], line[256];
	struct vr_job j = tree_job(getpid(), "forged");
	j.uid = pw->pw_uid; /* it claims the books are vrslurm's */
	publish(&j, path, sizeof path);
	ASSERT_EQ(chown(path, pw->pw_uid, pw->pw_gid), 0);
	found_by_child(line, sizeof line);
	ASSERT_STR_EQ(line, "0 - -\n"); /* vrslurm does not run our process */
	ASSERT_EQ(chown(path, 0, 0), 0);
	found_by_child(line, sizeof line);
	ASSERT_STR_EQ(line, "1 forged -\n"); /* root wrote it: believed */
	vr_job_withdraw(path);
}

/* A cgroup of our own, with a child moved into it from outside. */
static void test_cgroup(void)
{
	const char *roots[] = {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"};
	char cg[512] = "", self[512] = "", text[1024];
	const char *root = NULL;
	if (geteuid() != 0) {
		printf("note: not root: cgroup records not checked\n");
		return;
	}
	ssize_t n = vr_proc_read(NULL, 0, "cgroup", text, sizeof text);
	char *l = n > 0 ? strstr(text, "0::") : NULL;
	if (l) {
		sscanf(l + 3, "%511s", self);
		if (!strcmp(self, "/"))
			self[0] = '\0';
	}
	for (int i = 0; i < 2 && !root; i++) {
		struct stat st;
		char probe[600];
		snprintf(probe, sizeof probe, "%s/cgroup.controllers", roots[i]);
		snprintf(cg, sizeof cg, "%s%s/vramctl-test-jobs-%d", roots[i], self, (int)getpid());
		if (stat(probe, &st) == 0 && mkdir(cg, 0755) == 0)
			root = roots[i];
	}
	if (!root) {
		printf(
		    "note: no cgroup v2 directory can be made here: cgroup records not checked\n");
		return;
	}
	int p[2], go[2];
	ASSERT_EQ(pipe(p), 0);
	ASSERT_EQ(pipe(go), 0);
	pid_t c = fork();
	if (c == 0) {
		char b;
		close(go[1]);
		if (read(go[0], &b, 1) != 1)
			_exit(2);
		report_jobs(p[1]);
		_exit(0);
	}
	close(p[1]);
	close(go[0]);
	/* Moved in from outside, as pam_slurm_adopt moves an ssh session. */
	char procs[600], num[32];
	snprintf(procs, sizeof procs, "%s/cgroup.procs", cg);
	int fd = open(procs, O_WRONLY);
	ASSERT(fd >= 0);
	int k = snprintf(num, sizeof num, "%d", (int)c);
	ASSERT_EQ(write(fd, num, (size_t)k), k);
	close(fd);
	struct vr_job j;
	memset(&j, 0, sizeof j);
	j.kind = VR_JOB_CGROUP;
	snprintf(j.hier, sizeof j.hier, "v2");
	snprintf(j.cgroup, sizeof j.cgroup, "%s/vramctl-test-jobs-%d", self, (int)getpid());
	j.uid = 0;
	snprintf(j.group, sizeof j.group, "cgjob");
	snprintf(j.dir, sizeof j.dir, "/tmp/x");
	snprintf(j.limit, sizeof j.limit, "2G");
	char path[1024], line[256];
	publish(&j, path, sizeof path);
	/* A tree record of another group up the child's chain: inner first. */
	struct vr_job t = tree_job(getpid(), "tree");
	char tpath[1024];
	publish(&t, tpath, sizeof tpath);
	ASSERT_EQ(write(go[1], "x", 1), 1);
	ssize_t got = read(p[0], line, sizeof line - 1);
	line[got > 0 ? got : 0] = '\0';
	waitpid(c, NULL, 0);
	ASSERT_STR_EQ(line, "2 tree cgjob\n");
	vr_job_withdraw(tpath);

	/* A user's record for a cgroup root owns is not believed. */
	struct passwd *pw = getpwnam("vrslurm");
	if (pw) {
		j.uid = pw->pw_uid;
		publish(&j, path, sizeof path);
		ASSERT_EQ(chown(path, pw->pw_uid, pw->pw_gid), 0);
		pid_t c2 = fork();
		if (c2 == 0) {
			fd = open(procs, O_WRONLY);
			k = snprintf(num, sizeof num, "%d", (int)getpid());
			if (fd < 0 || write(fd, num, (size_t)k) != k)
				_exit(2);
			close(fd);
			struct vr_job out[VR_JOBS_MAX];
			_exit(vr_jobs_of(dir, NULL, NULL, 0, out, VR_JOBS_MAX) == 0 ? 0 : 1);
		}
		int st;
		ASSERT_EQ(waitpid(c2, &st, 0), c2);
		ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	vr_job_withdraw(path);
	rmdir(cg);

	/* A run's own cgroup (vramctl-job-PID) left empty: the next publish
	 * removes it and its record; one with a process stays. */
	snprintf(cg, sizeof cg, "%s%s/vramctl-job-%d", root, self, (int)getpid());
	ASSERT_EQ(mkdir(cg, 0755), 0);
	snprintf(j.cgroup, sizeof j.cgroup, "%s/vramctl-job-%d", self, (int)getpid());
	j.uid = 0;
	publish(&j, path, sizeof path);
	struct vr_job sw = tree_job(getpid(), "sweeper");
	char kpath[1024];
	publish(&sw, kpath, sizeof kpath);
	struct stat st;
	ASSERT_EQ(stat(cg, &st), -1);
	ASSERT_EQ(stat(path, &st), -1);
	vr_job_withdraw(kpath);
}

static void test_dir(void)
{
	char bad[600], err[256];
	snprintf(bad, sizeof bad, "%s-open", dir);
	ASSERT_EQ(mkdir(bad, 0777), 0);
	ASSERT_EQ(chmod(bad, 0777), 0);
	ASSERT_EQ(vr_jobs_check(bad, err, sizeof err), -EPERM); /* not sticky */
	ASSERT(strstr(err, "not sticky"));
	ASSERT_EQ(chmod(bad, 01777), 0);
	ASSERT_EQ(vr_jobs_check(bad, err, sizeof err), 0);
	rmdir(bad);
	snprintf(bad, sizeof bad, "%s-link", dir);
	ASSERT_EQ(symlink(dir, bad), 0);
	ASSERT_EQ(vr_jobs_check(bad, err, sizeof err), -ELOOP);
	unlink(bad);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/jobs", tmp && *tmp ? tmp : "/tmp");
	mkdir(dir, 01777);
	chmod(dir, 01777);
	test_text();
	test_dir();
	test_tree();
	test_sweep();
	test_proof();
	test_cgroup();
	printf("ok\n");
	return 0;
}
