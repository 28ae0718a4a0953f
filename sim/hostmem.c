/*
 * hostmem.c - pinned host memory: cuMemHostAlloc, cuMemAllocHost (freed
 * with its context too), cuMemFreeHost, cuMemHostRegister/Unregister,
 * cuMemHostGetDevicePointer. It is real memory the program may use, and
 * counts against VRAMSIM_HOST_PINNABLE (account.c), not the card.
 */
#include "driver.h"

#include <stdlib.h>
#include <sys/mman.h>

static struct sim_host *g_hosts;

static void host_unlink(struct sim_host *h)
{
	for (struct sim_host **pp = &g_hosts; *pp; pp = &(*pp)->next)
		if (*pp == h) {
			*pp = h->next;
			return;
		}
}

/* Forgets a pinned host record: unpinned, unmapped unless the program's
 * own (registered), freed. */
static void host_drop(struct sim_host *h)
{
	sim_host_unpin(h->size);
	host_unlink(h);
	if (!h->registered)
		munmap(h->p, h->size);
	free(h);
}

struct sim_host *sim_host_find(const void *p, int exact)
{
	for (struct sim_host *h = g_hosts; h; h = h->next) {
		if (exact ? h->p == p
		          : ((const char *)p >= (const char *)h->p &&
		             (size_t)((const char *)p - (const char *)h->p) < h->size))
			return h;
	}
	return NULL;
}

/* Pinned host memory is real: the program may use it. It synchronises
 * implicitly, like its free (sim_capture_unsafe). What cannot be
 * pinned (VRAMSIM_HOST_PINNABLE) is CUDA_ERROR_OUT_OF_MEMORY, as a real
 * driver answers when the kernel refuses to pin. */
static CUresult host_alloc(void **pp, size_t bytesize, unsigned int flags, int with_ctx)
{
	CUresult rc = CUDA_SUCCESS;
	void *p;
	struct sim_host *h;
	struct sim_ctx *c = sim_cur_ctx(&rc);
	if (!c || (rc = sim_capture_unsafe()) != CUDA_SUCCESS)
		return rc;
	if (!pp || bytesize == 0 || (flags & ~7u))
		return CUDA_ERROR_INVALID_VALUE;
	if (!sim_host_pin(bytesize))
		return CUDA_ERROR_OUT_OF_MEMORY;
	p = mmap(NULL, bytesize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		sim_host_unpin(bytesize);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		munmap(p, bytesize);
		sim_host_unpin(bytesize);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	h->p = p;
	h->size = bytesize;
	h->ctx = c;
	h->with_ctx = with_ctx;
	h->next = g_hosts;
	g_hosts = h;
	*pp = p;
	return CUDA_SUCCESS;
}

CUresult simi_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	SIM_LOCK_INIT();
	SIM_UNLOCK_RETURN(host_alloc(pp, bytesize, Flags, 0));
}

CUresult simi_cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	SIM_LOCK_INIT();
	SIM_UNLOCK_RETURN(host_alloc(pp, bytesize, 0, 1));
}

CUresult simi_cuMemAllocHost(void **pp, unsigned int bytesize)
{
	return simi_cuMemAllocHost_v2(pp, bytesize);
}

/* Synchronises implicitly: refused while a capture forbids that. */
CUresult simi_cuMemFreeHost(void *p)
{
	CUresult rc;
	SIM_LOCK_INIT();
	if ((rc = sim_capture_unsafe()) != CUDA_SUCCESS)
		SIM_UNLOCK_RETURN(rc);
	struct sim_host *h = p ? sim_host_find(p, 1) : NULL;
	if (!h || h->registered)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	host_drop(h);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (!sim_cur_ctx(&rc))
		SIM_UNLOCK_RETURN(rc);
	if (!p || bytesize == 0 || (Flags & ~0xfu))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	for (struct sim_host *h = g_hosts; h; h = h->next)
		if ((char *)p < (char *)h->p + h->size && (char *)h->p < (char *)p + bytesize)
			SIM_UNLOCK_RETURN(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	if (!sim_host_pin(bytesize))
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	struct sim_host *h = calloc(1, sizeof(*h));
	if (!h) {
		sim_host_unpin(bytesize);
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	}
	h->p = p;
	h->size = bytesize;
	h->registered = 1;
	h->ctx = sim_cur_ctx(&rc);
	h->next = g_hosts;
	g_hosts = h;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
	return simi_cuMemHostRegister_v2(p, bytesize, Flags);
}

CUresult simi_cuMemHostUnregister(void *p)
{
	SIM_LOCK_INIT();
	struct sim_host *h = p ? sim_host_find(p, 1) : NULL;
	if (!h || !h->registered)
		SIM_UNLOCK_RETURN(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	host_drop(h);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* Unified addressing: the device sees pinned host memory at its host address. */
CUresult simi_cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (!sim_cur_ctx(&rc))
		SIM_UNLOCK_RETURN(rc);
	if (!pdptr || !p || Flags != 0 || !sim_host_find(p, 0))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	*pdptr = (CUdeviceptr)(uintptr_t)p;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuMemHostGetDevicePointer(unsigned int *pdptr, void *p, unsigned int Flags)
{
	CUdeviceptr d;
	if (!pdptr)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = simi_cuMemHostGetDevicePointer_v2(&d, p, Flags);
	if (rc == CUDA_SUCCESS && d > 0xffffffffu)
		return CUDA_ERROR_INVALID_VALUE; /* not addressable in 32 bits */
	if (rc == CUDA_SUCCESS)
		*pdptr = (unsigned int)d;
	return rc;
}

/* NVIDIA's cuCtxDestroy reference: cuMemAllocHost memory goes with its
 * context (cuMemHostAlloc's is not said to). */
void sim_host_ctx_destroyed(struct sim_ctx *c)
{
	for (struct sim_host *h = g_hosts, *next; h; h = next) {
		next = h->next;
		if (h->ctx == c && h->with_ctx)
			host_drop(h);
	}
}

void sim_host_after_fork(void)
{
	SIM_FREE_LIST(struct sim_host, g_hosts);
}
