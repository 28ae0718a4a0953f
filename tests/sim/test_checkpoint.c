/*
 * test_checkpoint.c - the simulated checkpoint API, as the real driver's
 * (cuda.h "CUDA Checkpointing"): this program, as controller, locks a
 * child that holds device memory with bytes written in it, checks that
 * the child's next driver call waits, checkpoints it (the card's memory
 * comes back), fails a restore while the card has no room (the child stays
 * checkpointed), restores and unlocks it, and the child reads back what
 * it wrote. Calls in the wrong state are CUDA_ERROR_ILLEGAL_STATE; a Lock
 * that cannot drain a slow call in time leaves the child running; a child
 * killed while checkpointed leaves nothing on the card and no hang; a
 * child holding managed memory is not checkpointed (the real driver does
 * not support it): CUDA_ERROR_NOT_SUPPORTED, still locked, and it runs on
 * once unlocked.
 */
#include "simtest.h"

#include <poll.h>
#include <string.h>

#define HELD (600 * MiB)

static unsigned char pattern(size_t i)
{
	return (unsigned char)(i * 131 + 7);
}

/* The child: holds HELD with a pattern in its first and last MiB, then
 * answers commands on fd 0 with one byte on fd 1:
 *   i  cuMemGetInfo (a driver call that waits while it is locked): 'i'
 *   c  reads the pattern back: 'y' intact, 'n' not
 *   s  a slow cuCtxSynchronize (VRAMSIM_SLOW): 's'
 *   m  1 MiB of managed memory: 'm' */
static int child(void)
{
	sim_setup();
	CUdeviceptr p;
	static unsigned char buf[MiB], back[MiB];
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = pattern(i);
	if (cuMemAlloc_v2(&p, HELD) != CUDA_SUCCESS ||
	    cuMemcpyHtoD_v2(p, buf, sizeof buf) != CUDA_SUCCESS ||
	    cuMemcpyHtoD_v2(p + HELD - MiB, buf, sizeof buf) != CUDA_SUCCESS)
		return 2;
	if (write(1, "r", 1) != 1)
		return 3;
	char c;
	while (read(0, &c, 1) == 1) {
		char out = c;
		if (c == 'i') {
			size_t f, t;
			cuMemGetInfo_v2(&f, &t);
		} else if (c == 'c') {
			int ok = cuMemcpyDtoH_v2(back, p, sizeof back) == CUDA_SUCCESS &&
			         !memcmp(back, buf, sizeof back);
			memset(back, 0, sizeof back);
			ok &= cuMemcpyDtoH_v2(back, p + HELD - MiB, sizeof back) == CUDA_SUCCESS &&
			      !memcmp(back, buf, sizeof back);
			out = ok ? 'y' : 'n';
		} else if (c == 's') {
			cuCtxSynchronize();
		} else if (c == 'm') {
			CUdeviceptr mp;
			if (cuMemAllocManaged(&mp, MiB, CU_MEM_ATTACH_GLOBAL) != CUDA_SUCCESS)
				out = 'x';
		}
		if (write(1, &out, 1) != 1)
			return 4;
	}
	return 0;
}

struct kid {
	pid_t pid;
	int to, from;
};

static struct kid start(const char *slow)
{
	int a[2], b[2];
	struct kid k;
	ASSERT_EQ(pipe(a), 0);
	ASSERT_EQ(pipe(b), 0);
	k.pid = fork();
	ASSERT(k.pid >= 0);
	if (k.pid == 0) {
		dup2(a[0], 0);
		dup2(b[1], 1);
		close(a[1]);
		close(b[0]);
		if (slow)
			setenv("VRAMSIM_SLOW", slow, 1);
		execl("/proc/self/exe", "simtest-child", "child", (char *)NULL);
		_exit(127);
	}
	close(a[0]);
	close(b[1]);
	k.to = a[1];
	k.from = b[0];
	ASSERT_EQ(sim_wait_byte(k.from), 'r');
	return k;
}

/* The child's answer within ms, or 0 when none came. */
static char answer_within(struct kid *k, int ms)
{
	struct pollfd pf = {.fd = k->from, .events = POLLIN};
	if (poll(&pf, 1, ms) != 1)
		return 0;
	return sim_wait_byte(k->from);
}

static void ask(struct kid *k, char c)
{
	ASSERT_EQ(write(k->to, &c, 1), 1);
}

static CUprocessState state_of(pid_t pid)
{
	CUprocessState st = -1;
	ASSERT_CU(cuCheckpointProcessGetState(pid, &st), CUDA_SUCCESS);
	return st;
}

/* The child's bytes read back intact; then it exits and the card is as it
 * was before it (base). */
static void intact_then_gone(struct kid *k, unsigned long long base)
{
	ask(k, 'c');
	ASSERT_EQ(answer_within(k, 5000), 'y');
	close(k->to);
	close(k->from);
	waitpid(k->pid, NULL, 0);
	ASSERT_UEQ(sim_used(), base);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "child"))
		return child();
	REQUIRE_SIM();
	sim_setup();
	CUcheckpointLockArgs lock = {.timeoutMs = 2000};
	CUprocessState st;

	/* No such CUDA process: this one never called cuInit. */
	ASSERT_CU(cuCheckpointProcessGetState(1, &st), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuCheckpointProcessLock(1, &lock), CUDA_ERROR_INVALID_VALUE);

	unsigned long long base = sim_used();
	struct kid k = start(NULL);
	/* Its blocks and its context. */
	unsigned long long held = sim_used() - base;
	ASSERT(held >= HELD);
	ASSERT_EQ(state_of(k.pid), CU_PROCESS_STATE_RUNNING);
	int tid = 0;
	ASSERT_CU(cuCheckpointProcessGetRestoreThreadId(k.pid, &tid), CUDA_SUCCESS);
	ASSERT(tid > 0 && tid != k.pid);

	/* Wrong states, from RUNNING. */
	ASSERT_CU(cuCheckpointProcessCheckpoint(k.pid, NULL), CUDA_ERROR_ILLEGAL_STATE);
	ASSERT_CU(cuCheckpointProcessRestore(k.pid, NULL), CUDA_ERROR_ILLEGAL_STATE);
	ASSERT_CU(cuCheckpointProcessUnlock(k.pid, NULL), CUDA_ERROR_ILLEGAL_STATE);

	/* Locked: its next call waits. */
	ASSERT_CU(cuCheckpointProcessLock(k.pid, &lock), CUDA_SUCCESS);
	ASSERT_EQ(state_of(k.pid), CU_PROCESS_STATE_LOCKED);
	ASSERT_CU(cuCheckpointProcessLock(k.pid, &lock), CUDA_ERROR_ILLEGAL_STATE);
	ask(&k, 'i');
	ASSERT_EQ(answer_within(&k, 300), 0);

	/* Checkpointed: the card has its memory back; NVML's total agrees. */
	ASSERT_CU(cuCheckpointProcessCheckpoint(k.pid, NULL), CUDA_SUCCESS);
	ASSERT_EQ(state_of(k.pid), CU_PROCESS_STATE_CHECKPOINTED);
	ASSERT_UEQ(sim_used(), base);
	ASSERT_CU(cuCheckpointProcessUnlock(k.pid, NULL), CUDA_ERROR_ILLEGAL_STATE);
	ASSERT_CU(cuCheckpointProcessCheckpoint(k.pid, NULL), CUDA_ERROR_ILLEGAL_STATE);
	ASSERT_EQ(answer_within(&k, 100), 0);

	/* No room on the card: the restore fails, the child stays
	 * checkpointed and the card keeps the room for whoever took it. */
	size_t f, t;
	ASSERT_CU(cuMemGetInfo_v2(&f, &t), CUDA_SUCCESS);
	CUdeviceptr filler;
	ASSERT_CU(cuMemAlloc_v2(&filler, f - 64 * MiB), CUDA_SUCCESS);
	ASSERT_CU(cuCheckpointProcessRestore(k.pid, NULL), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_EQ(state_of(k.pid), CU_PROCESS_STATE_CHECKPOINTED);
	ASSERT_CU(cuMemFree_v2(filler), CUDA_SUCCESS);

	/* Restored, then unlocked: the waiting call answers, the bytes are
	 * intact. */
	ASSERT_CU(cuCheckpointProcessRestore(k.pid, NULL), CUDA_SUCCESS);
	ASSERT_EQ(state_of(k.pid), CU_PROCESS_STATE_LOCKED);
	ASSERT_UEQ(sim_used(), base + held);
	ASSERT_EQ(answer_within(&k, 100), 0);
	ASSERT_CU(cuCheckpointProcessUnlock(k.pid, NULL), CUDA_SUCCESS);
	ASSERT_EQ(state_of(k.pid), CU_PROCESS_STATE_RUNNING);
	ASSERT_EQ(answer_within(&k, 5000), 'i');
	ask(&k, 'c');
	ASSERT_EQ(answer_within(&k, 5000), 'y');

	/* Killed while checkpointed: nothing left on the card, and the
	 * controller is told the process is gone. */
	ASSERT_CU(cuCheckpointProcessLock(k.pid, &lock), CUDA_SUCCESS);
	ASSERT_CU(cuCheckpointProcessCheckpoint(k.pid, NULL), CUDA_SUCCESS);
	kill(k.pid, SIGKILL);
	waitpid(k.pid, NULL, 0);
	ASSERT_UEQ(sim_used(), base);
	ASSERT_CU(cuCheckpointProcessRestore(k.pid, NULL), CUDA_ERROR_INVALID_VALUE);
	close(k.to);
	close(k.from);

	/* A Lock whose timeout passes while a call is in flight leaves the
	 * process running. */
	struct kid s = start("cuCtxSynchronize:1500000");
	ask(&s, 's');
	usleep(100 * 1000);
	lock.timeoutMs = 200;
	ASSERT_CU(cuCheckpointProcessLock(s.pid, &lock), CUDA_ERROR_NOT_READY);
	ASSERT_EQ(state_of(s.pid), CU_PROCESS_STATE_RUNNING);
	ASSERT_EQ(answer_within(&s, 5000), 's');
	intact_then_gone(&s, base);

	/* Managed memory: not checkpointed; it stays locked, then runs. */
	struct kid m = start(NULL);
	ask(&m, 'm');
	ASSERT_EQ(answer_within(&m, 5000), 'm');
	lock.timeoutMs = 2000;
	ASSERT_CU(cuCheckpointProcessLock(m.pid, &lock), CUDA_SUCCESS);
	ASSERT_CU(cuCheckpointProcessCheckpoint(m.pid, NULL), CUDA_ERROR_NOT_SUPPORTED);
	ASSERT_EQ(state_of(m.pid), CU_PROCESS_STATE_LOCKED);
	ASSERT(sim_used() > base);
	ASSERT_CU(cuCheckpointProcessUnlock(m.pid, NULL), CUDA_SUCCESS);
	intact_then_gone(&m, base);
	return 0;
}
