/*
 * test_lanes.c - threads' lanes (src/registry/lanes.c) serve the card's
 * 2 MiB pages and their multiples up to their reach, and the cap still
 * holds exactly.
 *
 *   kill    a member whose four threads hold 2 MiB and 4 MiB blocks and
 *           lane spare is SIGKILLed: once it is reclaimed (at the next
 *           refusal) the whole cap can be reserved, and then the total is
 *           the cap exactly: nothing of the dead member's lanes is left.
 *   reach   under an 8 GiB cap (quantum 128 KiB, reach 8 MiB) the first
 *           2 MiB block takes the block and a quantum from the books; from
 *           then on pairs of 2 MiB, 4 MiB and 8 MiB blocks leave the group's
 *           total as it is (the lane serves them); a block past the reach
 *           goes to the books exactly.
 *   edge    one thread under a cap of 8 GiB + 5 MiB + 12 KiB (a multiple of
 *           neither the quantum nor the page) takes blocks of 2 MiB, then
 *           4 MiB, then 8 MiB until refused: exactly cap / size of them (its
 *           own spare goes back before a refusal); the total never passes
 *           the cap; after the refusal it is what the thread holds.
 *   threads eight threads at once take 2 MiB and 4 MiB blocks until each
 *           is refused: the total never passes the cap, and they hold at
 *           least the cap less a block and every lane's reach and quantum
 *           (the early-refusal bound, docs/usage.md "What is counted"). Once they
 *           have freed everything and exited, the whole cap can be
 *           reserved again.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry/member.h"
#include "tests/registry/regtest.h"
#include "tests/test.h"

#define MiB     (1024ull * 1024)
#define GiB     (1024 * MiB)
#define CAP     (8 * GiB)
#define ODD_CAP (8 * GiB + 5 * MiB + 12 * 1024)
#define THREADS 8

static const char *dir;
static const unsigned char uuid[VR_UUID_LEN] = {0x1a, 1, 2,  3,  4,  5,  6,  7,
                                                8,    9, 10, 11, 12, 13, 14, 15};

static vr_member *join(const char *group, uint64_t cap)
{
	struct vr_join_opts o = {.dir = dir, .group = group, .limit_spec = "8G", .lanes = 1};
	return join_device_or_fail(&o, uuid, cap);
}

static uint64_t total(vr_member *m)
{
	return vr_dev_total(&m->hdr->dev[0]);
}

/* ---- kill */

static void *kill_holder(void *arg)
{
	vr_member *m = arg;
	for (int i = 0; i < 8; i++)
		if (vr_reserve(m, 0, (i % 2 + 1) * 2 * MiB, NULL) != 0)
			_exit(3);
	/* One back into the lane: spare besides the blocks. */
	vr_release(m, 0, 2 * MiB);
	return NULL;
}

static void test_kill(void)
{
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	pid_t child = fork();
	ASSERT(child >= 0);
	if (child == 0) {
		vr_member *c = join("lk", CAP);
		pthread_t t[4];
		for (int i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, kill_holder, c);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		/* The threads are gone; their lanes went back as they exited. A
		 * thread that stays keeps its lane's spare to the end. */
		ASSERT_EQ(vr_reserve(c, 0, 2 * MiB, NULL), 0);
		vr_release(c, 0, 2 * MiB);
		hold_and_report(p[1], total(c) > 4 * 22 * MiB);
	}
	expect_held(p[0]);
	vr_member *m = join("lk", CAP);
	ASSERT(total(m) > 0);
	ASSERT_EQ(kill(child, SIGKILL), 0);
	int st;
	ASSERT_EQ(waitpid(child, &st, 0), child);
	ASSERT_EQ(vr_reserve(m, 0, CAP, NULL), 0);
	ASSERT_UEQ(total(m), CAP);
	vr_release(m, 0, CAP);
	ASSERT_UEQ(total(m), 0);
	vr_leave(m);
	close(p[0]);
	close(p[1]);
}

/* ---- reach */

static void test_reach(vr_member *m)
{
	uint64_t q = vr_lane_quantum(CAP), reach = vr_lane_reach(CAP);
	ASSERT_UEQ(q, 128 * 1024);
	ASSERT_UEQ(reach, 8 * MiB);
	ASSERT_UEQ(vr_lane_reach(2 * GiB), 2 * MiB);
	ASSERT_UEQ(vr_lane_reach(GiB), GiB >> 16); /* under 2 GiB: the quantum */
	ASSERT_UEQ(vr_lane_reach(1024 * GiB), 32 * MiB);
	ASSERT_UEQ(vr_lane_reach(128 * MiB), 0); /* no lanes */

	ASSERT_UEQ(total(m), 0);
	ASSERT_EQ(vr_reserve(m, 0, 2 * MiB, NULL), 0);
	ASSERT_UEQ(total(m), 2 * MiB + q);
	uint64_t t = total(m);
	static const uint64_t sizes[] = {2 * MiB, 4 * MiB, 8 * MiB, 6 * MiB, 2 * MiB};
	for (int round = 0; round < 3; round++) {
		for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
			ASSERT_EQ(vr_reserve(m, 0, sizes[k], NULL), 0);
			vr_release(m, 0, sizes[k]);
			/* After the first 8 MiB block the lane keeps enough. */
			if (round > 0)
				ASSERT_UEQ(total(m), t);
		}
		t = total(m);
	}
	ASSERT_UEQ(vr_mine(m, 0), 2 * MiB);
	/* Past the reach: the books, exactly. */
	ASSERT_EQ(vr_reserve(m, 0, 10 * MiB, NULL), 0);
	ASSERT_UEQ(total(m), t + 10 * MiB);
	vr_release(m, 0, 10 * MiB);
	ASSERT_UEQ(total(m), t);
	vr_release(m, 0, 2 * MiB);
	ASSERT_UEQ(vr_mine(m, 0), 0);
	/* What the lane keeps is at most its reach and a quantum. */
	ASSERT_ULE(total(m), reach + q);
}

/* ---- edge */

static void test_edge(vr_member *m)
{
	static const uint64_t sizes[] = {2 * MiB, 4 * MiB, 8 * MiB};
	uint64_t *held = malloc(sizeof(*held) * (ODD_CAP / (2 * MiB) + 1));
	ASSERT(held != NULL);
	for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		uint64_t sz = sizes[k], n = 0, want = ODD_CAP / sz;
		int rc;
		while ((rc = vr_reserve(m, 0, sz, NULL)) == 0) {
			ASSERT_ULE(total(m), ODD_CAP);
			held[n++] = sz;
			ASSERT_ULE(n, want);
		}
		ASSERT_EQ(rc, -ENOSPC);
		ASSERT_UEQ(n, want);
		ASSERT_UEQ(total(m), n * sz);
		ASSERT_UEQ(vr_mine(m, 0), n * sz);
		while (n > 0)
			vr_release(m, 0, held[--n]);
		ASSERT_UEQ(vr_mine(m, 0), 0);
		ASSERT_ULE(total(m), vr_lane_reach(ODD_CAP) + vr_lane_quantum(ODD_CAP));
	}
	free(held);
	/* The whole cap in one block: the lane's spare goes back first. */
	ASSERT_EQ(vr_reserve(m, 0, ODD_CAP, NULL), 0);
	ASSERT_UEQ(total(m), ODD_CAP);
	vr_release(m, 0, ODD_CAP);
	ASSERT_UEQ(total(m), 0);
}

/* ---- threads */

#define MAX_BLOCKS 4096
static vr_member *shared;
static pthread_barrier_t refused, checked, freed;
static _Atomic uint64_t handed;
static _Atomic int over;

static void *taker(void *arg)
{
	uint64_t *held = malloc(sizeof(*held) * MAX_BLOCKS);
	int n = 0, k = (int)(uintptr_t)arg;
	if (!held)
		_exit(4);
	for (;;) {
		uint64_t sz = (uint64_t)((n + k) % 2 + 1) * 2 * MiB;
		if (vr_reserve(shared, 0, sz, NULL) != 0)
			break;
		if (total(shared) > CAP)
			atomic_store(&over, 1);
		atomic_fetch_add(&handed, sz);
		held[n++] = sz;
		if (n == MAX_BLOCKS)
			_exit(5);
	}
	pthread_barrier_wait(&refused);
	pthread_barrier_wait(&checked); /* the main thread has looked */
	while (n > 0)
		vr_release(shared, 0, held[--n]);
	free(held);
	pthread_barrier_wait(&freed);
	return NULL;
}

static void test_threads(vr_member *m)
{
	shared = m;
	pthread_t t[THREADS];
	ASSERT_EQ(pthread_barrier_init(&refused, NULL, THREADS + 1), 0);
	ASSERT_EQ(pthread_barrier_init(&checked, NULL, THREADS + 1), 0);
	ASSERT_EQ(pthread_barrier_init(&freed, NULL, THREADS + 1), 0);
	for (int i = 0; i < THREADS; i++)
		ASSERT_EQ(pthread_create(&t[i], NULL, taker, (void *)(uintptr_t)i), 0);
	pthread_barrier_wait(&refused);
	ASSERT_EQ(atomic_load(&over), 0);
	ASSERT_ULE(total(m), CAP);
	uint64_t bound = VR_LANES * (vr_lane_reach(CAP) + vr_lane_quantum(CAP)) + 4 * MiB;
	ASSERT_UGE(atomic_load(&handed), CAP - bound);
	ASSERT_UEQ(vr_mine(m, 0), atomic_load(&handed));
	pthread_barrier_wait(&checked);
	pthread_barrier_wait(&freed);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	ASSERT_UEQ(vr_mine(m, 0), 0);
	/* Their lanes went back as they exited; this thread's goes back
	 * before the whole cap is refused. */
	ASSERT_EQ(vr_reserve(m, 0, CAP, NULL), 0);
	ASSERT_UEQ(total(m), CAP);
	vr_release(m, 0, CAP);
	ASSERT_UEQ(total(m), 0);
}

int main(void)
{
	dir = getenv("VRAMCTL_REGISTRY_DIR");
	if (!dir)
		SKIP("VRAMCTL_REGISTRY_DIR is not set (run under tests/run)");
	test_kill();
	vr_member *m = join("lr", CAP);
	test_reach(m);
	test_threads(m);
	vr_leave(m);
	m = join("le", ODD_CAP);
	test_edge(m);
	vr_leave(m);
	return 0;
}
