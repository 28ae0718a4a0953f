/*
 * fake_nvml - a minimal libnvidia-ml.so.1 for test_nvml: one GPU and three
 * compute processes, served through nvmlDeviceGetComputeRunningProcesses_v3
 * with the entry layout named by FAKE_NVML_STRIDE at build time: 32 bytes
 * (R535 drivers: usedGpuCcProtectedMemory added without a version bump) or
 * 24 (nvmlProcessInfo_v2_t). It follows the NVML_ERROR_INSUFFICIENT_SIZE
 * protocol and reports one process's usage as unknown (ULLONG_MAX). No
 * _v2, no plain call, no nvmlDeviceGetMemoryInfo_v2: the reader must cope.
 */
#include <stdint.h>
#include <string.h>

#ifndef FAKE_NVML_STRIDE
#define FAKE_NVML_STRIDE 32
#endif

#define EXPORT __attribute__((visibility("default")))

struct entry {
	unsigned int pid;
	unsigned long long used;
	unsigned int gi, ci;
#if FAKE_NVML_STRIDE == 32
	unsigned long long cc_protected;
#endif
};
_Static_assert(sizeof(struct entry) == FAKE_NVML_STRIDE, "layout");

struct mem1 {
	unsigned long long total, free, used;
};

/* The entry points, as the reader looks them up with dlsym. */
EXPORT int nvmlInit_v2(void);
EXPORT int nvmlShutdown(void);
EXPORT int nvmlDeviceGetCount_v2(unsigned int *n);
EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **h);
EXPORT int nvmlDeviceGetUUID(void *h, char *buf, unsigned int len);
EXPORT int nvmlDeviceGetName(void *h, char *buf, unsigned int len);
EXPORT int nvmlDeviceGetMemoryInfo(void *h, struct mem1 *m);
EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned int *count, struct entry *out);
EXPORT const char *nvmlErrorString(int r);

static const struct {
	unsigned pid;
	unsigned long long used;
} procs[] = {{1111, 100ULL << 20}, {2222, ~0ULL}, {3333, 300ULL << 20}};

EXPORT int nvmlInit_v2(void)
{
	return 0;
}
EXPORT int nvmlShutdown(void)
{
	return 0;
}
EXPORT int nvmlDeviceGetCount_v2(unsigned int *n)
{
	*n = 1;
	return 0;
}
EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **h)
{
	if (i != 0)
		return 2;
	*h = (void *)procs;
	return 0;
}
EXPORT int nvmlDeviceGetUUID(void *h, char *buf, unsigned int len)
{
	(void)h;
	const char *u = "GPU-fa4efa4e-0000-0000-0000-000000000535";
	if (len < strlen(u) + 1)
		return 7;
	strcpy(buf, u);
	return 0;
}
EXPORT int nvmlDeviceGetName(void *h, char *buf, unsigned int len)
{
	(void)h;
	if (len < 16)
		return 7;
	strcpy(buf, "Fake R535");
	return 0;
}
EXPORT int nvmlDeviceGetMemoryInfo(void *h, struct mem1 *m)
{
	(void)h;
	m->total = 8ULL << 30;
	m->used = 1ULL << 30;
	m->free = m->total - m->used;
	return 0;
}
EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned int *count, struct entry *out)
{
	(void)h;
	unsigned n = sizeof(procs) / sizeof(procs[0]);
	if (*count < n || !out) {
		*count = n;
		return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
	}
	for (unsigned i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].pid = procs[i].pid;
		out[i].used = procs[i].used;
		out[i].gi = out[i].ci = 0xFFFFFFFFu;
	}
	*count = n;
	return 0;
}
EXPORT const char *nvmlErrorString(int r)
{
	return r == 7 ? "Insufficient Size" : "error";
}
