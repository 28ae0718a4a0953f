/*
 * sim.h - internals shared by the simulated driver (libcuda.so.1) and the
 * simulated NVML (libnvidia-ml.so.1): configuration from the environment and
 * the per-card state file that both read, so that physical usage is shared by
 * every process using the same simulated card, as on real hardware.
 *
 * Nothing here is exported from either library (-fvisibility=hidden).
 *
 * The files of sim/ and what each models (sim/LAYERS orders them; libcuda's
 * internal interface is driver.h):
 *
 *   Both libraries
 *     config.c     the configuration (VRAMSIM_* environment variables)
 *     card.c       the card state file: each process's usage, live or dead,
 *                  and its recent changes (VRAMSIM_NVML_LAG_MS)
 *     rules.c      the test controls: VRAMSIM_FAULT, VRAMSIM_SLOW, VRAMSIM_STOP
 *   libnvidia-ml.so.1
 *     nvml.c       all of NVML: devices, memory info, the process lists
 *   libcuda.so.1
 *     exports.c    the exported entry points (test controls, then simi_<name>),
 *                  and vramsim_take
 *     procaddr.c   cuGetProcAddress's table of versions
 *     errors.c     error codes, names and strings
 *     init.c       cuInit, CUDA_VISIBLE_DEVICES, fork
 *     checkpoint.c the checkpoint API (cuCheckpointProcess*): a process
 *                  locked, its device memory moved to host and back, by
 *                  another; every entry point's gate while it is locked
 *     device.c     device count, names, UUIDs, total memory, attributes
 *     context.c    contexts: primary and created, their cost
 *                  (VRAMSIM_CONTEXT_BYTES, VRAMSIM_HIDDEN_BYTES), their
 *                  limits (cuCtxSetLimit), what goes with them when destroyed
 *     current.c    each thread's stack of current contexts
 *     sync.c       cuCtxSynchronize, cuStreamSynchronize (pools trim)
 *     stream.c     streams, kernel launches, host functions
 *     module.c     modules and libraries: their images on the card
 *                  (VRAMSIM_MODULE_BYTES), loaded eagerly or lazily
 *                  (CUDA_MODULE_LOADING)
 *     capture.c    stream capture and the calls it forbids
 *     linear.c     cuMemAlloc, cuMemAllocPitch, cuMemAllocManaged
 *     pool.c       cuMemAllocAsync and memory pools
 *     hostmem.c    pinned host memory (VRAMSIM_HOST_PINNABLE)
 *     vmm.c        cuMemCreate, cuMemAddressReserve, cuMemMap
 *     array.c      CUDA arrays and mipmapped arrays
 *     graph.c      graphs and their memory nodes
 *     graph_exec.c executable graphs and the graph memory pool
 *     ipc.c        cuIpc* handles, shareable handles (export/import)
 *     free.c       cuMemFree, cuMemFreeAsync for every kind
 *     copy.c       cuMemcpyHtoD/DtoH: the bytes of device memory (mapped at
 *                  the first write)
 *     query.c      cuMemGetInfo, cuMemGetAddressRange, pointer attributes
 *     alloc.c      the table of device pointers
 *     account.c    what the process holds: bytes on the card, pinned bytes
 *     driver.c     the process-local state (g_sim), the address space
 *   cuda_extra.h the entry points libcuda exports that cuda_api.h does not
 *                name (modules, libraries), and vramsim_take
 *   cuda_syms.c, nvml_syms.c: preprocessed into the version scripts
 */
#ifndef VRAMSIM_SIM_H
#define VRAMSIM_SIM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>

#define SIM_MAX_DEVICES 16
#define SIM_MAX_SLOTS   256
#define SIM_UUID_STR    48 /* "GPU-" + 36 + NUL, rounded */
#define SIM_NAME_LEN    96
#define SIM_CGROUP_LEN  256 /* a cgroup v2 path below the root, "/a/b" */
#define SIM_MAX_LIMITS  32  /* cgroups with driver memory limits, per card */

struct sim_dev_cfg {
	uint64_t total;
	unsigned char uuid[16];
	char uuid_str[SIM_UUID_STR]; /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
	char name[SIM_NAME_LEN];
	/* States a machine can be in, for `vramctl doctor` (docs/doctor.md): */
	int compute_mode; /* VRAMSIM_COMPUTE_MODE: CUDA/NVML compute mode (0 default, 3 exclusive
	                     process) */
	int mig;          /* VRAMSIM_MIG: MIG mode enabled */
	int persistence;  /* VRAMSIM_PERSISTENCE: persistence mode (default on) */
	int broken;       /* VRAMSIM_DEVICE_FAIL: fails to initialise */
};

struct sim_config {
	int ndev;
	struct sim_dev_cfg dev[SIM_MAX_DEVICES];
	int driver_version;      /* VRAMSIM_DRIVER_VERSION, e.g. 13000 */
	uint64_t context_bytes;  /* VRAMSIM_CONTEXT_BYTES */
	char state_dir[512];     /* VRAMSIM_STATE_DIR */
	int nvml_unknown_usage;  /* VRAMSIM_NVML_UNKNOWN_USAGE */
	char driver_release[32]; /* VRAMSIM_DRIVER_RELEASE: the user-space libraries' release */
	char kernel_release[32]; /* VRAMSIM_KERNEL_RELEASE: the kernel module's (default: the same)
	                          */
	uint64_t host_pinnable;  /* VRAMSIM_HOST_PINNABLE: pinned host bytes a process
	                            may hold (RLIMIT_MEMLOCK, host RAM); default no limit */
	int host_vmm;            /* cuMemCreate on host locations (12.2+, VRAMSIM_HOST_VMM) */
	uint32_t teardown_ms;    /* VRAMSIM_TEARDOWN_MS: how long the driver keeps a dead
	                            process's memory (and NVML lists it); default 0 */
	uint64_t module_bytes;   /* VRAMSIM_MODULE_BYTES: a loaded module's image on the card,
	                            in whole 2 MiB pages; default 2 MiB */
	int lazy_loading;        /* CUDA_MODULE_LOADING: LAZY (default from 12.2) or EAGER */
	uint64_t hidden_bytes;   /* VRAMSIM_HIDDEN_BYTES: what the driver takes for a context
	                            beside its cost, through no entry point; default 0 */
	uint32_t nvml_lag_ms;    /* VRAMSIM_NVML_LAG_MS: how old NVML's figures are; default 0 */
	/* VRAMSIM_CGROUP: the cgroup v2 path ("/a/b") the process is taken to be in,
	   instead of /proc/self/cgroup's; VRAMSIM_EUID: the effective UID NVML's
	   permission checks see (default geteuid()). */
	char cgroup[SIM_CGROUP_LEN];
	int euid;
	int release_major; /* driver_release's major number (580 of "580.82.07") */
};

/* 1 when the simulated kernel module and user-space libraries differ (the
 * "Driver/library version mismatch" of a driver upgraded without a reboot). */
int sim_release_mismatch(void);

/* Reads the environment once; bad values are reported on stderr and ignored. */
const struct sim_config *sim_config(void);
void sim_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * The card state file: one per card (named by UUID) in the state directory,
 * mmap'd by every process using the card. A slot per process holds its
 * physical usage; the slot is "live" while its owner holds an OFD write lock
 * on the slot's lock byte, which the kernel drops when the process dies, so a
 * dead process's memory returns to the card deterministically. Byte 0 of the
 * file is the card-wide lock (OFD locks: per open file description, so the
 * driver and NVML inside one process exclude each other too).
 */
#define SIM_CARD_MAGIC     0x314d495352415256ull /* "VRARSIM1" */
#define SIM_CARD_VERSION   4
#define SIM_SLOT_LOCK_BASE (1 << 20)
#define SIM_SLOT_HIST      64 /* the changes of usage a slot remembers */

/*
 * A slot whose owner died is not free at once: as a real driver tears a
 * context down for a while after the process is gone, the card keeps the
 * owner's memory, and NVML lists its PID, until teardown_ms (the owner's
 * VRAMSIM_TEARDOWN_MS, recorded when it took the slot) after the first
 * process that looked found it dead (dead_since, CLOCK_MONOTONIC ns).
 */
/*
 * For NVML's lag (VRAMSIM_NVML_LAG_MS, sim_card_slot_used_at), a slot also
 * remembers when it was taken and its last SIM_SLOT_HIST changes of usage:
 * a ring, hist[n % SIM_SLOT_HIST] the next to write, times CLOCK_MONOTONIC
 * ns (the same clock in every process).
 */
struct sim_sample {
	uint64_t t; /* when usage became used */
	uint64_t used;
};

struct sim_slot {
	int32_t pid;
	uint32_t in_use;
	uint64_t used;
	uint32_t teardown_ms;
	uint32_t hist_n; /* changes recorded since the slot was taken */
	uint64_t dead_since;
	uint64_t since; /* when the slot was taken */
	struct sim_sample hist[SIM_SLOT_HIST];
	char cgroup[SIM_CGROUP_LEN]; /* the owner's cgroup v2 path, "/a/b"; "" unknown */
};

/* A cgroup's driver memory limits on the card (nvmlDeviceSetMemoryLimits_v1,
 * memlimit.c). */
struct sim_limit {
	uint32_t in_use;
	char path[SIM_CGROUP_LEN]; /* below the cgroup root, "/a/b" ("/" the root) */
	uint64_t soft, hard;
};

struct sim_card_file {
	uint64_t magic;
	uint32_t version;
	uint32_t size;
	uint64_t total;
	char uuid[SIM_UUID_STR];
	struct sim_slot slots[SIM_MAX_SLOTS];
	struct sim_limit limits[SIM_MAX_LIMITS];
};

struct sim_card {
	int fd;                     /* -1 when not open */
	struct sim_card_file *file; /* mapping of the state file */
	int slot;                   /* this process's slot, -1 when none */
	pthread_mutex_t mu;         /* serialises this process's threads */
};

/* Opens (creating if needed) the state file of physical device phys.
 * Returns 0, or -1 with a message on stderr. */
int sim_card_open(struct sim_card *c, int phys);
void sim_card_close(struct sim_card *c);
void sim_card_lock(struct sim_card *c);
void sim_card_unlock(struct sim_card *c);
/* With the card locked: does slot i hold memory on the card, its owner
 * alive or dead and still being torn down (see struct sim_slot)? Notes the
 * time of a death it sees first. */
int sim_card_slot_present(struct sim_card *c, int i);
/* With the card locked: total bytes used by the processes present (reaps
 * the others when reap is set). */
uint64_t sim_card_used(struct sim_card *c, int reap);
/*
 * With the card locked: slot i's usage as it was lag_ms ago (lag_ms 0: now);
 * 0 when the slot was taken since. When the slot changed more than
 * SIM_SLOT_HIST times since then, the oldest usage it remembers.
 */
uint64_t sim_card_slot_used_at(struct sim_card *c, int i, uint32_t lag_ms);
/*
 * Adds delta bytes to this process's usage. A positive delta fails with -1
 * (nothing changed) when it does not fit in the card, unless force is set.
 * Claims a slot on first use. Returns 0 or -1.
 */
int sim_card_charge(struct sim_card *c, int64_t delta, int force);
/* Releases this process's slot if its usage is zero. */
void sim_card_release_slot(struct sim_card *c);

/* ---- driver memory limits per cgroup (memlimit.c; the cgroup of a
 * process in config.c, holding the limits in card.c) ---- */

/* The cgroup v2 path this process is in ("/a/b"): VRAMSIM_CGROUP, else
 * /proc/self/cgroup's "0::" line; "" when neither says. */
void sim_cgroup_self(char *buf, size_t n);
/* 1 when the simulated driver has per-cgroup limits (release 615 or later). */
int sim_limits_supported(void);
/*
 * With the card locked: sets (or, soft 0 and hard UINT64_MAX, clears) the
 * limits of cgroup path ("/sys/fs/cgroup/a/b"). Returns an nvmlReturn_t.
 */
int sim_limit_set(struct sim_card *c, const char *ns, uint64_t soft, uint64_t hard);
/* Is cgroup cg at or below cgroup top (both "/a/b")? */
int sim_cgroup_within(const char *cg, const char *top);
/* With the card locked: what the processes of cgroup top and below hold. */
uint64_t sim_card_cgroup_used(struct sim_card *c, const char *top);
/* With the card locked: the limits of ns and its use (what the processes
 * in it and below hold on the card). Returns an nvmlReturn_t. */
int sim_limit_get(struct sim_card *c, const char *ns, uint64_t *soft, uint64_t *hard,
                  uint64_t *used);
/*
 * With the card locked: cgroup cg's own hard limit (what a program in it
 * is shown as its device's size; a parent's is not), and the room left
 * under the tightest limit over it and its ancestors (UINT64_MAX for both
 * when none).
 */
void sim_limit_room(struct sim_card *c, const char *cg, uint64_t *limit, uint64_t *room);

/* ---- test controls (rules.c) ---- */

#define SIM_MAX_RULES 32
#define SIM_MAX_FNS   256

struct sim_rule {
	int kind;
	int fn;      /* index in the library's name table */
	uint64_t n;  /* call number (1-based) */
	int from;    /* fault from the nth call on */
	int code;    /* return code for faults */
	uint64_t us; /* delay for slow calls */
};

/* One library's controls: static, zero-initialised apart from the fields
 * given (names, count, prefixes, code_by_name, mu). */
struct sim_rules {
	const char *const *names;
	int count;
	const char *prefix;       /* "cu" or "nvml": names this library owns */
	const char *other_prefix; /* the other library's, ignored silently */
	/* Error code by name ("CUDA_ERROR_OUT_OF_MEMORY"): 0, or -1 if unknown. */
	int (*code_by_name)(const char *name, int *code);
	pthread_mutex_t mu;
	_Atomic int loaded;
	int nrules;
	struct sim_rule rules[SIM_MAX_RULES];
	_Atomic uint64_t calls[SIM_MAX_FNS];
	_Atomic int has[SIM_MAX_FNS];
};

/*
 * Runs the controls for one call of function fn: stops the process if told,
 * sleeps if told, and returns 1 with *code set when the call must fail
 * (doing nothing else). Reads the environment at the first call.
 */
int sim_rules_pre(struct sim_rules *r, int fn, int *code);

#endif /* VRAMSIM_SIM_H */
