/*
 * driver.c - the simulated driver's entry points, devices, contexts, streams,
 * cuGetProcAddress and error strings. Memory lives in mem.c, the test
 * controls (faults, slow calls, stop points) in rules.c.
 *
 * Every exported function is generated from VR_CUDA_FUNCS: it runs the test
 * controls for its own name, then calls simi_<name>. So every entry point can
 * be made to fail, slow down or stop, and none can be forgotten.
 */
#include "driver.h"

#include "common/compiler.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sim_state g_sim = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* ---- test controls: VRAMSIM_FAULT, VRAMSIM_SLOW, VRAMSIM_STOP ---- */

enum {
#define SIM_FN_ENUM(name, params, args) SIM_FN_##name,
	VR_CUDA_FUNCS(SIM_FN_ENUM)
#undef SIM_FN_ENUM
	    SIM_FN_COUNT
};

struct sim_fn {
	const char *name;
	void *fn;
};
static const struct sim_fn sim_fns[SIM_FN_COUNT] = {
#define SIM_FN_ENTRY(name, params, args) {#name, (void *)name},
    VR_CUDA_FUNCS(SIM_FN_ENTRY)
#undef SIM_FN_ENTRY
};
static const char *const sim_fn_names[SIM_FN_COUNT] = {
#define SIM_FN_NAME(name, params, args) #name,
    VR_CUDA_FUNCS(SIM_FN_NAME)
#undef SIM_FN_NAME
};
_Static_assert(SIM_FN_COUNT <= SIM_MAX_FNS, "raise SIM_MAX_FNS");

static int error_by_name(const char *name, int *code);
static struct sim_rules g_rules = {.names = sim_fn_names,
                                   .count = SIM_FN_COUNT,
                                   .prefix = "cu",
                                   .other_prefix = "nvml",
                                   .code_by_name = error_by_name,
                                   .mu = PTHREAD_MUTEX_INITIALIZER};

static int fn_index(const char *name, size_t len)
{
	for (int i = 0; i < SIM_FN_COUNT; i++)
		if (strlen(sim_fns[i].name) == len && strncmp(sim_fns[i].name, name, len) == 0)
			return i;
	return -1;
}

/* The exported entry points themselves. */
#define SIM_DEFINE(name, params, args)                                                             \
	VR_EXPORT CUresult name params                                                             \
	{                                                                                          \
		CUresult rc_;                                                                      \
		if (VR_UNLIKELY(sim_rules_pre(&g_rules, SIM_FN_##name, &rc_)))                     \
			return rc_;                                                                \
		return simi_##name args;                                                           \
	}
VR_CUDA_FUNCS(SIM_DEFINE)
#undef SIM_DEFINE

/* ---- init, fork, devices ---- */

static _Thread_local struct {
	struct sim_ctx *stack[64];
	int depth;
} t_ctx;

static void atfork_prepare(void)
{
	pthread_mutex_lock(&g_sim.mu);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&g_sim.mu);
}

/*
 * The child starts with no driver state: contexts, allocations and card slots
 * belong to the parent (the real driver cannot be used across fork either).
 * The child may call cuInit again and gets its own slot on each card.
 */
static void atfork_child(void)
{
	pthread_mutex_init(&g_sim.mu, NULL);
	sim_mem_reset_after_fork();
	for (int i = 0; i < g_sim.ndev; i++) {
		struct sim_dev *d = &g_sim.dev[i];
		pthread_mutex_init(&d->card.mu, NULL);
		sim_card_close(&d->card);
	}
	while (g_sim.ctxs) {
		struct sim_ctx *c = g_sim.ctxs;
		g_sim.ctxs = c->next;
		free(c);
	}
	while (g_sim.streams) {
		struct sim_stream *s = g_sim.streams;
		g_sim.streams = s->next;
		free(s);
	}
	memset(g_sim.dev, 0, sizeof(g_sim.dev));
	g_sim.ndev = 0;
	g_sim.initialized = 0;
	t_ctx.depth = 0;
}

/*
 * CUDA_VISIBLE_DEVICES: a comma-separated list of ordinals or GPU-<uuid>
 * prefixes; the first invalid entry (unknown, duplicate, MIG-..., garbage)
 * hides itself and every entry after it, as the real driver does.
 */
static int visible_devices(int *map)
{
	const struct sim_config *cfg = sim_config();
	const char *s = getenv("CUDA_VISIBLE_DEVICES");
	int n = 0;
	if (!s) {
		for (int i = 0; i < cfg->ndev; i++)
			map[i] = i;
		return cfg->ndev;
	}
	while (*s && n < cfg->ndev) {
		size_t len = strcspn(s, ",");
		char tok[128];
		int phys = -1;
		const char *t = s;
		while (len && (*t == ' ' || *t == '\t')) {
			t++;
			len--;
		}
		while (len && (t[len - 1] == ' ' || t[len - 1] == '\t'))
			len--;
		if (len == 0 || len >= sizeof(tok))
			break;
		memcpy(tok, t, len);
		tok[len] = '\0';
		if (tok[0] >= '0' && tok[0] <= '9') {
			char *end;
			long v = strtol(tok, &end, 10);
			if (*end == '\0' && v >= 0 && v < cfg->ndev)
				phys = (int)v;
		} else if (strncmp(tok, "GPU-", 4) == 0 && len > 4) {
			for (int i = 0; i < cfg->ndev; i++) {
				if (strncasecmp(cfg->dev[i].uuid_str, tok, len) != 0)
					continue;
				if (phys >= 0) { /* ambiguous prefix */
					phys = -1;
					break;
				}
				phys = i;
			}
		}
		if (phys < 0)
			break;
		for (int i = 0; i < n; i++)
			if (map[i] == phys)
				phys = -1;
		if (phys < 0)
			break;
		map[n++] = phys;
		s += strcspn(s, ",");
		if (*s == ',')
			s++;
	}
	return n;
}

static void register_atfork(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

CUresult simi_cuInit(unsigned int Flags)
{
	static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
	int map[SIM_MAX_DEVICES];
	CUresult rc = CUDA_SUCCESS;

	if (Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_once(&atfork_once, register_atfork);
	/* A kernel module that differs from the libraries (a driver upgraded
	 * without a reboot): cuInit refuses, as the real driver does. */
	if (sim_release_mismatch())
		return CUDA_ERROR_SYSTEM_DRIVER_MISMATCH;
	pthread_mutex_lock(&g_sim.mu);
	if (!g_sim.initialized) {
		int n = visible_devices(map);
		if (n == 0) {
			rc = CUDA_ERROR_NO_DEVICE;
		} else {
			for (int i = 0; i < n; i++) {
				struct sim_dev *d = &g_sim.dev[i];
				memset(d, 0, sizeof(*d));
				d->phys = map[i];
				pthread_mutex_init(&d->card.mu, NULL);
				if (sim_card_open(&d->card, map[i]) != 0) {
					for (int k = 0; k < i; k++)
						sim_card_close(&g_sim.dev[k].card);
					rc = CUDA_ERROR_UNKNOWN;
					break;
				}
				d->primary.magic = SIM_MAGIC_CTX;
				d->primary.dev = i;
				d->primary.primary = 1;
				d->next_addr =
				    0x200000000000ull + (CUdeviceptr)i * 0x40000000000ull;
			}
			if (rc == CUDA_SUCCESS) {
				g_sim.ndev = n;
				g_sim.low_next = 0x10000000;
				g_sim.initialized = 1;
			}
		}
	}
	pthread_mutex_unlock(&g_sim.mu);
	return rc;
}

CUresult sim_check_init(void)
{
	return g_sim.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult simi_cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = sim_config()->driver_version;
	return CUDA_SUCCESS;
}

static struct sim_dev *get_dev(CUdevice dev)
{
	if (dev < 0 || dev >= g_sim.ndev)
		return NULL;
	return &g_sim.dev[dev];
}

CUresult simi_cuDeviceGet(CUdevice *device, int ordinal)
{
	SIM_LOCK_INIT();
	if (!device)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (ordinal < 0 || ordinal >= g_sim.ndev)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	*device = ordinal;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuDeviceGetCount(int *count)
{
	SIM_LOCK_INIT();
	if (!count)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	*count = g_sim.ndev;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuDeviceGetName(char *name, int len, CUdevice dev)
{
	SIM_LOCK_INIT();
	struct sim_dev *d = get_dev(dev);
	if (!d)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	if (!name || len <= 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	snprintf(name, (size_t)len, "%s", sim_config()->dev[d->phys].name);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	SIM_LOCK_INIT();
	struct sim_dev *d = get_dev(dev);
	if (!d)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	if (!uuid)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	memcpy(uuid->bytes, sim_config()->dev[d->phys].uuid, 16);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	return simi_cuDeviceGetUuid(uuid, dev);
}

CUresult simi_cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	SIM_LOCK_INIT();
	struct sim_dev *d = get_dev(dev);
	if (!d)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	if (!bytes)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	*bytes = d->card.file->total;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* The 32-bit entry point: values above 4 GiB are clamped to UINT_MAX. */
CUresult simi_cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
	size_t b;
	CUresult rc;
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	rc = simi_cuDeviceTotalMem_v2(&b, dev);
	if (rc == CUDA_SUCCESS)
		*bytes = b > 0xffffffffu ? 0xffffffffu : (unsigned int)b;
	return rc;
}

CUresult simi_cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	static const struct {
		int attr, value;
	} attrs[] = {
	    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
	    {2, 1024}, /* MAX_BLOCK_DIM_X */
	    {3, 1024},
	    {4, 64},
	    {5, 2147483647}, /* MAX_GRID_DIM_X */
	    {6, 65535},
	    {7, 65535},
	    {8, 49152}, /* MAX_SHARED_MEMORY_PER_BLOCK */
	    {9, 65536}, /* TOTAL_CONSTANT_MEMORY */
	    {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
	    {12, 65536},   /* MAX_REGISTERS_PER_BLOCK */
	    {13, 1980000}, /* CLOCK_RATE (kHz) */
	    {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
	    {CU_DEVICE_ATTRIBUTE_INTEGRATED, 0},
	    {19, 1},        /* CAN_MAP_HOST_MEMORY */
	    {36, 2619000},  /* MEMORY_CLOCK_RATE */
	    {37, 5120},     /* GLOBAL_MEMORY_BUS_WIDTH */
	    {38, 52428800}, /* L2_CACHE_SIZE */
	    {39, 2048},     /* MAX_THREADS_PER_MULTIPROCESSOR */
	    {40, 3},        /* ASYNC_ENGINE_COUNT */
	    {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
	    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
	    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
	    {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
	    {CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1},
	    {CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, 1},
	    {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
	    {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
	    {CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, 0},
	};
	SIM_LOCK_INIT();
	struct sim_dev *d = get_dev(dev);
	if (!d)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	if (!pi || attrib <= 0 || attrib > 200)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	*pi = 0; /* attributes not modelled read as 0 (unsupported / none) */
	for (size_t i = 0; i < VR_ARRAY_LEN(attrs); i++)
		if (attrs[i].attr == attrib)
			*pi = attrs[i].value;
	if (attrib == CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)
		*pi = 0x18 + d->phys;
	if (attrib == CU_DEVICE_ATTRIBUTE_COMPUTE_MODE)
		*pi = sim_config()->dev[d->phys].compute_mode;
	if (attrib == CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)
		*pi = sim_config()->host_vmm;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* ---- usage on the card ---- */

CUresult sim_charge(struct sim_dev *d, uint64_t bytes)
{
	if (bytes == 0)
		return CUDA_SUCCESS;
	if (bytes > INT64_MAX || sim_card_charge(&d->card, (int64_t)bytes, 0) != 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	d->used += bytes;
	return CUDA_SUCCESS;
}

void sim_uncharge(struct sim_dev *d, uint64_t bytes)
{
	if (bytes > d->used)
		bytes = d->used;
	if (bytes)
		sim_card_charge(&d->card, -(int64_t)bytes, 1);
	d->used -= bytes;
	if (d->used == 0 && d->live_ctx == 0)
		sim_card_release_slot(&d->card);
}

CUdeviceptr sim_addr_alloc(struct sim_dev *d, size_t size, size_t align)
{
	CUdeviceptr base = 0x200000000000ull + (CUdeviceptr)(d - g_sim.dev) * 0x40000000000ull;
	CUdeviceptr a;
	if (align < 512)
		align = 512;
	if (size >= SIM_GRANULARITY && align < SIM_GRANULARITY)
		align = SIM_GRANULARITY;
	a = sim_round_up(d->next_addr, align);
	if (size > 0x40000000000ull || a + size > base + 0x40000000000ull)
		return 0;
	d->next_addr = a + sim_round_up(size ? size : 1, 512);
	return a;
}

/* ---- contexts ---- */

int sim_ctx_valid(struct sim_ctx *c)
{
	if (!c)
		return 0;
	for (int i = 0; i < g_sim.ndev; i++)
		if (c == &g_sim.dev[i].primary)
			return c->alive;
	for (struct sim_ctx *p = g_sim.ctxs; p; p = p->next)
		if (p == c)
			return p->alive;
	return 0;
}

struct sim_ctx *sim_cur_ctx(CUresult *rc)
{
	struct sim_ctx *c = t_ctx.depth ? t_ctx.stack[t_ctx.depth - 1] : NULL;
	if (!sim_ctx_valid(c)) {
		*rc = CUDA_ERROR_INVALID_CONTEXT;
		return NULL;
	}
	return c;
}

static void ctx_defaults(struct sim_ctx *c)
{
	c->limits[CU_LIMIT_STACK_SIZE] = 1024;
	c->limits[CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20;
	c->limits[CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20;
}

/* Makes a context live: charges its memory. */
static CUresult ctx_activate(struct sim_ctx *c)
{
	struct sim_dev *d = &g_sim.dev[c->dev];
	uint64_t bytes = sim_config()->context_bytes;
	if (sim_config()->dev[d->phys].broken) /* VRAMSIM_DEVICE_FAIL */
		return CUDA_ERROR_UNKNOWN;
	CUresult rc = sim_charge(d, bytes);
	if (rc != CUDA_SUCCESS)
		return rc;
	/* A process with a context is listed by NVML even when it costs 0. */
	if (bytes == 0 && sim_card_charge(&d->card, 0, 0) != 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	d->live_ctx++;
	c->alive = 1;
	ctx_defaults(c);
	return CUDA_SUCCESS;
}

static void ctx_deactivate(struct sim_ctx *c)
{
	struct sim_dev *d = &g_sim.dev[c->dev];
	sim_mem_ctx_destroyed(c);
	for (struct sim_stream *s = g_sim.streams; s; s = s->next)
		if (s->ctx == c)
			s->alive = 0;
	c->alive = 0;
	d->live_ctx--;
	sim_uncharge(d, sim_config()->context_bytes + c->limit_bytes);
	c->limit_bytes = 0;
}

CUresult simi_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	SIM_LOCK_INIT();
	struct sim_dev *d = get_dev(dev);
	if (!d)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	if (!pctx)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (!d->primary.alive) {
		CUresult rc = ctx_activate(&d->primary);
		if (rc != CUDA_SUCCESS)
			SIM_UNLOCK_RETURN(rc);
	}
	d->primary.refcount++;
	*pctx = (CUcontext)&d->primary;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	SIM_LOCK_INIT();
	struct sim_dev *d = get_dev(dev);
	if (!d)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	if (d->primary.refcount <= 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_CONTEXT);
	if (--d->primary.refcount == 0 && d->primary.alive)
		ctx_deactivate(&d->primary);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuDevicePrimaryCtxRelease(CUdevice dev)
{
	return simi_cuDevicePrimaryCtxRelease_v2(dev);
}

/* Frees everything the primary context holds and makes it inactive; it stays
 * retained (cuda.h: "Resetting the primary context does not release it") and
 * becomes active again on the next retain. */
CUresult simi_cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	SIM_LOCK_INIT();
	struct sim_dev *d = get_dev(dev);
	if (!d)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	if (d->primary.alive)
		ctx_deactivate(&d->primary);
	d->primary.flags = 0; /* refcount unchanged: resetting does not release */
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuDevicePrimaryCtxReset(CUdevice dev)
{
	return simi_cuDevicePrimaryCtxReset_v2(dev);
}

CUresult simi_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	SIM_LOCK_INIT();
	struct sim_dev *d = get_dev(dev);
	if (!d)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	if (!flags || !active)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	*flags = d->primary.flags;
	*active = d->primary.alive;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* sched (0x7), MAP_HOST 0x8, LMEM_RESIZE_TO_MAX 0x10, COREDUMP_ENABLE 0x20,
 * USER_COREDUMP_ENABLE 0x40, SYNC_MEMOPS 0x80 */
#define SIM_CTX_FLAGS_MASK 0xffu
/* Known bits, and at most one scheduling mode. */
static int ctx_flags_ok(unsigned int f)
{
	unsigned int sched = f & 7u;
	return !(f & ~SIM_CTX_FLAGS_MASK) && (sched & (sched - 1)) == 0;
}

CUresult simi_cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
	SIM_LOCK_INIT();
	struct sim_dev *d = get_dev(dev);
	if (!d)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	if (!ctx_flags_ok(flags))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	d->primary.flags = flags;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* The pre-11.0 form fails once the context is active. */
CUresult simi_cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
	SIM_LOCK_INIT();
	struct sim_dev *d = get_dev(dev);
	int active = d && d->primary.alive;
	pthread_mutex_unlock(&g_sim.mu);
	if (active)
		return CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE;
	return simi_cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	SIM_LOCK_INIT();
	struct sim_dev *d = get_dev(dev);
	struct sim_ctx *c;
	CUresult rc;
	if (!d)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	if (!pctx || !ctx_flags_ok(flags))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (t_ctx.depth >= (int)VR_ARRAY_LEN(t_ctx.stack))
		SIM_UNLOCK_RETURN(CUDA_ERROR_UNKNOWN);
	c = calloc(1, sizeof(*c));
	if (!c)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	c->magic = SIM_MAGIC_CTX;
	c->dev = dev;
	c->flags = flags;
	rc = ctx_activate(c);
	if (rc != CUDA_SUCCESS) {
		free(c);
		SIM_UNLOCK_RETURN(rc);
	}
	c->next = g_sim.ctxs;
	g_sim.ctxs = c;
	t_ctx.stack[t_ctx.depth++] = c;
	*pctx = (CUcontext)c;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	return ctx_create(pctx, flags, dev);
}

CUresult simi_cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	return ctx_create(pctx, flags, dev);
}

CUresult simi_cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                             unsigned int flags, CUdevice dev)
{
	if (numParams < 0 || (numParams > 0 && !paramsArray))
		return CUDA_ERROR_INVALID_VALUE;
	return ctx_create(pctx, flags, dev);
}

CUresult simi_cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
                             CUdevice dev)
{
	if (params && params->numExecAffinityParams < 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (params && params->execAffinityParams && params->cigParams)
		return CUDA_ERROR_INVALID_VALUE; /* the two are mutually exclusive */
	return ctx_create(pctx, flags, dev);
}

CUresult simi_cuCtxDestroy_v2(CUcontext ctx)
{
	SIM_LOCK_INIT();
	struct sim_ctx *c = (struct sim_ctx *)ctx;
	if (!c)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (!sim_ctx_valid(c) || c->primary)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_CONTEXT);
	ctx_deactivate(c);
	/* No longer current to this thread; other threads find it invalid. */
	if (t_ctx.depth && t_ctx.stack[t_ctx.depth - 1] == c)
		t_ctx.depth--;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuCtxDestroy(CUcontext ctx)
{
	return simi_cuCtxDestroy_v2(ctx);
}

CUresult simi_cuCtxSetCurrent(CUcontext ctx)
{
	SIM_LOCK_INIT();
	struct sim_ctx *c = (struct sim_ctx *)ctx;
	if (!c) {
		if (t_ctx.depth)
			t_ctx.depth--;
		SIM_UNLOCK_RETURN(CUDA_SUCCESS);
	}
	if (!sim_ctx_valid(c))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_CONTEXT);
	if (t_ctx.depth)
		t_ctx.stack[t_ctx.depth - 1] = c;
	else
		t_ctx.stack[t_ctx.depth++] = c;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuCtxGetCurrent(CUcontext *pctx)
{
	SIM_LOCK_INIT();
	if (!pctx)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	*pctx = t_ctx.depth ? (CUcontext)t_ctx.stack[t_ctx.depth - 1] : NULL;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuCtxGetDevice(CUdevice *device)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (!device)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	struct sim_ctx *c = sim_cur_ctx(&rc);
	if (c)
		*device = c->dev;
	SIM_UNLOCK_RETURN(rc);
}

CUresult simi_cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
	if (!ctx)
		return simi_cuCtxGetDevice(device);
	SIM_LOCK_INIT();
	if (!device)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (!sim_ctx_valid((struct sim_ctx *)ctx))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_CONTEXT);
	*device = ((struct sim_ctx *)ctx)->dev;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuCtxPushCurrent_v2(CUcontext ctx)
{
	SIM_LOCK_INIT();
	if (!sim_ctx_valid((struct sim_ctx *)ctx))
		SIM_UNLOCK_RETURN(ctx ? CUDA_ERROR_INVALID_CONTEXT : CUDA_ERROR_INVALID_VALUE);
	if (t_ctx.depth >= (int)VR_ARRAY_LEN(t_ctx.stack))
		SIM_UNLOCK_RETURN(CUDA_ERROR_UNKNOWN);
	t_ctx.stack[t_ctx.depth++] = (struct sim_ctx *)ctx;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuCtxPushCurrent(CUcontext ctx)
{
	return simi_cuCtxPushCurrent_v2(ctx);
}

CUresult simi_cuCtxPopCurrent_v2(CUcontext *pctx)
{
	SIM_LOCK_INIT();
	if (t_ctx.depth == 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_CONTEXT);
	t_ctx.depth--;
	if (pctx)
		*pctx = (CUcontext)t_ctx.stack[t_ctx.depth];
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuCtxPopCurrent(CUcontext *pctx)
{
	return simi_cuCtxPopCurrent_v2(pctx);
}

CUresult simi_cuCtxSynchronize(void)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if ((rc = sim_capture_unsafe()) != CUDA_SUCCESS)
		SIM_UNLOCK_RETURN(rc);
	struct sim_ctx *c = sim_cur_ctx(&rc);
	if (c)
		sim_mem_sync(c->dev);
	SIM_UNLOCK_RETURN(rc);
}

CUresult simi_cuCtxSynchronize_v2(CUcontext ctx)
{
	if (!ctx)
		return simi_cuCtxSynchronize();
	SIM_LOCK_INIT();
	if (!sim_ctx_valid((struct sim_ctx *)ctx))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_CONTEXT);
	sim_mem_sync(((struct sim_ctx *)ctx)->dev);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/*
 * Device memory a context's limits take beyond what VRAMSIM_CONTEXT_BYTES
 * covers (the defaults): the malloc heap and printf FIFO themselves, and the
 * stack for every thread the device can hold resident (132 SMs x 2048).
 */
#define SIM_RESIDENT_THREADS (132ull * 2048ull)
static uint64_t limits_bytes(const size_t *l)
{
	uint64_t b = 0;
	if (l[CU_LIMIT_STACK_SIZE] > 1024)
		b += (l[CU_LIMIT_STACK_SIZE] - 1024) * SIM_RESIDENT_THREADS;
	if (l[CU_LIMIT_PRINTF_FIFO_SIZE] > (1u << 20))
		b += l[CU_LIMIT_PRINTF_FIFO_SIZE] - (1u << 20);
	if (l[CU_LIMIT_MALLOC_HEAP_SIZE] > (8u << 20))
		b += l[CU_LIMIT_MALLOC_HEAP_SIZE] - (8u << 20);
	return b;
}

/* Raising a limit takes device memory (CUDA_ERROR_OUT_OF_MEMORY, limit
 * unchanged, when it does not fit); lowering it gives memory back. */
CUresult simi_cuCtxSetLimit(CUlimit limit, size_t value)
{
	CUresult rc = CUDA_SUCCESS;
	size_t next[3];
	SIM_LOCK_INIT();
	struct sim_ctx *c = sim_cur_ctx(&rc);
	if (!c)
		SIM_UNLOCK_RETURN(rc);
	if (limit < 0 || limit > CU_LIMIT_MALLOC_HEAP_SIZE)
		SIM_UNLOCK_RETURN(CUDA_ERROR_NOT_SUPPORTED);
	if (limit == CU_LIMIT_STACK_SIZE && value > (512u << 10))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	memcpy(next, c->limits, sizeof(next));
	next[limit] = value;
	uint64_t want = limits_bytes(next);
	if (want > c->limit_bytes) {
		rc = sim_charge(&g_sim.dev[c->dev], want - c->limit_bytes);
		if (rc != CUDA_SUCCESS)
			SIM_UNLOCK_RETURN(rc);
	} else {
		sim_uncharge(&g_sim.dev[c->dev], c->limit_bytes - want);
	}
	c->limit_bytes = want;
	c->limits[limit] = value;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	struct sim_ctx *c = sim_cur_ctx(&rc);
	if (c && (!pvalue))
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (c && (limit < 0 || limit > CU_LIMIT_MALLOC_HEAP_SIZE))
		rc = CUDA_ERROR_NOT_SUPPORTED;
	else if (c)
		*pvalue = c->limits[limit];
	SIM_UNLOCK_RETURN(rc);
}

/* ---- streams and kernels ---- */

struct sim_ctx *sim_stream_ctx(CUstream s, CUresult *rc)
{
	if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
		return sim_cur_ctx(rc);
	for (struct sim_stream *p = g_sim.streams; p; p = p->next) {
		if ((CUstream)p != s)
			continue;
		if (!p->alive || !sim_ctx_valid(p->ctx))
			break;
		return p->ctx;
	}
	*rc = CUDA_ERROR_INVALID_HANDLE;
	return NULL;
}

CUresult simi_cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	struct sim_ctx *c = sim_cur_ctx(&rc);
	if (!c)
		SIM_UNLOCK_RETURN(rc);
	if (!phStream || Flags > 1)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	struct sim_stream *s = calloc(1, sizeof(*s));
	if (!s)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	s->magic = SIM_MAGIC_STREAM;
	s->alive = 1;
	s->ctx = c;
	s->next = g_sim.streams;
	g_sim.streams = s;
	*phStream = (CUstream)s;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuStreamDestroy_v2(CUstream hStream)
{
	SIM_LOCK_INIT();
	for (struct sim_stream *p = g_sim.streams; p; p = p->next) {
		if ((CUstream)p == hStream && p->alive) {
			p->alive = 0;
			SIM_UNLOCK_RETURN(CUDA_SUCCESS);
		}
	}
	SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_HANDLE);
}

CUresult simi_cuStreamDestroy(CUstream hStream)
{
	return simi_cuStreamDestroy_v2(hStream);
}

CUresult simi_cuStreamSynchronize(CUstream hStream)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (sim_stream_capture(hStream) == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
		/* Necessarily conflicts with the capture, in every mode. */
		sim_stream_invalidate(hStream);
		SIM_UNLOCK_RETURN(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	}
	struct sim_ctx *c = sim_stream_ctx(hStream, &rc);
	if (c)
		sim_mem_sync(c->dev);
	SIM_UNLOCK_RETURN(rc);
}

CUresult simi_cuStreamSynchronize_ptsz(CUstream hStream)
{
	return simi_cuStreamSynchronize(hStream);
}

/* ---- stream capture and host functions ---- */

static struct sim_stream *stream_find(CUstream h)
{
	for (struct sim_stream *p = g_sim.streams; p; p = p->next)
		if ((CUstream)p == h && p->alive && sim_ctx_valid(p->ctx))
			return p;
	return NULL;
}

int sim_stream_capture(CUstream h)
{
	struct sim_stream *p = stream_find(h);
	return p ? p->capture : CU_STREAM_CAPTURE_STATUS_NONE;
}

void sim_stream_invalidate(CUstream h)
{
	struct sim_stream *p = stream_find(h);
	if (p && p->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE)
		p->capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
}

/* This thread's capture interaction mode (cuThreadExchangeStreamCaptureMode). */
static __thread int t_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

/*
 * cuda.h, CUstreamCaptureMode: in GLOBAL mode (the default) a thread is
 * prohibited from potentially unsafe calls while it has a capture of its
 * own not begun RELAXED, or another thread has one begun GLOBAL;
 * THREAD_LOCAL ignores other threads; RELAXED prohibits nothing.
 */
CUresult sim_capture_unsafe(void)
{
	int unsafe = 0;
	pthread_t self = pthread_self();
	if (t_capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_SUCCESS;
	for (struct sim_stream *p = g_sim.streams; p; p = p->next) {
		if (p->capture != CU_STREAM_CAPTURE_STATUS_ACTIVE)
			continue;
		int mine = pthread_equal(p->capture_thread, self);
		if ((mine && p->capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED) ||
		    (!mine && t_capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
		     p->capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
			p->capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
			unsafe = 1;
		}
	}
	return unsafe ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult simi_cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
	SIM_LOCK_INIT();
	if (!mode || *mode < CU_STREAM_CAPTURE_MODE_GLOBAL ||
	    *mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	int old = t_capture_mode;
	t_capture_mode = *mode;
	*mode = old;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (!sim_stream_ctx(hStream, &rc))
		SIM_UNLOCK_RETURN(rc);
	struct sim_stream *p = stream_find(hStream);
	if (!p) /* the legacy and per-thread default streams cannot capture */
		SIM_UNLOCK_RETURN(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	if (mode < CU_STREAM_CAPTURE_MODE_GLOBAL || mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (p->capture != CU_STREAM_CAPTURE_STATUS_NONE)
		SIM_UNLOCK_RETURN(CUDA_ERROR_ILLEGAL_STATE);
	p->capture = CU_STREAM_CAPTURE_STATUS_ACTIVE;
	p->capture_mode = mode;
	p->capture_thread = pthread_self();
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* Ends the capture: an (empty) graph, or CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
 * with no graph when an unsafe call broke it. */
CUresult simi_cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
	SIM_LOCK_INIT();
	struct sim_stream *p = stream_find(hStream);
	if (!phGraph)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (!p || p->capture == CU_STREAM_CAPTURE_STATUS_NONE)
		SIM_UNLOCK_RETURN(CUDA_ERROR_ILLEGAL_STATE);
	int was = p->capture;
	p->capture = CU_STREAM_CAPTURE_STATUS_NONE;
	pthread_mutex_unlock(&g_sim.mu);
	*phGraph = NULL;
	if (was == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	return simi_cuGraphCreate(phGraph, 0);
}

CUresult simi_cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (!sim_stream_ctx(hStream, &rc))
		SIM_UNLOCK_RETURN(rc);
	if (!captureStatus)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	*captureStatus = sim_stream_capture(hStream);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
	return simi_cuStreamIsCapturing(hStream, captureStatus);
}

/*
 * The simulated GPU finishes work as it is queued, so a host function runs
 * at once (on the caller's thread, after the driver's lock is dropped; a
 * real driver runs it later on a thread of its own, and it must not call
 * the CUDA API either way). While the stream captures, it becomes a node of
 * the captured graph instead, and does not run now.
 */
CUresult simi_cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (!sim_stream_ctx(hStream, &rc))
		SIM_UNLOCK_RETURN(rc);
	if (!fn)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	int capturing = sim_stream_capture(hStream) != CU_STREAM_CAPTURE_STATUS_NONE;
	pthread_mutex_unlock(&g_sim.mu);
	if (!capturing)
		fn(userData);
	return CUDA_SUCCESS;
}

CUresult simi_cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData)
{
	return simi_cuLaunchHostFunc(hStream, fn, userData);
}

CUresult simi_cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                             unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                             unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                             void **kernelParams, void **extra)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	struct sim_ctx *c = sim_stream_ctx(hStream, &rc);
	if (!c)
		SIM_UNLOCK_RETURN(rc);
	if (!f)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_HANDLE);
	if (!gridDimX || !gridDimY || !gridDimZ || !blockDimX || !blockDimY || !blockDimZ ||
	    (unsigned long long)blockDimX * blockDimY * blockDimZ > 1024 || blockDimZ > 64 ||
	    gridDimY > 65535 || gridDimZ > 65535 || sharedMemBytes > 232448 ||
	    (kernelParams && extra))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                  unsigned int gridDimZ, unsigned int blockDimX,
                                  unsigned int blockDimY, unsigned int blockDimZ,
                                  unsigned int sharedMemBytes, CUstream hStream,
                                  void **kernelParams, void **extra)
{
	return simi_cuLaunchKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
	                           sharedMemBytes, hStream, kernelParams, extra);
}

/* ---- errors ---- */

#define SIM_ERRORS(X)                                                                              \
	X(CUDA_SUCCESS, "no error")                                                                \
	X(CUDA_ERROR_INVALID_VALUE, "invalid argument")                                            \
	X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                                               \
	X(CUDA_ERROR_NOT_INITIALIZED, "initialization error")                                      \
	X(CUDA_ERROR_DEINITIALIZED, "driver shutting down")                                        \
	X(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library")                                \
	X(CUDA_ERROR_DEVICES_UNAVAILABLE, "CUDA-capable device(s) is/are busy or unavailable")     \
	X(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")                              \
	X(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")                                     \
	X(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")                                    \
	X(CUDA_ERROR_MAP_FAILED, "mapping of buffer object failed")                                \
	X(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped")                                    \
	X(CUDA_ERROR_NOT_MAPPED, "resource not mapped")                                            \
	X(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, "context is already in use")                          \
	X(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")                                    \
	X(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state")      \
	X(CUDA_ERROR_NOT_FOUND, "named symbol not found")                                          \
	X(CUDA_ERROR_NOT_READY, "device not ready")                                                \
	X(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "primary context active")                             \
	X(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,                                               \
	  "part or all of the requested memory range is already mapped")                           \
	X(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,                                                   \
	  "pointer does not correspond to a registered memory region")                             \
	X(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure")                                  \
	X(CUDA_ERROR_NOT_PERMITTED, "operation not permitted")                                     \
	X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")                                     \
	X(CUDA_ERROR_SYSTEM_NOT_READY, "system not yet initialized")                               \
	X(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,                                                       \
	  "system has unsupported display driver / cuda driver combination")                       \
	X(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,                                               \
	  "forward compatibility was attempted on non supported HW")                               \
	X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,                                                   \
	  "operation not permitted when stream is capturing")                                      \
	X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,                                                   \
	  "operation failed due to a previous error during capture")                               \
	X(CUDA_ERROR_UNKNOWN, "unknown error")

int sim_error_lookup(CUresult rc, const char **name, const char **str)
{
#define SIM_ERR_CASE(code, text)                                                                   \
	case code:                                                                                 \
		*name = #code;                                                                     \
		*str = text;                                                                       \
		return 0;
	switch (rc) {
		SIM_ERRORS(SIM_ERR_CASE)
	default:
		return -1;
	}
#undef SIM_ERR_CASE
}

static int error_by_name(const char *name, int *code)
{
#define SIM_ERR_NAME(c, text)                                                                      \
	if (strcmp(name, #c) == 0) {                                                               \
		*code = c;                                                                         \
		return 0;                                                                          \
	}
	SIM_ERRORS(SIM_ERR_NAME)
#undef SIM_ERR_NAME
	return -1;
}

/* cuGetErrorName (want_name) and cuGetErrorString: an unknown code sets
 * *pStr to NULL and returns CUDA_ERROR_INVALID_VALUE, as cuda.h says. */
static CUresult error_text(CUresult error, const char **pStr, int want_name)
{
	const char *name, *str;
	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	if (sim_error_lookup(error, &name, &str) != 0) {
		*pStr = NULL;
		return CUDA_ERROR_INVALID_VALUE;
	}
	*pStr = want_name ? name : str;
	return CUDA_SUCCESS;
}

CUresult simi_cuGetErrorName(CUresult error, const char **pStr)
{
	return error_text(error, pStr, 1);
}

CUresult simi_cuGetErrorString(CUresult error, const char **pStr)
{
	return error_text(error, pStr, 0);
}

/* ---- cuGetProcAddress ---- */

/*
 * One row per exported variant: (base name, exported name, CUDA version that
 * introduced it, its per-thread-default-stream variant or NULL). Versions are
 * those of cudaTypedefs.h (PFN_<name>_v<version>).
 */
static const struct sim_proc {
	const char *base, *name;
	int version;
	const char *ptsz;
} sim_procs[] = {
    {"cuInit", "cuInit", 2000, NULL},
    {"cuDriverGetVersion", "cuDriverGetVersion", 2020, NULL},
    {"cuDeviceGet", "cuDeviceGet", 2000, NULL},
    {"cuDeviceGetCount", "cuDeviceGetCount", 2000, NULL},
    {"cuDeviceGetName", "cuDeviceGetName", 2000, NULL},
    {"cuDeviceGetUuid", "cuDeviceGetUuid", 9020, NULL},
    {"cuDeviceGetUuid", "cuDeviceGetUuid_v2", 11040, NULL},
    {"cuDeviceTotalMem", "cuDeviceTotalMem", 2000, NULL},
    {"cuDeviceTotalMem", "cuDeviceTotalMem_v2", 3020, NULL},
    {"cuDeviceGetAttribute", "cuDeviceGetAttribute", 2000, NULL},
    {"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", 7000, NULL},
    {"cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease", 7000, NULL},
    {"cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2", 11000, NULL},
    {"cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset", 7000, NULL},
    {"cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset_v2", 11000, NULL},
    {"cuDevicePrimaryCtxGetState", "cuDevicePrimaryCtxGetState", 7000, NULL},
    {"cuDevicePrimaryCtxSetFlags", "cuDevicePrimaryCtxSetFlags", 7000, NULL},
    {"cuDevicePrimaryCtxSetFlags", "cuDevicePrimaryCtxSetFlags_v2", 11000, NULL},
    {"cuCtxCreate", "cuCtxCreate", 2000, NULL},
    {"cuCtxCreate", "cuCtxCreate_v2", 3020, NULL},
    {"cuCtxCreate", "cuCtxCreate_v3", 11040, NULL},
    {"cuCtxCreate", "cuCtxCreate_v4", 12050, NULL},
    {"cuCtxDestroy", "cuCtxDestroy", 2000, NULL},
    {"cuCtxDestroy", "cuCtxDestroy_v2", 4000, NULL},
    {"cuCtxSetCurrent", "cuCtxSetCurrent", 4000, NULL},
    {"cuCtxGetCurrent", "cuCtxGetCurrent", 4000, NULL},
    {"cuCtxGetDevice", "cuCtxGetDevice", 2000, NULL},
    {"cuCtxGetDevice", "cuCtxGetDevice_v2", 13000, NULL},
    {"cuCtxPushCurrent", "cuCtxPushCurrent", 2000, NULL},
    {"cuCtxPushCurrent", "cuCtxPushCurrent_v2", 4000, NULL},
    {"cuCtxPopCurrent", "cuCtxPopCurrent", 2000, NULL},
    {"cuCtxPopCurrent", "cuCtxPopCurrent_v2", 4000, NULL},
    {"cuCtxSynchronize", "cuCtxSynchronize", 2000, NULL},
    {"cuCtxSynchronize", "cuCtxSynchronize_v2", 13000, NULL},
    {"cuCtxSetLimit", "cuCtxSetLimit", 3010, NULL},
    {"cuCtxGetLimit", "cuCtxGetLimit", 3010, NULL},
    {"cuMemGetInfo", "cuMemGetInfo", 2000, NULL},
    {"cuMemGetInfo", "cuMemGetInfo_v2", 3020, NULL},
    {"cuMemAlloc", "cuMemAlloc", 2000, NULL},
    {"cuMemAlloc", "cuMemAlloc_v2", 3020, NULL},
    {"cuMemAllocPitch", "cuMemAllocPitch", 2000, NULL},
    {"cuMemAllocPitch", "cuMemAllocPitch_v2", 3020, NULL},
    {"cuMemAllocManaged", "cuMemAllocManaged", 6000, NULL},
    {"cuMemFree", "cuMemFree", 2000, NULL},
    {"cuMemFree", "cuMemFree_v2", 3020, NULL},
    {"cuMemGetAddressRange", "cuMemGetAddressRange", 2000, NULL},
    {"cuMemGetAddressRange", "cuMemGetAddressRange_v2", 3020, NULL},
    {"cuMemAllocHost", "cuMemAllocHost", 2000, NULL},
    {"cuMemAllocHost", "cuMemAllocHost_v2", 3020, NULL},
    {"cuMemHostAlloc", "cuMemHostAlloc", 2020, NULL},
    {"cuMemFreeHost", "cuMemFreeHost", 2000, NULL},
    {"cuMemHostRegister", "cuMemHostRegister", 4000, NULL},
    {"cuMemHostRegister", "cuMemHostRegister_v2", 6050, NULL},
    {"cuMemHostUnregister", "cuMemHostUnregister", 4000, NULL},
    {"cuMemHostGetDevicePointer", "cuMemHostGetDevicePointer", 2020, NULL},
    {"cuMemHostGetDevicePointer", "cuMemHostGetDevicePointer_v2", 3020, NULL},
    {"cuStreamCreate", "cuStreamCreate", 2000, NULL},
    {"cuStreamDestroy", "cuStreamDestroy", 2000, NULL},
    {"cuStreamDestroy", "cuStreamDestroy_v2", 4000, NULL},
    {"cuStreamSynchronize", "cuStreamSynchronize", 2000, "cuStreamSynchronize_ptsz"},
    {"cuStreamBeginCapture", "cuStreamBeginCapture_v2", 10010, NULL},
    {"cuStreamEndCapture", "cuStreamEndCapture", 10000, NULL},
    {"cuThreadExchangeStreamCaptureMode", "cuThreadExchangeStreamCaptureMode", 10010, NULL},
    {"cuStreamIsCapturing", "cuStreamIsCapturing", 10000, "cuStreamIsCapturing_ptsz"},
    {"cuLaunchHostFunc", "cuLaunchHostFunc", 10000, "cuLaunchHostFunc_ptsz"},
    {"cuPointerGetAttribute", "cuPointerGetAttribute", 4000, NULL},
    {"cuPointerGetAttributes", "cuPointerGetAttributes", 7000, NULL},
    {"cuMemAllocAsync", "cuMemAllocAsync", 11020, "cuMemAllocAsync_ptsz"},
    {"cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync", 11020, "cuMemAllocFromPoolAsync_ptsz"},
    {"cuMemFreeAsync", "cuMemFreeAsync", 11020, "cuMemFreeAsync_ptsz"},
    {"cuMemPoolCreate", "cuMemPoolCreate", 11020, NULL},
    {"cuMemPoolDestroy", "cuMemPoolDestroy", 11020, NULL},
    {"cuMemPoolTrimTo", "cuMemPoolTrimTo", 11020, NULL},
    {"cuMemPoolSetAttribute", "cuMemPoolSetAttribute", 11020, NULL},
    {"cuMemPoolGetAttribute", "cuMemPoolGetAttribute", 11020, NULL},
    {"cuDeviceGetDefaultMemPool", "cuDeviceGetDefaultMemPool", 11020, NULL},
    {"cuDeviceGetMemPool", "cuDeviceGetMemPool", 11020, NULL},
    {"cuDeviceSetMemPool", "cuDeviceSetMemPool", 11020, NULL},
    {"cuMemGetAllocationGranularity", "cuMemGetAllocationGranularity", 10020, NULL},
    {"cuMemCreate", "cuMemCreate", 10020, NULL},
    {"cuMemRelease", "cuMemRelease", 10020, NULL},
    {"cuMemAddressReserve", "cuMemAddressReserve", 10020, NULL},
    {"cuMemAddressFree", "cuMemAddressFree", 10020, NULL},
    {"cuMemMap", "cuMemMap", 10020, NULL},
    {"cuMemUnmap", "cuMemUnmap", 10020, NULL},
    {"cuMemSetAccess", "cuMemSetAccess", 10020, NULL},
    {"cuMemExportToShareableHandle", "cuMemExportToShareableHandle", 10020, NULL},
    {"cuMemImportFromShareableHandle", "cuMemImportFromShareableHandle", 10020, NULL},
    {"cuArrayCreate", "cuArrayCreate_v2", 3020, NULL},
    {"cuArray3DCreate", "cuArray3DCreate_v2", 3020, NULL},
    {"cuArrayDestroy", "cuArrayDestroy", 2000, NULL},
    {"cuArrayGetMemoryRequirements", "cuArrayGetMemoryRequirements", 11060, NULL},
    {"cuMipmappedArrayCreate", "cuMipmappedArrayCreate", 5000, NULL},
    {"cuMipmappedArrayDestroy", "cuMipmappedArrayDestroy", 5000, NULL},
    {"cuMipmappedArrayGetMemoryRequirements", "cuMipmappedArrayGetMemoryRequirements", 11060, NULL},
    {"cuIpcGetMemHandle", "cuIpcGetMemHandle", 4010, NULL},
    {"cuIpcOpenMemHandle", "cuIpcOpenMemHandle", 4010, NULL},
    {"cuIpcOpenMemHandle", "cuIpcOpenMemHandle_v2", 11000, NULL},
    {"cuIpcCloseMemHandle", "cuIpcCloseMemHandle", 4010, NULL},
    {"cuGraphCreate", "cuGraphCreate", 10000, NULL},
    {"cuGraphDestroy", "cuGraphDestroy", 10000, NULL},
    {"cuGraphAddMemAllocNode", "cuGraphAddMemAllocNode", 11040, NULL},
    {"cuGraphInstantiate", "cuGraphInstantiate_v2", 11000, NULL},
    {"cuGraphInstantiateWithFlags", "cuGraphInstantiateWithFlags", 11040, NULL},
    {"cuGraphInstantiateWithParams", "cuGraphInstantiateWithParams", 12000,
     "cuGraphInstantiateWithParams_ptsz"},
    {"cuGraphExecDestroy", "cuGraphExecDestroy", 10000, NULL},
    {"cuGraphLaunch", "cuGraphLaunch", 10000, "cuGraphLaunch_ptsz"},
    {"cuGraphUpload", "cuGraphUpload", 11010, "cuGraphUpload_ptsz"},
    {"cuDeviceGraphMemTrim", "cuDeviceGraphMemTrim", 11040, NULL},
    {"cuLaunchKernel", "cuLaunchKernel", 4000, "cuLaunchKernel_ptsz"},
    {"cuGetErrorName", "cuGetErrorName", 6000, NULL},
    {"cuGetErrorString", "cuGetErrorString", 6000, NULL},
    {"cuGetProcAddress", "cuGetProcAddress", 11030, NULL},
    {"cuGetProcAddress", "cuGetProcAddress_v2", 12000, NULL},
};

static void *fn_by_name(const char *name)
{
	int i = name ? fn_index(name, strlen(name)) : -1;
	return i < 0 ? NULL : sim_fns[i].fn;
}

/*
 * The rules of cuda.h: the newest variant introduced at or before
 * cudaVersion; per-thread variants only under
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (DEFAULT means legacy at the
 * driver level); CUDA_SUCCESS with *pfn = NULL for unknown symbols and for
 * symbols newer than cudaVersion (told apart by symbolStatus);
 * CUDA_ERROR_INVALID_VALUE for a cudaVersion above the driver's.
 */
static CUresult proc_address(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
	const struct sim_proc *best = NULL;
	int known = 0;

	if (!symbol || !pfn || (flags & ~(cuuint64_t)3))
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = NULL;
	if (cudaVersion > sim_config()->driver_version)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < VR_ARRAY_LEN(sim_procs); i++) {
		const struct sim_proc *p = &sim_procs[i];
		if (strcmp(p->base, symbol) != 0)
			continue;
		known = 1;
		if (p->version <= cudaVersion && (!best || p->version > best->version))
			best = p;
	}
	if (!best) {
		if (status)
			*status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
			                : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
		return CUDA_SUCCESS;
	}
	if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best->ptsz)
		*pfn = fn_by_name(best->ptsz);
	else
		*pfn = fn_by_name(best->name);
	if (status)
		*status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return CUDA_SUCCESS;
}

CUresult simi_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                  CUdriverProcAddressQueryResult *symbolStatus)
{
	return proc_address(symbol, pfn, cudaVersion, flags, symbolStatus);
}

CUresult simi_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	return proc_address(symbol, pfn, cudaVersion, flags, NULL);
}
