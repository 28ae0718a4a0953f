/*
 * ipc.c - memory shared between processes: legacy IPC handles
 * (cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcCloseMemHandle) for linear
 * allocations, and shareable handles (cuMemExportToShareableHandle,
 * cuMemImportFromShareableHandle, POSIX file descriptors) for
 * virtual-memory handles. What is imported costs nothing: the exporter
 * pays for it.
 */
#include "driver.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* This process's ordinal for a physical card (how handles from another
 * process name it); -1 when the card is not visible here. */
static int dev_of_phys(int phys)
{
	int dev = -1;
	for (int i = 0; i < g_sim.ndev; i++)
		if (g_sim.dev[i].phys == phys)
			dev = i;
	return dev;
}

/* What an exported POSIX fd carries: which allocation on which card. */
struct share_blob {
	uint64_t magic;
	int32_t pid;
	int32_t dev_phys;
	uint64_t id;
	uint64_t size;
};
#define SHARE_MAGIC 0x4552414853534d56ull

CUresult simi_cuMemExportToShareableHandle(void *shareableHandle,
                                           CUmemGenericAllocationHandle handle,
                                           CUmemAllocationHandleType handleType,
                                           unsigned long long flags)
{
	SIM_LOCK_INIT();
	struct sim_vmm *v = sim_vmm_lookup(handle);
	if (!v || !shareableHandle || flags != 0 ||
	    handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
	    !(v->handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	struct share_blob b = {SHARE_MAGIC, (int32_t)getpid(),
	                       v->dev >= 0 ? g_sim.dev[v->dev].phys : -1, (uint64_t)(uintptr_t)v,
	                       v->size};
	int fd = memfd_create("vramsim-shareable", MFD_CLOEXEC);
	if (fd < 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	if (pwrite(fd, &b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		close(fd);
		SIM_UNLOCK_RETURN(CUDA_ERROR_UNKNOWN);
	}
	*(int *)shareableHandle = fd;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* The imported handle names memory another handle already pays for: it adds
 * no usage (and the exporter's usage stays until the exporter releases it). */
CUresult simi_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                             CUmemAllocationHandleType shHandleType)
{
	struct share_blob b;
	int fd = (int)(intptr_t)osHandle;
	SIM_LOCK_INIT();
	if (!handle || shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (pread(fd, &b, sizeof(b), 0) != (ssize_t)sizeof(b) || b.magic != SHARE_MAGIC)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	int dev = dev_of_phys(b.dev_phys);
	if (b.dev_phys >= 0 && dev < 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	struct sim_vmm *v = calloc(1, sizeof(*v));
	if (!v)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	v->dev = dev;
	v->size = b.size;
	sim_vmm_add(v);
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)v;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

struct ipc_blob {
	uint64_t magic;
	int32_t pid;
	int32_t dev_phys;
	uint64_t ptr;
	uint64_t size;
};
#define IPC_MAGIC 0x4350494d49534d56ull

CUresult simi_cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (!sim_cur_ctx(&rc))
		SIM_UNLOCK_RETURN(rc);
	struct sim_alloc *a = sim_alloc_find(dptr);
	if (!pHandle || !a || a->kind != SIM_ALLOC_LINEAR)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	struct ipc_blob b = {IPC_MAGIC, (int32_t)getpid(), g_sim.dev[a->dev].phys, a->ptr, a->size};
	memset(pHandle, 0, sizeof(*pHandle));
	memcpy(pHandle->reserved, &b, sizeof(b));
	a->ipc_exported = 1;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* Is a this process's mapping of the memory the handle b names? */
static int same_import(struct sim_alloc *a, void *b)
{
	const struct ipc_blob *h = b;
	return a->kind == SIM_ALLOC_IPC && a->ipc_pid == h->pid && a->ipc_ptr == h->ptr;
}

/* Opening maps the exporter's memory: no new usage. A second open of the same
 * handle returns the same pointer (reference counted). */
CUresult simi_cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
	CUresult rc = CUDA_SUCCESS;
	struct ipc_blob b;
	SIM_LOCK_INIT();
	struct sim_ctx *c = sim_cur_ctx(&rc);
	if (!c)
		SIM_UNLOCK_RETURN(rc);
	memcpy(&b, handle.reserved, sizeof(b));
	if (!pdptr || b.magic != IPC_MAGIC || (Flags & ~CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (b.pid == (int32_t)getpid())
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_CONTEXT); /* not in the exporting process */
	int dev = dev_of_phys(b.dev_phys);
	if (dev < 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	struct sim_alloc *a = sim_alloc_each(same_import, &b);
	if (a) {
		a->refs++;
		*pdptr = a->ptr;
		SIM_UNLOCK_RETURN(CUDA_SUCCESS);
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	a->ptr = sim_addr_alloc(&g_sim.dev[dev], b.size, 512);
	if (!a->ptr) {
		free(a);
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	}
	a->size = b.size;
	a->kind = SIM_ALLOC_IPC;
	a->dev = dev;
	a->ctx = c;
	a->refs = 1;
	a->ipc_pid = b.pid;
	a->ipc_ptr = b.ptr;
	sim_alloc_insert(a);
	*pdptr = a->ptr;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
	return simi_cuIpcOpenMemHandle_v2(pdptr, handle, Flags);
}

CUresult simi_cuIpcCloseMemHandle(CUdeviceptr dptr)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (!sim_cur_ctx(&rc))
		SIM_UNLOCK_RETURN(rc);
	struct sim_alloc *a = sim_alloc_find(dptr);
	if (!a || a->kind != SIM_ALLOC_IPC)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (--a->refs == 0)
		sim_alloc_free(a);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}
