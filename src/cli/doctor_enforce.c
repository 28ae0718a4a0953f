/*
 * doctor_enforce.c - the enforcers (doctor_enforce.h). The driver's limits
 * need all of: NVML's nvmlDevice{Set,Get}MemoryLimits_v1 answering (a
 * driver of R615 or later), a cgroup v2 hierarchy (NVML names a cgroup by
 * its v2 directory), a GPU not in MIG mode. With the kernel's dmem
 * controller the driver keeps them in dmem.max/dmem.min; without, in its
 * own backend: both are fine, the check only says which.
 *
 * VRAMCTL_CGROUP_ROOT points the cgroup files read here elsewhere (tests);
 * the fact then names the directory read.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/doctor_enforce.h"
#include "common/cgroup2.h"
#include "common/nvml_api.h"
#include "monitor/drvlimit.h"
#include "monitor/nvml.h"

#define GET_LIMITS "R615 or later (CUDA 13.4) with cgroup v2"

/* Does the file hold the word (a whole, space-separated token)? */
static int file_has_word(const char *path, const char *word)
{
	char buf[1024];
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (char *save = NULL, *t = strtok_r(buf, " \n", &save); t;
	     t = strtok_r(NULL, " \n", &save))
		if (!strcmp(t, word))
			return 1;
	return 0;
}

/* The dmem regions (dmem.capacity lines) and those whose name says NVIDIA's. */
static void dmem_regions(const char *root, int *all, int *nvidia)
{
	char path[512], line[256];
	*all = *nvidia = 0;
	snprintf(path, sizeof(path), "%s/dmem.capacity", root);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!line[0] || line[0] == '\n')
			continue;
		(*all)++;
		for (char *p = line; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		if (strstr(line, "nvidia"))
			(*nvidia)++;
	}
	fclose(f);
}

static void check_library(struct doc *d)
{
	dr_add(&d->rep, "enforce.library", -1, DR_OK, NULL,
	       "the injected library: caps, groups and spill on every driver, for programs that "
	       "load it (vramctl run, the Slurm plugin, the CDI spec)");
}

/* The driver's limits on the first GPU not in MIG mode; MIG GPUs get their
 * own line. Returns the index probed, or -1 when every GPU is in MIG mode. */
static int probe_device(struct doc *d)
{
	int probe = -1;
	for (int i = 0; i < d->ndev; i++) {
		struct mon_nvml_modes m;
		char err[128];
		if (mon_nvml_modes(d->nv, d->devs[i].uuid, &m, err, sizeof(err)) == 0 &&
		    m.mig == NVML_DEVICE_MIG_ENABLE) {
			dr_add(&d->rep, "enforce.driver", i, DR_OK, NULL,
			       "GPU %d: MIG mode is on: the driver's memory limits do not apply to "
			       "MIG "
			       "(NVIDIA); the library's caps do",
			       i);
			continue;
		}
		if (probe < 0)
			probe = i;
	}
	return probe;
}

static void check_driver_limits(struct doc *d)
{
	const char *release = d->nvml_release[0] ? d->nvml_release : "?";
	if (!d->nv) {
		dr_add(&d->rep, "enforce.driver", -1, DR_SKIP, NULL,
		       "the driver's memory limits: need NVML (driver.nvml)");
		return;
	}
	int probe = d->ndev > 0 ? probe_device(d) : -1;
	if (probe < 0) {
		dr_add(&d->rep, "enforce.driver", -1, DR_SKIP, NULL,
		       "the driver's memory limits: no GPU outside MIG mode to ask");
		return;
	}
	char cg[VR_CGROUP2_LEN], ns[VR_CGROUP2_LEN + 32], err[256];
	if (vr_cgroup2_of(0, cg, sizeof(cg)) != 0)
		snprintf(cg, sizeof(cg), "/");
	vr_cgroup2_ns(cg, ns, sizeof(ns));
	struct mon_drvlimit l;
	int r = mon_drvlimit_get(d->nv, d->devs[probe].uuid, ns, &l, err, sizeof(err));
	/* R615 answers NOT_SUPPORTED for a cgroup with no limit set, as it
	 * does where it cannot limit: the driver's release tells which
	 * (doctor's own cgroup has none, as a rule). */
	int can = atoi(release) >= MON_DRVLIMIT_RELEASE;
	if (r == NVML_ERROR_NOT_SUPPORTED && can)
		r = NVML_SUCCESS;
	if (r == NVML_ERROR_FUNCTION_NOT_FOUND || r == NVML_ERROR_NOT_SUPPORTED) {
		/* Not a fault: most drivers (535 to 580) lack them; the library holds. */
		dr_add(&d->rep, "enforce.driver", -1, DR_OK, NULL,
		       "the driver's memory limits: not available with driver %s (%s); the library "
		       "holds every cap. To have them too: " GET_LIMITS,
		       release, err);
		return;
	}
	if (r != NVML_SUCCESS) {
		dr_add(&d->rep, "enforce.driver", -1, DR_WARN,
		       "see the NVML error; `vramctl doctor` again after fixing it",
		       "the driver's memory limits: nvmlDeviceGetMemoryLimits_v1 failed on GPU %d: "
		       "%s",
		       probe, err);
		return;
	}
	const char *root = vr_cgroup2_root();
	if (!vr_cgroup2_mounted()) {
		dr_add(&d->rep, "enforce.driver", -1, DR_WARN,
		       "boot with cgroup v2 only (systemd.unified_cgroup_hierarchy=1 on the kernel "
		       "command line); until then the library holds every cap",
		       "the driver %s has memory limits, but %s is not a cgroup v2 hierarchy (no "
		       "cgroup.controllers): the driver's limits need cgroup v2",
		       release, root);
		return;
	}
	char path[512];
	int all, nvidia;
	snprintf(path, sizeof(path), "%s/cgroup.controllers", root);
	int dmem = file_has_word(path, "dmem");
	dmem_regions(root, &all, &nvidia);
	char how[160];
	if (dmem)
		snprintf(how, sizeof(how),
		         "the dmem controller (%d region%s in dmem.capacity, %d "
		         "NVIDIA's)",
		         all, all == 1 ? "" : "s", nvidia);
	else
		snprintf(how, sizeof(how), "the driver's own backend (no dmem controller)");
	dr_add(
	    &d->rep, "enforce.driver", -1, DR_OK, NULL,
	    "the driver's memory limits: available (driver %s, nvmlDevice{Set,Get}MemoryLimits_v1 "
	    "answer, cgroup v2 at %s, kept by %s); setting them needs root: "
	    "vramctl run --enforce driver, the Slurm plugin's enforce=, cdi generate --enforce. "
	    "As R615 has them: a limit holds its cgroup's whole subtree, but a program is shown "
	    "only its own cgroup's limit as its device's size; the root cgroup cannot be "
	    "limited; a limit is never lowered below what its cgroup holds; a cgroup without a "
	    "limit answers NOT_SUPPORTED, as a driver without them does",
	    release, root, how);
}

void dr_check_enforcers(struct doc *d)
{
	check_library(d);
	check_driver_limits(d);
}
