/*
 * nvmllimit - sets or reads the driver's per-cgroup memory limits of GPU 0
 * through NVML, as root does on an R615 driver: for tests on the simulated
 * NVML (never needed on a real machine: nvidia-smi does it there).
 *
 *   nvmllimit set NAMESPACE SOFT HARD   (bytes; HARD "max": no limit)
 *   nvmllimit get NAMESPACE             prints "soft S hard H used U", or "none"
 *                                       (no limit set: NOT_SUPPORTED)
 *
 * Exit status 0, or 1 with NVML's error on stderr.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/nvml_api.h"

int main(int argc, char **argv)
{
	void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	vr_pfn_nvmlInit_v2 init;
	vr_pfn_nvmlDeviceGetHandleByIndex_v2 by_index;
	vr_pfn_nvmlDeviceSetMemoryLimits_v1 set;
	vr_pfn_nvmlDeviceGetMemoryLimits_v1 get;
	nvmlDevice_t d;
	if (!h || argc < 3) {
		fprintf(stderr, "usage: nvmllimit set NS SOFT HARD | get NS (NVML: %s)\n",
		        h ? "ok" : dlerror());
		return 2;
	}
	*(void **)&init = dlsym(h, "nvmlInit_v2");
	*(void **)&by_index = dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
	*(void **)&set = dlsym(h, "nvmlDeviceSetMemoryLimits_v1");
	*(void **)&get = dlsym(h, "nvmlDeviceGetMemoryLimits_v1");
	int r = init && by_index && set && get ? init() : NVML_ERROR_FUNCTION_NOT_FOUND;
	if (r == NVML_SUCCESS)
		r = by_index(0, &d);
	if (r == NVML_SUCCESS && !strcmp(argv[1], "set") && argc == 5) {
		nvmlSetMemoryLimits_v1_t l = {.nameSpace = argv[2],
		                              .softLimit = strtoull(argv[3], NULL, 10),
		                              .hardLimit = strcmp(argv[4], "max")
		                                               ? strtoull(argv[4], NULL, 10)
		                                               : NVML_DEVICE_MEMORY_LIMIT_MAX};
		r = set(d, &l);
	} else if (r == NVML_SUCCESS && !strcmp(argv[1], "get") && argc == 3) {
		nvmlGetMemoryLimits_v1_t l = {.nameSpace = argv[2]};
		r = get(d, &l);
		if (r == NVML_SUCCESS)
			printf("soft %llu hard %llu used %llu\n", l.softLimit, l.hardLimit,
			       l.currentUsed);
		/* R615 answers NOT_SUPPORTED for a cgroup with no limit set. */
		if (r == NVML_ERROR_NOT_SUPPORTED) {
			printf("none\n");
			r = NVML_SUCCESS;
		}
	} else if (r == NVML_SUCCESS) {
		fprintf(stderr, "nvmllimit: bad arguments\n");
		return 2;
	}
	if (r != NVML_SUCCESS) {
		fprintf(stderr, "nvmllimit: NVML error %d\n", r);
		return 1;
	}
	return 0;
}
