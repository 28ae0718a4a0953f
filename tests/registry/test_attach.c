/*
 * test_attach.c - 256 processes attach to one group at once: every join
 * succeeds, every member has its own slot, the snapshot sees all of them
 * alive, and when they have all left the books are empty. Children are
 * held by a pipe until all have joined, so no slot is freed and reused
 * while we count.
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry/registry.h"
#include "tests/test.h"
#include "vramctl/registry.h"

#define N 256

static const unsigned char uuid0[VR_UUID_LEN] = {5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5};

int main(void)
{
	const char *dir = getenv("VRAMCTL_REGISTRY_DIR");
	if (!dir)
		SKIP("VRAMCTL_REGISTRY_DIR is not set (run under tests/run)");
	int up[2], hold[2];
	ASSERT_EQ(pipe(up), 0);
	ASSERT_EQ(pipe(hold), 0);
	pid_t pids[N];
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		ASSERT(pids[i] >= 0);
		if (pids[i] == 0) {
			close(up[0]);
			close(hold[1]);
			struct vr_join_opts o = {.dir = dir, .group = "many", .limit_spec = "1G"};
			vr_member *m = NULL;
			char err[256];
			int32_t msg[2] = {-1, 0};
			int rc = vr_join(&o, &m, NULL, err, sizeof(err));
			if (rc == 0 && vr_device(m, uuid0, 1u << 30, NULL) == 0 &&
			    vr_reserve(m, 0, 1000, NULL) == 0)
				msg[0] = vr_slot_index(m);
			else
				fprintf(stderr, "child %d: join %d: %s\n", i, rc, err);
			msg[1] = i;
			if (write(up[1], msg, sizeof(msg)) != (ssize_t)sizeof(msg))
				_exit(3);
			char c;
			while (read(hold[0], &c, 1) > 0) /* until the parent closes it */
				;
			vr_leave(m);
			_exit(msg[0] >= 0 ? 0 : 2);
		}
	}
	close(up[1]);
	close(hold[0]);
	static char seen[1024];
	for (int i = 0; i < N; i++) {
		int32_t msg[2];
		ASSERT_EQ(read(up[0], msg, sizeof(msg)), (ssize_t)sizeof(msg));
		ASSERT_GE(msg[0], 0);
		ASSERT_LT(msg[0], 1024);
		if (seen[msg[0]])
			TEST_FAIL_("slot %d given twice", msg[0]);
		seen[msg[0]] = 1;
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

	close(hold[1]); /* let them all go */
	for (int i = 0; i < N; i++) {
		int st;
		ASSERT_EQ(waitpid(pids[i], &st, 0), pids[i]);
		ASSERT(WIFEXITED(st));
		ASSERT_EQ(WEXITSTATUS(st), 0);
	}
	/* The books went with the last member: nothing is listed. */
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	ASSERT_EQ(s->ngroups, 0);
	ASSERT_EQ(s->nprocs, 0);
	vramctl_snapshot_free(s);
	printf("ok: %d members attached, all slots distinct\n", N);
	return 0;
}
