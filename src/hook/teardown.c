/*
 * teardown.c - the registry's probe (registry/held.c): does NVML still list
 * a dead member's process on a GPU, while the driver tears its contexts
 * down? Asked only on the reclaim path (a denial, a join) when a member
 * that has been reaped still holds bytes, so programs that never meet one
 * never load NVML for it.
 *
 * That path may run under the library's own locks: NVML is loaded the
 * careful way (nvmlproc.c). Until it is ready the answer is "listed" (the
 * member's share stays held: the registry's bound still applies); if it
 * cannot be loaded, "cannot tell" (reaped = gone).
 */
#include <stdlib.h>

#include "common/size.h"
#include "hook/hook.h"
#include "hook/nvmlproc.h"
#include "hook/teardown.h"

static int listed(int32_t pid, const unsigned char uuid[VR_UUID_LEN])
{
	char text[48];
	struct vr_nvml_proc *list;
	unsigned n;
	nvmlReturn_t rc;
	vr_format_uuid(uuid, text, sizeof text);
	int up = vr_nvml_list(text, &list, &n, &rc);
	if (up == NV_LOADING)
		return 1; /* not known yet: held for now */
	if (up != NV_READY)
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
