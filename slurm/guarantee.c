/*
 * guarantee.c - the Slurm plugin's guarantees (guarantee.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/siphash.h"
#include "common/size.h"
#include "monitor/nvml.h"
#include "registry/devbook.h"
#include "registry/proc.h"
#include "registry/registry.h"
#include "slurm/drvlimit.h"
#include "slurm/guarantee.h"

uint64_t vr_slurm_guarantee_token(const char *group)
{
	static const unsigned char key[16] = "vramctl-slurm-gt";
	uint64_t t = vr_siphash24(key, group, strlen(group));
	return t ? t : 1;
}

/* The card's free memory, for the admission (the device book's rule). */
struct card {
	struct mon_nvml *nv;
	const char *uuid;
};

static int card_free(void *arg, uint64_t *free_b)
{
	const struct card *c = arg;
	uint64_t usable;
	return mon_nvml_card(c->nv, c->uuid, -1, NULL, free_b, &usable) == 0 ? 0 : -EIO;
}

int vr_slurm_guarantee_give(spank_t sp, const struct vr_slurm_conf *conf, const char *spec,
                            const char *gspec, uid_t uid, const char *group, char *msg, size_t len)
{
	struct vr_limits lim, guar;
	unsigned idx[VR_SLURM_GPUS_MAX];
	char err[512];
	struct mon_nvml *nv = NULL;
	msg[0] = '\0';
	if (vr_parse_limits(spec, &lim, err, sizeof err) != 0 ||
	    vr_parse_limits(gspec, &guar, err, sizeof err) != 0) {
		snprintf(msg, len, "%s", err);
		return 0;
	}
	if (mon_nvml_open(conf->nvml[0] ? conf->nvml : NULL, &nv, err, sizeof err) < 0) {
		snprintf(msg, len, "%s", err);
		return 0;
	}
	/* slurmstepd holds it for the step: the task's parent, before exec. */
	struct vr_devholder stepd = {.pid = (int32_t)getppid()};
	vr_proc_start_time(NULL, stepd.pid, &stepd.start);
	uint64_t ident = vr_devbook_ident(vr_slurm_guarantee_token(group));
	int n = vr_slurm_step_gpus(sp, nv, idx), ok = 1;
	for (int k = 0; k < n && ok; k++) {
		char uuid[MON_UUID_MAX];
		unsigned char raw[16];
		uint64_t free_b, usable, cap, g, given;
		if (mon_nvml_card(nv, NULL, (int)idx[k], uuid, &free_b, &usable) != 0 ||
		    vr_parse_uuid(uuid, raw) < 0) {
			snprintf(msg, len, "GPU %u: NVML cannot tell its memory", idx[k]);
			ok = 0;
			break;
		}
		if (!vr_limits_cap_for(&guar, k, uuid, usable, &g) || !g)
			continue;
		if (vr_limits_cap_for(&lim, k, uuid, usable, &cap) && g > cap)
			g = cap;
		struct card c = {nv, uuid};
		struct vr_devbook_ask a = {.capacity = usable,
		                           .uid = (uint32_t)uid,
		                           .ident = ident,
		                           .guarantee = g,
		                           .group = group,
		                           .holder = stepd,
		                           .card_free = card_free,
		                           .arg = &c};
		if (vr_devbook_admit(conf->device_dir[0] ? conf->device_dir : NULL, raw, &a, &given,
		                     err, sizeof err) < 0) {
			snprintf(msg, len, "GPU %u: %s", idx[k], err);
			ok = 0;
		}
	}
	mon_nvml_close(nv);
	return ok;
}
