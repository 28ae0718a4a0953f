/*
 * test_race.c - several processes race for the last memory of one card: the
 * card's check-and-add is atomic across processes, so together they get
 * exactly what fits, never more, whatever the interleaving.
 */
#include "simtest.h"

#define NPROC 4

int main(int argc, char **argv)
{
	(void)argv;
	REQUIRE_SIM();
	if (argc == 2) {
		/* Child: say ready, wait for go, take 256 MiB chunks until the card
		 * is full, report the count on stdout, then wait for the parent to
		 * close stdin. */
		CUdeviceptr p;
		int n = 0;
		char c;
		sim_setup();
		/* All contexts first, then everyone allocates at once. */
		ASSERT_EQ(write(1, "r", 1), 1);
		ASSERT_EQ(read(0, &c, 1), 1);
		while (cuMemAlloc_v2(&p, 256 * MiB) == CUDA_SUCCESS)
			n++;
		ASSERT_CU(cuMemAlloc_v2(&p, 256 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
		printf("%d\n", n);
		fflush(stdout);
		ASSERT_EQ(read(0, &c, 1), 0);
		return 0;
	}

	int out[NPROC][2], in[NPROC][2];
	pid_t pids[NPROC];
	for (int i = 0; i < NPROC; i++) {
		ASSERT_EQ(pipe(out[i]), 0);
		ASSERT_EQ(pipe(in[i]), 0);
		pids[i] = fork();
		ASSERT(pids[i] >= 0);
		if (pids[i] == 0) {
			dup2(out[i][1], 1);
			dup2(in[i][0], 0);
			for (int k = 0; k <= i; k++) {
				close(out[k][0]);
				close(out[k][1]);
				close(in[k][0]);
				close(in[k][1]);
			}
			static char dev[] = "VRAMSIM_DEVICES=8G";
			putenv(dev);
			execl("/proc/self/exe", "race-child", "child", (char *)NULL);
			_exit(127);
		}
		close(out[i][1]);
		close(in[i][0]);
	}
	for (int i = 0; i < NPROC; i++)
		ASSERT_EQ(sim_wait_byte(out[i][0]), 'r');
	for (int i = 0; i < NPROC; i++)
		ASSERT_EQ(write(in[i][1], "g", 1), 1);
	int total = 0;
	for (int i = 0; i < NPROC; i++) {
		char buf[32] = {0};
		ssize_t n = read(out[i][0], buf, sizeof(buf) - 1);
		ASSERT_GT(n, 0);
		total += atoi(buf);
	}
	/* 8 GiB less four 64 MiB contexts, in 256 MiB chunks. */
	ASSERT_EQ(total, (int)((8 * GiB - NPROC * 64 * MiB) / (256 * MiB)));
	for (int i = 0; i < NPROC; i++) {
		int st;
		close(in[i][1]);
		ASSERT_EQ(waitpid(pids[i], &st, 0), pids[i]);
		ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		close(out[i][0]);
	}
	return 0;
}
