/*
 * test_park.c - the books of a parked member (#36, park.c): its bytes
 * leave the group's total (another member may use the room, a waiter is
 * woken) and are held against the group's park budget, which refuses what
 * does not fit; they come back when it runs again; monitors see it parked
 * with its bytes on the host; a parked member killed leaves nothing: its
 * share of the budget and its slot come back, the books read zero.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry/member.h"
#include "tests/registry/regtest.h"
#include "tests/test.h"
#include "vramctl/registry.h"

#define MiB (1ull << 20)
#define CAP (1024 * MiB)

static const char *dir;
static const unsigned char uuid[VR_UUID_LEN] = {0xdd, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};

static vr_member *join(const char *group, uint64_t budget)
{
	struct vr_join_opts o = {
	    .dir = dir, .group = group, .limit_spec = "1G", .park_budget = budget};
	vr_member *m = join_or_fail(&o);
	ASSERT_EQ(vr_device(m, uuid, CAP, NULL), 0);
	return m;
}

static uint64_t total_of(vr_member *m)
{
	uint64_t in_use = 0;
	vr_usage(m, 0, &in_use, NULL);
	return in_use;
}

/* The snapshot's view of group g and member pid. */
struct seen {
	uint64_t budget, parked, dev_parked, in_use, since;
	int is_parked;
};
static struct seen seen(const char *g, int pid)
{
	struct vramctl_snapshot *s = NULL;
	struct seen r = {0};
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	for (int i = 0; i < s->ngroups; i++)
		if (!strcmp(s->groups[i].name, g)) {
			r.budget = s->groups[i].park_budget;
			r.parked = s->groups[i].parked;
			r.in_use = s->groups[i].dev[0].books_in_use;
		}
	for (int i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid && !strcmp(s->procs[i].group, g)) {
			r.is_parked = s->procs[i].parked;
			r.dev_parked = s->procs[i].dev[0].parked;
			r.since = s->procs[i].parked_since;
		}
	vramctl_snapshot_free(s);
	return r;
}

int main(void)
{
	dir = getenv("VRAMCTL_REGISTRY_DIR");
	if (!dir)
		SKIP("VRAMCTL_REGISTRY_DIR is not set (run under tests/run)");

	vr_member *me = join("pk", 700 * MiB);
	ASSERT_UEQ(vr_park_budget(me), 700 * MiB);
	ASSERT_EQ(vr_reserve(me, 0, 600 * MiB, NULL), 0);
	ASSERT_UEQ(vr_park_held(me), 600 * MiB);

	/* Parked: the budget first, then the books. */
	uint64_t parked = 0, budget = 0, out[VR_MAX_DEVICES];
	ASSERT_EQ(vr_park_reserve(me, 600 * MiB, &parked, &budget), 0);
	ASSERT_UEQ(parked, 600 * MiB);
	ASSERT_UEQ(budget, 700 * MiB);
	ASSERT_EQ(vr_park_out(me, out), 0);
	ASSERT_UEQ(out[0], 600 * MiB);
	ASSERT_UEQ(total_of(me), 0);
	struct seen v = seen("pk", getpid());
	ASSERT(v.is_parked);
	ASSERT_UEQ(v.dev_parked, 600 * MiB);
	ASSERT_UEQ(v.parked, 600 * MiB);
	ASSERT_UEQ(v.budget, 700 * MiB);
	ASSERT_UEQ(v.in_use, 0);
	ASSERT(v.since > 0);

	/* The room is the group's meanwhile; the budget holds no more. */
	vr_member *other = join("pk", 0);
	ASSERT_EQ(vr_reserve(other, 0, 1000 * MiB, NULL), 0);
	ASSERT_EQ(vr_park_reserve(other, 200 * MiB, &parked, NULL), -ENOSPC);
	ASSERT_UEQ(parked, 600 * MiB);
	vr_release(other, 0, 1000 * MiB);

	/* It runs again: its bytes come back (as any reserve), the record and
	 * the budget are cleared. */
	ASSERT_EQ(vr_reserve(me, 0, out[0], NULL), 0);
	vr_park_back(me, 0);
	vr_park_end(me, 600 * MiB);
	v = seen("pk", getpid());
	ASSERT(!v.is_parked);
	ASSERT_UEQ(v.dev_parked, 0);
	ASSERT_UEQ(v.parked, 0);
	ASSERT_UEQ(total_of(me), 600 * MiB);
	vr_release(me, 0, 600 * MiB);

	/* A waiter is woken by a park: the room it was waiting for. */
	ASSERT_EQ(vr_reserve(other, 0, 900 * MiB, NULL), 0);
	int ready[2], go[2];
	ASSERT_EQ(pipe(ready), 0);
	ASSERT_EQ(pipe(go), 0);
	pid_t kid = fork();
	ASSERT(kid >= 0);
	if (kid == 0) {
		vr_member *k = join("pk", 0);
		char c = 'p';
		if (vr_reserve(k, 0, 100 * MiB, NULL) != 0 || write(ready[1], &c, 1) != 1 ||
		    vr_park_reserve(k, vr_park_held(k), NULL, NULL) != 0 ||
		    read(go[0], &c, 1) != 1 || vr_park_out(k, out) != 0 ||
		    write(ready[1], &c, 1) != 1)
			_exit(1);
		pause(); /* parked, until killed */
		_exit(0);
	}
	struct vr_wait w;
	char c;
	ASSERT_EQ(read(ready[0], &c, 1), 1); /* it holds its 100 MiB */
	ASSERT_EQ(vr_wait_enter(me, 0, 100 * MiB, &w), 0);
	ASSERT_EQ(vr_wait_turn(me, &w), 0);
	ASSERT_EQ(write(go[1], "g", 1), 1);
	ASSERT_EQ(read(ready[0], &c, 1), 1);
	int rc;
	for (int i = 0; i < 20 && (rc = vr_wait_turn(me, &w)) == 0; i++)
		vr_wait_sleep(me, &w, UINT64_MAX);
	ASSERT_EQ(rc, 1);
	vr_wait_exit(me, &w, 1);
	v = seen("pk", kid);
	ASSERT(v.is_parked);
	ASSERT_UEQ(v.parked, 100 * MiB);

	/* Killed while parked: nothing left behind. */
	kill(kid, SIGKILL);
	ASSERT_EQ(waitpid(kid, NULL, 0), kid);
	ASSERT(vr_reclaim(me) >= 1);
	v = seen("pk", kid);
	ASSERT_UEQ(v.parked, 0);
	ASSERT_UEQ(v.in_use, 1000 * MiB);
	vr_release(me, 0, 100 * MiB);
	vr_release(other, 0, 900 * MiB);
	ASSERT_UEQ(total_of(me), 0);
	vr_leave(other);
	vr_leave(me);
	printf("ok\n");
	return 0;
}
