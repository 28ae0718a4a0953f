/*
 * test_pidns.c - liveness never trusts a PID. A member in its own PID
 * namespace (PID 1 there) is shown alive with its host PID; once it is
 * killed it is dead, although a process with its recorded PID (1, the
 * host's init) is alive: a PID check would be fooled, the slot's lock is
 * not. Needs CLONE_NEWPID (root); skips where it is not allowed.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry/registry.h"
#include "tests/test.h"
#include "vramctl/registry.h"

static const unsigned char uuid0[VR_UUID_LEN] = {3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3};

int main(void)
{
	const char *dir = getenv("VRAMCTL_REGISTRY_DIR");
	if (!dir)
		SKIP("VRAMCTL_REGISTRY_DIR is not set (run under tests/run)");
	struct vr_join_opts o = {.dir = dir, .group = "ns", .limit_spec = "1000"};
	char err[256];
	vr_member *m = NULL;
	ASSERT_EQ(vr_join(&o, &m, NULL, err, sizeof(err)), 0);
	ASSERT_EQ(vr_device(m, uuid0, 1000, NULL), 0);

	int up[2], up2[2], hold[2];
	ASSERT_EQ(pipe(up), 0);
	ASSERT_EQ(pipe(up2), 0);
	ASSERT_EQ(pipe(hold), 0);
	fflush(stdout);
	pid_t a = fork();
	ASSERT(a >= 0);
	if (a == 0) {
		vr_forget(m);
		close(hold[1]);
		if (unshare(CLONE_NEWPID) != 0) {
			int32_t no = -errno;
			if (write(up[1], &no, sizeof(no)) < 0)
				_exit(2);
			_exit(0);
		}
		pid_t b = fork();
		if (b == 0) {
			vr_member *c = NULL;
			int32_t msg = -1;
			if (getpid() == 1 && vr_join(&o, &c, NULL, err, sizeof(err)) == 0 &&
			    vr_device(c, uuid0, 1, NULL) == 0 && vr_reserve(c, 0, 700, NULL) == 0)
				msg = 0;
			if (write(up2[1], &msg, sizeof(msg)) < 0)
				_exit(2);
			char ch;
			while (read(hold[0], &ch, 1) > 0)
				;
			_exit(0);
		}
		int32_t host = (int32_t)b; /* as seen here: the host's namespace */
		if (write(up[1], &host, sizeof(host)) < 0)
			_exit(2);
		int st;
		waitpid(b, &st, 0);
		_exit(0);
	}
	close(hold[0]);
	int32_t host = 0, joined = -1;
	ASSERT_EQ(read(up[0], &host, sizeof(host)), (ssize_t)sizeof(host));
	if (host < 0) {
		waitpid(a, NULL, 0);
		SKIP("cannot make a PID namespace here: %s", strerror(-host));
	}
	ASSERT_EQ(read(up2[0], &joined, sizeof(joined)), (ssize_t)sizeof(joined));
	ASSERT_EQ(joined, 0);

	struct vramctl_snapshot *s = NULL;
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	const struct vramctl_proc *p = NULL;
	for (int i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == 1)
			p = &s->procs[i];
	ASSERT(p != NULL);
	ASSERT_EQ(p->state, VRAMCTL_PROC_ALIVE);
	ASSERT_EQ(p->host_pid, host);
	ASSERT_UEQ(p->dev[0].in_use, 700);
	vramctl_snapshot_free(s);
	uint64_t in_use = 0;
	ASSERT_EQ(vr_reserve(m, 0, 400, &in_use), -ENOSPC);
	ASSERT_UEQ(in_use, 700);

	ASSERT_EQ(kill(host, SIGKILL), 0);
	ASSERT_EQ(waitpid(a, NULL, 0), a); /* a reaps b first */
	ASSERT_EQ(kill(1, 0), 0);          /* PID 1 lives on here... */
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	p = NULL;
	for (int i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == 1)
			p = &s->procs[i];
	ASSERT(p != NULL);
	ASSERT_EQ(p->state, VRAMCTL_PROC_DEAD); /* ...but the member is dead */
	vramctl_snapshot_free(s);
	ASSERT_EQ(vr_reserve(m, 0, 400, NULL), 0); /* its 700 came back */
	vr_leave(m);
	close(hold[1]);
	printf("ok: member was PID 1 in its namespace, %d on the host\n", host);
	return 0;
}
