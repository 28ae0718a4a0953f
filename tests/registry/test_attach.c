/*
 * test_attach.c - 256 processes attach to one group at once: every join
 * succeeds, every member has its own slot, the snapshot sees all of them
 * alive, and when they have all left the books are empty. Children are
 * held (regtest.h, crowd) until all have joined, so no slot is freed and
 * reused while we count.
 */
#include <string.h>

#include "tests/registry/regtest.h"
#include "vramctl/registry.h"

#define N 256

static const unsigned char uuid0[VR_UUID_LEN] = {5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5};

int main(void)
{
	const char *dir = getenv("VRAMCTL_REGISTRY_DIR");
	if (!dir)
		SKIP("VRAMCTL_REGISTRY_DIR is not set (run under tests/run)");
	/* ThreadSanitizer runs 256 processes (and their serving threads) many
	 * times slower on a small machine: how long a join may wait for the
	 * group's lock is not what this test checks (docs/figures.md has the
	 * times), every join succeeding is. */
	const char *build = getenv("VR_BUILD");
	if (build && strstr(build, "-tsan"))
		setenv("VRAMCTL_TEST_LOCK_BOUND_MS", "30000", 1);
	static struct crowd c;
	struct vr_join_opts o = {.dir = dir, .group = "many", .limit_spec = "1G"};
	crowd_fork(&c, N, &o, uuid0, 1000);
	crowd_go(&c);
	static char seen[1024];
	for (int i = 0; i < N; i++) {
		int32_t slot = crowd_slot(&c);
		ASSERT_GE(slot, 0);
		ASSERT_LT(slot, 1024);
		if (seen[slot])
			TEST_FAILF("slot %d given twice", slot);
		seen[slot] = 1;
	}
	struct vramctl_snapshot *s = NULL;
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	ASSERT_EQ(s->ngroups, 1);
	ASSERT_EQ(s->groups[0].nmembers, N);
	ASSERT_EQ(s->nprocs, N);
	ASSERT_UEQ(s->groups[0].dev[0].in_use, (uint64_t)N * 1000);
	for (int i = 0; i < s->nprocs; i++) {
		ASSERT_EQ(s->procs[i].state, VRAMCTL_PROC_ALIVE);
		ASSERT_EQ(s->procs[i].host_pid, s->procs[i].pid);
	}
	vramctl_snapshot_free(s);

	crowd_release(&c); /* let them all go */
	/* The books went with the last member: nothing is listed. */
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	ASSERT_EQ(s->ngroups, 0);
	ASSERT_EQ(s->nprocs, 0);
	vramctl_snapshot_free(s);
	printf("ok: %d members attached, all slots distinct\n", N);
	return 0;
}
