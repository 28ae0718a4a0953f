/*
 * hooktest.h - helpers for the tests of the injected library. Each test is
 * one program that plays two parts: run plainly (by tests/run), it is the
 * parent, which asks the driver for the real numbers and starts itself again
 * as `self MODE` with LD_PRELOAD=libvramctl.so and a VRAMCTL_* environment;
 * the child does the checking under the library and exits 0 or 1. The
 * child's stderr is kept in $TMPDIR/MODE.err so the parent can check what
 * the library said.
 */
#ifndef VRAMCTL_HOOKTEST_H
#define VRAMCTL_HOOKTEST_H

#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

#define VR_CUDA_PROTOTYPES
#include "common/cuda_api.h"
#define VR_NVML_PROTOTYPES
#include "common/nvml_api.h"
#include "common/size.h"
#include "test.h"
#include "cudatest.h"

#define MiB (1024ull * 1024)
#define GiB (1024ull * MiB)

static inline const char *ht_build(void)
{
	const char *b = getenv("VR_BUILD");
	if (!b)
		SKIP("VR_BUILD is not set (run through tests/run)");
	return b;
}

static inline const char *ht_lib(void)
{
	static char path[1024];
	snprintf(path, sizeof path, "%s/libvramctl.so", ht_build());
	return path;
}

static inline const char *ht_tmp(void)
{
	const char *t = getenv("TMPDIR");
	return t ? t : "/tmp";
}

/*
 * Runs `self mode` with the preload and env ("NAME=value", or "NAME" to
 * unset; NULL-terminated). LD_PRELOAD is the library unless env names it.
 * Returns the child's exit status (128+N for a signal).
 */
static inline int ht_run(const char *mode, const char *const *env)
{
	char err[1024];
	snprintf(err, sizeof err, "%s/%s.err", ht_tmp(), mode);
	fflush(NULL);
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		setenv("LD_PRELOAD", ht_lib(), 1);
		for (int i = 0; env && env[i]; i++) {
			/* Only the name is copied: values may be long. */
			char name[256];
			const char *eq = strchr(env[i], '=');
			size_t n = eq ? (size_t)(eq - env[i]) : strlen(env[i]);
			snprintf(name, sizeof name, "%.*s", (int)n, env[i]);
			if (eq)
				setenv(name, eq + 1, 1);
			else
				unsetenv(name);
		}
		int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0) {
			dup2(fd, 2);
			close(fd);
		}
		execl("/proc/self/exe", "hooktest-child", mode, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	/* Show what the child said, for the log. */
	FILE *f = fopen(err, "r");
	if (f) {
		char line[1024];
		while (fgets(line, sizeof line, f))
			fprintf(stderr, "  [%s] %s", mode, line);
		fclose(f);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* How many times needle occurs in the child's stderr of mode. */
static inline int ht_err_count(const char *mode, const char *needle)
{
	char path[1024], buf[65536];
	snprintf(path, sizeof path, "%s/%s.err", ht_tmp(), mode);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	int c = 0;
	for (char *p = buf; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		c++;
	return c;
}

static inline size_t ht_err_size(const char *mode)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s.err", ht_tmp(), mode);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fclose(f);
	return n > 0 ? (size_t)n : 0;
}

/* cuInit; returns device 0. */
static inline CUdevice ht_dev0(void)
{
	CUdevice dev;
	ASSERT_CU(cuInit(0), CUDA_SUCCESS);
	ASSERT_CU(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
	return dev;
}

/* cuInit, device 0's primary context made current. Returns the device. */
static inline CUdevice ht_ctx(void)
{
	CUdevice dev = ht_dev0();
	CUcontext ctx;
	ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
	ASSERT_CU(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
	return dev;
}

/* Device 0's physical total as the driver reports it: for the parent, which
 * runs without the library. */
static inline uint64_t ht_total(void)
{
	CUdevice dev = ht_dev0();
	size_t total;
	ASSERT_CU(cuDeviceTotalMem_v2(&total, dev), CUDA_SUCCESS);
	return total;
}

/* dev's UUID as NVML and VRAMCTL_LIMIT write it ("GPU-xxxxxxxx-..."). */
static inline void ht_uuid_text(CUdevice dev, char *text, size_t len)
{
	CUuuid u;
	ASSERT_CU(cuDeviceGetUuid(&u, dev), CUDA_SUCCESS);
	vr_format_uuid((const unsigned char *)u.bytes, text, len);
}

/* Initialises NVML and returns the handle of the card that is dev (found by
 * UUID: NVML numbers the cards its own way). */
static inline nvmlDevice_t ht_nvml_dev(CUdevice dev)
{
	char text[64];
	nvmlDevice_t n;
	ht_uuid_text(dev, text, sizeof text);
	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetHandleByUUID(text, &n), NVML_SUCCESS);
	return n;
}

/* Device 0's total as NVML reports it, for the parent (no library): on a
 * real card larger than cuDeviceTotalMem, as NVML also counts the memory the
 * driver reserves for itself. Uncapped, each interface keeps its own. */
static inline uint64_t ht_nvml_total(void)
{
	nvmlMemory_t m;
	ASSERT_CU(nvmlDeviceGetMemoryInfo(ht_nvml_dev(ht_dev0()), &m), NVML_SUCCESS);
	return m.total;
}

/* What a linear block takes on the card, and so in the books: over 1 MiB,
 * whole 2 MiB pages (src/hook/alloc.c, docs/real-gpu.md). */
static inline uint64_t ht_on_card(uint64_t bytes)
{
	return bytes > MiB ? (bytes + 2 * MiB - 1) / (2 * MiB) * (2 * MiB) : bytes;
}

/* n tenths of cap in whole 2 MiB pages: a block that takes on the card
 * exactly what it asks for. */
static inline uint64_t ht_tenths(uint64_t cap, unsigned n)
{
	return cap / 10 * n / (2 * MiB) * (2 * MiB);
}

static inline uint64_t ht_env_u64(const char *name)
{
	const char *v = getenv(name);
	if (!v)
		TEST_FAILF("%s is not set", name);
	return strtoull(v, NULL, 10);
}

/* "NAME=value" with a number, in a static ring of buffers. */
static inline const char *ht_kv(const char *name, uint64_t v)
{
	static char bufs[8][128];
	static int i;
	char *b = bufs[i++ & 7];
	snprintf(b, 128, "%s=%llu", name, (unsigned long long)v);
	return b;
}

/* The number after "field": in `vramctl status --json` (run without the
 * library), first after the line containing anchor. UINT64_MAX: not there. */
static inline uint64_t ht_status_u64(const char *anchor, const char *field)
{
	char cmd[2048], line[512], key[128];
	snprintf(cmd, sizeof cmd, "env -u LD_PRELOAD %s/vramctl status --json", ht_build());
	snprintf(key, sizeof key, "\"%s\": ", field);
	FILE *f = popen(cmd, "r");
	ASSERT(f != NULL);
	int seen = 0;
	uint64_t v = UINT64_MAX;
	while (fgets(line, sizeof line, f)) {
		seen |= strstr(line, anchor) != NULL;
		const char *at = strstr(line, key);
		if (seen && at && v == UINT64_MAX)
			v = strtoull(at + strlen(key), NULL, 10);
	}
	ASSERT_EQ(pclose(f), 0);
	return v;
}

/* Free bytes the program sees on the current device. */
static inline uint64_t ht_free(void)
{
	size_t f = 0, t = 0;
	ASSERT_CU(cuMemGetInfo_v2(&f, &t), CUDA_SUCCESS);
	return f;
}

/* What the card holds for this process, by NVML's process list (which
 * vramctl does not touch): the driver's own accounting. */
static inline uint64_t ht_phys_used(nvmlDevice_t nvdev)
{
	nvmlProcessInfo_t info[64];
	unsigned int n = 64;
	ASSERT_CU(nvmlDeviceGetComputeRunningProcesses_v3(nvdev, &n, info), NVML_SUCCESS);
	for (unsigned i = 0; i < n; i++)
		if (info[i].pid == (unsigned)getpid())
			return info[i].usedGpuMemory;
	return 0;
}

#endif /* VRAMCTL_HOOKTEST_H */
