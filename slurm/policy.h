/*
 * policy.h - the Slurm plugin's decisions, kept apart from Slurm so they can
 * be tested without it: the plugin's arguments (plugstack.conf), the check of
 * a user's --gpu-mem value, which cap a job step gets (the user's, its shards',
 * the site default or none) and the group's name. The contract itself is
 * written with the launchers' module (src/launch/launch.h). Pure code: no
 * I/O, no allocation, no global state.
 */
#ifndef VRAMCTL_SLURM_POLICY_H
#define VRAMCTL_SLURM_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/contract.h"
#include "common/enforce.h"

#define VR_SLURM_TEXT_MAX    1024
#define VR_SLURM_DEFAULT_LIB "/usr/local/lib/vramctl/libvramctl.so"
#define VR_SLURM_DEFAULT_DIR VR_DEFAULT_DIR_PREFIX "%u" /* vr_dir_pattern */
#define VR_SLURM_OPTOUT      "none"

/* The plugin's arguments, as given in plugstack.conf. */
struct vr_slurm_conf {
	char lib[VR_SLURM_TEXT_MAX];          /* lib=PATH of libvramctl.so */
	char default_spec[VR_SLURM_TEXT_MAX]; /* default=SPEC; "" when none */
	uint64_t bytes_per_shard;             /* bytes_per_shard=SIZE; 0: off */
	int allow_optout;                     /* allow_optout=yes|no (yes) */
	int allow_spill;                      /* allow_spill=yes|no (yes): --gpu-mem-spill */
	int allow_guarantee; /* allow_guarantee=yes|no (yes): --gpu-mem-guarantee */
	char registry_dir[VR_SLURM_TEXT_MAX]; /* registry_dir=DIR, %u = uid */
	enum vr_enforce enforce;              /* enforce=library|driver|both (library) */
	char cgroup_root[VR_SLURM_TEXT_MAX];  /* cgroup_root=DIR (/sys/fs/cgroup) */
	char nvml[VR_SLURM_TEXT_MAX]; /* nvml=PATH of libnvidia-ml.so.1 ("": the loader's) */
	/* watcher=PATH of the vramctl program whose `watch` counts a capped
	 * step's processes outside the cap (jobs.h); "none": not started.
	 * Default: the bin/vramctl of the prefix lib= is under. */
	char watcher[VR_SLURM_TEXT_MAX];
	/* device_dir=DIR: root's directory of the device books, where the
	 * plugin gives the step's guarantee ("": /run/vramctl) */
	char device_dir[VR_SLURM_TEXT_MAX];
};

/*
 * Fills *conf from the plugin's argument words ("key=value"). Unknown keys
 * and bad values are errors: returns 0, or -EINVAL with a message naming the
 * bad word in err.
 */
int vr_slurm_parse_args(int argc, char *const argv[], struct vr_slurm_conf *conf, char *err,
                        size_t errlen);

/*
 * Checks a user's --gpu-mem value on the submitting side: "none" (only when
 * the site allows opting out) or a spec in the size.h grammar. Returns 0 or
 * -EINVAL with a message for the user in err.
 */
int vr_slurm_check_value(const char *value, const struct vr_slurm_conf *conf, char *err,
                         size_t errlen);

/*
 * --gpu-mem-spill[=SIZE] (value NULL: not given; "": given without a size,
 * i.e. auto): *budget gets the group's host budget in bytes (0: no spill;
 * "auto" is a quarter of this host's MemAvailable, common/spill.h). Returns
 * 0, -EPERM when the site forbids spill (allow_spill=no), or -EINVAL with a
 * message for the user in err.
 */
int vr_slurm_spill(const char *value, const struct vr_slurm_conf *conf, uint64_t *budget, char *err,
                   size_t errlen);

/* What a job step gets. */
struct vr_slurm_decision {
	int capped;                   /* 0: leave the step untouched */
	int optout;                   /* the user opted out: undo inherited caps */
	char spec[VR_SLURM_TEXT_MAX]; /* VRAMCTL_LIMIT when capped */
	const char *source;           /* "user", "shards", "default", "none" */
	char note[VR_SLURM_TEXT_MAX]; /* "" or one line the user should see */
};

/*
 * The cap of a step. user_value is the --gpu-mem value (NULL when not
 * given), gpu_job whether Slurm gave the step GPUs or shards, shards the
 * number of shards it holds on this node (0: none). The rules, in order:
 *  - "none" with allow_optout: uncapped (optout set); without: ignored, noted;
 *  - with bytes_per_shard and shards: a cap of shards x bytes_per_shard, which
 *    a user value may lower (one plain SIZE for every device) but not raise;
 *  - a valid user value;
 *  - the site default, for GPU jobs;
 *  - otherwise untouched.
 * An invalid user value (the submitting side rejects it; this is the node's
 * second check) is ignored with a note. Always returns 0.
 */
int vr_slurm_decide(const struct vr_slurm_conf *conf, const char *user_value, int gpu_job,
                    uint64_t shards, struct vr_slurm_decision *out);

/*
 * --gpu-mem-guarantee=SPEC (value NULL: not given) for a step whose cap d
 * decided (vr_slurm_decide; NULL on the submitting side, where the step's
 * cap may still be the site's or its shards': then only the value and the
 * site's rule are checked). out gets VRAMCTL_GUARANTEE's value, "" for
 * none. Returns 0; -EPERM when the site forbids guarantees
 * (allow_guarantee=no); -EINVAL with a message for the user in err when the
 * value does not parse, the step has no cap (a guarantee is a share within
 * one), or it is above the cap item by item (vr_launch_guarantee_check, no
 * device seen). On error out is "".
 */
int vr_slurm_guarantee(const char *value, const struct vr_slurm_conf *conf,
                       const struct vr_slurm_decision *d, char *out, size_t outlen, char *err,
                       size_t errlen);

/*
 * "slurm-<jobid>-<host>", the host name cut at its first dot and any
 * character a group name cannot hold replaced by '_', cut to
 * VR_GROUP_NAME_MAX characters: always a valid group name
 * (vr_group_name_check). Returns 0 or -ENAMETOOLONG.
 */
int vr_slurm_group_name(uint32_t jobid, const char *host, char *buf, size_t len);

/*
 * The cgroup (a cgroup v2 path, "/a/b") a step's driver limit goes on, from
 * the cgroup of a process of the step (a task, or slurmstepd): Slurm's own
 * step cgroup where there is one (proctrack/cgroup with cgroup/v2: the path
 * up to its last "step_*" component, ".../job_7/step_0"), *made 0; else a
 * cgroup the plugin makes below the process's, "<path>/vramctl_<job>.<step>",
 * *made 1. Returns 0 or -ENAMETOOLONG.
 */
int vr_slurm_step_cgroup(const char *path, uint32_t jobid, uint32_t stepid, char *out, size_t len,
                         int *made);

#endif /* VRAMCTL_SLURM_POLICY_H */
