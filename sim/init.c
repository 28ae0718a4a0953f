/*
 * init.c - cuInit (which devices are visible: CUDA_VISIBLE_DEVICES; opening
 * their card state files), cuDriverGetVersion, and fork: the child starts
 * with no driver state.
 */
#include "driver.h"

#include <stdlib.h>
#include <string.h>

static void atfork_prepare(void)
{
	pthread_mutex_lock(&g_sim.mu);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&g_sim.mu);
}

/*
 * The child starts with no driver state: contexts, allocations and card slots
 * belong to the parent (the real driver cannot be used across fork either).
 * The child may call cuInit again and gets its own slot on each card.
 */
static void atfork_child(void)
{
	pthread_mutex_init(&g_sim.mu, NULL);
	/* Every allocation family forgets its records. Pinned host memory stays
	 * mapped in the child (it is ordinary memory), but is no longer the
	 * driver's to free. */
	sim_alloc_after_fork();
	sim_host_after_fork();
	sim_pool_after_fork();
	sim_vmm_after_fork();
	sim_array_after_fork();
	sim_small_after_fork();
	sim_graph_after_fork();
	sim_graph_exec_after_fork();
	sim_module_after_fork();
	g_sim.host_pinned = 0;
	for (int i = 0; i < g_sim.ndev; i++) {
		struct sim_dev *d = &g_sim.dev[i];
		pthread_mutex_init(&d->card.mu, NULL);
		sim_card_close(&d->card);
	}
	while (g_sim.ctxs) {
		struct sim_ctx *c = g_sim.ctxs;
		g_sim.ctxs = c->next;
		free(c);
	}
	while (g_sim.streams) {
		struct sim_stream *s = g_sim.streams;
		g_sim.streams = s->next;
		free(s);
	}
	memset(g_sim.dev, 0, sizeof(g_sim.dev));
	g_sim.ndev = 0;
	g_sim.initialized = 0;
	sim_ctx_stack_after_fork();
	sim_ckpt_after_fork();
}

/*
 * One entry of CUDA_VISIBLE_DEVICES (s, len bytes, blanks around it
 * allowed): an ordinal or a unique GPU-<uuid> prefix. The physical device,
 * or -1 when the entry is invalid.
 */
static int visible_entry(const struct sim_config *cfg, const char *s, size_t len)
{
	char tok[128];
	int phys = -1;
	while (len && (*s == ' ' || *s == '\t')) {
		s++;
		len--;
	}
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	if (len == 0 || len >= sizeof(tok))
		return -1;
	memcpy(tok, s, len);
	tok[len] = '\0';
	if (tok[0] >= '0' && tok[0] <= '9') {
		char *end;
		long v = strtol(tok, &end, 10);
		if (*end == '\0' && v >= 0 && v < cfg->ndev)
			phys = (int)v;
	} else if (strncmp(tok, "GPU-", 4) == 0 && len > 4) {
		for (int i = 0; i < cfg->ndev; i++) {
			if (strncasecmp(cfg->dev[i].uuid_str, tok, len) != 0)
				continue;
			if (phys >= 0) /* ambiguous prefix */
				return -1;
			phys = i;
		}
	}
	return phys;
}

/*
 * CUDA_VISIBLE_DEVICES: a comma-separated list of ordinals or GPU-<uuid>
 * prefixes; the first invalid entry (unknown, duplicate, MIG-..., garbage)
 * hides itself and every entry after it, as the real driver does.
 */
static int visible_devices(int *map)
{
	const struct sim_config *cfg = sim_config();
	const char *s = getenv("CUDA_VISIBLE_DEVICES");
	int n = 0;
	if (!s) {
		for (int i = 0; i < cfg->ndev; i++)
			map[i] = i;
		return cfg->ndev;
	}
	while (*s && n < cfg->ndev) {
		size_t len = strcspn(s, ",");
		int phys = visible_entry(cfg, s, len);
		if (phys < 0)
			break;
		for (int i = 0; i < n; i++)
			if (map[i] == phys)
				phys = -1;
		if (phys < 0)
			break;
		map[n++] = phys;
		s += len;
		if (*s == ',')
			s++;
	}
	return n;
}

static void register_atfork(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* With g_sim.mu held: sets up the n visible devices (map: their physical
 * indexes) and opens their cards; CUDA_ERROR_UNKNOWN, every card closed
 * again, when one cannot be opened. */
static CUresult open_devices(const int *map, int n)
{
	for (int i = 0; i < n; i++) {
		struct sim_dev *d = &g_sim.dev[i];
		memset(d, 0, sizeof(*d));
		d->phys = map[i];
		pthread_mutex_init(&d->card.mu, NULL);
		if (sim_card_open(&d->card, map[i]) != 0) {
			for (int k = 0; k < i; k++)
				sim_card_close(&g_sim.dev[k].card);
			return CUDA_ERROR_UNKNOWN;
		}
		d->primary.magic = SIM_MAGIC_CTX;
		d->primary.dev = i;
		d->primary.primary = 1;
		d->next_addr = 0x200000000000ull + (CUdeviceptr)i * 0x40000000000ull;
	}
	return CUDA_SUCCESS;
}

CUresult simi_cuInit(unsigned int Flags)
{
	static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
	int map[SIM_MAX_DEVICES];
	CUresult rc = CUDA_SUCCESS;

	if (Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_once(&atfork_once, register_atfork);
	/* A kernel module that differs from the libraries (a driver upgraded
	 * without a reboot): cuInit refuses, as the real driver does. */
	if (sim_release_mismatch())
		return CUDA_ERROR_SYSTEM_DRIVER_MISMATCH;
	pthread_mutex_lock(&g_sim.mu);
	if (!g_sim.initialized) {
		int n = visible_devices(map);
		rc = n == 0 ? CUDA_ERROR_NO_DEVICE : open_devices(map, n);
		if (rc == CUDA_SUCCESS) {
			g_sim.ndev = n;
			g_sim.low_next = 0x10000000;
			g_sim.initialized = 1;
		}
	}
	pthread_mutex_unlock(&g_sim.mu);
	if (rc == CUDA_SUCCESS)
		sim_ckpt_start();
	return rc;
}

CUresult simi_cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = sim_config()->driver_version;
	return CUDA_SUCCESS;
}
