/*
 * account.c - what this process holds, as the card and the host see it:
 * device bytes charged to the shared card state file (sim_dev.used, the
 * card slot NVML lists), and pinned host bytes against
 * VRAMSIM_HOST_PINNABLE. Every allocation family, contexts and their limits
 * charge through here.
 */
#include "driver.h"

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

/* Pins bytes of host memory, or 0 when the platform's limit
 * (VRAMSIM_HOST_PINNABLE: RLIMIT_MEMLOCK, host RAM) would be passed. */
int sim_host_pin(uint64_t bytes)
{
	uint64_t limit = sim_config()->host_pinnable;
	if (bytes > limit || g_sim.host_pinned > limit - bytes)
		return 0;
	g_sim.host_pinned += bytes;
	return 1;
}

void sim_host_unpin(uint64_t bytes)
{
	g_sim.host_pinned -= bytes < g_sim.host_pinned ? bytes : g_sim.host_pinned;
}
