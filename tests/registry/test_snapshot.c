/*
 * test_snapshot.c - the public read-only view: groups with caps and
 * totals, members alive and dead with their numbers and PIDs, unreadable
 * doors listed in errors[] without failing the snapshot, a missing
 * directory read as "nothing capped".
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry/registry.h"
#include "tests/registry/regtest.h"
#include "tests/test.h"
#include "vramctl/registry.h"

static const char *dir;
static const unsigned char uuid0[VR_UUID_LEN] = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0,
                                                 1,    2,    3,    4,    5,    6,    7,    8};

static vr_member *join(const char *group, const char *spec)
{
	struct vr_join_opts o = {
	    .dir = dir, .group = group, .limit_spec = spec, .growth = 1, .spill_budget = 1000};
	vr_member *m = NULL;
	char err[256];
	int rc = vr_join(&o, &m, NULL, err, sizeof(err));
	if (rc != 0)
		TEST_FAILF("vr_join(%s) = %d: %s", group, rc, err);
	return m;
}

static const struct vramctl_proc *find_proc(const struct vramctl_snapshot *s, pid_t pid)
{
	for (int i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

/* Re-executed with VRAMCTL_TEST_STOP_IN_LOCK=2: stops inside vr_device
 * with the books open (seqlock odd), holding the mutex. */
static int stopper(void)
{
	vr_member *m = join("open", "1000");
	vr_device(m, uuid0, 1000, NULL);
	return 3; /* not reached */
}

/* A writer stopped in the middle of an update: the snapshot still names
 * the group and its members, flagged not consistent, and never blocks. */
static void test_stopped_writer(const char *argv0)
{
	vr_member *m = join("open", "1000");
	pid_t pid = start_stopper(argv0);
	int st;
	struct vramctl_snapshot *s = NULL;
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	const struct vramctl_group *g = NULL;
	for (int i = 0; i < s->ngroups; i++)
		if (!strcmp(s->groups[i].name, "open"))
			g = &s->groups[i];
	ASSERT(g != NULL);
	ASSERT_EQ(g->consistent, 0);
	ASSERT_STR_EQ(g->limit_spec, "1000");
	ASSERT_EQ(g->nmembers, 2);
	vramctl_snapshot_free(s);
	kill(pid, SIGKILL);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	/* The next locker repairs the books; then copies are consistent. */
	uint64_t in_use = 1;
	vr_usage(m, 0, &in_use, NULL);
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	for (int i = 0; i < s->ngroups; i++)
		if (!strcmp(s->groups[i].name, "open")) {
			ASSERT_EQ(s->groups[i].consistent, 1);
			ASSERT_EQ(s->groups[i].nmembers, 1);
		}
	vramctl_snapshot_free(s);
	vr_leave(m);
	ASSERT_EQ(vr_group_remove(dir, "open"), 0);
}

static const struct vramctl_group *snap_group(const struct vramctl_snapshot *s, const char *name)
{
	for (int i = 0; i < s->ngroups; i++)
		if (!strcmp(s->groups[i].name, name))
			return &s->groups[i];
	return NULL;
}

/* A fork that joins `group`, reserves 10 bytes and exits at once (reaped
 * here): a dead record. */
static void dead_member(vr_member *parent, const char *group)
{
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		vr_forget(parent);
		vr_member *c = join(group, "1000");
		_exit(vr_device(c, uuid0, 1000, NULL) == 0 && vr_reserve(c, 0, 10, NULL) == 0 ? 0
		                                                                              : 2);
	}
	int st;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT_EQ(WEXITSTATUS(st), 0);
}

/* The launcher (`vramctl run`) is not one of a group's members; dead
 * records do not pile up: every join gives back the dead it finds. */
static void test_members_and_dead(void)
{
	struct vr_join_opts lo = {
	    .dir = dir, .group = "counted", .limit_spec = "1000", .launcher = 1};
	vr_member *launcher = NULL;
	char err[256];
	ASSERT_EQ(vr_join(&lo, &launcher, NULL, err, sizeof(err)), 0);
	dead_member(launcher, "counted");
	dead_member(launcher, "counted");
	struct vramctl_snapshot *s = NULL;
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	const struct vramctl_group *g = snap_group(s, "counted");
	ASSERT(g);
	ASSERT_EQ(g->nmembers, 0); /* the launcher alone */
	vramctl_snapshot_free(s);

	vr_member *m = join("counted", "1000"); /* gives the dead back */
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	g = snap_group(s, "counted");
	ASSERT(g);
	ASSERT_EQ(g->nmembers, 1);
	ASSERT_UEQ(g->dev[0].dead_in_use, 0);
	int dead = 0;
	for (int i = 0; i < s->nprocs; i++)
		dead += !strcmp(s->procs[i].group, "counted") &&
		        s->procs[i].state != VRAMCTL_PROC_ALIVE;
	ASSERT_EQ(dead, 0);
	vramctl_snapshot_free(s);
	vr_leave(m);
	vr_leave(launcher);
	ASSERT_EQ(vr_group_remove(dir, "counted"), 0);
}

int main(int argc, char **argv)
{
	dir = getenv("VRAMCTL_REGISTRY_DIR");
	if (!dir)
		SKIP("VRAMCTL_REGISTRY_DIR is not set (run under tests/run)");
	if (argc == 2 && !strcmp(argv[1], "stopper"))
		return stopper();
	test_stopped_writer(argv[0]);
	test_members_and_dead();

	struct vramctl_snapshot *s = NULL;
	ASSERT_EQ(vramctl_snapshot_take("/nonexistent/vramctl-dir", &s), 0);
	ASSERT_EQ(s->ngroups, 0);
	ASSERT_EQ(s->nprocs, 0);
	vramctl_snapshot_free(s);
	ASSERT_EQ(vramctl_snapshot_take(dir, NULL), -EINVAL);

	vr_member *m = join("snap", "1000");
	ASSERT_EQ(vr_device(m, uuid0, 1000, NULL), 0);
	ASSERT_EQ(vr_reserve(m, 0, 100, NULL), 0);
	ASSERT_EQ(vr_reserve(m, 0, 2000, NULL), -ENOSPC);
	vr_note_pinned(m, 4096);
	ASSERT_EQ(vr_spill_reserve(m, 0, 77, NULL, NULL), 0);

	/* A member that dies holding 300 bytes, and one alive holding 200. */
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	/* The live member first: a join gives back the dead members it finds,
	 * so the dead one dies last to be seen. */
	pid_t live = fork();
	if (live == 0) {
		vr_forget(m);
		vr_member *c = join("snap", "other spec");
		hold_and_report(p[1], vr_device(c, uuid0, 1, NULL) == 0 &&
		                          vr_reserve(c, 0, 200, NULL) == 0);
	}
	expect_held(p[0]);
	pid_t dead = fork();
	if (dead == 0) {
		vr_forget(m);
		vr_member *c = join("snap", "1000");
		if (vr_device(c, uuid0, 1, NULL) != 0 || vr_reserve(c, 0, 300, NULL) != 0)
			_exit(2);
		_exit(0);
	}
	int st;
	ASSERT_EQ(waitpid(dead, &st, 0), dead);
	ASSERT_EQ(WEXITSTATUS(st), 0);

	/* Garbage beside it: listed, not fatal. */
	char path[8200];
	snprintf(path, sizeof(path), "%s/junk.vrg", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ASSERT(fd >= 0);
	ASSERT_EQ(write(fd, "not a region", 12), 12);
	close(fd);

	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	ASSERT_EQ(s->ngroups, 1);
	ASSERT_EQ(s->nerrors, 1);
	ASSERT(strstr(s->errors[0], "junk.vrg") != NULL);
	ASSERT(strstr(s->errors[0], "truncated") != NULL);
	const struct vramctl_group *g = &s->groups[0];
	ASSERT_STR_EQ(g->name, "snap");
	ASSERT_STR_EQ(g->limit_spec, "1000");
	ASSERT_EQ(g->growth, 1);
	ASSERT_EQ(g->owner, geteuid());
	ASSERT_EQ(g->nmembers, 2);
	ASSERT_EQ(g->ndev, 1);
	ASSERT_EQ(g->consistent, 1);
	ASSERT_STR_EQ(g->dev[0].uuid, "GPU-12345678-9abc-def0-0102-030405060708");
	ASSERT_UEQ(g->dev[0].cap, 1000);
	ASSERT_UEQ(g->dev[0].in_use, 300);
	ASSERT_UEQ(g->dev[0].dead_in_use, 300);
	ASSERT_UEQ(g->dev[0].books_in_use, 600);
	ASSERT_UEQ(g->dev[0].peak, 600);
	ASSERT_UEQ(g->dev[0].spilled, 77);
	ASSERT_UEQ(g->spilled, 77);
	ASSERT_UEQ(g->spill_budget, 1000);
	ASSERT_EQ(s->nprocs, 3);

	const struct vramctl_proc *me = find_proc(s, getpid());
	ASSERT(me != NULL);
	ASSERT_EQ(me->state, VRAMCTL_PROC_ALIVE);
	ASSERT_EQ(me->host_pid, getpid());
	ASSERT_EQ(me->uid, getuid());
	ASSERT(me->user[0] != '\0');
	ASSERT(strstr(me->command, "test_snapshot") != NULL);
	ASSERT_STR_EQ(me->group, "snap");
	ASSERT(me->start_time > 0);
	ASSERT_UEQ(me->host_pinned, 4096);
	ASSERT_EQ(me->ndev, 1);
	ASSERT_STR_EQ(me->dev[0].uuid, g->dev[0].uuid);
	ASSERT_UEQ(me->dev[0].in_use, 100);
	ASSERT_UEQ(me->dev[0].peak, 100);
	ASSERT_UEQ(me->dev[0].denied_count, 1);
	ASSERT_UEQ(me->dev[0].last_denied, 2000);
	ASSERT_UEQ(me->dev[0].spilled, 77);

	const struct vramctl_proc *l = find_proc(s, live);
	ASSERT(l != NULL);
	ASSERT_EQ(l->state, VRAMCTL_PROC_ALIVE);
	ASSERT_EQ(l->host_pid, live);
	ASSERT_UEQ(l->dev[0].in_use, 200);

	const struct vramctl_proc *d = find_proc(s, dead);
	ASSERT(d != NULL);
	ASSERT_EQ(d->state, VRAMCTL_PROC_DEAD);
	ASSERT_UEQ(d->dev[0].in_use, 300);

	/* Liveness and PIDs come from fcntl per slot (groups of up to 128
	 * members) or from /proc/locks (larger ones): both ways agree. */
	struct vramctl_snapshot *s2 = NULL;
	setenv("VRAMCTL_TEST_PROC_LOCKS", "always", 1);
	ASSERT_EQ(vramctl_snapshot_take(dir, &s2), 0);
	unsetenv("VRAMCTL_TEST_PROC_LOCKS");
	ASSERT_EQ(s2->nprocs, s->nprocs);
	for (int i = 0; i < s->nprocs; i++) {
		const struct vramctl_proc *q = find_proc(s2, s->procs[i].pid);
		ASSERT(q != NULL);
		ASSERT_EQ(q->state, s->procs[i].state);
		ASSERT_EQ(q->host_pid, s->procs[i].host_pid);
	}
	ASSERT_EQ(s2->groups[0].nmembers, 2);
	vramctl_snapshot_free(s2);
	vramctl_snapshot_free(s);

	/* After a reclaim the dead member is gone from the books. */
	ASSERT_EQ(vr_reclaim(m), 1);
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	ASSERT_EQ(s->nprocs, 2);
	ASSERT_UEQ(s->groups[0].dev[0].dead_in_use, 0);
	ASSERT_UEQ(s->groups[0].dev[0].books_in_use, 300);
	vramctl_snapshot_free(s);

	kill(live, SIGKILL);
	ASSERT_EQ(waitpid(live, NULL, 0), live);
	vr_leave(m);
	/* The books went with the last member: the group is not listed. */
	ASSERT_EQ(vramctl_snapshot_take(NULL, &s), 0); /* the default dir is ours here */
	ASSERT_EQ(s->ngroups, 0);
	vramctl_snapshot_free(s);
	vramctl_snapshot_free(NULL);
	printf("ok\n");
	return 0;
}
