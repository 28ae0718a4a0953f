/*
 * demo_app.c - the program `vramctl demo` runs: it behaves like a framework
 * that preallocates (TensorFlow, JAX). It loads the driver the way they do
 * (dlopen + dlsym of versioned names), asks how much memory the GPU has,
 * takes 90 % of what is free in one block up front, then allocates in
 * 256 MiB steps until the driver says CUDA_ERROR_OUT_OF_MEMORY, and frees
 * everything. With the frameworks' growth switches set
 * (TF_FORCE_GPU_ALLOW_GROWTH=true or XLA_PYTHON_CLIENT_PREALLOCATE=false) it
 * skips the up-front grab, as they do.
 *
 * It knows nothing of vramctl: every number it prints is what the driver
 * told it. Exit status: 0 when it ran, 1 when the driver could not be used.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_api.h"
#include "common/size.h"

#define STEP       (256ull << 20)
#define MAX_BLOCKS 512

static struct {
	vr_pfn_cuInit init;
	vr_pfn_cuDeviceGet device_get;
	vr_pfn_cuDeviceTotalMem_v2 total_mem;
	vr_pfn_cuDevicePrimaryCtxRetain ctx_retain;
	vr_pfn_cuDevicePrimaryCtxRelease_v2 ctx_release;
	vr_pfn_cuCtxSetCurrent ctx_set;
	vr_pfn_cuMemGetInfo_v2 mem_info;
	vr_pfn_cuMemAlloc_v2 alloc;
	vr_pfn_cuMemFree_v2 free;
	vr_pfn_cuGetErrorName error_name;
} cu;

static const char *errname(CUresult rc)
{
	const char *s = NULL;

	if (!cu.error_name || cu.error_name(rc, &s) != CUDA_SUCCESS || !s)
		return "an unknown error";
	return s;
}

static const char *sz(uint64_t bytes, char *buf, size_t len)
{
	return vr_format_size(bytes, buf, len);
}

static int load(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		printf("  [app] cannot load the CUDA driver: %s\n", dlerror());
		return -1;
	}
#define SYM(field, name)                                                                           \
	do {                                                                                       \
		*(void **)&cu.field = dlsym(h, name);                                              \
		if (!cu.field) {                                                                   \
			printf("  [app] the driver lacks %s\n", name);                             \
			return -1;                                                                 \
		}                                                                                  \
	} while (0)
	SYM(init, "cuInit");
	SYM(device_get, "cuDeviceGet");
	SYM(total_mem, "cuDeviceTotalMem_v2");
	SYM(ctx_retain, "cuDevicePrimaryCtxRetain");
	SYM(ctx_release, "cuDevicePrimaryCtxRelease_v2");
	SYM(ctx_set, "cuCtxSetCurrent");
	SYM(mem_info, "cuMemGetInfo_v2");
	SYM(alloc, "cuMemAlloc_v2");
	SYM(free, "cuMemFree_v2");
	SYM(error_name, "cuGetErrorName");
#undef SYM
	return 0;
}

static int growth_asked(void)
{
	const char *tf = getenv("TF_FORCE_GPU_ALLOW_GROWTH");
	const char *xla = getenv("XLA_PYTHON_CLIENT_PREALLOCATE");

	return (tf && !strcmp(tf, "true")) || (xla && !strcmp(xla, "false"));
}

int main(void)
{
	CUdeviceptr blocks[MAX_BLOCKS];
	int nblocks = 0, steps = 0;
	size_t total = 0, free_b = 0, dtotal = 0;
	uint64_t held = 0;
	char a[32], b[32];
	CUcontext ctx;
	CUdevice dev;
	CUresult rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (load() < 0)
		return 1;
	if ((rc = cu.init(0)) != CUDA_SUCCESS || (rc = cu.device_get(&dev, 0)) != CUDA_SUCCESS ||
	    (rc = cu.ctx_retain(&ctx, dev)) != CUDA_SUCCESS ||
	    (rc = cu.ctx_set(ctx)) != CUDA_SUCCESS) {
		printf("  [app] cannot start on GPU 0: %s\n", errname(rc));
		return 1;
	}
	cu.total_mem(&dtotal, dev);
	cu.mem_info(&free_b, &total);
	printf("  [app] GPU 0 has %s in total (cuDeviceTotalMem), %s free (cuMemGetInfo)\n",
	       sz(dtotal, a, sizeof(a)), sz(free_b, b, sizeof(b)));

	if (growth_asked()) {
		printf("  [app] growth switch is set: no up-front grab, memory is taken as "
		       "needed\n");
	} else {
		/* In whole 2 MiB pages, as the card takes a block this large: what
		 * the app asks for is then what vramctl says it holds. */
		uint64_t want = (uint64_t)free_b / 10 * 9 / (2u << 20) * (2u << 20);

		printf("  [app] preallocating 90%% of free memory: %s in one block ...\n",
		       sz(want, a, sizeof(a)));
		rc = cu.alloc(&blocks[nblocks], want);
		if (rc == CUDA_SUCCESS) {
			nblocks++;
			held += want;
			printf("  [app]   granted\n");
		} else {
			printf("  [app]   refused: %s\n", errname(rc));
		}
	}

	printf("  [app] allocating in %s steps until the driver refuses ...\n",
	       sz(STEP, a, sizeof(a)));
	while (nblocks < MAX_BLOCKS) {
		rc = cu.alloc(&blocks[nblocks], STEP);
		if (rc != CUDA_SUCCESS) {
			printf("  [app]   step %d refused: %s\n", steps + 1, errname(rc));
			break;
		}
		nblocks++;
		steps++;
		held += STEP;
	}
	printf("  [app]   %d step%s granted; the program now holds %s\n", steps,
	       steps == 1 ? "" : "s", sz(held, a, sizeof(a)));
	cu.mem_info(&free_b, &total);
	printf("  [app] cuMemGetInfo now says: %s free of %s\n", sz(free_b, a, sizeof(a)),
	       sz(total, b, sizeof(b)));

	for (int i = 0; i < nblocks; i++)
		cu.free(blocks[i]);
	cu.ctx_release(dev);
	printf("  [app] freed everything\n");
	return 0;
}
