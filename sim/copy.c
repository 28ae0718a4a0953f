/*
 * copy.c - the bytes of device memory: cuMemcpyHtoD and cuMemcpyDtoH, so
 * that a test can check what a program wrote is what it reads back (after
 * a checkpoint and restore: checkpoint.c). Device pointers stay
 * bookkeeping (alloc.c); an allocation's bytes live in host memory the
 * simulator maps at its first write (MAP_NORESERVE: an untouched byte
 * costs nothing and reads as zero). While the process is checkpointed they
 * are moved elsewhere in host memory and nothing is left at the device
 * mapping, as the real driver releases the device's memory.
 */
#include "driver.h"

#include <string.h>
#include <sys/mman.h>

/* The allocation a copy of size bytes at p stays inside (not an IPC
 * mapping: those bytes are the exporter's), or NULL. */
struct range {
	CUdeviceptr p;
	size_t size;
};
static int contains(struct sim_alloc *a, void *arg)
{
	const struct range *r = arg;
	return a->kind != SIM_ALLOC_IPC && r->p >= a->ptr && r->size <= a->size &&
	       r->p - a->ptr <= a->size - r->size;
}

static struct sim_alloc *alloc_at(CUdeviceptr p, size_t size)
{
	struct range r = {p, size};
	struct sim_alloc *a = sim_alloc_find(p);
	return a && contains(a, &r) ? a : sim_alloc_each(contains, &r);
}

static void *map_bytes(size_t size)
{
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

void sim_copy_forget(struct sim_alloc *a)
{
	if (a->backing)
		munmap(a->backing, a->size);
	if (a->saved)
		munmap(a->saved, a->size);
	a->backing = a->saved = NULL;
}

/* One copy between host memory and the block at dev (to_device: host ->
 * device), under the driver's lock. */
static CUresult copy(CUdeviceptr dev, void *host, size_t n, int to_device)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (!sim_cur_ctx(&rc))
		SIM_UNLOCK_RETURN(rc);
	if (n == 0)
		SIM_UNLOCK_RETURN(CUDA_SUCCESS);
	struct sim_alloc *a = host ? alloc_at(dev, n) : NULL;
	if (!a)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	char *at = NULL;
	if (to_device && !a->backing && !(a->backing = map_bytes(a->size)))
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	if (a->backing)
		at = (char *)a->backing + (dev - a->ptr);
	if (to_device)
		memcpy(at, host, n);
	else if (at)
		memcpy(host, at, n);
	else
		memset(host, 0, n); /* never written: reads as zeros */
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
	return copy(dstDevice, (void *)(uintptr_t)srcHost, ByteCount, 1);
}

CUresult simi_cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
	return copy(srcDevice, dstHost, ByteCount, 0);
}

/* One allocation's bytes to a host copy (to_host) or back: the pages move
 * to a new place (mremap, no copy: a checkpoint of a large program takes
 * no longer than a small one's), and nothing is left where they were. */
struct move {
	int to_host;
	int failed;
};
static void *move_pages(void *from, size_t size)
{
	void *to = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (to == MAP_FAILED)
		return NULL;
	void *m = mremap(from, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	if (m == MAP_FAILED) {
		munmap(to, size);
		return NULL;
	}
	return m;
}

static int move_one(struct sim_alloc *a, void *arg)
{
	struct move *mv = arg;
	void **from = mv->to_host ? &a->backing : &a->saved;
	void **to = mv->to_host ? &a->saved : &a->backing;
	if (!*from)
		return 0;
	void *m = move_pages(*from, a->size);
	if (!m) {
		mv->failed = 1;
		return 1;
	}
	*to = m;
	*from = NULL;
	return 0;
}

static int move_all(int to_host)
{
	struct move mv = {to_host, 0};
	sim_alloc_each(move_one, &mv);
	if (!mv.failed)
		return 0;
	/* Back as it was: a half-moved process is neither. */
	struct move back = {!to_host, 0};
	sim_alloc_each(move_one, &back);
	return -1;
}

int sim_copy_park_all(void)
{
	return move_all(1);
}

int sim_copy_unpark_all(void)
{
	return move_all(0);
}
