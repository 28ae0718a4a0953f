/*
 * test_lanes - the per-thread fast path (src/registry/lanes.c) and the
 * per-thread pointer-map stripes (src/hook/ptrmap.c) keep the books exact.
 * Under a 1 GiB cap a lane holds at most two quanta of 16 KiB spare.
 *
 *   exact   one thread fills a 256 MiB cap (a quantum of 4 KiB) with blocks
 *           of a quantum and of 3,000 bytes:
 *           it gets exactly cap / size of them (its own spare goes back to
 *           the books before a refusal), the driver's free memory as the
 *           program sees it is 0, and all of it comes back.
 *   pages   one thread fills a cap of 4 GiB + 3 MiB + 4 KiB (a lane's reach
 *           of 4 MiB: registry/member.h, vr_lane_reach) with 2 MiB, then
 *           4 MiB blocks, served from its lane: exactly cap / size of them,
 *           free memory as the program sees it is what is left, all of it
 *           comes back.
 *   threads eight threads hold small blocks at once: what the books count
 *           is what the program holds plus at most two quanta a thread;
 *           `vramctl status` shows exactly what the program holds; once
 *           the threads are gone (their spare goes back as they exit),
 *           cuMemGetInfo shows the whole cap free again.
 *   cross   blocks freed by threads that did not allocate them, while the
 *           allocating threads go on: the map's fenced path against its
 *           owners' plain one. Every block comes back to the books.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "hooktest.h"

#define CAP     GiB
#define QUANTUM (CAP >> 16)
#define THREADS 8

static CUcontext ctx;

#define SMALL_CAP (256 * MiB)

/* The whole cap in one block: nothing is left counted anywhere. */
static void whole_cap(uint64_t cap)
{
	CUdeviceptr p;
	ASSERT_CU(cuMemAlloc_v2(&p, cap), CUDA_SUCCESS);
	ASSERT_CU(cuMemFree_v2(p), CUDA_SUCCESS);
}

/* One thread takes blocks of each size until refused, under cap: exactly
 * cap / size of them; after freeing them it keeps at most `spare` (given
 * back before a request that needs it is refused: the whole cap fits). */
static int fill_exact(uint64_t cap, const uint64_t *sizes, unsigned nsizes, uint64_t spare)
{
	ht_ctx();
	for (unsigned k = 0; k < nsizes; k++) {
		uint64_t sz = sizes[k], n = 0, want = cap / sz;
		CUdeviceptr *p = malloc(sizeof(*p) * (want + 1));
		ASSERT(p != NULL);
		CUresult rc;
		while ((rc = cuMemAlloc_v2(&p[n], sz)) == CUDA_SUCCESS) {
			n++;
			ASSERT_ULE(n, want);
		}
		ASSERT_CU(rc, CUDA_ERROR_OUT_OF_MEMORY);
		ASSERT_UEQ(n, want);
		ASSERT_UEQ(ht_free(), cap - want * sz);
		for (uint64_t i = 0; i < n; i++)
			ASSERT_CU(cuMemFree_v2(p[i]), CUDA_SUCCESS);
		ASSERT_UGE(ht_free(), cap - spare);
		whole_cap(cap);
		free(p);
	}
	return 0;
}

/* Small blocks: a thread keeps up to two quanta spare. */
static int child_exact(void)
{
	static const uint64_t sizes[] = {SMALL_CAP >> 16, 3000};
	return fill_exact(SMALL_CAP, sizes, 2, 2 * (SMALL_CAP >> 16));
}

#define PAGES_CAP (4 * GiB + 3 * MiB + 4096)

/* The card's pages: a thread keeps up to its reach and a quantum spare. */
static int child_pages(void)
{
	static const uint64_t sizes[] = {2 * MiB, 4 * MiB};
	return fill_exact(PAGES_CAP, sizes, 2, 4 * MiB + (PAGES_CAP >> 16));
}

/* ---- threads */

#define BLOCKS 2000
static pthread_barrier_t bar;
static _Atomic uint64_t held;

static void *holder(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 7919u + 1;
	CUdeviceptr p[BLOCKS];
	uint64_t sz[BLOCKS];
	ASSERT_CU(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
	for (int i = 0; i < BLOCKS; i++) {
		sz[i] = 1 + (uint64_t)rand_r(&seed) % QUANTUM;
		ASSERT_CU(cuMemAlloc_v2(&p[i], sz[i]), CUDA_SUCCESS);
		atomic_fetch_add(&held, sz[i]);
		if (i % 3 == 2) { /* some come and go */
			ASSERT_CU(cuMemFree_v2(p[i - 1]), CUDA_SUCCESS);
			atomic_fetch_sub(&held, sz[i - 1]);
			ASSERT_CU(cuMemAlloc_v2(&p[i - 1], sz[i - 1]), CUDA_SUCCESS);
			atomic_fetch_add(&held, sz[i - 1]);
		}
	}
	pthread_barrier_wait(&bar); /* the main thread checks */
	pthread_barrier_wait(&bar);
	for (int i = 0; i < BLOCKS; i++) {
		atomic_fetch_sub(&held, sz[i]);
		ASSERT_CU(cuMemFree_v2(p[i]), CUDA_SUCCESS);
	}
	return NULL;
}

/* The in_use_bytes `vramctl status --json` shows for group pid-<our pid>. */
static uint64_t status_in_use(void)
{
	char group[64];
	snprintf(group, sizeof group, "\"name\": \"pid-%ld\"", (long)getpid());
	return ht_status_u64(group, "in_use_bytes");
}

static int child_threads(void)
{
	ht_ctx();
	ASSERT_CU(cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
	pthread_t t[THREADS];
	pthread_barrier_init(&bar, NULL, THREADS + 1);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, holder, (void *)(uintptr_t)i);
	pthread_barrier_wait(&bar);
	uint64_t h = atomic_load(&held), books = CAP - ht_free();
	ASSERT_UGE(books, h);
	ASSERT_ULE(books - h, THREADS * 2 * QUANTUM);
	ASSERT_UEQ(status_in_use(), h);
	pthread_barrier_wait(&bar);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	ASSERT_UEQ(atomic_load(&held), 0);
	ASSERT_UEQ(ht_free(), CAP); /* the lanes went back with their threads */
	ASSERT_UEQ(status_in_use(), 0);
	whole_cap(CAP);
	return 0;
}

/* ---- cross */

#define OPS  20000
#define RING 1024
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static CUdeviceptr ring[RING];
static int ring_n;
static _Atomic int producers_left;

static void *producer(void *arg)
{
	(void)arg;
	ASSERT_CU(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
	for (int i = 0; i < OPS; i++) {
		CUdeviceptr p, q;
		ASSERT_CU(cuMemAlloc_v2(&p, 4096), CUDA_SUCCESS);
		ASSERT_CU(cuMemAlloc_v2(&q, 512), CUDA_SUCCESS); /* one of its own */
		ASSERT_CU(cuMemFree_v2(q), CUDA_SUCCESS);
		for (;;) {
			pthread_mutex_lock(&ring_lock);
			int put = ring_n < RING;
			if (put)
				ring[ring_n++] = p;
			pthread_mutex_unlock(&ring_lock);
			if (put)
				break;
			sched_yield();
		}
	}
	atomic_fetch_sub(&producers_left, 1);
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	ASSERT_CU(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
	for (;;) {
		CUdeviceptr p = 0;
		pthread_mutex_lock(&ring_lock);
		if (ring_n > 0)
			p = ring[--ring_n];
		pthread_mutex_unlock(&ring_lock);
		if (p) {
			ASSERT_CU(cuMemFree_v2(p), CUDA_SUCCESS);
			continue;
		}
		if (atomic_load(&producers_left) == 0) {
			pthread_mutex_lock(&ring_lock);
			int empty = ring_n == 0;
			pthread_mutex_unlock(&ring_lock);
			if (empty)
				return NULL;
		}
		sched_yield();
	}
}

static int child_cross(void)
{
	ht_ctx();
	ASSERT_CU(cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
	pthread_t t[4];
	atomic_store(&producers_left, 2);
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, i < 2 ? producer : consumer, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	ASSERT_UEQ(ht_free(), CAP);
	ASSERT_UEQ(status_in_use(), 0);
	whole_cap(CAP);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return strcmp(argv[1], "exact") == 0     ? child_exact()
		       : strcmp(argv[1], "pages") == 0   ? child_pages()
		       : strcmp(argv[1], "threads") == 0 ? child_threads()
		       : strcmp(argv[1], "cross") == 0   ? child_cross()
		                                         : 2;
	if (ht_total() < CAP)
		SKIP("the device has less than 1 GiB");
	char regdir[1024];
	snprintf(regdir, sizeof regdir, "VRAMCTL_REGISTRY_DIR=%s/reg", ht_tmp());
	const char *env[] = {ht_kv("VRAMCTL_LIMIT", CAP), "VRAMCTL_LOG=error", regdir, NULL};
	const char *small[] = {ht_kv("VRAMCTL_LIMIT", SMALL_CAP), "VRAMCTL_LOG=error", regdir,
	                       NULL};
	ASSERT_EQ(ht_run("exact", small), 0);
	if (ht_total() >= PAGES_CAP) {
		const char *pages[] = {ht_kv("VRAMCTL_LIMIT", PAGES_CAP), "VRAMCTL_LOG=error",
		                       regdir, NULL};
		ASSERT_EQ(ht_run("pages", pages), 0);
	}
	ASSERT_EQ(ht_run("threads", env), 0);
	ASSERT_EQ(ht_run("cross", env), 0);
	return 0;
}
