/*
 * test_overhead.c - a member's overhead on the card (vr_overhead_set,
 * #24): bytes the card holds for it beyond its blocks, charged like a
 * reserve but never refused at the cap.
 *
 *   charge   under a 1 GiB cap, 900 MiB reserved, then 300 MiB of overhead:
 *            the group's total is 1.2 GiB (over its cap: the card holds
 *            it), the slot's overhead word says 300 MiB, a snapshot shows
 *            it per member and group, and every reserve is refused; the
 *            overhead lowered to 50 MiB gives the room back.
 *   kill     a member holding blocks and overhead is SIGKILLed: once
 *            reclaimed, the whole cap can be reserved again (no drift).
 *   own      vr_mine counts the overhead with the blocks.
 *   unpeak   a reserve granted, then refused after all by the caller's
 *            check and released: vr_unpeak takes back the peaks it raised
 *            (the group's, the member's), an overhead charge's raise
 *            stays, and a peak raised since by another reserve stays
 *            (#35: a refused request is never memory held).
 */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry/member.h"
#include "tests/registry/regtest.h"
#include "tests/test.h"
#include "vramctl/registry.h"

#define MiB (1024ull * 1024)
#define CAP (1024 * MiB)

static const char *dir;
static const unsigned char uuid[VR_UUID_LEN] = {0x0e, 0xad, 2,  3,  4,  5,  6,  7,
                                                8,    9,    10, 11, 12, 13, 14, 15};

static vr_member *join(const char *group)
{
	struct vr_join_opts o = {.dir = dir, .group = group, .limit_spec = "1G"};
	return join_device_or_fail(&o, uuid, CAP);
}

static uint64_t total(vr_member *m)
{
	return vr_dev_total(&m->hdr->dev[0]);
}

static void test_charge(void)
{
	vr_member *m = join("oc");
	uint64_t in_use = 0;
	ASSERT_EQ(vr_reserve(m, 0, 900 * MiB, &in_use), 0);
	ASSERT_UEQ(in_use, 900 * MiB); /* a grant from the books says the total */
	ASSERT_EQ(vr_overhead_set(m, 0, 300 * MiB, &in_use), 0);
	ASSERT_UEQ(in_use, 1200 * MiB);
	ASSERT_UEQ(total(m), 1200 * MiB);
	ASSERT_UEQ(vr_mine(m, 0), 1200 * MiB);
	ASSERT_UEQ(vr_counts_at(m->hdr, m->slot_idx, 0)->overhead, 300 * MiB);
	ASSERT_EQ(vr_reserve(m, 0, 1 * MiB, &in_use), -ENOSPC);
	ASSERT(vr_damaged(m) == NULL); /* over the cap by overhead is not damage */

	struct vramctl_snapshot *s = NULL;
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	ASSERT_EQ(s->ngroups, 1);
	ASSERT_UEQ(s->groups[0].dev[0].overhead, 300 * MiB);
	ASSERT_UEQ(s->groups[0].dev[0].books_in_use, 1200 * MiB);
	ASSERT_EQ(s->nprocs, 1);
	ASSERT_UEQ(s->procs[0].dev[0].overhead, 300 * MiB);
	ASSERT_UEQ(s->procs[0].dev[0].in_use, 1200 * MiB);
	ASSERT_EQ(s->procs[0].counting, VRAMCTL_COUNTING_CARD);
	vramctl_snapshot_free(s);

	vr_counting_set(m, VR_SLOT_F_NO_FIGURES, 1);
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	ASSERT_EQ(s->procs[0].counting, VRAMCTL_COUNTING_NO_FIGURES);
	vramctl_snapshot_free(s);

	ASSERT_EQ(vr_overhead_set(m, 0, 50 * MiB, NULL), 0);
	ASSERT_UEQ(total(m), 950 * MiB);
	ASSERT_EQ(vr_reserve(m, 0, 74 * MiB, NULL), 0);
	ASSERT_EQ(vr_reserve(m, 0, 1, NULL), -ENOSPC);
	vr_release(m, 0, 974 * MiB);
	ASSERT_EQ(vr_overhead_set(m, 0, 0, NULL), 0);
	ASSERT_UEQ(total(m), 0);
	vr_leave(m);
}

static void test_kill(void)
{
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	pid_t child = fork();
	ASSERT(child >= 0);
	if (child == 0) {
		vr_member *c = join("ok");
		int ok = vr_reserve(c, 0, 600 * MiB, NULL) == 0 &&
		         vr_overhead_set(c, 0, 300 * MiB, NULL) == 0;
		hold_and_report(p[1], ok && total(c) == 900 * MiB);
	}
	expect_held(p[0]);
	vr_member *m = join("ok");
	ASSERT_UEQ(total(m), 900 * MiB);
	ASSERT_EQ(kill(child, SIGKILL), 0);
	int st;
	ASSERT_EQ(waitpid(child, &st, 0), child);
	ASSERT_EQ(vr_reserve(m, 0, CAP, NULL), 0); /* the dead member's share reclaimed */
	ASSERT_UEQ(total(m), CAP);
	vr_release(m, 0, CAP);
	ASSERT_UEQ(total(m), 0);
	vr_leave(m);
	close(p[0]);
	close(p[1]);
}

static uint64_t gpeak(vr_member *m)
{
	return m->hdr->dev[0].peak;
}

static uint64_t speak(vr_member *m)
{
	return vr_counts_at(m->hdr, m->slot_idx, 0)->peak;
}

static void *reserve_100(void *arg)
{
	int rc = vr_reserve(arg, 0, 100 * MiB, NULL);
	ASSERT_EQ(rc, 0);
	return NULL;
}

static void test_unpeak(void)
{
	vr_member *m = join("up");
	ASSERT_EQ(vr_reserve(m, 0, 100 * MiB, NULL), 0);
	vr_release(m, 0, 100 * MiB);
	ASSERT_UEQ(gpeak(m), 100 * MiB);
	/* Granted, then refused by the caller: given back, peaks too. */
	vr_peak_note_start();
	ASSERT_EQ(vr_reserve(m, 0, 700 * MiB, NULL), 0);
	ASSERT_UEQ(gpeak(m), 700 * MiB);
	ASSERT_UEQ(speak(m), 700 * MiB);
	vr_release(m, 0, 700 * MiB);
	vr_unpeak();
	ASSERT_UEQ(gpeak(m), 100 * MiB);
	ASSERT_UEQ(speak(m), 100 * MiB);
	/* An overhead charge is on the card: its peak is never taken back. */
	vr_peak_note_start();
	ASSERT_EQ(vr_overhead_set(m, 0, 300 * MiB, NULL), 0);
	vr_unpeak();
	ASSERT_UEQ(gpeak(m), 300 * MiB);
	/* A peak another reserve raised past the refused one's stays. */
	vr_peak_note_start();
	ASSERT_EQ(vr_reserve(m, 0, 200 * MiB, NULL), 0); /* 500 */
	vr_member *o = join("up");
	pthread_t t; /* another thread's reserve: 600 */
	ASSERT_EQ(pthread_create(&t, NULL, reserve_100, o), 0);
	ASSERT_EQ(pthread_join(t, NULL), 0);
	vr_release(m, 0, 200 * MiB);
	vr_unpeak();
	ASSERT_UEQ(gpeak(m), 600 * MiB);
	vr_release(o, 0, 100 * MiB);
	vr_leave(o);
	ASSERT_EQ(vr_overhead_set(m, 0, 0, NULL), 0);
	vr_leave(m);
}

int main(void)
{
	dir = getenv("VRAMCTL_REGISTRY_DIR");
	ASSERT(dir != NULL);
	test_charge();
	test_kill();
	test_unpeak();
	return 0;
}
