/*
 * test_threads - eight threads allocating at once never pass the cap. Each
 * round every thread allocates until it is refused; then, with everything
 * held, the books (cuMemGetInfo) and the card's physical usage for this
 * process (NVML's process list, which vramctl does not touch) both stay
 * within the cap, and the cap is nearly full. Rounds are separated by
 * barriers, not by time.
 *
 * Mode "join": the first device allocation (which joins the group) and
 * pinned host allocations (which need the membership too) start together
 * in several threads; under TSan this finds any unsynchronised read of the
 * membership.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "hooktest.h"

#define THREADS 8
#define ROUNDS  20

static uint64_t cap, chunk_max;
static _Atomic uint64_t held; /* what the program holds on the card, by its own count */
static pthread_barrier_t bar;
static CUcontext ctx;
static nvmlDevice_t nvdev;
static uint64_t base_phys;

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 7919u + 1;
	CUdeviceptr mine[256];
	uint64_t size[256];
	ASSERT_CU(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
	for (int r = 0; r < ROUNDS; r++) {
		int n = 0;
		while (n < 256) {
			uint64_t sz = MiB + (uint64_t)rand_r(&seed) % chunk_max;
			CUresult rc = cuMemAlloc_v2(&mine[n], sz);
			if (rc == CUDA_ERROR_OUT_OF_MEMORY)
				break;
			ASSERT_CU(rc, CUDA_SUCCESS);
			sz = ht_on_card(sz); /* what it takes on the card and in the books */
			size[n++] = sz;
			uint64_t now = atomic_fetch_add(&held, sz) + sz;
			ASSERT_ULE(now, cap);
			/* Give some back now and then, so threads race on both. The
			 * program's count drops before the free, so it never runs
			 * ahead of the books. */
			if (rand_r(&seed) % 4 == 0) {
				n--;
				atomic_fetch_sub(&held, size[n]);
				ASSERT_CU(cuMemFree_v2(mine[n]), CUDA_SUCCESS);
			}
		}
		pthread_barrier_wait(&bar);
		/* Main thread checks here. */
		pthread_barrier_wait(&bar);
		for (int i = 0; i < n; i++) {
			atomic_fetch_sub(&held, size[i]);
			ASSERT_CU(cuMemFree_v2(mine[i]), CUDA_SUCCESS);
		}
		pthread_barrier_wait(&bar);
		/* Main thread checks that everything came back. */
		pthread_barrier_wait(&bar);
	}
	return NULL;
}

static int child(void)
{
	cap = ht_env_u64("T_CAP");
	chunk_max = cap / 32;
	CUdevice dev = ht_ctx();
	ASSERT_CU(cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
	nvdev = ht_nvml_dev(dev);
	base_phys = ht_phys_used(nvdev);

	pthread_t t[THREADS];
	pthread_barrier_init(&bar, NULL, THREADS + 1);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
	for (int r = 0; r < ROUNDS; r++) {
		pthread_barrier_wait(&bar);
		uint64_t f = ht_free();
		uint64_t h = atomic_load(&held);
		ASSERT_ULE(h, cap);
		ASSERT_UEQ(f, cap - h);                           /* books agree with the program */
		ASSERT_ULE(ht_phys_used(nvdev) - base_phys, cap); /* and so does the card */
		ASSERT_UGE(h, cap - chunk_max - MiB);             /* everyone was refused: full */
		pthread_barrier_wait(&bar);
		pthread_barrier_wait(&bar);
		ASSERT_UEQ(ht_free(), cap);
		ASSERT_UEQ(atomic_load(&held), 0);
		pthread_barrier_wait(&bar);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	return 0;
}

static void *join_worker(void *arg)
{
	ASSERT_CU(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
	pthread_barrier_wait(&bar);
	for (int i = 0; i < 16; i++) {
		if ((uintptr_t)arg % 2) {
			void *h;
			ASSERT_CU(cuMemAllocHost_v2(&h, 4096), CUDA_SUCCESS);
			ASSERT_CU(cuMemFreeHost(h), CUDA_SUCCESS);
		} else {
			CUdeviceptr p;
			ASSERT_CU(cuMemAlloc_v2(&p, MiB), CUDA_SUCCESS);
			ASSERT_CU(cuMemFree_v2(p), CUDA_SUCCESS);
		}
	}
	return NULL;
}

static int child_join(void)
{
	ht_ctx();
	ASSERT_CU(cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
	pthread_t t[THREADS];
	pthread_barrier_init(&bar, NULL, THREADS);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, join_worker, (void *)(uintptr_t)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return strcmp(argv[1], "child") == 0  ? child()
		       : strcmp(argv[1], "join") == 0 ? child_join()
		                                      : 2;
	uint64_t c = ht_total() / 8;
	/* Denials are expected by the hundred: keep the log short. */
	const char *env[] = {ht_kv("VRAMCTL_LIMIT", c), ht_kv("T_CAP", c), "VRAMCTL_LOG=error",
	                     NULL};
	ASSERT_EQ(ht_run("child", env), 0);
	const char *join_env[] = {ht_kv("VRAMCTL_LIMIT", c), NULL};
	ASSERT_EQ(ht_run("join", join_env), 0);
	return 0;
}
