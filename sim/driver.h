/*
 * driver.h - process-local state of the simulated driver, shared by its
 * source files (driver.c: init, devices, contexts, streams, entry points;
 * mem.c: every allocation family). One mutex (g_sim.mu) guards all of it; the
 * card state files have their own locks, always taken after g_sim.mu.
 */
#ifndef VRAMSIM_DRIVER_H
#define VRAMSIM_DRIVER_H

#define VR_CUDA_PROTOTYPES
#include "common/cuda_api.h"
#include "sim.h"

/* The implementation behind each exported entry point: simi_cuMemAlloc_v2... */
#define SIM_IMPL_DECL(name, params, args) CUresult simi_##name params;
VR_CUDA_FUNCS(SIM_IMPL_DECL)
#undef SIM_IMPL_DECL

#define SIM_MAGIC_CTX    0x43545831u
#define SIM_MAGIC_STREAM 0x53545231u

struct sim_ctx {
	uint32_t magic;
	int dev;     /* visible ordinal */
	int primary; /* the device's primary context */
	int alive;   /* created and not destroyed (primary: active) */
	unsigned int flags;
	int refcount; /* primary only */
	size_t limits[3];
	uint64_t limit_bytes; /* charged for limits above their defaults */
	struct sim_ctx *next;
};

struct sim_stream {
	uint32_t magic;
	int alive;
	struct sim_ctx *ctx;
	int capture;      /* CU_STREAM_CAPTURE_STATUS_* */
	int capture_mode; /* CU_STREAM_CAPTURE_MODE_* */
	pthread_t capture_thread;
	struct sim_stream *next;
};

struct sim_pool;

struct sim_dev {
	int phys; /* index in the configuration (what NVML calls the device) */
	struct sim_card card;
	uint64_t used; /* what this process charged to the card */
	int live_ctx;  /* live contexts of this process on the device */
	struct sim_ctx primary;
	struct sim_pool *default_pool, *cur_pool;
	uint64_t graph_reserved, graph_in_use;
	CUdeviceptr next_addr;
};

struct sim_state {
	pthread_mutex_t mu;
	int initialized;
	int ndev; /* visible devices */
	struct sim_dev dev[SIM_MAX_DEVICES];
	struct sim_ctx *ctxs;
	struct sim_stream *streams;
	CUdeviceptr low_next; /* 32-bit address space for the old entry points */
};

extern struct sim_state g_sim;

/* With g_sim.mu held. */
CUresult sim_check_init(void);
struct sim_ctx *sim_cur_ctx(CUresult *rc);
int sim_ctx_valid(struct sim_ctx *c);
/* The context a stream handle belongs to (NULL, legacy and per-thread: the
 * current one); NULL with *rc set when the handle is not valid. */
struct sim_ctx *sim_stream_ctx(CUstream s, CUresult *rc);
/* With g_sim.mu held: the stream's capture status (NONE for the legacy and
 * per-thread streams, which cannot capture). */
int sim_stream_capture(CUstream s);
/* With g_sim.mu held: an error during the stream's capture invalidates it. */
void sim_stream_invalidate(CUstream s);
/*
 * With g_sim.mu held: a call that synchronises implicitly (cuMemFreeHost,
 * cuMemFree, cuCtxSynchronize, cuStreamSynchronize of a capturing stream)
 * is "potentially unsafe" while a capture is active in GLOBAL mode in any
 * thread, or in THREAD_LOCAL mode in this one: such captures are
 * invalidated and CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED returned.
 * CUDA_SUCCESS when the call may go on.
 */
CUresult sim_capture_unsafe(void);
CUresult sim_charge(struct sim_dev *d, uint64_t bytes);
void sim_uncharge(struct sim_dev *d, uint64_t bytes);
CUdeviceptr sim_addr_alloc(struct sim_dev *d, size_t size, size_t align);

/* mem.c hooks for context teardown, synchronisation and fork. */
void sim_mem_ctx_destroyed(struct sim_ctx *c);
void sim_mem_sync(int dev);
void sim_mem_reset_after_fork(void);
/* Error name/string table lookups. */
int sim_error_lookup(CUresult rc, const char **name, const char **str);

static inline size_t sim_round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

#define SIM_GRANULARITY ((size_t)2 << 20)

/* Takes g_sim.mu and checks cuInit; used at the top of most entry points. */
#define SIM_LOCK_INIT()                                                                            \
	do {                                                                                       \
		pthread_mutex_lock(&g_sim.mu);                                                     \
		CUresult init_rc_ = sim_check_init();                                              \
		if (init_rc_ != CUDA_SUCCESS) {                                                    \
			pthread_mutex_unlock(&g_sim.mu);                                           \
			return init_rc_;                                                           \
		}                                                                                  \
	} while (0)
#define SIM_UNLOCK_RETURN(rc)                                                                      \
	do {                                                                                       \
		CUresult ret_ = (rc);                                                              \
		pthread_mutex_unlock(&g_sim.mu);                                                   \
		return ret_;                                                                       \
	} while (0)

#endif /* VRAMSIM_DRIVER_H */
