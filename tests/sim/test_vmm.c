/*
 * test_vmm.c - virtual memory management: cuMemCreate charges device
 * locations only, reservations are address space only, memory goes when the
 * handle is released and every mapping is gone; shareable handles imported
 * in another process add no usage.
 */
#include "simtest.h"

static CUmemAllocationProp dev_prop(int id)
{
	CUmemAllocationProp p = {0};
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = id;
	return p;
}

int main(void)
{
	CUmemAllocationProp prop = dev_prop(0);
	CUmemGenericAllocationHandle h, h2, hh;
	CUdeviceptr va, va2;
	size_t gran;
	size_t free_bytes, total;

	REQUIRE_SIM();
	sim_setup();
	unsigned long long base = sim_used();
	ASSERT_CU(cuDeviceTotalMem_v2(&total, 0), CUDA_SUCCESS);

	ASSERT_CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
	          CUDA_SUCCESS);
	ASSERT_UEQ(gran, 2 * MiB);
	ASSERT_CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
	          CUDA_SUCCESS);

	/* Reserving address space (PyTorch reserves 1.125 x total) costs nothing. */
	size_t resv = sim_round_up_test(total + total / 8, gran);
	ASSERT_CU(cuMemAddressReserve(&va, resv, 0, 0, 0), CUDA_SUCCESS);
	ASSERT_UEQ(va % gran, 0);
	ASSERT_UEQ(sim_used(), base);
	ASSERT_CU(cuMemAddressReserve(&va2, 1000, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);

	/* Physical memory. */
	ASSERT_CU(cuMemCreate(&h, 3 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE); /* granularity */
	ASSERT_CU(cuMemCreate(&h, 64 * MiB, &prop, 0), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base + 64 * MiB);
	ASSERT_CU(cuMemCreate(&h2, 17 * GiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_UEQ(sim_used(), base + 64 * MiB);

	/* Map, set access, unmap. */
	ASSERT_CU(cuMemMap(va, 64 * MiB, 0, h, 0), CUDA_SUCCESS);
	ASSERT_CU(cuMemMap(va, 2 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* overlaps */
	ASSERT_CU(cuMemMap(va + 64 * MiB, 4 * MiB, 62 * MiB, h, 0),
	          CUDA_ERROR_INVALID_VALUE); /* past the handle's end */
	CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, 0},
	                       CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	ASSERT_CU(cuMemSetAccess(va, 64 * MiB, &acc, 1), CUDA_SUCCESS);
	ASSERT_CU(cuMemSetAccess(va, 128 * MiB, &acc, 1), CUDA_ERROR_INVALID_VALUE); /* unmapped */
	/* Released while mapped: the memory stays until unmapped. */
	ASSERT_CU(cuMemRelease(h), CUDA_SUCCESS);
	ASSERT_CU(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
	ASSERT_UEQ(sim_used(), base + 64 * MiB);
	ASSERT_CU(cuMemAddressFree(va, resv), CUDA_ERROR_INVALID_VALUE); /* still mapped */
	ASSERT_CU(cuMemUnmap(va, 2 * MiB), CUDA_ERROR_INVALID_VALUE);    /* part of a mapping */
	ASSERT_CU(cuMemUnmap(va, 64 * MiB), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base);
	ASSERT_CU(cuMemUnmap(va, 64 * MiB), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemAddressFree(va, resv), CUDA_SUCCESS);
	ASSERT_CU(cuMemAddressFree(va, resv), CUDA_ERROR_INVALID_VALUE);

	/* Host locations are not device memory. */
	CUmemAllocationProp hprop = prop;
	hprop.location.type = CU_MEM_LOCATION_TYPE_HOST;
	hprop.location.id = 0;
	ASSERT_CU(cuMemCreate(&hh, 4 * MiB, &hprop, 0), CUDA_SUCCESS);
	hprop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
	ASSERT_CU(cuMemCreate(&h2, 4 * MiB, &hprop, 0), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base);
	ASSERT_CU(cuMemRelease(hh), CUDA_SUCCESS);
	ASSERT_CU(cuMemRelease(h2), CUDA_SUCCESS);
	CUmemAllocationProp bad = dev_prop(5);
	ASSERT_CU(cuMemCreate(&h2, 2 * MiB, &bad, 0), CUDA_ERROR_INVALID_VALUE);

	/* Shareable handles: exported here, imported by a child process, which
	 * adds no usage to the card. */
	prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	ASSERT_CU(cuMemCreate(&h, 32 * MiB, &prop, 0), CUDA_SUCCESS);
	int fd = -1;
	ASSERT_CU(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
	          CUDA_SUCCESS);
	ASSERT(fd >= 0);
	ASSERT_UEQ(sim_used(), base + 32 * MiB);
	int fds[2];
	ASSERT_EQ(pipe(fds), 0);
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		/* A fresh driver in the child (the parent's state does not cross fork). */
		sim_setup();
		unsigned long long before = sim_used();
		CUmemGenericAllocationHandle imp;
		CUdeviceptr cva;
		ASSERT_CU(cuMemImportFromShareableHandle(&imp, (void *)(intptr_t)fd,
		                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
		          CUDA_SUCCESS);
		ASSERT_CU(cuMemAddressReserve(&cva, 32 * MiB, 0, 0, 0), CUDA_SUCCESS);
		ASSERT_CU(cuMemMap(cva, 32 * MiB, 0, imp, 0), CUDA_SUCCESS);
		ASSERT_UEQ(sim_used(), before);
		ASSERT_CU(cuMemUnmap(cva, 32 * MiB), CUDA_SUCCESS);
		ASSERT_CU(cuMemRelease(imp), CUDA_SUCCESS);
		ASSERT_CU(cuMemAddressFree(cva, 32 * MiB), CUDA_SUCCESS);
		ASSERT_UEQ(sim_used(), before);
		ASSERT_EQ(write(fds[1], "k", 1), 1);
		_exit(0);
	}
	close(fds[1]);
	ASSERT_EQ(sim_wait_byte(fds[0]), 'k');
	int st;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* Back to this process's own usage once the child is gone. */
	ASSERT_UEQ(sim_used(), base + 32 * MiB);
	close(fd);
	ASSERT_CU(cuMemRelease(h), CUDA_SUCCESS);
	ASSERT_CU(cuMemGetInfo_v2(&free_bytes, &total), CUDA_SUCCESS);
	ASSERT_UEQ(total - free_bytes, base);
	/* Not exportable without the handle type. */
	prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
	ASSERT_CU(cuMemCreate(&h, 2 * MiB, &prop, 0), CUDA_SUCCESS);
	ASSERT_CU(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
	          CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemRelease(h), CUDA_SUCCESS);
	return 0;
}
