/*
 * driver.c - the simulated driver's process-local state (g_sim, one mutex
 * for all of it) and the address space device pointers come from. What the
 * state holds is in driver.h; each job on it has its own file (sim.h).
 */
#include "driver.h"

struct sim_state g_sim = {.mu = PTHREAD_MUTEX_INITIALIZER};

CUresult sim_check_init(void)
{
	return g_sim.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

struct sim_dev *sim_dev_get(CUdevice dev)
{
	if (dev < 0 || dev >= g_sim.ndev)
		return NULL;
	return &g_sim.dev[dev];
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
