/*
 * test_caps.c - changing a running group's caps (vr_caps_set, #26).
 *
 *   change    a member holding 900 MiB under 1 GiB: the cap lowered to
 *             500 MiB is the member's at its next call (usage says it),
 *             every reserve is refused (nothing freed, no damage) until
 *             enough is released, then they pass under the new cap; raised
 *             to 2 GiB, 1 GiB more fits. The snapshot has both changes
 *             (who, old, new) and the new spec.
 *   lanes     a thread's spare is not handed out while the group is over
 *             a lowered cap.
 *   added     a device the group has not used yet starts with the new cap.
 *   existing  joining only a live group: no door is -ENOENT, a group
 *             without live members -ESRCH (nothing created).
 *   damage    a cap written without its check word is still damage.
 *   race      threads reserving and releasing while the cap flips: no
 *             damage, the total never above the larger cap, and it equals
 *             what the threads hold at the end.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "registry/caps.h"
#include "registry/member.h"
#include "tests/registry/regtest.h"
#include "tests/test.h"
#include "vramctl/registry.h"

#define MiB (1024ull * 1024)
#define GiB (1024 * MiB)

static const char *dir;
static const unsigned char uuid[VR_UUID_LEN] = {0xca, 0x95, 2,  3,  4,  5,  6,  7,
                                                8,    9,    10, 11, 12, 13, 14, 15};
static const unsigned char uuid2[VR_UUID_LEN] = {0xca, 0x95, 2,  3,  4,  5,  6,  7,
                                                 8,    9,    10, 11, 12, 13, 14, 16};

static vr_member *changer(const char *group)
{
	struct vr_join_opts o = {.dir = dir, .group = group, .launcher = 1, .existing = 1};
	return join_or_fail(&o);
}

static int set_cap(const char *group, const unsigned char *u, uint64_t cap, const char *spec)
{
	vr_member *c = changer(group);
	struct vr_cap_new n = {.cap = cap};
	memcpy(n.uuid, u, VR_UUID_LEN);
	char err[256] = "";
	int rc = vr_caps_set(c, &n, 1, spec, err, sizeof err);
	if (rc < 0)
		TEST_FAILF("vr_caps_set = %d: %s", rc, err);
	vr_leave(c);
	return rc;
}

static uint64_t cap_of(vr_member *m)
{
	uint64_t cap = 0;
	vr_usage(m, 0, NULL, &cap);
	return cap;
}

static void test_change(void)
{
	struct vr_join_opts o = {.dir = dir, .group = "cc", .limit_spec = "1G"};
	vr_member *m = join_device_or_fail(&o, uuid, GiB);
	ASSERT_EQ(vr_reserve(m, 0, 900 * MiB, NULL), 0);
	ASSERT_EQ(set_cap("cc", uuid, 500 * MiB, "500M"), 1);
	ASSERT_UEQ(cap_of(m), 500 * MiB);
	uint64_t in_use = 0;
	ASSERT_EQ(vr_reserve(m, 0, 1 * MiB, &in_use), -ENOSPC);
	ASSERT_UEQ(in_use, 900 * MiB);
	ASSERT(vr_damaged(m) == NULL);
	vr_release(m, 0, 450 * MiB);
	ASSERT_EQ(vr_reserve(m, 0, 40 * MiB, NULL), 0);
	ASSERT_EQ(vr_reserve(m, 0, 20 * MiB, NULL), -ENOSPC);
	ASSERT_EQ(set_cap("cc", uuid, 2 * GiB, "2G"), 1);
	ASSERT_EQ(vr_reserve(m, 0, 1 * GiB, NULL), 0);
	ASSERT_EQ(set_cap("cc", uuid, 2 * GiB, "2G"), 0); /* the same cap: no change */
	ASSERT(vr_damaged(m) == NULL);

	struct vramctl_snapshot *s = NULL;
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	ASSERT_EQ(s->ngroups, 1);
	const struct vramctl_group *g = &s->groups[0];
	ASSERT_STR_EQ(g->limit_spec, "2G");
	ASSERT_UEQ(g->dev[0].cap, 2 * GiB);
	ASSERT_EQ(g->nchanges, 2);
	ASSERT_UEQ(g->changes_total, 2);
	ASSERT_UEQ(g->changes[0].old_cap, GiB);
	ASSERT_UEQ(g->changes[0].new_cap, 500 * MiB);
	ASSERT_UEQ(g->changes[1].old_cap, 500 * MiB);
	ASSERT_UEQ(g->changes[1].new_cap, 2 * GiB);
	ASSERT_EQ(g->changes[1].uid, (int)getuid());
	ASSERT_EQ(g->changes[1].pid, (int)getpid());
	ASSERT(g->changes[1].when > 0);
	vramctl_snapshot_free(s);
	vr_release(m, 0, 1 * GiB + 490 * MiB);
	ASSERT_UEQ(vr_dev_total(&m->hdr->dev[0]), 0);
	vr_leave(m);
}

static void test_lanes(void)
{
	struct vr_join_opts o = {.dir = dir, .group = "cl", .limit_spec = "1G", .lanes = 1};
	vr_member *m = join_device_or_fail(&o, uuid, GiB);
	ASSERT_EQ(vr_reserve(m, 0, 4096, NULL), 0); /* the lane keeps a quantum spare */
	ASSERT_EQ(vr_reserve(m, 0, 600 * MiB, NULL), 0);
	ASSERT_EQ(set_cap("cl", uuid, 300 * MiB, NULL), 1);
	ASSERT_EQ(vr_reserve(m, 0, 4096, NULL), -ENOSPC);
	vr_release(m, 0, 600 * MiB);
	ASSERT_EQ(vr_reserve(m, 0, 4096, NULL), 0);
	vr_release(m, 0, 8192);
	vr_leave(m);
}

static void test_added(void)
{
	struct vr_join_opts o = {.dir = dir, .group = "ca", .limit_spec = "1G"};
	vr_member *m = join_device_or_fail(&o, uuid, GiB);
	ASSERT_EQ(set_cap("ca", uuid2, 256 * MiB, NULL), 1);
	uint64_t cap = 0;
	ASSERT_EQ(vr_device(m, uuid2, GiB, &cap), 1);
	ASSERT_UEQ(cap, 256 * MiB); /* the group's wins */
	ASSERT_EQ(vr_reserve(m, 1, 257 * MiB, NULL), -ENOSPC);
	vr_leave(m);
}

static void test_existing(void)
{
	struct vr_join_opts o = {.dir = dir, .group = "nobody", .launcher = 1, .existing = 1};
	vr_member *m = NULL;
	char err[256] = "";
	ASSERT_EQ(vr_join(&o, &m, NULL, err, sizeof err), -ENOENT);
	ASSERT(strstr(err, "no group nobody") != NULL);
	struct vr_join_opts j = {.dir = dir, .group = "gone", .limit_spec = "1G"};
	vr_leave(join_or_fail(&j)); /* leaves its door behind */
	o.group = "gone";
	ASSERT_EQ(vr_join(&o, &m, NULL, err, sizeof err), -ESRCH);
	ASSERT(strstr(err, "no live member") != NULL);
}

static void test_damage(void)
{
	struct vr_join_opts o = {.dir = dir, .group = "cd", .limit_spec = "1G"};
	vr_member *m = join_device_or_fail(&o, uuid, GiB);
	ASSERT_EQ(vr_reserve(m, 0, MiB, NULL), 0);
	m->hdr->dev[0].cap = 4 * GiB; /* no check word: not a change */
	(void)vr_reserve(m, 0, MiB, NULL);
	ASSERT(vr_damaged(m) != NULL);
	vr_leave(m);
}

static vr_member *racer;
static _Atomic int stop;

static void *churn(void *arg)
{
	uint64_t s = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1, held = 0;
	while (!atomic_load(&stop)) {
		uint64_t b = (rnd(&s) % 64 + 1) * MiB;
		if (rnd(&s) % 2 && vr_reserve(racer, 0, b, NULL) == 0)
			held += b;
		else if (held) {
			vr_release(racer, 0, held);
			held = 0;
		}
	}
	if (held)
		vr_release(racer, 0, held);
	return NULL;
}

static void test_race(void)
{
	struct vr_join_opts o = {.dir = dir, .group = "cr", .limit_spec = "1G", .lanes = 1};
	racer = join_device_or_fail(&o, uuid, GiB);
	pthread_t t[3];
	for (uintptr_t i = 0; i < 3; i++)
		ASSERT_EQ(pthread_create(&t[i], NULL, churn, (void *)(i + 1)), 0);
	for (int k = 0; k < 60; k++) {
		(void)set_cap("cr", uuid, k % 2 ? 256 * MiB : 1536 * MiB, NULL);
		ASSERT_ULE(vr_dev_total(&racer->hdr->dev[0]), 1536 * MiB);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	ASSERT(vr_damaged(racer) == NULL);
	struct vr_reg_sample smp;
	ASSERT_EQ(vr_sample(racer, 0, &smp), 0);
	ASSERT_UEQ(smp.in_use, smp.slots_sum);
	vr_leave(racer);
}

int main(void)
{
	dir = getenv("VRAMCTL_REGISTRY_DIR");
	ASSERT(dir != NULL);
	test_change();
	test_lanes();
	test_added();
	test_existing();
	test_damage();
	test_race();
	return 0;
}
