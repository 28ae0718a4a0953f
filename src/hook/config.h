/*
 * config.h - the environment contract (common/contract.h), read once
 * (config.c): from the constructor or from the first wrapper call,
 * whichever comes first. Read without locks afterwards.
 *
 * The cap, from `--limit` to a refusal, in the forms each step needs:
 *   limit_text   the spec as given (VRAMCTL_LIMIT or HAMi's): handed to the
 *                registry, which keeps the group's first spec and compares
 *                later joiners' with it (a text, so that every member,
 *                whatever its devices, compares the same thing);
 *   limits       the one parsed form, read when each device is set up;
 *   limit_bad    a cap that could not be read: every device's cap is 0;
 *   vr_dev.cap   the cap in force on one device (policy.c): the parsed
 *                form applied to its ordinal, UUID and total, lowered to
 *                the site's maximum, or the group's when it already has one.
 * Every refusal compares against vr_dev.cap, or the registry's copy of it
 * for the group; the run's report gets a copy too (record.c).
 *
 * The guarantee (VRAMCTL_GUARANTEE) is read the same way, only
 * under a cap: guarantee_text as given, guarantees parsed, and
 * vr_config_guarantee for one device. A malformed or too long one sets
 * limit_bad (fail closed, as a malformed cap); one without any cap in force
 * is said and ignored.
 */
#ifndef VRAMCTL_HOOK_CONFIG_H
#define VRAMCTL_HOOK_CONFIG_H

#include <stdatomic.h>
#include <stdint.h>

#include "common/size.h"

#define VR_PARK_MANUAL UINT64_MAX

struct vr_state {
	/* Set once by vr_config_init; read without locks afterwards. */
	atomic_int config_done;
	/* The environment (or HAMi's variables) gave a cap: settled at the
	 * constructor. Else vr_job_resolve decides at the first driver call. */
	int env_contract;
	int settled;     /* vr_config_settle has run */
	int active;      /* a cap is configured and this copy is the acting one */
	int passthrough; /* another copy of the library acts in this process */
	int limit_bad;   /* VRAMCTL_LIMIT was malformed: fail closed (cap 0) */
	int growth;
	/* VRAMCTL_COUNT=allocations: the cap counts what the program allocates
	 * only, not what the card holds for it (card.h). */
	int count_allocations;
	/* VRAMCTL_SPILL as asked: handed to the join (a group's first member
	 * sets the group's budget), and the budget of this process's own books.
	 * The budget in force is the books' (vr_books_spill_budget). */
	uint64_t spill_asked;
	/* VRAMCTL_WAIT, the longest an allocation the cap refuses waits
	 * for room, in ms (0: it does not wait); VRAMCTL_PARK_IDLE, the idle
	 * time after which this process is parked, in ms (0: it is never
	 * parked; VR_PARK_MANUAL: it may be parked, never for idleness), and
	 * the group's park budget asked (VRAMCTL_PARK_BUDGET). */
	uint64_t wait_ms;
	uint64_t park_idle_ms;
	uint64_t park_budget_asked;
	struct vr_limits limits;
	char limit_text[VR_MAX_LIMITS * 64]; /* a full spec with UUIDs fits */
	struct vr_limits guarantees;         /* parsed; count 0: no guarantee */
	char guarantee_text[VR_MAX_LIMITS * 64];
	char group[72];
	char registry_dir[512];
	char driver_path[512];
	char nvml_path[512];
	char record_dir[512];  /* VRAMCTL_RECORD_DIR: the run's report/trace directory */
	char record_flags[64]; /* VRAMCTL_RECORD: report,trace,stacks */

	/* The driver and NVML (real.c): 0 not tried, 1 loaded, -1 failed, and
	 * their handles. Here, beside `active`, so that every wrapper's first
	 * test (vr_enter) reads one object. */
	atomic_int driver_state;
	void *driver;
	atomic_int nvml_state;
	void *nvml;
};
extern struct vr_state vr_g;

/* Reads the environment once (idempotent, thread-safe, re-entrant). Under a
 * cap from the environment, also settles it (vr_config_settle). */
void vr_config_init(void);

/*
 * For a cap found without the environment (job.c, at the first driver
 * call, once, before vr_config_settle): sets contract variable `name`
 * (VRAMCTL_LIMIT, VRAMCTL_GROUP, ...) as if the environment held value.
 * Returns 0, or -1 for a name the contract does not have.
 */
int vr_config_set(const char *name, const char *value);

/* 1 when this copy of the library does not act in this process: another
 * copy does (LD_PRELOAD naming two), or it is one of vramctl's own programs
 * (src/cli/self.c), which show the card and never join a group. */
int vr_config_foreign(void);

/*
 * Settles what was read: the site's file (its maximum holds without any
 * cap), the guarantee, the registry directory, spill, which copy of the
 * library acts; says what could not be read; marks vr_g.active and, under
 * a cap, registers the fork handler (atfork.h). Once (later calls return).
 */
void vr_config_settle(void);

/*
 * The guarantee in bytes on one device (ordinal as the program numbers it,
 * uuid_text "GPU-..." or NULL, phys_total for percentages, cap the cap in
 * force there: vr_dev.cap), lowered to the cap. 0: none (no guarantee
 * names the device, the device is uncapped (cap UINT64_MAX), or the cap
 * could not be read). Call after vr_config_init; pure otherwise.
 */
uint64_t vr_config_guarantee(int ordinal, const char *uuid_text, uint64_t phys_total, uint64_t cap);

#endif /* VRAMCTL_HOOK_CONFIG_H */
