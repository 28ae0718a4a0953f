/*
 * launch.h - what every launcher uses (`vramctl run`, the Slurm plugin, and
 * any container or notebook launcher): turn a request into the environment
 * contract (contract.h) and, for a launcher that stays a member for the run,
 * join the group and learn the caps that apply.
 *
 * A launcher keeps its own option parsing and its own way of writing the
 * environment (setenv, spank_setenv, a spec file); everything a launcher
 * decides about the contract is here, so every launcher decides it alike.
 * libc and the registry only: the Slurm plugin links it into slurmstepd.
 * Nothing here prints: messages go to the caller's err buffer.
 */
#ifndef VRAMCTL_LAUNCH_H
#define VRAMCTL_LAUNCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/size.h"
#include "common/text.h" /* vr_dir_pattern */
#include "registry/registry.h"

/* Where a launcher that ships beside the library finds it. */
#define VR_ENV_LIBRARY  "VRAMCTL_LIBRARY"
#define VR_LIBRARY_NAME "libvramctl.so"

/* A device as the launcher's driver reports it (after CUDA_VISIBLE_DEVICES). */
struct vr_launch_dev {
	int index; /* as the program sees it */
	unsigned char raw[VR_UUID_LEN];
	char uuid[48];  /* "GPU-..." as vr_format_uuid writes it */
	uint64_t total; /* cuDeviceTotalMem_v2 */
};

/* ---- LD_PRELOAD (ld.so separates entries with ':' or ' ') */

/*
 * cur with lib appended (after the entries already there, which keep their
 * order and take precedence), or cur unchanged when lib is already one of
 * its entries. cur may be NULL. Returns 0, -EINVAL when lib itself holds a
 * separator (it cannot be an entry), or -ENAMETOOLONG; buf is then untouched
 * or truncated.
 */
int vr_preload_add(const char *cur, const char *lib, char *buf, size_t len);

/* cur without any entry equal to lib; other entries keep their order,
 * joined by ':'. Returns 0 or -ENAMETOOLONG. */
int vr_preload_remove(const char *cur, const char *lib, char *buf, size_t len);

/* ---- the contract */

/* How a launcher writes one variable: value NULL unsets it; overwrite 0
 * keeps a value already set. Returns 0 or -1 (the launcher says why). */
typedef int (*vr_setenv_fn)(void *ctx, const char *name, const char *value, int overwrite);

struct vr_contract {
	const char *limit;        /* VRAMCTL_LIMIT: the normalised spec */
	const char *guarantee;    /* VRAMCTL_GUARANTEE (normalised) with a limit; NULL: unset */
	const char *token;        /* VRAMCTL_GUARANTEE_TOKEN with a limit; NULL: unset */
	const char *group;        /* VRAMCTL_GROUP; NULL: the library's group of one */
	const char *registry_dir; /* VRAMCTL_REGISTRY_DIR; NULL: the library's default */
	int growth;               /* VRAMCTL_GROWTH=1 and the frameworks' switches */
	const char *count;        /* VRAMCTL_COUNT ("card", "allocations"); NULL: inherited */
	uint64_t spill;           /* VRAMCTL_SPILL (bytes) with a limit; 0: unset */
	const char *wait;         /* VRAMCTL_WAIT (a TIME) with a limit; NULL: unset */
	const char *park_idle;    /* VRAMCTL_PARK_IDLE (a DURATION or "manual"); NULL: unset */
	uint64_t park_budget;     /* VRAMCTL_PARK_BUDGET (bytes) with park_idle */
	const char *lib;          /* the injected library, appended to LD_PRELOAD */
	const char *cur_preload;  /* LD_PRELOAD as the program would inherit it */
};

/*
 * Writes the contract through set: VRAMCTL_LIMIT, VRAMCTL_GROUP and
 * VRAMCTL_REGISTRY_DIR when given; with a limit, VRAMCTL_SPILL as the spill
 * budget in bytes, or unset without one (an inherited budget never applies
 * to a new cap; docs/spill.md), and VRAMCTL_GUARANTEE, VRAMCTL_WAIT,
 * VRAMCTL_PARK_IDLE and VRAMCTL_PARK_BUDGET the same way (set when given,
 * else unset); with growth VRAMCTL_GROWTH=1,
 * TF_FORCE_GPU_ALLOW_GROWTH=true and XLA_PYTHON_CLIENT_PREALLOCATE=false (the
 * last two never over a value the user set; the library sets them the same
 * way in its constructor); LD_PRELOAD with lib appended (vr_preload_add).
 * LD_PRELOAD is checked first, so a refusal writes nothing. Returns 0, or -1
 * with a message in err (a failing set may have written some variables).
 */
int vr_contract_apply(const struct vr_contract *c, vr_setenv_fn set, void *ctx, char *err,
                      size_t errlen);

/*
 * Undoes an inherited contract (a user who opts out inside a capped job):
 * unsets VRAMCTL_LIMIT, VRAMCTL_GROUP, VRAMCTL_GROWTH, VRAMCTL_SPILL,
 * VRAMCTL_GUARANTEE, VRAMCTL_WAIT, VRAMCTL_PARK_IDLE and VRAMCTL_PARK_BUDGET
 * and removes lib from
 * cur_preload (LD_PRELOAD unset when nothing else is left). Returns 0 or -1.
 */
int vr_contract_undo(const char *lib, const char *cur_preload, vr_setenv_fn set, void *ctx);

/*
 * The request's spec normalised against the devices the program will see:
 * amounts exact (vr_format_amount) and every DEV as the device's UUID, so the
 * cap stays on the same physical GPU for processes that see another
 * CUDA_VISIBLE_DEVICES. ndev < 0: no driver could be loaded (why_no_driver
 * says why); then an item naming a device cannot be checked and is refused.
 * Returns 0, or -1 with a message in err (at most two lines; the second
 * starts with "vramctl: ").
 */
int vr_launch_normalise(const struct vr_limits *l, const struct vr_launch_dev *devs, int ndev,
                        const char *why_no_driver, char *out, size_t outlen, char *err,
                        size_t errlen);

/*
 * A cap below what a CUDA context takes on the card (VR_CONTEXT_SMALL: the
 * least measured, the simulator's; real ones are hundreds of MiB) refuses
 * every program's start-up, since the cap counts the card (`--limit
 * 4096` was accepted and every program then failed). 1 with a note for
 * the user (no newline) when a size item of l is that small and count
 * (the --count or VRAMCTL_COUNT in force, NULL: the default) counts the
 * card; 0 otherwise. Percentages are not judged: their size is the
 * device's to tell.
 */
#define VR_CONTEXT_SMALL ((uint64_t)64 << 20)
int vr_launch_small_cap(const struct vr_limits *l, const char *count, char *note, size_t len);

/*
 * A guarantee (--guarantee, parsed in g) within the cap (l) on every device
 * it names: each of the ndev devices the guarantee gives something must
 * have a cap, at least as large (percentages taken of the device's total,
 * as the cap's). With no device seen (ndev <= 0: no driver, or a launcher
 * that looks at none), item by item: each guarantee item needs the cap's
 * item for the same DEV or for every device, and is compared with it when
 * both are sizes or both percentages (the library lowers a guarantee to
 * the cap it meets, so a mixed pair cannot overbook). Returns 0, or -1
 * with one line in err (no "vramctl: " in front).
 */
int vr_launch_guarantee_check(const struct vr_limits *l, const struct vr_limits *g,
                              const struct vr_launch_dev *devs, int ndev, char *err, size_t errlen);

/* ---- joining, for a launcher that is a member for the whole run */

/*
 * The registry directory the launcher's environment names
 * (VRAMCTL_REGISTRY_DIR), if any, must be absolute: a relative one names
 * other books in every working directory, so one --group would be several
 * groups with several caps. The library refuses it too (fail closed); a
 * launcher refuses it before it starts anything. vr_launch_join checks it
 * when it uses the default directory. 0, or -1 with a line in err.
 */
int vr_launch_registry_env(char *err, size_t errlen);

struct vr_launch_join {
	const char *dir;                /* registry directory; NULL: the default */
	const char *group;              /* the group's name */
	const char *spec;               /* the normalised spec asked for */
	const struct vr_limits *limits; /* the same, parsed */
	int growth;
	uint64_t spill;       /* the host budget for spill asked (0: none) */
	uint64_t park_budget; /* the host budget for parked members (0: none) */
	int fresh;            /* a new run's own group: refuse one in use */
	const struct vr_launch_dev *devs;
	int ndev; /* 0 when the launcher sees no device */
};

struct vr_launch_group {
	vr_member *member;
	int differs;     /* the group's caps are not the ones asked for */
	char spec[4096]; /* the spec the children get: the group's own when differs */
	uint64_t asked[VR_MAX_DEVICES]; /* per devs[i]: UINT64_MAX uncapped */
	uint64_t cap[VR_MAX_DEVICES];   /* per devs[i]: the group's cap in force */
	uint64_t spill;                 /* the group's spill budget in force (0: none) */
	char notes[1024];               /* "" or lines "vramctl: ...\n" the user should see */
};

/*
 * Joins the group and fixes the asked caps on every device the launcher sees
 * (the first member to name a device fixes its cap). When the group already
 * had other caps, g->differs is set, the notes say so (one line per device
 * that differs, or one naming the group's spec when no device is seen), and
 * g->spec is the group's own spec: children then run under the cap that
 * applies and have nothing to warn about again. The same for the spill
 * budget: g->spill is the group's, noted when it is not the one asked. Returns 0, or -1 with a
 * message in err and no membership.
 */
int vr_launch_join(const struct vr_launch_join *j, struct vr_launch_group *g, char *err,
                   size_t errlen);

#endif /* VRAMCTL_LAUNCH_H */
