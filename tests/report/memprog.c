/*
 * memprog - a GPU program for the report's tests, linked with -lcuda as
 * CUDA C programs are. It runs the operations given as arguments on GPU 0,
 * each through its own function so that call sites are known:
 *
 *   keep MIB      allocate and never free (a leak) - in keep_linear()
 *   vmm MIB       cuMemCreate and never release    - in keep_vmm()
 *   host MIB      cuMemAllocHost and never free    - in keep_host()
 *   temp MIB      allocate and free                - in temp_linear()
 *   pool MIB      cuMemAllocAsync + cuMemFreeAsync on the default pool, which
 *                 keeps what it got (release threshold: all): a cache at exit
 *   load PATH     dlopen PATH (a library named like a framework's)
 *   deny MIB      an allocation that must be refused (exit 3 if granted)
 *   many N        N pairs of 4 KiB allocate + free
 *   sleep MS      sleep (for pictures of a timeline; tests never time)
 *   ready         print "ready PID" and flush (tests synchronise on it)
 *   wait          block until stdin closes
 *
 * Exit status 0, or 2 when a driver call that should succeed fails.
 * MEMPROG_GO_ON set: a refused context is said and the program goes on.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VR_CUDA_PROTOTYPES
#include "common/cuda_api.h"

#define MIB (1024ull * 1024)

static CUdevice dev;

static void check(CUresult rc, const char *what)
{
	if (rc != CUDA_SUCCESS) {
		fprintf(stderr, "memprog: %s failed: %d\n", what, (int)rc);
		exit(2);
	}
}

__attribute__((noinline)) static void keep_linear(size_t bytes)
{
	CUdeviceptr p;
	check(cuMemAlloc_v2(&p, bytes), "keep");
	__asm__ volatile("" ::: "memory"); /* keeps the call a call */
}

__attribute__((noinline)) static void keep_vmm(size_t bytes)
{
	CUmemAllocationProp prop;
	CUmemGenericAllocationHandle h;
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	check(cuMemCreate(&h, bytes, &prop, 0), "vmm");
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void keep_host(size_t bytes)
{
	void *p;
	check(cuMemAllocHost_v2(&p, bytes), "host");
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void temp_linear(size_t bytes)
{
	CUdeviceptr p;
	check(cuMemAlloc_v2(&p, bytes), "temp");
	check(cuMemFree_v2(p), "temp free");
}

/* Memory a stream-ordered pool keeps after the program freed it. */
static void pool_keep(size_t bytes)
{
	CUstream s;
	CUmemoryPool pool;
	CUdeviceptr p;
	cuuint64_t keep = UINT64_MAX;
	check(cuStreamCreate(&s, 0), "stream");
	check(cuDeviceGetDefaultMemPool(&pool, dev), "default pool");
	check(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep), "threshold");
	check(cuMemAllocAsync(&p, bytes, s), "pool alloc");
	check(cuMemFreeAsync(p, s), "pool free");
	check(cuStreamSynchronize(s), "sync");
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	check(cuInit(0), "cuInit");
	check(cuDeviceGet(&dev, 0), "cuDeviceGet");
	/* MEMPROG_GO_ON: a program that goes on when its context is refused
	 * (its later calls then find no context). */
	CUresult rc = cuDevicePrimaryCtxRetain(&ctx, dev);
	if (rc != CUDA_SUCCESS && getenv("MEMPROG_GO_ON"))
		fprintf(stderr, "memprog: retain failed: %d; going on\n", (int)rc);
	else
		check(rc, "retain");
	if (rc == CUDA_SUCCESS)
		check(cuCtxSetCurrent(ctx), "set current");
	for (int i = 1; i < argc; i++) {
		const char *op = argv[i];
		unsigned long long n = i + 1 < argc ? strtoull(argv[i + 1], NULL, 10) : 0;
		if (!strcmp(op, "keep")) {
			keep_linear(n * MIB);
			i++;
		} else if (!strcmp(op, "vmm")) {
			keep_vmm(n * MIB);
			i++;
		} else if (!strcmp(op, "host")) {
			keep_host(n * MIB);
			i++;
		} else if (!strcmp(op, "temp")) {
			temp_linear(n * MIB);
			i++;
		} else if (!strcmp(op, "pool")) {
			pool_keep(n * MIB);
			i++;
		} else if (!strcmp(op, "load")) {
			if (i + 1 >= argc || !dlopen(argv[i + 1], RTLD_NOW)) {
				fprintf(stderr, "memprog: cannot load %s\n",
				        i + 1 < argc ? argv[i + 1] : "");
				return 2;
			}
			i++;
		} else if (!strcmp(op, "deny")) {
			CUdeviceptr p;
			if (cuMemAlloc_v2(&p, n * MIB) == CUDA_SUCCESS) {
				fprintf(stderr, "memprog: %llu MiB was granted\n", n);
				return 3;
			}
			i++;
		} else if (!strcmp(op, "many")) {
			CUdeviceptr p;
			for (unsigned long long k = 0; k < n; k++) {
				check(cuMemAlloc_v2(&p, 4096), "many");
				check(cuMemFree_v2(p), "many free");
			}
			i++;
		} else if (!strcmp(op, "sleep")) {
			usleep((useconds_t)(n * 1000));
			i++;
		} else if (!strcmp(op, "ready")) {
			printf("ready %d\n", (int)getpid());
			fflush(stdout);
		} else if (!strcmp(op, "wait")) {
			char buf[64];
			while (read(0, buf, sizeof buf) > 0)
				;
		} else {
			fprintf(stderr, "memprog: unknown operation '%s'\n", op);
			return 2;
		}
	}
	return 0;
}
