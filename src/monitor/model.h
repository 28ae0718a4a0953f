/*
 * model.h - what the monitor knows at one instant, as plain data.
 *
 * The collector (collect.c) fills a model from NVML and from the registry's
 * snapshot; the formatters (format.c) turn a model into text and never look
 * anywhere else, so they are tested on fixed models without a GPU, a
 * registry or a terminal. A field that could not be read is not given a
 * magic value: its bit in `valid` is clear and every formatter shows it as
 * unknown (table "-", JSON null, Prometheus: no sample).
 */
#ifndef VRAMCTL_MONITOR_MODEL_H
#define VRAMCTL_MONITOR_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/cgroup2.h"
#include "common/contract.h"
#include "monitor/cgroup_id.h"
#include "vramctl/registry.h"

/* 2: in_use and peak count each member's overhead on the card; the
 * allocated, on-card and overhead figures, counting and over_cap are new. */
#define MON_SCHEMA_VERSION 2
#define MON_UUID_MAX       96 /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */
#define MON_NAME_MAX       96 /* NVML_DEVICE_NAME_V2_BUFFER_SIZE */
#define MON_MAX_GROUP_DEVS 64
#define MON_NO_CAP         UINT64_MAX
#define MON_POD_NAME_MAX   254 /* a DNS subdomain, 253, and the NUL */
#define MON_K8S_LABEL_MAX  64  /* a namespace or container name, 63, and the NUL */

/* struct mon_device.valid */
enum {
	MON_DEV_INDEX = 1u << 0,  /* seen by NVML; index is NVML's */
	MON_DEV_NAME = 1u << 1,   /* name read */
	MON_DEV_MEMORY = 1u << 2, /* total, used, free read */
	MON_DEV_PROCS = 1u << 3,  /* NVML's process list read (proc_api says how) */
	MON_DEV_GUAR = 1u << 4,   /* its device book read, or none there (guarantee.c) */
};

/* A group holding a guarantee on a device, as the device book has it:
 * any user's group, in this registry or not. */
#define MON_MAX_GUARANTEES 16
struct mon_guarantee {
	char group[VR_GROUP_NAME_MAX + 1];
	uint32_t uid;
	int32_t pid; /* the member that admitted it (host PID) */
	uint64_t guarantee;
	uint64_t held;   /* its members' bytes on the card counted against it */
	int in_registry; /* it is one of this model's groups */
};

struct mon_device {
	unsigned valid;
	int index;
	char uuid[MON_UUID_MAX];
	char name[MON_NAME_MAX];
	/* total: the card's usable size, what programs can have (NVML's
	 * total less what the driver keeps for itself: the figure
	 * cuMemGetInfo, percentages, admission and every view use), so used +
	 * free = total; reserved: what the driver keeps (NVML's memory info
	 * v2; 0 from v1). */
	uint64_t total, used, free;
	uint64_t reserved;
	uint64_t caps_sum; /* sum of the finite caps of groups on this device */
	int ncapped;       /* groups with a finite cap on it */
	int overcommitted; /* caps_sum > total; only meaningful with MON_DEV_MEMORY */
	uint64_t spilled;  /* host memory groups hold past their caps on it (spill) */
	char proc_api[4];  /* "v3", "v2", "v1" or "" */
	/* MON_DEV_GUAR (guarantee.c): the live guarantees on it, their unused
	 * part (sum of max(0, guarantee - held)) and, with MON_DEV_MEMORY, free
	 * less that; the first MON_MAX_GUARANTEES of nguar_all holders. */
	uint64_t guaranteed, unused_guarantee, unguaranteed_free;
	int nguar, nguar_all;
	struct mon_guarantee guar[MON_MAX_GUARANTEES];
};

enum mon_proc_state {
	MON_PROC_ALIVE = 0,
	MON_PROC_DEAD = 1,  /* the registry says its owner is gone */
	MON_PROC_STALE = 2, /* the registry says alive, but the PID is gone or reused */
	/* The registry says its owner is gone, but NVML still lists its PID on
	 * this device: the driver is tearing its context down, and the group
	 * holds its bytes until NVML stops listing it (docs/fail-closed.md). */
	MON_PROC_EXITING = 3,
};

/* struct mon_proc.valid */
enum {
	MON_P_CAPPED = 1u << 0,    /* has a registry record: the vramctl fields are set */
	MON_P_NVML = 1u << 1,      /* listed by NVML on this device */
	MON_P_NVML_USED = 1u << 2, /* NVML reported its usage (not "unknown") */
	MON_P_HOST_PID = 1u << 3,  /* host_pid known */
	MON_P_NS_PID = 1u << 4,    /* ns_pid known */
	MON_P_DEVICE = 1u << 5,    /* device is an index into model.devs */
	MON_P_USER = 1u << 6,      /* uid and user known */
	MON_P_COMMAND = 1u << 7,   /* command known */
	MON_P_ON_CARD = 1u << 8,   /* on_card and (capped) allocated, card_overhead set */
	MON_P_IDENTITY = 1u << 9,  /* /proc/PID/cgroup or environ read (identity.c) */
	MON_P_DRVLIMIT = 1u << 10, /* a driver limit holds it: the drv_ fields are set */
	MON_P_CGROUP2 = 1u << 11,  /* cgroup2 known (identity.c: the kernel's word) */
	/* Capped by books of its own (registry/own.h): it could not join its
	 * group, so its cap holds for it alone; mon_model.alone[alone - 1]
	 * says why. Its group's sums do not count it. */
	MON_P_ALONE = 1u << 12,
	/* Not capped, but a capped job's record claims it (escape.h): it runs
	 * outside its job's cap; group is the job's group, cap its cap on
	 * this GPU (MON_NO_CAP when the group is not in the model). */
	MON_P_ESCAPED = 1u << 13,
	/* Not in the books this reader reads, but capped elsewhere: its
	 * environment preloads vramctl's library with a cap, so its books
	 * are in another registry directory (books_dir: its
	 * VRAMCTL_REGISTRY_DIR, "" unsaid) or a container's. */
	MON_P_ELSEWHERE = 1u << 14,
};

/* The NVIDIA driver's own memory limit over a process (R615, per cgroup),
 * read with NVML's unprivileged call (drvlimit.c): the tightest hard limit
 * over the process's cgroup and its ancestors on the process's GPU. */
struct mon_drv {
	char cgroup[256]; /* the cgroup v2 path that carries the limit, "/a/b" */
	uint64_t hard, soft;
	uint64_t used; /* what that cgroup (and below) holds on the GPU */
};

/* One process on one device. */
struct mon_proc {
	unsigned valid;
	enum mon_proc_state state;
	int device; /* index into mon_model.devs, when MON_P_DEVICE */
	char uuid[MON_UUID_MAX];
	pid_t host_pid; /* as NVML and the reader see it */
	pid_t ns_pid;   /* as the process sees itself (innermost NSpid) */
	uid_t uid;
	char user[32];
	char command[128];
	/* MON_P_CAPPED: */
	char group[VR_GROUP_NAME_MAX + 1];
	uint64_t cap; /* the group's cap on this device; MON_NO_CAP: none */
	union {       /* as the registry's snapshot has them */
		struct vramctl_counts counts;
		struct {
			VRAMCTL_COUNTS_FIELDS
		};
	};
	uint64_t host_pinned;           /* per process, repeated on each of its rows */
	enum vramctl_counting counting; /* what its cap counts (MON_P_CAPPED) */
	uint64_t ipc_ns;                /* its IPC namespace when not the reader's (vramctl_proc) */
	/* MON_P_NVML_USED: */
	uint64_t nvml_used;
	/* MON_P_ON_CARD (mon_card_figures): what the card holds for it, the
	 * larger of the books' in_use and NVML's figure (an uncapped process:
	 * NVML's); of that, what it allocated through vramctl (in_use less
	 * the books' overhead) and the rest (on_card - allocated). */
	uint64_t on_card, allocated, card_overhead;
	/* Identity (identity.c), "" when unknown. The container ID and pod UID
	 * come from the kernel's cgroup paths, set by the runtime; the names
	 * from the process's environment (VRAMCTL_POD_NAME, ...), set by
	 * whoever started it: the process's own claim, shown as such. */
	char container_id[MON_CONTAINER_ID_LEN + 1];
	char pod_uid[MON_POD_UID_LEN + 1];
	char pod_name[MON_POD_NAME_MAX];
	char pod_namespace[MON_K8S_LABEL_MAX];
	char container_name[MON_K8S_LABEL_MAX];
	struct mon_drv drv; /* MON_P_DRVLIMIT */
	/* MON_P_CGROUP2: its cgroup v2 path ("/a/b"), as the kernel says (the
	 * driver's limits are looked up by it: drvlimit.c). */
	char cgroup2[VR_CGROUP2_LEN];
	/* While the join runs (merge.c), the snapshot record a capped row came
	 * from (its identity record: identity.c), else -1; meaningless after. */
	int rec;
	int alone;           /* MON_P_ALONE: 1 + its entry in mon_model.alone */
	char books_dir[128]; /* MON_P_ELSEWHERE */
	/* MON_P_CAPPED: a wait for room on this device (wait_bytes 0:
	 * none), the part of it set aside already, since when (ns since the
	 * epoch); parked (its memory moved to host memory): its bytes of this
	 * device on the host, since when; parkable: it runs with --park-idle,
	 * idle_since its last driver call seen (ns since the epoch, 0 unknown). */
	uint64_t wait_bytes, wait_claimed, wait_since;
	int parked, parkable;
	uint64_t parked_bytes, parked_since, idle_since;
};

/* A process that keeps books of its own under a cap, and why (its words). */
#define MON_ALONE_WHY 512
struct mon_alone {
	pid_t pid; /* host PID */
	char why[MON_ALONE_WHY];
};

struct mon_group_dev {
	char uuid[MON_UUID_MAX];
	int device;   /* index into mon_model.devs, or -1 */
	uint64_t cap; /* MON_NO_CAP: none */
	uint64_t in_use, peak;
	uint64_t dead_in_use; /* still held by dead members until reclaimed */
	uint64_t spilled;     /* host memory past the cap (spill), dead members' included */
	uint64_t overhead;    /* the books': the part of in_use + dead_in_use that is overhead */
	/* mon_card_figures: what the card holds for the group, dead members'
	 * bytes included (in_use + dead_in_use, plus what NVML sees of its live
	 * members beyond their books), the part of it that is overhead, and by
	 * how much it passes the cap (0: not over, or no cap). */
	uint64_t on_card, card_overhead, over_cap;
	/* The last change of its cap lowered it to the cap in force (`vramctl
	 * limit`): from what, when, by whom (cap_changes.c). 0: not so. */
	uint64_t lowered_from, lowered_at;
	uint32_t lowered_by;
	/* Its guarantee on the device (0: none; guarantee.c) and what the card
	 * holds for it above that (on_card - guarantee, or 0). */
	uint64_t guarantee, borrowed;
};

struct mon_group {
	char name[VR_GROUP_NAME_MAX + 1];
	char limit_spec[128];
	int growth;
	uid_t owner;
	int nmembers;                   /* live members */
	int ndead;                      /* records of dead or stale members */
	int nexiting;                   /* of those, dead ones NVML still lists (exiting) */
	int consistent;                 /* the registry's copy was taken between writes */
	uint64_t spill_budget, spilled; /* the group's host budget (0: no spill), all devices */
	uint64_t denials;             /* refusals since the group started, gone members' included */
	uint64_t park_budget, parked; /* its host budget for parked members, what they hold */
	int nwaiting;                 /* members waiting for room */
	int ndriver;                  /* rows (member, GPU) a driver limit also holds */
	int ndev;
	struct mon_group_dev dev[MON_MAX_GROUP_DEVS];
	/* Its caps' changes while it ran (`vramctl limit`), oldest first. */
	uint64_t changes_total;
	int nchanges;
	struct vramctl_cap_change changes[VRAMCTL_CAP_CHANGES];
};

/* struct mon_model.valid */
enum {
	MON_M_NVML = 1u << 0,     /* NVML loaded and initialised */
	MON_M_REGISTRY = 1u << 1, /* the registry directory was read */
	MON_M_DRIVER = 1u << 2,   /* driver_version read */
};

#define MON_MAX_NOTES 8
#define MON_NOTE_LEN  1024

struct mon_model {
	unsigned valid;
	uint64_t time_ms; /* Unix time of the collection, milliseconds */
	char driver_version[32];
	char registry_dir[256];
	int ndevs;
	struct mon_device *devs;
	int ngroups;
	struct mon_group *groups;
	int nprocs;
	struct mon_proc *procs;
	int nalone;
	struct mon_alone *alone; /* the rows with MON_P_ALONE say which */
	/* What the monitor could not see, one sentence each. */
	int nnotes;
	char notes[MON_MAX_NOTES][MON_NOTE_LEN];
};

/* Who holds process p: "library" (a vramctl cap), "driver" (a driver
 * limit, MON_P_DRVLIMIT), "both", or "none". */
const char *mon_enforcer_name(const struct mon_proc *p);

/* The driver's limit over p, for a table: "8 GiB (2.1 GiB used, /a/b)",
 * or "-" (no MON_P_DRVLIMIT). Returns buf. */
char *mon_drv_text(const struct mon_proc *p, char *buf, size_t len);

/* 1 when some process of m is under a driver limit (MON_P_DRVLIMIT). */
int mon_drv_any(const struct mon_model *m);

/* Frees what a model owns (devs, groups, procs) and zeroes it. Safe on a zeroed model. */
void mon_model_clear(struct mon_model *m);

/* Appends a note (printf-style); silently drops notes past MON_MAX_NOTES. */
void mon_model_note(struct mon_model *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A deep copy of src into dst (dst empty). Returns 0 or -ENOMEM (dst then empty). */
int mon_model_copy(struct mon_model *dst, const struct mon_model *src);

/* The NVML index of model device `device` (known: 0 when the caller has no
 * device), or -1 when unknown (a device only the registry names has none). */
int mon_model_gpu_index(const struct mon_model *m, int device, int known);

#endif /* VRAMCTL_MONITOR_MODEL_H */
