/*
 * test_card_figure - the card's figure near the cap (issue #37, items 1
 * and 2; docs/architecture.md, "What the card holds"), with the cap
 * counting the card (VRAMCTL_COUNT unset). The driver takes linear memory
 * as an H200 does: blocks over 1 MiB in whole 2 MiB pages, blocks of 1 MiB
 * or less carved from pages the process keeps after frees (sim/small.c).
 *
 *   leftover: the cap filled with 64 KiB blocks; 600 rounds of 17 freed
 *             and exactly what cuMemGetInfo then shows free asked for (a
 *             small block when it shows none). NVML's figure for the
 *             process never passes the cap by a page, and what the
 *             program is shown free is never more than the cap less it
 *             (the freed blocks' pages stay on the card);
 *   churn:    four threads allocating and freeing blocks of every size
 *             under 256 MiB: the same bound, seen by each thread after
 *             each of its calls (a grant of another thread may be with
 *             the driver: it is in the bound);
 *   lag:      NVML's figures trail the driver's by 300 ms
 *             (VRAMSIM_NVML_LAG_MS); the driver takes 100 MiB through no
 *             hooked call (a module loaded at a kernel launch:
 *             vramsim_take); the next grant near the cap waits for NVML to
 *             catch up and is refused, as it would pass the cap;
 *   longlag:  NVML trails by 3 s, more than a look waits (1 s): the grant
 *             is made on NVML's figures as they are and passes the cap,
 *             and one line says so;
 *   refusals: a request refused at the cap, asked 5,000 times: NVML is not
 *             asked each time (it fails from the 200th look-up of a GPU,
 *             VRAMSIM_FAULT, which would be said);
 *   contexts: contexts that take nothing NVML can see (VRAMSIM_CONTEXT_BYTES
 *             0), a primary one and three made by cuCtxCreate: none waits
 *             for NVML to show it growing (each wait asked NVML every
 *             10 ms for a second: the same fault would be said).
 * On a real driver only leftover and churn run (no simulator knobs).
 */
#include <dlfcn.h>
#include <pthread.h>

#include "hooktest.h"

#define PAGE (2 * MiB)

static nvmlDevice_t nv;

/* The card's bound: NVML's figure for this process (its context
 * included, as the cap counts it) at most a page over the cap. */
static void within(uint64_t cap)
{
	ASSERT_ULE(ht_phys_used(nv), cap + PAGE);
}

static int child_leftover(void)
{
	uint64_t cap = ht_env_u64("T_CAP"), small = 64 * 1024;
	nv = ht_nvml_dev(ht_ctx());
	size_t nb = cap / small, n = 0, next = 0, got = 0;
	CUdeviceptr *b = calloc(nb, sizeof *b), x;
	ASSERT(b != NULL);
	while (n < nb && cuMemAlloc_v2(&b[n], small) == CUDA_SUCCESS)
		n++;
	ASSERT(n > 0);
	within(cap);
	for (int round = 0; round < 600 && next + 17 <= n; round++) {
		for (int k = 0; k < 17; k++)
			ASSERT_CU(cuMemFree_v2(b[next++]), CUDA_SUCCESS);
		uint64_t f = ht_free(), card = ht_phys_used(nv);
		/* Never shown more than the card has under the cap. */
		ASSERT_ULE(f, card < cap ? cap - card : 0);
		CUresult rc = cuMemAlloc_v2(&x, f ? f : small);
		ASSERT(rc == CUDA_SUCCESS || rc == CUDA_ERROR_OUT_OF_MEMORY);
		got += rc == CUDA_SUCCESS;
		within(cap);
	}
	fprintf(stderr, "leftover: %zu blocks, %zu asks granted, the card holds %llu MiB\n", n, got,
	        (unsigned long long)(ht_phys_used(nv) / MiB));
	free(b);
	return 0;
}

static uint64_t churn_cap;
static CUcontext churn_ctx;

static void *churner(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u;
	ASSERT_CU(cuCtxSetCurrent(churn_ctx), CUDA_SUCCESS);
	CUdeviceptr held[16];
	int n = 0;
	for (int i = 0; i < 3000; i++) {
		unsigned r = rand_r(&seed);
		if (n < 16 && (n == 0 || r % 3 != 0)) {
			/* Half small (512 bytes to 1 MiB), half 1 to 9 MiB. */
			size_t bytes = r % 2 ? 512 + (size_t)(rand_r(&seed) % MiB)
			                     : MiB + (size_t)(rand_r(&seed) % (8 * MiB));
			CUresult rc = cuMemAlloc_v2(&held[n], bytes);
			ASSERT(rc == CUDA_SUCCESS || rc == CUDA_ERROR_OUT_OF_MEMORY);
			n += rc == CUDA_SUCCESS;
		} else {
			int k = (int)(rand_r(&seed) % (unsigned)n);
			ASSERT_CU(cuMemFree_v2(held[k]), CUDA_SUCCESS);
			held[k] = held[--n];
		}
		within(churn_cap);
	}
	while (n)
		ASSERT_CU(cuMemFree_v2(held[--n]), CUDA_SUCCESS);
	return NULL;
}

static int child_churn(void)
{
	churn_cap = ht_env_u64("T_CAP");
	CUdevice dev = ht_ctx();
	nv = ht_nvml_dev(dev);
	ASSERT_CU(cuCtxGetCurrent(&churn_ctx), CUDA_SUCCESS);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(pthread_create(&t[i], NULL, churner, (void *)(uintptr_t)(i + 1)), 0);
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(pthread_join(t[i], NULL), 0);
	fprintf(stderr, "churn: the card holds %llu MiB at the end\n",
	        (unsigned long long)(ht_phys_used(nv) / MiB));
	within(churn_cap);
	return 0;
}

/* The driver takes 100 MiB through no hooked call, then 200 MiB are asked
 * for with 250 MiB of room left under the cap by the allocations: 50 MiB
 * too many on the card. */
static int child_lag(int refused)
{
	uint64_t cap = ht_env_u64("T_CAP");
	CUresult (*take)(CUdevice, long long);
	*(void **)&take = dlsym(RTLD_DEFAULT, "vramsim_take");
	ASSERT(take != NULL);
	CUdevice dev = ht_ctx();
	nv = ht_nvml_dev(dev);
	CUdeviceptr a, b;
	uint64_t f = ht_free();
	ASSERT_CU(cuMemAlloc_v2(&a, f - 250 * MiB), CUDA_SUCCESS);
	ASSERT_CU(take(dev, 100 * MiB), CUDA_SUCCESS);
	CUresult rc = cuMemAlloc_v2(&b, 200 * MiB);
	if (refused) {
		ASSERT_CU(rc, CUDA_ERROR_OUT_OF_MEMORY);
		within(cap);
	} else {
		ASSERT_CU(rc, CUDA_SUCCESS);
	}
	return 0;
}

static int child_refusals(void)
{
	CUdeviceptr p[512], x;
	ht_ctx();
	int n = 0;
	while (n < 512 && cuMemAlloc_v2(&p[n], 2 * MiB) == CUDA_SUCCESS)
		n++;
	ASSERT(n > 0 && n < 512);
	for (int i = 0; i < 5000; i++)
		ASSERT_CU(cuMemAlloc_v2(&x, 2 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
	return 0;
}

static int child_contexts(void)
{
	CUdevice dev = ht_ctx();
	CUcontext c[3];
	CUdeviceptr p;
	for (int i = 0; i < 3; i++)
		ASSERT_CU(cuCtxCreate_v2(&c[i], 0, dev), CUDA_SUCCESS);
	ASSERT_CU(cuMemAlloc_v2(&p, 2 * MiB), CUDA_SUCCESS);
	for (int i = 0; i < 3; i++)
		ASSERT_CU(cuCtxDestroy_v2(c[i]), CUDA_SUCCESS);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		if (!strcmp(argv[1], "refusals"))
			return child_refusals();
		if (!strcmp(argv[1], "contexts"))
			return child_contexts();
		if (!strcmp(argv[1], "leftover"))
			return child_leftover();
		if (!strcmp(argv[1], "churn"))
			return child_churn();
		if (!strcmp(argv[1], "lag"))
			return child_lag(1);
		if (!strcmp(argv[1], "longlag"))
			return child_lag(0);
		return 2;
	}
	uint64_t total = ht_total();
	uint64_t cap = total / 4 / PAGE * PAGE;
	if (cap > GiB)
		cap = GiB;
	char limit[64];
	snprintf(limit, sizeof limit, "VRAMCTL_LIMIT=%llu", (unsigned long long)cap);
	const char *env[] = {"VRAMCTL_COUNT", limit, ht_kv("T_CAP", cap), NULL};
	ASSERT_EQ(ht_run("leftover", env), 0);

	const char *churn[] = {"VRAMCTL_COUNT", "VRAMCTL_LIMIT=256M", ht_kv("T_CAP", 256 * MiB),
	                       NULL};
	ASSERT_EQ(ht_run("churn", churn), 0);

	if (!getenv("VR_TEST_DRIVER") || strcmp(getenv("VR_TEST_DRIVER"), "sim") != 0) {
		printf("ok (lag: needs the simulator)\n");
		return 0;
	}
	const char *lag[] = {"VRAMCTL_COUNT", "VRAMCTL_LIMIT=1G", ht_kv("T_CAP", GiB),
	                     "VRAMSIM_NVML_LAG_MS=300", NULL};
	ASSERT_EQ(ht_run("lag", lag), 0);
	ASSERT_EQ(ht_err_count("lag", "did not catch up"), 0);
	const char *longlag[] = {"VRAMCTL_COUNT", "VRAMCTL_LIMIT=1G", ht_kv("T_CAP", GiB),
	                         "VRAMSIM_NVML_LAG_MS=3000", NULL};
	ASSERT_EQ(ht_run("longlag", longlag), 0);
	ASSERT_EQ(ht_err_count("longlag", "NVML's figures did not catch up with the driver's"), 1);

	const char *fault = "VRAMSIM_FAULT=nvmlDeviceGetHandleByUUID:200+:"
	                    "NVML_ERROR_UNKNOWN";
	const char *refusals[] = {"VRAMCTL_COUNT", "VRAMCTL_LIMIT=256M", fault, NULL};
	ASSERT_EQ(ht_run("refusals", refusals), 0);
	ASSERT_EQ(ht_err_count("refusals", "does not tell this process's use"), 0);
	const char *contexts[] = {"VRAMCTL_COUNT", "VRAMCTL_LIMIT=256M", "VRAMSIM_CONTEXT_BYTES=0",
	                          "VRAMSIM_FAULT=nvmlDeviceGetHandleByUUID:50+:"
	                          "NVML_ERROR_UNKNOWN",
	                          NULL};
	ASSERT_EQ(ht_run("contexts", contexts), 0);
	ASSERT_EQ(ht_err_count("contexts", "does not tell this process's use"), 0);
	printf("ok\n");
	return 0;
}
