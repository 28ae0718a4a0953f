/*
 * nvml.c - reads devices and GPU processes from NVML, loaded with dlopen.
 *
 * NVML's traps and what this file does about each:
 *  - nvmlMemory_v2 needs version = sizeof(nvmlMemory_v2_t) | 2 << 24; older
 *    drivers lack the call, so nvmlDeviceGetMemoryInfo is the fallback.
 *  - The process list's layouts and size protocol: common/nvml_procs.c,
 *    shared with the injected library.
 *  - usedGpuMemory == ULLONG_MAX means unknown: MON_P_NVML_USED stays clear.
 *  - The PIDs are host PIDs (the reader maps them with NSpid, collect.c).
 */
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/contract.h"
#include "common/nvml_api.h"
#include "common/nvml_procs.h"
#include "common/size.h"
#include "monitor/nvml.h"

typedef nvmlReturn_t nvml_ret;
typedef nvmlDevice_t nvml_dev;

struct mon_nvml {
	void *lib;
	vr_pfn_nvmlShutdown shutdown;
	vr_pfn_nvmlDeviceGetCount_v2 count;
	vr_pfn_nvmlDeviceGetHandleByIndex_v2 handle;
	vr_pfn_nvmlDeviceGetName name;
	vr_pfn_nvmlDeviceGetUUID uuid;
	vr_pfn_nvmlSystemGetDriverVersion driver_version;
	vr_pfn_nvmlDeviceGetMemoryInfo mem_v1;
	vr_pfn_nvmlDeviceGetMemoryInfo_v2 mem_v2;
	struct vr_nvml_procs_api procs;
	vr_pfn_nvmlErrorString errstr;
};

static void *sym(void *lib, const char *name)
{
	return dlsym(lib, name);
}

static const char *errtext(const struct mon_nvml *nv, nvml_ret r)
{
	const char *s = nv->errstr ? nv->errstr(r) : NULL;
	return s ? s : "unknown error";
}

int mon_nvml_open(const char *path, struct mon_nvml **out, char *err, size_t errlen)
{
	if (!path)
		path = getenv(VR_ENV_NVML);
	if (!path || !*path)
		path = "libnvidia-ml.so.1";
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(err, errlen, "NVML not found (%s)", path);
		return -ENOENT;
	}
	struct mon_nvml *nv = calloc(1, sizeof(*nv));
	if (!nv) {
		dlclose(lib);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	nv->lib = lib;
	vr_pfn_nvmlInit_v2 init = (vr_pfn_nvmlInit_v2)sym(lib, "nvmlInit_v2");
	if (!init)
		init = (vr_pfn_nvmlInit)sym(lib, "nvmlInit");
	nv->shutdown = (vr_pfn_nvmlShutdown)sym(lib, "nvmlShutdown");
	nv->count = (vr_pfn_nvmlDeviceGetCount_v2)sym(lib, "nvmlDeviceGetCount_v2");
	if (!nv->count)
		nv->count = (vr_pfn_nvmlDeviceGetCount)sym(lib, "nvmlDeviceGetCount");
	nv->handle =
	    (vr_pfn_nvmlDeviceGetHandleByIndex_v2)sym(lib, "nvmlDeviceGetHandleByIndex_v2");
	if (!nv->handle)
		nv->handle =
		    (vr_pfn_nvmlDeviceGetHandleByIndex)sym(lib, "nvmlDeviceGetHandleByIndex");
	nv->name = (vr_pfn_nvmlDeviceGetName)sym(lib, "nvmlDeviceGetName");
	nv->uuid = (vr_pfn_nvmlDeviceGetUUID)sym(lib, "nvmlDeviceGetUUID");
	nv->driver_version =
	    (vr_pfn_nvmlSystemGetDriverVersion)sym(lib, "nvmlSystemGetDriverVersion");
	nv->mem_v1 = (vr_pfn_nvmlDeviceGetMemoryInfo)sym(lib, "nvmlDeviceGetMemoryInfo");
	nv->mem_v2 = (vr_pfn_nvmlDeviceGetMemoryInfo_v2)sym(lib, "nvmlDeviceGetMemoryInfo_v2");
	nv->procs.v3 = (vr_nvml_procs_fn)sym(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
	nv->procs.v2 = (vr_nvml_procs_fn)sym(lib, "nvmlDeviceGetComputeRunningProcesses_v2");
	nv->procs.v1 = (vr_nvml_procs_fn)sym(lib, "nvmlDeviceGetComputeRunningProcesses");
	nv->errstr = (vr_pfn_nvmlErrorString)sym(lib, "nvmlErrorString");
	if (!init || !nv->shutdown || !nv->count || !nv->handle) {
		snprintf(err, errlen, "NVML unusable (%s lacks nvmlInit or device calls)", path);
		dlclose(lib);
		free(nv);
		return -ENOSYS;
	}
	nvml_ret r = init();
	if (r != NVML_SUCCESS) {
		snprintf(err, errlen, "NVML failed to initialise: %s", errtext(nv, r));
		dlclose(lib);
		free(nv);
		return -EIO;
	}
	*out = nv;
	return 0;
}

void mon_nvml_identity(struct mon_nvml *nv, char *path, size_t plen, char *version, size_t vlen)
{
	struct link_map *lm = NULL;
	char real[PATH_MAX];
	path[0] = version[0] = '\0';
	if (dlinfo(nv->lib, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name)
		snprintf(path, plen, "%s", realpath(lm->l_name, real) ? real : lm->l_name);
	vr_pfn_nvmlSystemGetNVMLVersion get =
	    (vr_pfn_nvmlSystemGetNVMLVersion)sym(nv->lib, "nvmlSystemGetNVMLVersion");
	char text[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE];
	if (get && get(text, sizeof(text)) == NVML_SUCCESS)
		snprintf(version, vlen, "%s", text);
}

int mon_nvml_modes(struct mon_nvml *nv, const char *uuid, struct mon_nvml_modes *out, char *err,
                   size_t errlen)
{
	vr_pfn_nvmlDeviceGetHandleByUUID by_uuid =
	    (vr_pfn_nvmlDeviceGetHandleByUUID)sym(nv->lib, "nvmlDeviceGetHandleByUUID");
	vr_pfn_nvmlDeviceGetComputeMode cm =
	    (vr_pfn_nvmlDeviceGetComputeMode)sym(nv->lib, "nvmlDeviceGetComputeMode");
	vr_pfn_nvmlDeviceGetPersistenceMode pm =
	    (vr_pfn_nvmlDeviceGetPersistenceMode)sym(nv->lib, "nvmlDeviceGetPersistenceMode");
	vr_pfn_nvmlDeviceGetMigMode mig =
	    (vr_pfn_nvmlDeviceGetMigMode)sym(nv->lib, "nvmlDeviceGetMigMode");
	nvml_dev h;
	unsigned cur, pend;
	out->compute_mode = out->persistence = out->mig = out->mig_pending = -1;
	if (!by_uuid) {
		snprintf(err, errlen, "NVML has no nvmlDeviceGetHandleByUUID");
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	}
	nvml_ret r = by_uuid(uuid, &h);
	if (r != NVML_SUCCESS) {
		snprintf(err, errlen, "%s", errtext(nv, r));
		return r;
	}
	if (cm && cm(h, &out->compute_mode) != NVML_SUCCESS)
		out->compute_mode = -1;
	if (pm && pm(h, &out->persistence) != NVML_SUCCESS)
		out->persistence = -1;
	if (mig && mig(h, &cur, &pend) == NVML_SUCCESS) {
		out->mig = (int)cur;
		out->mig_pending = (int)pend;
	}
	return NVML_SUCCESS;
}

void *mon_nvml_sym(struct mon_nvml *nv, const char *name)
{
	return sym(nv->lib, name);
}

const char *mon_nvml_error(struct mon_nvml *nv, int r)
{
	return errtext(nv, r);
}

void mon_nvml_close(struct mon_nvml *nv)
{
	if (!nv)
		return;
	nv->shutdown();
	dlclose(nv->lib);
	free(nv);
}

static int add_proc(struct mon_model *m, int *cap, int device, const char *uuid, unsigned pid,
                    unsigned long long used)
{
	if (m->nprocs == *cap) {
		int ncap = *cap ? *cap * 2 : 16;
		struct mon_proc *p = realloc(m->procs, sizeof(*p) * (size_t)ncap);
		if (!p)
			return -ENOMEM;
		m->procs = p;
		*cap = ncap;
	}
	struct mon_proc *p = &m->procs[m->nprocs++];
	memset(p, 0, sizeof(*p));
	p->valid = MON_P_NVML | MON_P_HOST_PID | MON_P_DEVICE;
	p->device = device;
	snprintf(p->uuid, sizeof(p->uuid), "%s", uuid);
	p->host_pid = (pid_t)pid;
	p->cap = MON_NO_CAP;
	if (used != ~0ULL) {
		p->valid |= MON_P_NVML_USED;
		p->nvml_used = used;
	}
	return 0;
}

static int read_device_procs(struct mon_nvml *nv, nvml_dev h, struct mon_model *m, int *cap,
                             int device)
{
	struct mon_device *d = &m->devs[device];
	struct vr_nvml_proc *list;
	unsigned n;
	const char *api;
	nvml_ret r = vr_nvml_procs(&nv->procs, h, &list, &n, &api);
	if (r != NVML_SUCCESS) {
		mon_model_note(m, "NVML could not list the processes on GPU %d: %s", d->index,
		               r != NVML_ERROR_FUNCTION_NOT_FOUND ||
		                       (nv->procs.v3 || nv->procs.v2 || nv->procs.v1)
		                   ? errtext(nv, r)
		                   : "no process call");
		return 0;
	}
	snprintf(d->proc_api, sizeof(d->proc_api), "%s", api);
	d->valid |= MON_DEV_PROCS;
	int rc = 0;
	for (unsigned i = 0; i < n && rc == 0; i++)
		rc = add_proc(m, cap, device, d->uuid, list[i].pid, list[i].used);
	free(list);
	return rc;
}

int mon_nvml_read(struct mon_nvml *nv, struct mon_model *m)
{
	char text[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
	m->valid |= MON_M_NVML;
	if (nv->driver_version && nv->driver_version(text, sizeof(text)) == NVML_SUCCESS) {
		/* Truncated to the model's field (real versions are far shorter). */
		snprintf(m->driver_version, sizeof(m->driver_version), "%.*s",
		         (int)sizeof(m->driver_version) - 1, text);
		m->valid |= MON_M_DRIVER;
	}
	unsigned count = 0;
	nvml_ret r = nv->count(&count);
	if (r != NVML_SUCCESS) {
		mon_model_note(m, "NVML could not count the GPUs: %s", errtext(nv, r));
		return 0;
	}
	if (count > 1024)
		count = 1024;
	m->devs = calloc(count ? count : 1, sizeof(*m->devs));
	if (!m->devs)
		return -ENOMEM;
	int pcap = 0;
	for (unsigned i = 0; i < count; i++) {
		nvml_dev h;
		struct mon_device *d = &m->devs[m->ndevs];
		memset(d, 0, sizeof(*d));
		d->index = (int)i;
		r = nv->handle(i, &h);
		if (r != NVML_SUCCESS) {
			mon_model_note(m, "NVML could not open GPU %u: %s", i, errtext(nv, r));
			continue;
		}
		m->ndevs++;
		d->valid |= MON_DEV_INDEX;
		char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE > NVML_DEVICE_NAME_V2_BUFFER_SIZE
		             ? NVML_DEVICE_UUID_V2_BUFFER_SIZE
		             : NVML_DEVICE_NAME_V2_BUFFER_SIZE];
		if (nv->uuid && nv->uuid(h, buf, NVML_DEVICE_UUID_V2_BUFFER_SIZE) == NVML_SUCCESS)
			snprintf(d->uuid, sizeof(d->uuid), "%s", buf);
		if (nv->name && nv->name(h, buf, NVML_DEVICE_NAME_V2_BUFFER_SIZE) == NVML_SUCCESS) {
			snprintf(d->name, sizeof(d->name), "%s", buf);
			d->valid |= MON_DEV_NAME;
		}
		nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
		nvmlMemory_t m1;
		if (nv->mem_v2 && nv->mem_v2(h, &m2) == NVML_SUCCESS) {
			d->total = m2.total;
			d->used = m2.used;
			d->free = m2.free;
			d->reserved = m2.reserved <= m2.total ? m2.reserved : 0;
			d->valid |= MON_DEV_MEMORY;
		} else if (nv->mem_v1 && nv->mem_v1(h, &m1) == NVML_SUCCESS) {
			d->total = m1.total;
			d->used = m1.used;
			d->free = m1.free;
			d->valid |= MON_DEV_MEMORY;
		} else {
			mon_model_note(m, "NVML did not report the memory of GPU %u", i);
		}
		if (read_device_procs(nv, h, m, &pcap, m->ndevs - 1) < 0) {
			mon_model_clear(m);
			return -ENOMEM;
		}
	}
	return 0;
}

int mon_nvml_lists(struct mon_nvml *nv, const char *uuid, unsigned pid)
{
	vr_pfn_nvmlDeviceGetHandleByUUID by_uuid =
	    (vr_pfn_nvmlDeviceGetHandleByUUID)sym(nv->lib, "nvmlDeviceGetHandleByUUID");
	nvml_dev h;
	struct vr_nvml_proc *list;
	unsigned n;
	const char *api;
	if (!by_uuid || by_uuid(uuid, &h) != NVML_SUCCESS ||
	    vr_nvml_procs(&nv->procs, h, &list, &n, &api) != NVML_SUCCESS)
		return -1;
	int found = 0;
	for (unsigned i = 0; i < n && !found; i++)
		found = list[i].pid == pid;
	free(list);
	return found;
}

/* ---- the registry's probe (one NVML per process, opened on demand) ---- */

static struct mon_nvml *probe_nv;
static int probe_tried;

static int probe_listed(int32_t pid, const unsigned char uuid[VR_UUID_LEN])
{
	char err[256], text[48];
	if (!probe_tried) {
		probe_tried = 1;
		if (mon_nvml_open(NULL, &probe_nv, err, sizeof(err)) < 0)
			probe_nv = NULL;
	}
	if (!probe_nv || pid <= 0)
		return -1;
	vr_format_uuid(uuid, text, sizeof(text));
	return mon_nvml_lists(probe_nv, text, (unsigned)pid);
}

static void probe_say(const char *line)
{
	fprintf(stderr, "vramctl: %s\n", line);
}

const struct vr_gpu_probe *mon_nvml_probe(void)
{
	static const struct vr_gpu_probe p = {.listed = probe_listed, .say = probe_say};
	return &p;
}

int mon_nvml_card(struct mon_nvml *nv, const char *uuid, int index, char *uuid_out,
                  uint64_t *free_b, uint64_t *usable)
{
	struct mon_model m;
	memset(&m, 0, sizeof m);
	if (mon_nvml_read(nv, &m) != 0)
		return -EIO;
	int rc = -ENODEV;
	for (int i = 0; i < m.ndevs && rc; i++) {
		const struct mon_device *d = &m.devs[i];
		if ((uuid ? strcasecmp(d->uuid, uuid) != 0 : d->index != index) ||
		    !(d->valid & MON_DEV_MEMORY))
			continue;
		if (uuid_out)
			snprintf(uuid_out, MON_UUID_MAX, "%s", d->uuid);
		*free_b = d->free;
		*usable = d->total - d->reserved;
		rc = 0;
	}
	mon_model_clear(&m);
	return rc;
}
