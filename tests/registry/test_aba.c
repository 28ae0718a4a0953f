/*
 * test_aba.c - one member's threads reserve and release small blocks at
 * once, without lanes (a cap under 256 MiB has none), as four threads of a
 * program under `--limit 200M` do. A reserve compares the group's total
 * with its own slot; between its two loads another thread of ours may
 * release a block and a third reserve one, which puts the slot back where
 * it was while the total it read was of the moment between: read as
 * "the total is below this process's own holdings", the member detached
 * from its group's books (found by bench/alloc_bench's "near cap" rows,
 * about one run in two). The member must stay in the group's books, and
 * the total come back to 0.
 */
#include <pthread.h>

#include "registry/member.h"
#include "tests/registry/regtest.h"
#include "tests/test.h"

#define THREADS 8
#define PAIRS   150000
#define ROUNDS  20
#define CAP     (200ull << 20)

static const unsigned char uuid[VR_UUID_LEN] = {0xab, 0xa, 2,  3,  4,  5,  6,  7,
                                                8,    9,   10, 11, 12, 13, 14, 15};
static vr_member *m;

static void *churn(void *arg)
{
	(void)arg;
	for (int i = 0; i < PAIRS; i++) {
		uint64_t in_use = 0;
		if (vr_reserve(m, 0, 4096, &in_use) == 0)
			vr_release(m, 0, 4096);
	}
	return NULL;
}

int main(void)
{
	const char *dir = getenv("VRAMCTL_REGISTRY_DIR");
	ASSERT(dir != NULL);
	struct vr_join_opts o = {.dir = dir, .group = "aba", .limit_spec = "200M"};
	m = join_or_fail(&o);
	uint64_t got = 0;
	ASSERT_EQ(vr_device(m, uuid, CAP, &got), 0);
	/* The race needs threads preempted between two loads: many rounds in
	 * the plain build (it failed in two runs of three before the fix); a
	 * few under the sanitizers, which are slower by ten. */
	int rounds = getenv("TSAN_OPTIONS") || getenv("ASAN_OPTIONS") ? 2 : ROUNDS;
	for (int r = 0; r < rounds && !vr_damaged(m); r++) {
		pthread_t t[THREADS];
		for (int i = 0; i < THREADS; i++)
			ASSERT_EQ(pthread_create(&t[i], NULL, churn, NULL), 0);
		for (int i = 0; i < THREADS; i++)
			pthread_join(t[i], NULL);
	}
	const char *why = vr_damaged(m);
	if (why)
		TEST_FAILF("the member left its group's books: %s", why);
	ASSERT_UEQ(vr_dev_total(&m->hdr->dev[0]), 0);
	vr_leave(m);
	return 0;
}
