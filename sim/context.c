/*
 * context.c - contexts and what they cost: primary contexts (retain,
 * release, reset, flags), created contexts (cuCtxCreate*, cuCtxDestroy) and
 * their limits (cuCtxSetLimit/GetLimit). A live context takes
 * VRAMSIM_CONTEXT_BYTES on its card, and VRAMSIM_HIDDEN_BYTES (what the
 * driver takes for a process through no entry point: a library's
 * workspace, private paths), plus what its limits take above their defaults
 * (limits_bytes) and the libraries loaded eagerly (module.c); destroying it
 * gives back that and everything that goes with it (ctx_deactivate), the
 * device's last context also what vramsim_take took (sim_take). Which context is current is
 * current.c's.
 */
#include "driver.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static void ctx_defaults(struct sim_ctx *c)
{
	c->limits[CU_LIMIT_STACK_SIZE] = 1024;
	c->limits[CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20;
	c->limits[CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20;
}

static uint64_t ctx_cost(void)
{
	const struct sim_config *cfg = sim_config();
	uint64_t b = cfg->context_bytes + cfg->hidden_bytes;
	return b < cfg->context_bytes ? UINT64_MAX : b;
}

static void ctx_deactivate(struct sim_ctx *c);

/* Makes a context live: charges its memory. */
static CUresult ctx_activate(struct sim_ctx *c)
{
	struct sim_dev *d = &g_sim.dev[c->dev];
	uint64_t bytes = ctx_cost();
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
	if ((rc = sim_module_ctx_created(c)) != CUDA_SUCCESS)
		ctx_deactivate(c);
	return rc;
}

static void ctx_deactivate(struct sim_ctx *c)
{
	struct sim_dev *d = &g_sim.dev[c->dev];
	/* What goes with a context: its linear and IPC allocations and the
	 * pages its small blocks were carved from, its arrays,
	 * its cuMemAllocHost memory, its streams, its modules; then its own cost. */
	sim_free_ctx_allocs(c);
	sim_small_ctx_destroyed(c);
	sim_array_ctx_destroyed(c);
	sim_host_ctx_destroyed(c);
	sim_streams_ctx_destroyed(c);
	sim_module_ctx_destroyed(c);
	c->alive = 0;
	d->live_ctx--;
	/* What vramsim_take took goes with the device's last context. */
	uint64_t taken = d->live_ctx == 0 ? d->taken : 0;
	d->taken -= taken;
	sim_uncharge(d, ctx_cost() + c->limit_bytes + taken);
	c->limit_bytes = 0;
}

CUresult simi_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	SIM_LOCK_INIT();
	struct sim_dev *d = sim_dev_get(dev);
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
	struct sim_dev *d = sim_dev_get(dev);
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
	struct sim_dev *d = sim_dev_get(dev);
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
	struct sim_dev *d = sim_dev_get(dev);
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
	struct sim_dev *d = sim_dev_get(dev);
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
	struct sim_dev *d = sim_dev_get(dev);
	int active = d && d->primary.alive;
	pthread_mutex_unlock(&g_sim.mu);
	if (active)
		return CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE;
	return simi_cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	SIM_LOCK_INIT();
	struct sim_dev *d = sim_dev_get(dev);
	struct sim_ctx *c;
	CUresult rc;
	if (!d)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	if (!pctx || !ctx_flags_ok(flags))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (sim_ctx_stack_full())
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
	sim_ctx_push(c);
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
	sim_ctx_pop_destroyed(c);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuCtxDestroy(CUcontext ctx)
{
	return simi_cuCtxDestroy_v2(ctx);
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

/* The driver takes (or gives back) memory for the process on its own, as a
 * library reaching it through private paths would make it. */
CUresult sim_take(CUdevice dev, long long bytes)
{
	SIM_LOCK_INIT();
	struct sim_dev *d = sim_dev_get(dev);
	if (!d)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	if (d->live_ctx == 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_CONTEXT);
	if (bytes >= 0) {
		CUresult rc = sim_charge(d, (uint64_t)bytes);
		if (rc == CUDA_SUCCESS)
			d->taken += (uint64_t)bytes;
		SIM_UNLOCK_RETURN(rc);
	}
	uint64_t back = bytes == LLONG_MIN ? (uint64_t)LLONG_MAX + 1 : (uint64_t)-bytes;
	if (back > d->taken)
		back = d->taken;
	d->taken -= back;
	sim_uncharge(d, back);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}
