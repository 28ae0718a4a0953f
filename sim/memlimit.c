/*
 * memlimit.c - the driver's memory limits per cgroup, as R615 drivers have
 * them (nvmlDeviceSetMemoryLimits_v1 / nvmlDeviceGetMemoryLimits_v1): a
 * soft and a hard limit for a cgroup v2 directory, kept in the card's state
 * file so every process sees them. A hard limit holds the cgroup and every
 * cgroup below it: an allocation fails when the processes of that subtree
 * would hold more than it on the card, everything counted (contexts,
 * modules, allocations), as sim_card_charge counts it. The soft limit (the
 * guarantee) is stored and read back; nothing reclaims under pressure.
 *
 * As R615's open kernel modules and NVIDIA's own tests show them:
 * "get" answers NOT_SUPPORTED for a cgroup with no limit set, as it does
 * where the driver cannot limit at all (before R615, MIG); the root cgroup
 * cannot be limited (NOT_SUPPORTED); a hard limit below what the cgroup's
 * subtree holds now is refused (the simulator answers INVALID_ARGUMENT:
 * which code R615 gives was not seen); a limit on a parent cgroup holds
 * its whole subtree, but a program is shown its own cgroup's limit only as
 * its device's size (sim_limit_room).
 *
 * Each process's cgroup is recorded in its slot when it takes one, and
 * sim_card_charge holds the hard limits (card.c); VRAMSIM_CGROUP stands in
 * for /proc/self/cgroup in tests (config.c).
 */
#include "common/nvml_api.h"
#include "sim.h"

#include <stdio.h>
#include <string.h>

#define CGROUP_MOUNT "/sys/fs/cgroup"

/* "/sys/fs/cgroup/a/b/" -> "/a/b"; "/sys/fs/cgroup" -> "/". -1 when ns is
 * not a directory under the cgroup mount. */
static int ns_path(const char *ns, char *out, size_t n)
{
	size_t m = strlen(CGROUP_MOUNT);
	if (!ns || strncmp(ns, CGROUP_MOUNT, m) != 0 || (ns[m] && ns[m] != '/'))
		return -1;
	const char *rel = ns + m;
	size_t len = strlen(rel);
	while (len > 0 && rel[len - 1] == '/')
		len--;
	if (len + 2 > n || strstr(rel, "/.."))
		return -1;
	if (len == 0) {
		snprintf(out, n, "/");
		return 0;
	}
	memcpy(out, rel, len);
	out[len] = '\0';
	return 0;
}

static struct sim_limit *find(struct sim_card *c, const char *path)
{
	for (int i = 0; i < SIM_MAX_LIMITS; i++)
		if (c->file->limits[i].in_use && !strcmp(c->file->limits[i].path, path))
			return &c->file->limits[i];
	return NULL;
}

int sim_limit_set(struct sim_card *c, const char *ns, uint64_t soft, uint64_t hard)
{
	char path[SIM_CGROUP_LEN];
	if (ns_path(ns, path, sizeof(path)) != 0 || soft > hard)
		return NVML_ERROR_INVALID_ARGUMENT;
	struct sim_limit *l = find(c, path);
	if (soft == 0 && hard == NVML_DEVICE_MEMORY_LIMIT_MAX) {
		if (l)
			memset(l, 0, sizeof(*l));
		return NVML_SUCCESS;
	}
	if (!strcmp(path, "/"))
		return NVML_ERROR_NOT_SUPPORTED; /* the root cgroup cannot be limited */
	if (hard < sim_card_cgroup_used(c, path))
		return NVML_ERROR_INVALID_ARGUMENT; /* below what it holds now */
	for (int i = 0; !l && i < SIM_MAX_LIMITS; i++)
		if (!c->file->limits[i].in_use)
			l = &c->file->limits[i];
	if (!l)
		return NVML_ERROR_INSUFFICIENT_RESOURCES;
	snprintf(l->path, sizeof(l->path), "%s", path);
	l->soft = soft;
	l->hard = hard;
	l->in_use = 1;
	return NVML_SUCCESS;
}

int sim_limit_get(struct sim_card *c, const char *ns, uint64_t *soft, uint64_t *hard,
                  uint64_t *used)
{
	char path[SIM_CGROUP_LEN];
	if (ns_path(ns, path, sizeof(path)) != 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	const struct sim_limit *l = find(c, path);
	if (!l)
		return NVML_ERROR_NOT_SUPPORTED; /* no limit set here */
	*soft = l->soft;
	*hard = l->hard;
	*used = sim_card_cgroup_used(c, path);
	return NVML_SUCCESS;
}
