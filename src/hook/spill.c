/*
 * spill.c - past the cap, host memory the GPU reads in place (VRAMCTL_SPILL;
 * the design and its reasons: docs/spill.md).
 *
 * An allocation that does not fit under the cap is served, up to the
 * group's host budget, from:
 *   cuMemAlloc_v2, cuMemAllocPitch_v2: mapped pinned memory
 *     (cuMemHostAlloc DEVICEMAP|PORTABLE, cuMemHostGetDevicePointer);
 *   cuMemCreate: the same request on a host NUMA location, where the driver
 *     says it can (CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED),
 *     so that it maps into the program's own reserved range.
 * Neither ever migrates (no managed memory: nothing is ever asked to move
 * onto a device that has no room). Everything else past the cap is the
 * ordinary denial.
 *
 * A spilled block is freed with the call that matches how it was made:
 * cuMemFreeHost for linear blocks (cuMemFree_v2 and cuMemFreeAsync of them
 * would fail on host memory), cuMemRelease for handles. A stream-ordered
 * free waits for its stream with a host function (no synchronisation); the
 * memory goes at the next call into the library after the stream got there,
 * in RELAXED capture mode so that it never breaks another thread's capture.
 * The books (device in-use, spilled bytes) count a block until the driver
 * has freed it.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#define VR_CUDA_PROTOTYPES
#include "common/spill.h"
#include "hook/books.h"
#include "hook/devices.h"
#include "hook/policy.h"
#include "hook/ptrmap.h"
#include "hook/record.h"
#include "hook/spill.h"

atomic_long vr_spill_live;
atomic_long vr_spill_ready;

/* ---- saying so -------------------------------------------------------- */

static atomic_int first_said;

/* The first spill of the process says so, once. */
static void note_first(struct vr_dev *d, uint64_t bytes, uint64_t spilled, uint64_t budget)
{
	if (atomic_exchange(&first_said, 1))
		return;
	char a[32], b[32], c[32], e[32];
	vr_log(VR_LOG_WARN,
	       "GPU %d is at its cap (%s): %s served from host memory instead (spill; slower "
	       "than GPU memory, %s of the host budget %s now used); later allocations past "
	       "the cap go there too",
	       d->ordinal, vr_format_size(d->cap, a, sizeof a), vr_format_size(bytes, b, sizeof b),
	       vr_format_size(spilled, c, sizeof c), vr_format_size(budget, e, sizeof e));
}

/* The denial when spill cannot serve it either. */
static CUresult deny(struct vr_dev *d, uint64_t bytes, const char *why)
{
	vr_policy_deny(d, bytes, why);
	return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult deny_budget(struct vr_dev *d, uint64_t bytes, uint64_t spilled, uint64_t budget)
{
	char why[160], a[32], b[32];
	if (budget == 0)
		snprintf(why, sizeof why,
		         "the group has no host budget (its first process ran "
		         "without --spill)");
	else
		snprintf(why, sizeof why, "host budget %s, %s spilled",
		         vr_format_size(budget, a, sizeof a), vr_format_size(spilled, b, sizeof b));
	return deny(d, bytes, why);
}

/* The driver could not give pinned host memory: say what limits pinning. */
static CUresult deny_pin(struct vr_dev *d, uint64_t bytes, CUresult rc, const char *what)
{
	char why[256], lim[32] = "unlimited", avail[32] = "unknown", sz[32];
	const char *name = NULL;
	struct rlimit rl;
	if (vr_real.cuGetErrorName)
		VR_OWN(vr_real.cuGetErrorName(rc, &name));
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		vr_format_size((uint64_t)rl.rlim_cur, lim, sizeof lim);
	uint64_t av = vr_host_available();
	if (av)
		vr_format_size(av, avail, sizeof avail);
	snprintf(why, sizeof why,
	         "%s %s failed (%s); pinned host memory is limited by RLIMIT_MEMLOCK (%s) and "
	         "host RAM (%s available)",
	         what, vr_format_size(bytes, sz, sizeof sz), name ? name : "driver error", lim,
	         avail);
	return deny(d, bytes, why);
}

/* ---- spilling --------------------------------------------------------- */

static inline int is_capture_error(CUresult rc)
{
	return rc == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED ||
	       rc == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
}

CUresult vr_spill_linear(struct vr_dev *d, CUdeviceptr *dptr, uint64_t bytes)
{
	uint64_t spilled = 0, budget = 0;
	vr_spill_drain();
	if (!vr_real.cuMemHostGetDevicePointer_v2)
		return deny(d, bytes, "the driver cannot map host memory");
	if (vr_books_spill(d, bytes, &spilled, &budget) != 0)
		return deny_budget(d, bytes, spilled, budget);
	void *hp = NULL;
	CUdeviceptr p = 0;
	CUresult rc, rc2;
	VR_OWN(rc = vr_real.cuMemHostAlloc(&hp, bytes,
	                                   CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
	VR_OWN(rc2 = rc == CUDA_SUCCESS ? vr_real.cuMemHostGetDevicePointer_v2(&p, hp, 0) : rc);
	if (rc == CUDA_SUCCESS && rc2 != CUDA_SUCCESS)
		VR_OWN(vr_real.cuMemFreeHost(hp));
	if (rc != CUDA_SUCCESS || rc2 != CUDA_SUCCESS) {
		vr_books_unspill(d, bytes);
		/* Where the program may not allocate (a capture that forbids
		 * it), its answer is the driver's, as for device memory. */
		if (is_capture_error(rc))
			return rc;
		return rc != CUDA_SUCCESS ? deny_pin(d, bytes, rc, "pinning")
		                          : deny_pin(d, bytes, rc2, "mapping");
	}
	if (vr_map_put(VR_KIND_SPILL, p, d->ordinal, bytes, 0) != 0) {
		VR_OWN(vr_real.cuMemFreeHost(hp));
		vr_books_unspill(d, bytes);
		return deny(d, bytes, "out of memory for the allocation map");
	}
	atomic_fetch_add(&vr_spill_live, 1);
	vr_rec_spilled(d, (int64_t)bytes); /* --report/--trace (record.h) */
	note_first(d, bytes, spilled, budget);
	*dptr = p;
	return CUDA_SUCCESS;
}

/* Can d's driver put cuMemCreate memory on the host? Asked once. */
static int host_vmm(struct vr_dev *d)
{
	int v = atomic_load(&d->host_vmm);
	if (v)
		return v > 0;
	int ok = 0, numa = -1;
	CUresult rc = CUDA_ERROR_NOT_SUPPORTED;
	if (vr_real.cuDeviceGetAttribute)
		VR_OWN(rc = vr_real.cuDeviceGetAttribute(
		           &ok, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
		           d->handle));
	if (rc != CUDA_SUCCESS)
		ok = 0;
	if (ok)
		VR_OWN(rc = vr_real.cuDeviceGetAttribute(&numa, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID,
		                                         d->handle));
	if (ok && rc != CUDA_SUCCESS)
		numa = -1;
	atomic_store(&d->host_numa, numa);
	atomic_store(&d->host_vmm, ok ? 1 : -1);
	return ok;
}

CUresult vr_spill_vmm(struct vr_dev *d, CUmemGenericAllocationHandle *handle, size_t size,
                      const CUmemAllocationProp *prop, unsigned long long flags)
{
	uint64_t spilled = 0, budget = 0;
	vr_spill_drain();
	if (!host_vmm(d))
		return deny(d, size,
		            "this driver cannot place cuMemCreate memory on the host (needs CUDA "
		            "12.2+ and HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)");
	if (vr_books_spill(d, size, &spilled, &budget) != 0)
		return deny_budget(d, size, spilled, budget);
	/* The program's request on the host NUMA node nearest the device (0
	 * where the system has no NUMA), with only what host memory takes:
	 * its type, no IPC handle types (cuda.h wants requestedHandleTypes 0),
	 * and none of the device's flags (GPUDirect RDMA, which PyTorch's
	 * expandable segments ask for where the device has it, and
	 * compression: driver 580 refuses host memory with them). */
	CUmemAllocationProp hp;
	memset(&hp, 0, sizeof hp);
	hp.type = prop->type;
	hp.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
	int numa = atomic_load(&d->host_numa);
	hp.location.id = numa >= 0 ? numa : 0;
	hp.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
	CUresult rc;
	VR_OWN(rc = vr_real.cuMemCreate(handle, size, &hp, flags));
	if (rc != CUDA_SUCCESS) {
		vr_books_unspill(d, size);
		if (is_capture_error(rc))
			return rc;
		return deny_pin(d, size, rc, "cuMemCreate on the host of");
	}
	if (vr_map_put(VR_KIND_SPILLVMM, *handle, d->ordinal, size, 0) != 0) {
		VR_OWN(vr_real.cuMemRelease(*handle));
		vr_books_unspill(d, size);
		return deny(d, size, "out of memory for the allocation map");
	}
	atomic_fetch_add(&vr_spill_live, 1);
	vr_rec_spilled(d, (int64_t)size);
	note_first(d, size, spilled, budget);
	return CUDA_SUCCESS;
}

/* ---- freeing ---------------------------------------------------------- */

/* The block's bytes go back to the budget. */
static void gone(int dev, uint64_t bytes)
{
	struct vr_dev *d = vr_dev_by_ordinal(dev);
	if (d) {
		vr_books_unspill(d, bytes);
		vr_rec_spilled(d, -(int64_t)bytes);
	}
	atomic_fetch_sub(&vr_spill_live, 1);
}

/* Frees a linear block's host memory (the driver's host pointer for it).
 * With relaxed set, in RELAXED capture mode: the caller knows the memory is
 * no longer in use, and a synchronisation must not break anyone's capture. */
static CUresult free_host(CUdeviceptr dptr, int relaxed)
{
	void *host = NULL;
	CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
	CUresult rc = CUDA_ERROR_NOT_SUPPORTED;
	if (vr_real.cuPointerGetAttribute)
		VR_OWN(rc = vr_real.cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER,
		                                          dptr));
	if (rc != CUDA_SUCCESS)
		return rc;
	int swapped = 0;
	if (relaxed && vr_real.cuThreadExchangeStreamCaptureMode)
		VR_OWN(swapped = vr_real.cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS);
	VR_OWN(rc = vr_real.cuMemFreeHost(host));
	if (swapped)
		VR_OWN(vr_real.cuThreadExchangeStreamCaptureMode(&mode));
	return rc;
}

int vr_spill_free(CUdeviceptr dptr, CUresult *rc)
{
	int dev;
	uint64_t bytes;
	if (!vr_map_take(VR_KIND_SPILL, dptr, &dev, &bytes, NULL))
		return 0;
	/* cuMemFree is synchronous; so is this, in the program's own capture
	 * mode: where the program may not synchronise, it fails as cuMemFree
	 * would, and the block stays the program's. */
	*rc = free_host(dptr, 0);
	if (*rc != CUDA_SUCCESS)
		vr_map_put(VR_KIND_SPILL, dptr, dev, bytes, 0);
	else
		gone(dev, bytes);
	vr_spill_drain();
	return 1;
}

int vr_spill_release_handle(CUmemGenericAllocationHandle h, CUresult *rc)
{
	int dev;
	uint64_t bytes;
	if (!vr_map_take(VR_KIND_SPILLVMM, h, &dev, &bytes, NULL))
		return 0;
	VR_OWN(*rc = vr_real.cuMemRelease(h));
	if (*rc != CUDA_SUCCESS)
		vr_map_put(VR_KIND_SPILLVMM, h, dev, bytes, 0);
	else
		gone(dev, bytes);
	return 1;
}

int vr_spill_is(int kind, uint64_t key)
{
	int dev;
	uint64_t bytes;
	if (!atomic_load_explicit(&vr_spill_live, memory_order_relaxed) ||
	    !vr_map_take(kind, key, &dev, &bytes, NULL))
		return 0;
	vr_map_put(kind, key, dev, bytes, 0);
	return 1;
}

struct range_find {
	uint64_t ptr, base, size;
};

static void range_visit(void *arg, int kind, uint64_t key, int dev, uint64_t bytes, uint16_t site)
{
	struct range_find *f = arg;
	(void)dev;
	(void)site;
	if (kind == VR_KIND_SPILL && f->ptr >= key && f->ptr - key < bytes) {
		f->base = key;
		f->size = bytes;
	}
}

int vr_spill_range(CUdeviceptr dptr, CUdeviceptr *base, size_t *size)
{
	struct range_find f = {dptr, 0, 0};
	if (!atomic_load_explicit(&vr_spill_live, memory_order_relaxed))
		return 0;
	vr_map_walk(range_visit, &f);
	if (!f.size)
		return 0;
	if (base)
		*base = f.base;
	if (size)
		*size = f.size;
	return 1;
}

/*
 * Stream-ordered frees wait in a small list until their stream reaches
 * them: a host function (which must not call CUDA) marks them ready, and
 * the next call into the library frees them. Nodes come from mmap'ed pages
 * (the program's allocator is never used) and are recycled.
 */
enum { NODE_FREE, NODE_WAITING, NODE_READY };

struct pending {
	CUdeviceptr dptr;
	uint64_t bytes;
	int dev;
	atomic_int state;
	struct pending *next;
};

static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pending *waiting, *spare;

/* A free node, or NULL when memory runs out. pending_lock held. */
static struct pending *node_get(void)
{
	if (!spare) {
		size_t page = 4096, n = page / sizeof(struct pending);
		struct pending *p =
		    mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		for (size_t i = 0; i < n; i++) {
			p[i].next = spare;
			spare = &p[i];
		}
	}
	struct pending *n = spare;
	spare = n->next;
	return n;
}

static void mark_ready(void *arg)
{
	struct pending *n = arg;
	atomic_store(&n->state, NODE_READY);
	atomic_fetch_add(&vr_spill_ready, 1);
}

void vr__spill_drain(void)
{
	struct pending *ready = NULL;
	pthread_mutex_lock(&pending_lock);
	for (struct pending **pp = &waiting; *pp;) {
		struct pending *n = *pp;
		if (atomic_load(&n->state) == NODE_READY) {
			*pp = n->next;
			n->next = ready;
			ready = n;
			atomic_fetch_sub(&vr_spill_ready, 1);
		} else {
			pp = &n->next;
		}
	}
	pthread_mutex_unlock(&pending_lock);
	while (ready) {
		struct pending *n = ready;
		ready = n->next;
		if (free_host(n->dptr, 1) == CUDA_SUCCESS)
			gone(n->dev, n->bytes);
		else /* kept counted: the books never claim memory that is still held */
			vr_log(VR_LOG_WARN, "could not free %llu bytes of spilled host memory",
			       (unsigned long long)n->bytes);
		pthread_mutex_lock(&pending_lock);
		atomic_store(&n->state, NODE_FREE);
		n->next = spare;
		spare = n;
		pthread_mutex_unlock(&pending_lock);
	}
}

/* Is s being captured into a graph? Also 1 when the driver cannot say. */
static int capturing(CUstream s, int ptsz)
{
	CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
	vr_pfn_cuStreamIsCapturing is =
	    ptsz ? vr_real.cuStreamIsCapturing_ptsz : vr_real.cuStreamIsCapturing;
	CUresult q = CUDA_ERROR_NOT_SUPPORTED;
	if (is)
		VR_OWN(q = is(s, &cs));
	return q != CUDA_SUCCESS || cs != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* During capture cuMemFreeAsync makes a free node, which only takes graph
 * allocations (cuda.h): the driver refuses this block as it would the
 * device memory of cuMemAlloc, and the block stays. */
static CUresult free_captured(CUdeviceptr dptr, CUstream s, int ptsz)
{
	int dev;
	uint64_t bytes;
	CUresult rc;
	VR_OWN(rc = ptsz ? vr_real.cuMemFreeAsync_ptsz(dptr, s) : vr_real.cuMemFreeAsync(dptr, s));
	/* Should a driver take it, the free is the graph's, at a launch vramctl
	 * does not see: the block is the program's no more, and stays counted
	 * (never freed twice) until the process ends. */
	if (rc == CUDA_SUCCESS && vr_map_take(VR_KIND_SPILL, dptr, &dev, &bytes, NULL))
		atomic_fetch_sub(&vr_spill_live, 1);
	return rc;
}

/* Queues the free of a block until its stream reaches it: the queued node,
 * or NULL when none could be had. */
static struct pending *enqueue(CUdeviceptr dptr, uint64_t bytes, int dev)
{
	pthread_mutex_lock(&pending_lock);
	struct pending *n = node_get();
	if (n) {
		n->dptr = dptr;
		n->bytes = bytes;
		n->dev = dev;
		atomic_store(&n->state, NODE_WAITING);
		n->next = waiting;
		waiting = n;
	}
	pthread_mutex_unlock(&pending_lock);
	return n;
}

/* Takes back a queued node whose host function could not be launched. */
static void dequeue(struct pending *n)
{
	pthread_mutex_lock(&pending_lock);
	for (struct pending **pp = &waiting; *pp; pp = &(*pp)->next)
		if (*pp == n) {
			*pp = n->next;
			break;
		}
	n->next = spare;
	spare = n;
	pthread_mutex_unlock(&pending_lock);
}

int vr_spill_free_async(CUdeviceptr dptr, CUstream s, int ptsz, CUresult *rc)
{
	int dev;
	uint64_t bytes;
	if (!vr_spill_is(VR_KIND_SPILL, dptr))
		return 0;
	vr_spill_drain();
	if (capturing(s, ptsz)) {
		*rc = free_captured(dptr, s, ptsz);
		return 1;
	}
	if (!vr_map_take(VR_KIND_SPILL, dptr, &dev, &bytes, NULL)) { /* freed meanwhile */
		*rc = CUDA_ERROR_INVALID_VALUE;
		return 1;
	}
	vr_pfn_cuLaunchHostFunc launch =
	    ptsz ? vr_real.cuLaunchHostFunc_ptsz : vr_real.cuLaunchHostFunc;
	struct pending *n = launch ? enqueue(dptr, bytes, dev) : NULL;
	CUresult lr = CUDA_ERROR_NOT_SUPPORTED;
	if (n)
		VR_OWN(lr = launch(s, mark_ready, n));
	if (lr == CUDA_SUCCESS) {
		*rc = CUDA_SUCCESS;
		vr_spill_drain(); /* a stream already done runs it at once */
		return 1;
	}
	/* No host function: wait for the stream here, then free. */
	if (n)
		dequeue(n);
	VR_OWN(*rc = ptsz ? vr_real.cuStreamSynchronize_ptsz(s) : vr_real.cuStreamSynchronize(s));
	if (*rc == CUDA_SUCCESS)
		*rc = free_host(dptr, 1);
	if (*rc != CUDA_SUCCESS)
		vr_map_put(VR_KIND_SPILL, dptr, dev, bytes, 0);
	else
		gone(dev, bytes);
	return 1;
}

/* After fork, in the child: the blocks are the parent's (the child's
 * records are dropped with the allocation map). */
static void spill_atfork_child(void)
{
	pthread_mutex_init(&pending_lock, NULL);
	waiting = NULL;
	spare = NULL;
	atomic_store(&vr_spill_live, 0);
	atomic_store(&vr_spill_ready, 0);
	atomic_store(&first_said, 0);
}
VR_ATFORK_CHILD(spill_atfork_child);
