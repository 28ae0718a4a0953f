/*
 * teardown.c - the registry's probe (registry/held.c): does NVML still list
 * a dead member's process on a GPU, while the driver tears its contexts
 * down? Asked only on the reclaim path (a denial, a join) when a member
 * that has been reaped still holds bytes, so programs that never meet one
 * never load NVML for it. NVML is initialised once, on the first question,
 * and kept; a thread that finds another initialising it does not wait: it
 * answers "cannot tell" (the member is then gone, as without NVML).
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "common/nvml_procs.h"
#include "common/size.h"
#include "hook/hook.h"

static atomic_int nvml_up; /* 0 not tried, 2 being tried, 1 ready, -1 unusable */

static int nvml_ready(void)
{
	int s = atomic_load_explicit(&nvml_up, memory_order_acquire);
	if (s == 0 && atomic_compare_exchange_strong(&nvml_up, &s, 2)) {
		int ok =
		    vr_nvml_init() == 0 && vr_real.nvmlInit_v2 && vr_real.nvmlDeviceGetHandleByUUID;
		if (ok)
			VR_OWN(ok = vr_real.nvmlInit_v2() == NVML_SUCCESS);
		s = ok ? 1 : -1;
		atomic_store_explicit(&nvml_up, s, memory_order_release);
	}
	return s == 1 ? 0 : -1;
}

static int listed(int32_t pid, const unsigned char uuid[VR_UUID_LEN])
{
	if (nvml_ready() != 0)
		return -1;
	char text[48];
	vr_format_uuid(uuid, text, sizeof text);
	struct vr_nvml_procs_api a = {
	    .v3 = (vr_nvml_procs_fn)vr_real.nvmlDeviceGetComputeRunningProcesses_v3,
	    .v2 = (vr_nvml_procs_fn)vr_real.nvmlDeviceGetComputeRunningProcesses_v2,
	    .v1 = (vr_nvml_procs_fn)vr_real.nvmlDeviceGetComputeRunningProcesses,
	};
	nvmlDevice_t h;
	nvmlReturn_t r;
	struct vr_nvml_proc *list = NULL;
	unsigned n = 0;
	const char *api;
	VR_OWN(r = vr_real.nvmlDeviceGetHandleByUUID(text, &h);
	       if (r == NVML_SUCCESS) r = vr_nvml_procs(&a, h, &list, &n, &api));
	if (r != NVML_SUCCESS)
		return -1;
	int found = 0;
	for (unsigned i = 0; i < n && !found; i++)
		found = list[i].pid == (unsigned)pid;
	free(list);
	return found;
}

static void say(const char *line)
{
	vr_log(VR_LOG_WARN, "%s", line);
}

static const struct vr_gpu_probe probe = {.listed = listed, .say = say};

void vr_teardown_setup(void)
{
	vr_gpu_probe_set(&probe);
}

void vr_teardown_atfork_child(void)
{
	/* A try in progress in another thread of the parent never ends here. */
	int s = 2;
	atomic_compare_exchange_strong(&nvml_up, &s, 0);
}
