/*
 * driver.h - the simulated driver's internal interface, shared by its source
 * files (sim.h lists them and what each models). The types and the
 * process-local state come first, then what each file offers the others,
 * grouped by file from the bottom layer up (sim/LAYERS): a file calls only
 * what files on lower layers declare here.
 *
 * One mutex (g_sim.mu) guards all of the state; the card state files have
 * their own locks, always taken after g_sim.mu. Functions marked "with
 * g_sim.mu held" expect the caller to hold it.
 */
#ifndef VRAMSIM_DRIVER_H
#define VRAMSIM_DRIVER_H

#define VR_CUDA_PROTOTYPES
#include "common/cuda_api.h"
#include "cuda_extra.h"
#include "sim.h"

/* The implementation behind each exported entry point: simi_cuMemAlloc_v2...
 * (exports.c generates the exported names, each file defines its own). */
#define SIM_IMPL_DECL(name, params, args) CUresult simi_##name params;
VR_CUDA_FUNCS(SIM_IMPL_DECL)
VRAMSIM_CUDA_EXTRA_FUNCS(SIM_IMPL_DECL)
#undef SIM_IMPL_DECL

/* ---- checkpoint.c: the checkpoint API, and every call's gate ---- */

/* Starts this process's side of the checkpoint API (its file and its
 * checkpoint thread) at its first cuInit; forgets the parent's in a fork
 * child. */
void sim_ckpt_start(void);
void sim_ckpt_after_fork(void);
/* Set from Lock to Unlock: every entry point but the checkpoint API's
 * blocks at its start (sim_ckpt_enter); the calls in flight are counted
 * for Lock to wait for. */
extern _Atomic int sim_ckpt_gate;
extern _Atomic int sim_ckpt_inflight;
void sim_ckpt_blocked(void);
static inline void sim_ckpt_enter(void)
{
	atomic_fetch_add(&sim_ckpt_inflight, 1);
	if (__builtin_expect(atomic_load(&sim_ckpt_gate) != 0, 0))
		sim_ckpt_blocked();
}
static inline void sim_ckpt_leave(void)
{
	atomic_fetch_sub(&sim_ckpt_inflight, 1);
}

/* ---- the process-local state (driver.c) ---- */

#define SIM_MAGIC_CTX    0x43545831u
#define SIM_MAGIC_STREAM 0x53545231u

/* A context (context.c): its cost on the card is VRAMSIM_CONTEXT_BYTES and
 * VRAMSIM_HIDDEN_BYTES, plus limit_bytes, what its limits take above their
 * defaults; the images of its modules are module.c's. */
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
	uint64_t used; /* what this process charged to the card (account.c) */
	int live_ctx;  /* live contexts of this process on the device */
	struct sim_ctx primary;
	struct sim_pool *default_pool, *cur_pool;
	uint64_t graph_reserved, graph_in_use; /* the graph memory pool (graph_exec.c) */
	uint64_t taken; /* vramsim_take: held while a context lives (context.c) */
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
	uint64_t host_pinned; /* pinned host bytes, against VRAMSIM_HOST_PINNABLE (account.c) */
};

extern struct sim_state g_sim;

/* CUDA_SUCCESS once cuInit succeeded, else CUDA_ERROR_NOT_INITIALIZED. */
CUresult sim_check_init(void);
/* With g_sim.mu held: the visible device, or NULL for a bad ordinal. */
struct sim_dev *sim_dev_get(CUdevice dev);
/* With g_sim.mu held: size bytes of the device's address range, aligned
 * (512 at least, 2 MiB from 2 MiB on); never reused. 0 when the range is
 * spent. */
CUdeviceptr sim_addr_alloc(struct sim_dev *d, size_t size, size_t align);

static inline struct sim_dev *sim_ctx_dev(struct sim_ctx *c)
{
	return &g_sim.dev[c->dev];
}

static inline size_t sim_round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

#define SIM_GRANULARITY ((size_t)2 << 20)

/* Takes g_sim.mu and checks cuInit; used at the top of most entry points. */
#define SIM_LOCK_INIT()                                                                            \
	do {                                                                                       \
		pthread_mutex_lock(&g_sim.mu);                                                     \
		CUresult sim_init_rc = sim_check_init();                                           \
		if (sim_init_rc != CUDA_SUCCESS) {                                                 \
			pthread_mutex_unlock(&g_sim.mu);                                           \
			return sim_init_rc;                                                        \
		}                                                                                  \
	} while (0)
#define SIM_UNLOCK_RETURN(rc)                                                                      \
	do {                                                                                       \
		CUresult sim_unlock_rc = (rc);                                                     \
		pthread_mutex_unlock(&g_sim.mu);                                                   \
		return sim_unlock_rc;                                                              \
	} while (0)

/* Frees every element of a singly linked list (for the fork handlers). */
#define SIM_FREE_LIST(type, head)                                                                  \
	do {                                                                                       \
		while (head) {                                                                     \
			type *sim_list_next = (head)->next;                                        \
			free(head);                                                                \
			(head) = sim_list_next;                                                    \
		}                                                                                  \
	} while (0)

/* ---- account.c: what this process holds on the card and in pinned host memory ---- */

/* With g_sim.mu held: charges bytes to the card (CUDA_ERROR_OUT_OF_MEMORY,
 * nothing charged, when they do not fit). */
CUresult sim_charge(struct sim_dev *d, uint64_t bytes);
/* With g_sim.mu held: gives bytes back; the card slot goes with the last
 * byte when no context is live. */
void sim_uncharge(struct sim_dev *d, uint64_t bytes);
/* With g_sim.mu held: pins bytes of host memory; 0 (nothing pinned) when
 * VRAMSIM_HOST_PINNABLE would be passed. */
int sim_host_pin(uint64_t bytes);
void sim_host_unpin(uint64_t bytes);

/* ---- context.c ---- */

/* vramsim_take (exports.c): see cuda_extra.h. */
CUresult sim_take(CUdevice dev, long long bytes);

/* ---- current.c: each thread's stack of current contexts ---- */

/* With g_sim.mu held: is c a context that is alive (primary: active)? */
int sim_ctx_valid(struct sim_ctx *c);
/* With g_sim.mu held: the calling thread's current context; NULL with *rc
 * set to CUDA_ERROR_INVALID_CONTEXT when it has none or it is not valid. */
struct sim_ctx *sim_cur_ctx(CUresult *rc);
/* Is the calling thread's stack full (CUDA_ERROR_UNKNOWN for a push)? */
int sim_ctx_stack_full(void);
/* Pushes c onto the calling thread's stack, which is not full. */
void sim_ctx_push(struct sim_ctx *c);
/* The calling thread no longer has c current (cuCtxDestroy). */
void sim_ctx_pop_destroyed(struct sim_ctx *c);
/* The calling thread's stack is emptied (the child of fork). */
void sim_ctx_stack_after_fork(void);

/* ---- module.c: modules and libraries, their images on the card ---- */

/* With g_sim.mu held: a context just made live takes the libraries loaded
 * eagerly (CUDA_ERROR_OUT_OF_MEMORY when they do not fit; the caller then
 * destroys it). */
CUresult sim_module_ctx_created(struct sim_ctx *c);
/* With g_sim.mu held: the context's modules and library images go with it. */
void sim_module_ctx_destroyed(struct sim_ctx *c);
/* With g_sim.mu held: a launch of f in context c. A library's kernel is
 * loaded into c now if it is not yet (lazy loading); CUDA_ERROR_INVALID_HANDLE
 * for a function of a module or library since unloaded; CUDA_SUCCESS for a
 * handle this file did not hand out. */
CUresult sim_module_launch(struct sim_ctx *c, CUfunction f);
void sim_module_after_fork(void);

/* ---- alloc.c: the table of device pointers ---- */

enum sim_alloc_kind {
	SIM_ALLOC_LINEAR, /* cuMemAlloc*, cuMemAllocPitch*, cuMemAllocManaged */
	SIM_ALLOC_ASYNC,  /* stream-ordered, from a pool */
	SIM_ALLOC_IPC,    /* cuIpcOpenMemHandle mapping: no usage of its own */
	SIM_ALLOC_GRAPH,  /* graph memory node allocation, live after a launch */
};

struct sim_gnode;

struct sim_alloc {
	CUdeviceptr ptr;
	size_t size;      /* as the program sees it */
	uint64_t charged; /* physical bytes charged for it (LINEAR) */
	int kind;         /* enum sim_alloc_kind */
	int dev;
	struct sim_ctx *ctx;
	struct sim_pool *pool;  /* ASYNC */
	struct sim_gnode *node; /* GRAPH */
	int refs;               /* IPC: opens */
	int ipc_pid;            /* IPC: exporting process */
	CUdeviceptr ipc_ptr;    /* IPC: pointer in the exporter */
	int ipc_exported;       /* LINEAR: a handle was taken */
	int managed;            /* LINEAR: cuMemAllocManaged */
	/* LINEAR of 1 MiB or less: where it was carved (small.c; charged 0) */
	struct sim_page *page;
	uint32_t first, granules;
	/* Its bytes (copy.c): mapped at the first write, NULL until then
	 * (reads as zeros); while the process is checkpointed, in saved
	 * instead (checkpoint.c). */
	void *backing, *saved;
	struct sim_alloc *next;
};

/* With g_sim.mu held: the allocation that starts at p, or NULL. */
struct sim_alloc *sim_alloc_find(CUdeviceptr p);
void sim_alloc_insert(struct sim_alloc *a);
void sim_alloc_remove(struct sim_alloc *a);
/* With g_sim.mu held: calls fn on every allocation in table order until it
 * returns non-zero, and returns that allocation (NULL when none did). fn
 * may remove and free the allocation it is given. */
struct sim_alloc *sim_alloc_each(int (*fn)(struct sim_alloc *a, void *arg), void *arg);
void sim_alloc_after_fork(void);

/* ---- stream.c: streams, and what is queued on them ---- */

/* With g_sim.mu held: the context a stream handle belongs to (NULL, legacy
 * and per-thread: the current one); NULL with *rc set when the handle is
 * not valid. */
struct sim_ctx *sim_stream_ctx(CUstream s, CUresult *rc);
/* With g_sim.mu held: a live stream of a valid context, or NULL (the legacy
 * and per-thread streams included). */
struct sim_stream *sim_stream_find(CUstream h);
/* With g_sim.mu held: the stream's capture status (NONE for the legacy and
 * per-thread streams, which cannot capture). */
int sim_stream_capture(CUstream s);
/* With g_sim.mu held: an error during the stream's capture invalidates it. */
void sim_stream_invalidate(CUstream s);
/* With g_sim.mu held: the context's streams die with it. */
void sim_streams_ctx_destroyed(struct sim_ctx *c);

/* ---- graph.c: graphs and their memory nodes ---- */

struct sim_gnode {
	int dev;
	size_t size;
	CUdeviceptr dptr;
	int state; /* 0 free, 1 committed (uploaded), 2 launched: owned by the program */
	struct sim_gnode *next;
};

struct sim_graph {
	int alive;
	int has_exec;
	struct sim_gnode *nodes;
	struct sim_graph *next;
};

/* With g_sim.mu held: a live graph, or NULL. */
struct sim_graph *sim_graph_lookup(CUgraph h);
/* With g_sim.mu held: the program freed a launched node's allocation (a is
 * out of the table); its memory stays in the graph pool. */
void sim_graph_alloc_freed(struct sim_alloc *a);
void sim_graph_after_fork(void);

/* ---- capture.c: stream capture and what it forbids ---- */

/*
 * With g_sim.mu held: a call that synchronises implicitly (cuMemFreeHost,
 * cuMemFree, cuCtxSynchronize, cuStreamSynchronize of a capturing stream)
 * is "potentially unsafe" while a capture is active in GLOBAL mode in any
 * thread, or in THREAD_LOCAL mode in this one: such captures are
 * invalidated and CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED returned.
 * CUDA_SUCCESS when the call may go on.
 */
CUresult sim_capture_unsafe(void);

/* ---- the allocation families: linear.c, pool.c, hostmem.c, vmm.c, array.c, graph_exec.c ---- */

/* pool.c. With g_sim.mu held: trims every pool of the device to its
 * release threshold (what a synchronisation does on the real driver). */
void sim_pool_sync(int dev);
/* pool.c. With g_sim.mu held: a stream-ordered allocation (out of the
 * table) goes back to its pool. */
void sim_pool_alloc_freed(struct sim_alloc *a);
void sim_pool_after_fork(void);

/* hostmem.c: pinned host memory, real memory the program may use. */
struct sim_host {
	void *p;
	size_t size;
	int registered; /* cuMemHostRegister (else cuMemHostAlloc/cuMemAllocHost) */
	int with_ctx;   /* cuMemAllocHost: freed with its context (cuCtxDestroy) */
	struct sim_ctx *ctx;
	struct sim_host *next;
};

/* With g_sim.mu held: the record that starts at p (exact) or contains it. */
struct sim_host *sim_host_find(const void *p, int exact);
/* With g_sim.mu held: cuMemAllocHost memory goes with its context. */
void sim_host_ctx_destroyed(struct sim_ctx *c);
void sim_host_after_fork(void);

/* vmm.c: virtual memory management. */
struct sim_vmm {
	int dev; /* -1: a host location, not device memory */
	size_t size;
	uint64_t charged;
	uint64_t host_charged; /* pinned host bytes (host locations) */
	int handle_types;
	int released;
	int maps;
	struct sim_vmm *next;
};

struct sim_reservation {
	CUdeviceptr ptr;
	size_t size;
	struct sim_reservation *next;
};

struct sim_mapping {
	CUdeviceptr ptr;
	size_t size;
	struct sim_vmm *h;
	struct sim_mapping *next;
};

/* With g_sim.mu held: a handle not yet released, or NULL. */
struct sim_vmm *sim_vmm_lookup(CUmemGenericAllocationHandle h);
/* With g_sim.mu held: records a new handle (v allocated by the caller). */
void sim_vmm_add(struct sim_vmm *v);
/* With g_sim.mu held: the mapping that contains p, or NULL; *r is then the
 * reservation that contains p, or NULL. */
struct sim_mapping *sim_vmm_mapping_at(CUdeviceptr p, struct sim_reservation **r);
void sim_vmm_after_fork(void);

/* array.c. With g_sim.mu held: the context's arrays go with it. */
void sim_array_ctx_destroyed(struct sim_ctx *c);
void sim_array_after_fork(void);

/* graph_exec.c */
void sim_graph_exec_after_fork(void);

/* ---- small.c: linear blocks of 1 MiB or less, carved from pages ---- */

struct sim_page;
/* With g_sim.mu held: size bytes (1 MiB or less) carved from a page of
 * context c, charging a new 2 MiB page when none of its pages has room
 * (CUDA_ERROR_OUT_OF_MEMORY when that does not fit). Fills where. */
CUresult sim_small_take(struct sim_ctx *c, size_t size, struct sim_page **page, uint32_t *first,
                        uint32_t *granules);
/* With g_sim.mu held: a carved block freed; its page stays on the card. */
void sim_small_give(struct sim_page *p, uint32_t first, uint32_t granules);
/* With g_sim.mu held, after its blocks were freed: c's pages go. */
void sim_small_ctx_destroyed(struct sim_ctx *c);
void sim_small_after_fork(void);

/* ---- copy.c: the bytes of device memory ---- */

/* With g_sim.mu held: a's bytes go (it is being freed). */
void sim_copy_forget(struct sim_alloc *a);
/* With g_sim.mu held: every allocation's bytes move to host copies (the
 * device's memory is released: checkpoint.c), or back from them. 0, or -1
 * when host memory for a copy or a mapping ran out (nothing moved). */
int sim_copy_park_all(void);
int sim_copy_unpark_all(void);

/* ---- free.c: device memory given back ---- */

/* With g_sim.mu held: takes a out of the table, gives back what it holds as
 * its kind says, and frees it. */
void sim_alloc_free(struct sim_alloc *a);
/* With g_sim.mu held: the context's linear and IPC allocations go with it. */
void sim_free_ctx_allocs(struct sim_ctx *c);

/* ---- errors.c, procaddr.c: used by exports.c ---- */

/* The CUresult named name ("CUDA_ERROR_OUT_OF_MEMORY") in *code: 0, or -1
 * if unknown (for the test controls). */
int sim_error_by_name(const char *name, int *code);

/*
 * cuGetProcAddress's answer for symbol (see procaddr.c); resolve turns the
 * exported name chosen into its address. status may be NULL.
 */
CUresult sim_proc_address(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                          CUdriverProcAddressQueryResult *status,
                          void *(*resolve)(const char *name));

#endif /* VRAMSIM_DRIVER_H */
