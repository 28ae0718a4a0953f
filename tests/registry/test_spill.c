/*
 * test_spill.c - the group's one host budget for spilled bytes: every
 * member and every device count against it; a refusal changes nothing; the
 * group's per-device and total spilled bytes follow the slots; a member
 * killed with SIGKILL gives its spilled bytes back; the budget is fixed by
 * whoever starts the group, and a fresh start takes the new one; books
 * damaged by a stray writer (budget raised, total zeroed) are found at the
 * next spill, and the member keeps its own spill under its joined budget.
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry/member.h"
#include "tests/registry/regtest.h"
#include "tests/test.h"
#include "vramctl/registry.h"

static const char *dir;
static const unsigned char uuid0[VR_UUID_LEN] = {0xaa, 1, 2,  3,  4,  5,  6,  7,
                                                 8,    9, 10, 11, 12, 13, 14, 15};
static const unsigned char uuid1[VR_UUID_LEN] = {0xbb, 1, 2,  3,  4,  5,  6,  7,
                                                 8,    9, 10, 11, 12, 13, 14, 15};

static vr_member *join(const char *group, uint64_t budget)
{
	struct vr_join_opts o = {
	    .dir = dir, .group = group, .limit_spec = "1000", .spill_budget = budget};
	vr_member *m = join_or_fail(&o);
	ASSERT_EQ(vr_device(m, uuid0, 1000, NULL), 0);
	ASSERT_EQ(vr_device(m, uuid1, 1000, NULL), 1);
	return m;
}

/* The group's numbers as a monitor reads them. */
static void group_numbers(const char *name, uint64_t *spilled, uint64_t *dev0, uint64_t *dev1)
{
	struct vramctl_snapshot *s = NULL;
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	int found = 0;
	for (int i = 0; i < s->ngroups; i++) {
		const struct vramctl_group *g = &s->groups[i];
		if (strcmp(g->name, name) != 0)
			continue;
		found = 1;
		ASSERT_EQ(g->consistent, 1);
		*spilled = g->spilled;
		*dev0 = g->dev[0].spilled;
		*dev1 = g->dev[1].spilled;
	}
	vramctl_snapshot_free(s);
	ASSERT(found);
}

int main(void)
{
	dir = getenv("VRAMCTL_REGISTRY_DIR");
	if (!dir)
		SKIP("VRAMCTL_REGISTRY_DIR is not set (run under tests/run)");

	vr_member *m = join("sp", 1000);
	ASSERT_UEQ(vr_spill_budget(m), 1000);
	uint64_t spilled = 1, budget = 0;
	ASSERT_EQ(vr_spill_reserve(m, 0, 600, &spilled, &budget), 0);
	ASSERT_UEQ(spilled, 600);
	ASSERT_UEQ(budget, 1000);
	/* Another device draws on the same budget. */
	ASSERT_EQ(vr_spill_reserve(m, 1, 500, &spilled, NULL), -ENOSPC);
	ASSERT_UEQ(spilled, 600);
	ASSERT_EQ(vr_spill_reserve(m, 1, 400, NULL, NULL), 0);
	ASSERT_EQ(vr_spill_reserve(m, 0, 1, NULL, NULL), -ENOSPC);
	/* Spilled bytes are not device bytes: the device books are untouched. */
	uint64_t in_use = 1;
	vr_usage(m, 0, &in_use, NULL);
	ASSERT_UEQ(in_use, 0);

	uint64_t total, d0, d1;
	group_numbers("sp", &total, &d0, &d1);
	ASSERT_UEQ(total, 1000);
	ASSERT_UEQ(d0, 600);
	ASSERT_UEQ(d1, 400);

	/* Another member of the group finds the budget used up; when the first
	 * gives some back, it gets it. A second budget asked by a later member
	 * does not replace the group's. */
	int p[2], q[2]; /* child -> parent, parent -> child */
	ASSERT_EQ(pipe(p), 0);
	ASSERT_EQ(pipe(q), 0);
	pid_t child = fork();
	if (child == 0) {
		vr_forget(m);
		vr_member *c = join("sp", 1 << 20);
		char r =
		    vr_spill_budget(c) == 1000 && vr_spill_reserve(c, 0, 100, NULL, NULL) == -ENOSPC
		        ? 'y'
		        : 'n';
		if (write(p[1], &r, 1) != 1)
			_exit(2);
		char go;
		if (read(q[0], &go, 1) != 1) /* wait for the parent's release */
			_exit(2);
		r = vr_spill_reserve(c, 0, 300, NULL, NULL) == 0 ? 'y' : 'n';
		if (write(p[1], &r, 1) != 1)
			_exit(2);
		pause(); /* killed with SIGKILL, holding 300 spilled bytes */
		_exit(0);
	}
	char r;
	ASSERT_EQ(read(p[0], &r, 1), 1);
	ASSERT_EQ(r, 'y');
	vr_spill_release(m, 0, 400); /* 600 of the budget in use */
	ASSERT_EQ(write(q[1], "g", 1), 1);
	ASSERT_EQ(read(p[0], &r, 1), 1);
	ASSERT_EQ(r, 'y');
	group_numbers("sp", &total, &d0, &d1);
	ASSERT_UEQ(total, 900);
	ASSERT_UEQ(d0, 500);
	ASSERT_EQ(vr_spill_reserve(m, 1, 200, NULL, NULL), -ENOSPC);

	/* kill -9: its spilled bytes come back before anyone is refused. */
	kill(child, SIGKILL);
	int st;
	ASSERT_EQ(waitpid(child, &st, 0), child);
	group_numbers("sp", &total, &d0, &d1); /* still held by the dead member */
	ASSERT_UEQ(total, 900);
	ASSERT_EQ(vr_spill_reserve(m, 1, 200, NULL, NULL), 0);
	group_numbers("sp", &total, &d0, &d1);
	ASSERT_UEQ(total, 800);
	ASSERT_UEQ(d0, 200);
	ASSERT_UEQ(d1, 600);

	/* Releasing more than held never wraps. */
	vr_spill_release(m, 0, 1 << 30);
	vr_spill_release(m, 1, 600);
	ASSERT_EQ(vr_reclaim(m), 0);
	group_numbers("sp", &total, &d0, &d1);
	ASSERT_UEQ(total, 0);
	ASSERT_UEQ(d0, 0);
	ASSERT_UEQ(d1, 0);

	/* A refusal the caller serves another way (spill) is no denial until
	 * the caller says so. */
	uint64_t used = 0;
	ASSERT_EQ(vr_reserve_quiet(m, 0, 2000, &used), -ENOSPC);
	ASSERT_EQ(vr_reserve_quiet(m, 0, 10, NULL), 0);
	vr_release(m, 0, 10);
	struct vramctl_snapshot *s = NULL;
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	for (int i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == getpid())
			ASSERT_UEQ(s->procs[i].dev[0].denied_count, 0);
	vramctl_snapshot_free(s);
	vr_note_denied(m, 0, 2000);
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	for (int i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == getpid()) {
			ASSERT_UEQ(s->procs[i].dev[0].denied_count, 1);
			ASSERT_UEQ(s->procs[i].dev[0].last_denied, 2000);
		}
	vramctl_snapshot_free(s);

	/* Damage: the header's budget raised and its total zeroed by a stray
	 * writer. The next spill checks the books, finds it, says so once, and
	 * the member keeps its own spill under the budget it joined with. */
	{
		vr_member *a = join("dmg", 1000), *b = join("dmg", 1000);
		ASSERT_EQ(vr_spill_reserve(a, 0, 600, NULL, NULL), 0);
		a->hdr->spill_budget = UINT64_MAX;
		a->hdr->spilled = 0;
		ASSERT_EQ(vr_spill_reserve(b, 0, 900, NULL, NULL), 0);
		ASSERT(vr_damaged(b) != NULL);
		ASSERT_EQ(vr_spill_reserve(b, 1, 200, NULL, NULL), -ENOSPC);
		ASSERT_UEQ(vr_spill_budget(b), 1000);
		vr_leave(a);
		vr_leave(b);
	}

	/* Leaving returns what a member still held; a group found empty starts
	 * afresh with the new starter's budget. */
	ASSERT_EQ(vr_spill_reserve(m, 0, 100, NULL, NULL), 0);
	vr_leave(m);
	m = join("sp", 0);
	ASSERT_UEQ(vr_spill_budget(m), 0);
	ASSERT_EQ(vr_spill_reserve(m, 0, 1, NULL, NULL), -ENOSPC);
	group_numbers("sp", &total, &d0, &d1);
	ASSERT_UEQ(total, 0);
	vr_leave(m);
	ASSERT_EQ(vr_group_remove(dir, "sp"), 0);
	printf("ok\n");
	return 0;
}
