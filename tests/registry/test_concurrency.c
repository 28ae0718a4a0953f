/*
 * test_concurrency.c - 4 processes x 4 threads reserve and release at
 * random under one cap while this process, a member too, samples the books
 * under the lock and through the read-only snapshot. At every sample the
 * group's in-use is within the cap and equals the sum of the slots; at the
 * end everything is back to zero. Bounded by iteration counts, not time.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry/registry.h"
#include "tests/registry/regtest.h"
#include "tests/test.h"
#include "vramctl/registry.h"

#define NPROC 4
#define ITERS 20000
#define CAP   (1u << 20)

static const char *dir;
static const unsigned char uuid0[VR_UUID_LEN] = {7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7};
static vr_member *member;

static int worker(int id)
{
	int rc = churn_join(dir, "conc", uuid0, CAP, id, &member);
	if (rc)
		return rc;
	struct churn ch = {.m = member, .id = id, .iters = ITERS, .most = 64, .cap = CAP};
	int bad = churn_run(&ch);
	struct vr_reg_sample s;
	if (vr_sample(member, 0, &s) != 0 || s.in_use > CAP)
		return 4;
	vr_leave(member);
	return bad ? 5 : 0;
}

int main(void)
{
	dir = getenv("VRAMCTL_REGISTRY_DIR");
	if (!dir)
		SKIP("VRAMCTL_REGISTRY_DIR is not set (run under tests/run)");
	struct vr_join_opts o = {.dir = dir, .group = "conc", .limit_spec = "1M"};
	char err[256];
	vr_member *m = NULL;
	ASSERT_EQ(vr_join(&o, &m, NULL, err, sizeof(err)), 0);
	ASSERT_EQ(vr_device(m, uuid0, CAP, NULL), 0);

	pid_t pids[NPROC];
	for (int i = 0; i < NPROC; i++) {
		pids[i] = fork();
		ASSERT(pids[i] >= 0);
		if (pids[i] == 0) {
			vr_forget(m);
			_exit(worker(i));
		}
	}
	int running = NPROC, locked_samples = 0, snap_samples = 0, snap_consistent = 0;
	uint64_t max_seen = 0;
	while (running > 0) {
		struct vr_reg_sample s;
		ASSERT_EQ(vr_sample(m, 0, &s), 0);
		ASSERT_ULE(s.in_use, CAP);
		ASSERT_UEQ(s.in_use, s.slots_sum);
		ASSERT_UEQ(s.cap, CAP);
		if (s.in_use > max_seen)
			max_seen = s.in_use;
		locked_samples++;
		if (locked_samples % 16 == 0) {
			struct vramctl_snapshot *snap = NULL;
			ASSERT_EQ(vramctl_snapshot_take(dir, &snap), 0);
			ASSERT_EQ(snap->ngroups, 1);
			const struct vramctl_group_dev *g = &snap->groups[0].dev[0];
			ASSERT_ULE(g->books_in_use, CAP);
			ASSERT_ULE(g->peak, CAP);
			snap_samples++;
			if (snap->groups[0].consistent) {
				uint64_t sum = 0;
				for (int i = 0; i < snap->nprocs; i++)
					sum += snap->procs[i].dev[0].in_use;
				ASSERT_UEQ(g->books_in_use, sum);
				ASSERT_UEQ(g->in_use + g->dead_in_use, g->books_in_use);
				snap_consistent++;
			}
			vramctl_snapshot_free(snap);
		}
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		if (p > 0) {
			ASSERT(WIFEXITED(st));
			ASSERT_EQ(WEXITSTATUS(st), 0);
			running--;
		}
	}
	struct vr_reg_sample s;
	ASSERT_EQ(vr_sample(m, 0, &s), 0);
	ASSERT_UEQ(s.in_use, 0);
	ASSERT_UEQ(s.slots_sum, 0);
	ASSERT_EQ(s.used_slots, 1);
	ASSERT_ULE(s.peak, CAP);
	ASSERT_GT(s.peak, CAP / 2); /* the workers did compete for the cap */
	vr_leave(m);
	printf("ok: %d locked samples, %d snapshots (%d consistent), max in use %llu of %u\n",
	       locked_samples, snap_samples, snap_consistent, (unsigned long long)max_seen, CAP);
	return 0;
}
