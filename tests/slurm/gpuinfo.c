/*
 * gpuinfo - what one Slurm task sees of GPU 0, for tests/slurm/cluster.sh.
 *
 *   gpuinfo                 print "total=B free=B devtotal=B" and the
 *                           vramctl contract in the task's environment
 *   gpuinfo hold MIB DIR N  allocate MIB MiB, print "alloc=ok" or
 *                           "alloc=denied", then wait until N tasks have
 *                           written DIR/<rank> (bounded: 30 s), so all hold
 *                           their memory at once; then free and exit 0
 *
 * The driver is reached as cudart does it: dlopen("libcuda.so.1") + dlsym.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cuda_api.h"

typedef CUresult (*init_fn)(unsigned int);
typedef CUresult (*dev_get_fn)(CUdevice *, int);
typedef CUresult (*retain_fn)(CUcontext *, CUdevice);
typedef CUresult (*set_fn)(CUcontext);
typedef CUresult (*info_fn)(size_t *, size_t *);
typedef CUresult (*total_fn)(size_t *, CUdevice);
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);

	if (!p) {
		fprintf(stderr, "gpuinfo: %s: %s\n", name, dlerror());
		exit(2);
	}
	return p;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v ? v : "(unset)";
}

static int count_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	CUdevice dev;
	CUcontext ctx;
	size_t free_b = 0, total_b = 0, dev_total = 0;
	CUresult rc;

	if (!h) {
		fprintf(stderr, "gpuinfo: %s\n", dlerror());
		return 2;
	}
	if ((rc = ((init_fn)sym(h, "cuInit"))(0)) ||
	    (rc = ((dev_get_fn)sym(h, "cuDeviceGet"))(&dev, 0)) ||
	    (rc = ((retain_fn)sym(h, "cuDevicePrimaryCtxRetain"))(&ctx, dev)) ||
	    (rc = ((set_fn)sym(h, "cuCtxSetCurrent"))(ctx)) ||
	    (rc = ((info_fn)sym(h, "cuMemGetInfo_v2"))(&free_b, &total_b)) ||
	    (rc = ((total_fn)sym(h, "cuDeviceTotalMem_v2"))(&dev_total, dev))) {
		fprintf(stderr, "gpuinfo: driver error %d\n", rc);
		return 2;
	}
	printf("rank=%s total=%zu free=%zu devtotal=%zu\n", env("SLURM_PROCID"), total_b, free_b,
	       dev_total);
	printf("rank=%s VRAMCTL_LIMIT=%s VRAMCTL_GROUP=%s LD_PRELOAD=%s\n", env("SLURM_PROCID"),
	       env("VRAMCTL_LIMIT"), env("VRAMCTL_GROUP"), env("LD_PRELOAD"));
	if (argc == 5 && !strcmp(argv[1], "hold")) {
		size_t bytes = strtoull(argv[2], NULL, 10) << 20;
		int want = atoi(argv[4]), i;
		CUdeviceptr p = 0;
		char path[4096];
		FILE *f;

		rc = ((alloc_fn)sym(h, "cuMemAlloc_v2"))(&p, bytes);
		printf("rank=%s alloc=%s (%d)\n", env("SLURM_PROCID"), rc ? "denied" : "ok", rc);
		fflush(stdout);
		snprintf(path, sizeof(path), "%s/%s", argv[3], env("SLURM_PROCID"));
		f = fopen(path, "w");
		if (!f || fclose(f)) {
			perror(path);
			return 2;
		}
		/* A barrier, not a delay: wait (at most 30 s) until every task has
		 * made its attempt, so all allocations are live at once. */
		for (i = 0; count_files(argv[3]) < want; i++) {
			struct timespec ts = {0, 10 * 1000 * 1000};

			if (i > 3000) {
				fprintf(stderr, "gpuinfo: barrier timed out\n");
				return 3;
			}
			nanosleep(&ts, NULL);
		}
		if (!rc)
			((free_fn)sym(h, "cuMemFree_v2"))(p);
	}
	return 0;
}
