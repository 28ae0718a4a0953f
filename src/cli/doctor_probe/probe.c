/*
 * probe.c - vramctl-doctor-probe: the program `vramctl doctor` runs under a
 * small test cap to see that every way a real program reaches the driver
 * leads through vramctl:
 *
 *   linked        a direct call of cuMemAlloc_v2 (linked with -lcuda, as
 *                 CuPy and CUDA C are)
 *   dlsym         dlopen("libcuda.so.1") + dlsym of versioned names
 *                 (TensorFlow, XLA/JAX)
 *   procaddr      cuGetProcAddress_v2 at CUDA 12.0 (cudart 12, so PyTorch)
 *   procaddr_old  the four-argument cuGetProcAddress at CUDA 11.3 (older cudart)
 *   ptds          cuGetProcAddress_v2 with the per-thread default stream flag:
 *                 cuMemAllocAsync_ptsz (cudart built with --default-stream
 *                 per-thread)
 *
 * On each way: the memory query must report the cap as the device's total,
 * a request just past the cap must be refused with CUDA_ERROR_OUT_OF_MEMORY,
 * and a small one inside it must be granted (and is freed at once).
 *
 *   usage: vramctl-doctor-probe DEVICE CAP_BYTES
 *
 * Prints "loaded yes|no" and then one line per way, "WAY ok|fail|skip TEXT"
 * (skip: the driver is older than the way), on stdout, and exits 0 when it could run at all (doctor
 * reads the lines), 2 when it could not set up (the reason on stdout as "setup TEXT").
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VR_CUDA_PROTOTYPES
#include "common/cuda_api.h"

#define SMALL (1ull << 20)
#define OVER  (8ull << 20)

struct way {
	const char *name;
	vr_pfn_cuMemGetInfo_v2 info;
	vr_pfn_cuMemAlloc_v2 alloc;         /* linear ways */
	vr_pfn_cuMemFree_v2 mfree;          /* linear ways */
	vr_pfn_cuMemAllocAsync alloc_async; /* ptds */
	vr_pfn_cuMemFreeAsync free_async;   /* ptds */
	vr_pfn_cuStreamSynchronize sync;    /* ptds */
	const char *missing;                /* why the way could not be taken */
	const char *skip;                   /* why the way does not apply */
};

static CUresult way_alloc(const struct way *w, CUdeviceptr *p, size_t n)
{
	if (w->alloc)
		return w->alloc(p, n);
	return w->alloc_async(p, n, CU_STREAM_PER_THREAD);
}

static void way_free(const struct way *w, CUdeviceptr p)
{
	if (w->mfree) {
		w->mfree(p);
		return;
	}
	w->free_async(p, CU_STREAM_PER_THREAD);
	w->sync(CU_STREAM_PER_THREAD);
}

static void run_way(const struct way *w, size_t cap)
{
	size_t fr = 0, total = 0;
	CUdeviceptr p = 0;
	CUresult rc;
	if (w->skip) {
		printf("%s skip %s\n", w->name, w->skip);
		return;
	}
	if (w->missing) {
		printf("%s fail %s\n", w->name, w->missing);
		return;
	}
	rc = w->info(&fr, &total);
	if (rc != CUDA_SUCCESS) {
		printf("%s fail cuMemGetInfo_v2 returned error %d\n", w->name, (int)rc);
		return;
	}
	if (total != cap) {
		printf("%s fail cuMemGetInfo_v2 reports %.1f MiB in total, not the %.1f MiB cap\n",
		       w->name, (double)total / (1 << 20), (double)cap / (1 << 20));
		return;
	}
	rc = way_alloc(w, &p, cap + OVER);
	if (rc == CUDA_SUCCESS) {
		way_free(w, p);
		printf("%s fail %.1f MiB were granted under a %.1f MiB cap\n", w->name,
		       (double)(cap + OVER) / (1 << 20), (double)cap / (1 << 20));
		return;
	}
	if (rc != CUDA_ERROR_OUT_OF_MEMORY) {
		printf("%s fail a request past the cap returned error %d, not "
		       "CUDA_ERROR_OUT_OF_MEMORY\n",
		       w->name, (int)rc);
		return;
	}
	rc = way_alloc(w, &p, SMALL);
	if (rc != CUDA_SUCCESS) {
		printf("%s fail 1 MiB inside the cap was refused (error %d)\n", w->name, (int)rc);
		return;
	}
	way_free(w, p);
	printf("%s ok\n", w->name);
}

/* Fills a way from a lookup function (dlsym, or a cuGetProcAddress form). */
typedef void *(*lookup_fn)(void *ctx, const char *name, int flags);

static void *by_dlsym(void *h, const char *name, int flags)
{
	(void)flags;
	return dlsym(h, name);
}

static vr_pfn_cuGetProcAddress_v2 g_gpa2;
static vr_pfn_cuGetProcAddress g_gpa1;

static void *by_procaddr(void *ctx, const char *name, int flags)
{
	(void)ctx;
	void *p = NULL;
	CUdriverProcAddressQueryResult st;
	if (g_gpa2(name, &p, 12000, (cuuint64_t)flags, &st) != CUDA_SUCCESS)
		return NULL;
	return p;
}

static void *by_procaddr_old(void *ctx, const char *name, int flags)
{
	(void)ctx;
	void *p = NULL;
	if (g_gpa1(name, &p, 11030, (cuuint64_t)flags) != CUDA_SUCCESS)
		return NULL;
	return p;
}

/* names: the dlsym form takes exported names, cuGetProcAddress base names. */
static void fill(struct way *w, lookup_fn fn, void *ctx, int versioned, int ptds)
{
	int flags = ptds ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0;
	w->info =
	    (vr_pfn_cuMemGetInfo_v2)fn(ctx, versioned ? "cuMemGetInfo_v2" : "cuMemGetInfo", flags);
	if (ptds) {
		w->alloc_async = (vr_pfn_cuMemAllocAsync)fn(ctx, "cuMemAllocAsync", flags);
		w->free_async = (vr_pfn_cuMemFreeAsync)fn(ctx, "cuMemFreeAsync", flags);
		w->sync = (vr_pfn_cuStreamSynchronize)fn(ctx, "cuStreamSynchronize", flags);
		if (!w->info || !w->alloc_async || !w->free_async || !w->sync)
			w->missing = "the driver handed out no per-thread cuMemAllocAsync";
		return;
	}
	w->alloc = (vr_pfn_cuMemAlloc_v2)fn(ctx, versioned ? "cuMemAlloc_v2" : "cuMemAlloc", flags);
	w->mfree = (vr_pfn_cuMemFree_v2)fn(ctx, versioned ? "cuMemFree_v2" : "cuMemFree", flags);
	if (!w->info || !w->alloc || !w->mfree)
		w->missing = "the driver handed out no cuMemAlloc/cuMemGetInfo";
}

int main(int argc, char **argv)
{
	char *end1, *end2;
	CUdevice dev;
	CUcontext ctx;
	CUresult rc;
	int drv = 0;
	if (argc != 3) {
		printf("setup usage: vramctl-doctor-probe DEVICE CAP_BYTES\n");
		return 2;
	}
	int ordinal = (int)strtol(argv[1], &end1, 10);
	size_t cap = (size_t)strtoull(argv[2], &end2, 10);
	if (*end1 || *end2 || cap == 0) {
		printf("setup bad arguments '%s' '%s'\n", argv[1], argv[2]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("loaded %s\n", dlsym(RTLD_DEFAULT, "vramctl_instance_v1") ? "yes" : "no");
	rc = cuInit(0);
	if (rc == CUDA_SUCCESS)
		rc = cuDeviceGet(&dev, ordinal);
	if (rc == CUDA_SUCCESS)
		rc = cuDevicePrimaryCtxRetain(&ctx, dev);
	if (rc == CUDA_SUCCESS)
		rc = cuCtxSetCurrent(ctx);
	if (rc != CUDA_SUCCESS) {
		printf("setup cannot open GPU %d (error %d)\n", ordinal, (int)rc);
		return 2;
	}
	/* The ways a driver is too old for do not apply (a runtime that needs
	 * them does not start on it). */
	cuDriverGetVersion(&drv);

	struct way linked = {.name = "linked",
	                     .info = cuMemGetInfo_v2,
	                     .alloc = cuMemAlloc_v2,
	                     .mfree = cuMemFree_v2};
	run_way(&linked, cap);

	struct way ways[4] = {
	    {.name = "dlsym"}, {.name = "procaddr"}, {.name = "procaddr_old"}, {.name = "ptds"}};
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		for (int i = 0; i < 4; i++)
			ways[i].missing = "dlopen(\"libcuda.so.1\") failed";
	} else {
		fill(&ways[0], by_dlsym, h, 1, 0);
		g_gpa2 = (vr_pfn_cuGetProcAddress_v2)dlsym(h, "cuGetProcAddress_v2");
		g_gpa1 = (vr_pfn_cuGetProcAddress)dlsym(h, "cuGetProcAddress");
		if (g_gpa2) {
			fill(&ways[1], by_procaddr, NULL, 0, 0);
			fill(&ways[3], by_procaddr, NULL, 0, 1);
		} else {
			ways[1].missing = ways[3].missing = "the driver has no cuGetProcAddress_v2";
		}
		if (g_gpa1)
			fill(&ways[2], by_procaddr_old, NULL, 0, 0);
		else
			ways[2].missing = "the driver has no cuGetProcAddress";
		if (drv < 12000)
			ways[1].skip = ways[3].skip = "cuGetProcAddress_v2 needs a CUDA 12 driver";
		if (drv < 11030)
			ways[2].skip = "cuGetProcAddress needs a CUDA 11.3 driver";
	}
	for (int i = 0; i < 4; i++)
		run_way(&ways[i], cap);
	cuDevicePrimaryCtxRelease_v2(dev);
	return 0;
}
