/*
 * registry.h - the shared books of a vramctl group (internal API).
 *
 * Every process of a group reserves bytes in the group's books before it
 * calls the driver and releases them when the driver fails or the memory
 * is freed, so the sum of live allocations of all members never passes the
 * cap. The words src/registry uses, one per part (layout in layout.h):
 *
 *   group      processes that share caps, named by the user (contract.h).
 *   member     a process of the group; it holds one slot while it lives.
 *   books      all a group shares: its door and its segment.
 *   registry directory   where the doors live (vr_default_dir).
 *   door       the file <dir>/<group>.vrg: the header's identity (magic,
 *              version, group, spec) and the id and key of the segment.
 *              Members hold their liveness locks on its bytes; it is read
 *              and written with pread/pwrite, never mapped.
 *   segment    the System V shared memory segment the door names: the
 *              header, the slots, the members' numbers. Members attach it
 *              read-write, monitors read-only.
 *   header     the segment's first 4 KiB: identity, the group's lock, the
 *              seqlock, and per device (keyed by GPU UUID) the cap, the
 *              total in use and the peak.
 *   slot       one per member in the segment: who it is, its lanes, and
 *              its numbers on each device (in use, peak, refusals, spill).
 *   lane       a thread's spare bytes, counted in its member's slot and
 *              the group's total but not yet handed out (lanes.c).
 *   the lock   the group's lock, one word in the header (lock.c); the door
 *              has a lock of its own, held while a segment is made.
 *
 * Nothing here ever exits, aborts or prints on its own: errors are returned
 * as negative errno values and the caller decides what to say.
 */
#ifndef VRAMCTL_REGISTRY_H
#define VRAMCTL_REGISTRY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define VR_MAX_DEVICES 64
#define VR_UUID_LEN    16

typedef struct vr_member vr_member; /* this process's membership of one group */

struct vr_join_opts {
	const char *dir;        /* registry directory; NULL: vr_default_dir() */
	const char *group;      /* group name: vr_group_name_check (contract.h) */
	const char *limit_spec; /* the cap spec this process was given, as text */
	int growth;             /* --growth was asked for (recorded for display) */
	int fresh;              /* a new run: a group with a live member is refused (-EEXIST) */
	uint64_t spill_budget;  /* host bytes the group may spill past its caps (0: none);
	                           fixed, like the caps, by whoever starts the group */
	/* Called with one line, no prefix: once when this member finds the
	 * books damaged and starts keeping its own (see vr_reserve), and once
	 * per call when a wait for a live member (the lock, an operation in
	 * flight) passes a second. All the waits of one call end within one
	 * bound (5 s) together. NULL: nobody is told. */
	void (*notice)(const char *line);
	int launcher; /* a launcher holding the group open: not counted as a member */
	/* Joins only a group that has a live member (`vramctl limit`): a
	 * missing door is -ENOENT, a group with none -ESRCH; nothing is
	 * created or started afresh. */
	int existing;
	int lanes; /* its threads keep spare bytes (lanes.c); one member per process */
	/* The books are another user's (root only: a process of that user's
	 * job, after sudo): checked as owner's instead of the caller's, and
	 * anything made (directory, door, segment) is made owner's. Ignored
	 * unless the caller's effective uid is 0. */
	int as_owner;
	uid_t owner;
	/* Host bytes the group may hold for its parked members (the
	 * spill budget's rules; 0: none), fixed, like the caps, by whoever
	 * starts the group. */
	uint64_t park_budget;
	/* Its refusals may wait for room (--wait): a reserve the cap
	 * refuses is not counted as a denial; the caller counts one
	 * (vr_note_denied) when the wait ends without room. */
	int waits;
};

/*
 * Joins (creating if needed) the group's books and takes a slot for the
 * calling process. Returns 0 and sets *out, or a negative errno with a
 * one-line explanation in err (never NULL-terminated past errlen).
 * If the group exists with a different limit_spec, returns 0 and sets
 * *spec_differs (when not NULL) to 1: the group's own cap applies.
 *
 * A group lives while it has live members: a join that finds no live
 * member (fresh or not) resets the books (caps, spec, peaks), so an
 * earlier run's cap never applies. With opts->fresh, a group that has a
 * live member is refused with -EEXIST (a name collision).
 * Refusals of a tampered registry (docs/architecture.md, "The shared registry"): -ELOOP
 * (symlink), -EINVAL (not a regular file, bad group name), -EBADMSG
 * (truncated, garbage, corrupt), -EPROTONOSUPPORT (another layout version),
 * -EPERM (another user's file or directory, or one open to others),
 * -EUSERS (1,024 members already), -EBADMSG also when the books of a group
 * with live members are damaged (a new member does not join them, and never
 * starts them afresh). Never exits, aborts or prints.
 */
int vr_join(const struct vr_join_opts *opts, vr_member **out, int *spec_differs, char *err,
            size_t errlen);

/* Leaves the group: the slot's memory returns to the budget. Safe on NULL. */
void vr_leave(vr_member *m);

/*
 * In a child after fork(): drops the inherited membership without touching
 * the parent's slot (unmaps and frees only). The child joins anew if it
 * needs to. Safe on NULL; async-signal-safe apart from free().
 * Until a child forgets (or execs), its inherited mapping keeps the
 * parent's slot alive even after the parent dies: call it in the
 * pthread_atfork child handler.
 */
void vr_forget(vr_member *m);

/*
 * Finds or adds the device with this UUID in the group and returns its index
 * (>= 0) or a negative errno. cap_if_new is the cap in bytes to fix if this
 * process is the first to name the device (UINT64_MAX: uncapped); *cap gets
 * the group's cap in force, which may differ (the group's applies).
 * -EPERM when the group left the device uncapped and cap_if_new is a cap:
 * a cap asked for is never lost, so the caller keeps its own books for the
 * device under cap_if_new (its bytes there are not in the group's books).
 */
int vr_device(vr_member *m, const unsigned char uuid[VR_UUID_LEN], uint64_t cap_if_new,
              uint64_t *cap);

/*
 * Reserves bytes on device dev for this process before the driver is called.
 * Returns 0, or -ENOSPC if the group's in-use plus bytes would pass the cap;
 * then *in_use (when not NULL) gets the group's in-use at the time of the
 * refusal, and the denial is counted in this process's slot. A grant that
 * went to the group's total (not served from a thread's spare: lanes.c)
 * sets *in_use to the total after it; one served from the spare leaves
 * *in_use as it was (the total did not move). Dead members'
 * memory is reclaimed before a request is denied. -EINVAL: bad member or
 * device (nothing reserved).
 *
 * Every call checks the books against what this member joined under (the
 * caps, its own holdings, the totals' check words; all slots now and then).
 * When they contradict it, when the lock stays held by a live member past
 * its bound, or when this member's slot was taken from it, the member is
 * detached: it says so once through opts->notice and from then on keeps its
 * own books, under the caps it joined with, for itself alone
 * (docs/architecture.md, "Failure model"). The group is never reset under
 * live members.
 */
int vr_reserve(vr_member *m, int dev, uint64_t bytes, uint64_t *in_use);

/* NULL while the member uses the group's books; after damage, why not. */
const char *vr_damaged(const vr_member *m);

/* Returns bytes reserved earlier (a driver failure, or a free). */
void vr_release(vr_member *m, int dev, uint64_t bytes);
/*
 * The peaks (the group's, the member's) the calling thread's reserves
 * raised since it called vr_peak_note_start, and what they were. A request
 * the books granted, then a check of the caller's refused after all (the
 * card, other groups' guarantees), is never memory held: once it is
 * released, vr_unpeak lowers those peaks back where no reserve raised
 * them since. A thread's reserves after VR_PEAK_NOTES raises are not
 * noted.
 */
#define VR_PEAK_NOTES 8
struct vr_peak_note {
	uint64_t *field[VR_PEAK_NOTES];
	uint64_t was[VR_PEAK_NOTES], now[VR_PEAK_NOTES];
	int n;
};
extern __thread struct vr_peak_note vr__peak_note __attribute__((tls_model("initial-exec")));
static inline void vr_peak_note_start(void)
{
	vr__peak_note.n = 0;
}
void vr_unpeak(void);

/* Group-wide in-use and cap of a device, for memory queries. */
void vr_usage(vr_member *m, int dev, uint64_t *in_use, uint64_t *cap);

/* How many times a member in this process took a cap its group's books
 * changed (`vramctl limit`, caps.c): a reserve learns the new cap before
 * it counts, so one who reads this after a reserve and finds it moved
 * knows the cap it holds may be old (vr_usage says the new one). */
extern _Atomic unsigned vr_caps_taken;

/* vr_reserve without counting a refusal as a denial (the caller may still
 * serve the request another way: spill); vr_note_denied counts one. */
int vr_reserve_quiet(vr_member *m, int dev, uint64_t bytes, uint64_t *in_use);
void vr_note_denied(vr_member *m, int dev, uint64_t bytes);

/*
 * Overhead (docs/architecture.md, "What the card holds"): the bytes the
 * card holds for this process beyond what it reserved block by block (its
 * context, modules, the driver's own use), as the caller measured them.
 * vr_overhead_set makes this member's overhead charge on dev `bytes`: held
 * in its slot and the group's total like a reserve, but never refused at
 * the cap (the card holds them already: the group may then be over its
 * cap, and every reserve is refused until it is under again). *in_use
 * (when not NULL) gets the group's in-use after it. One caller at a time
 * per device. 0 or -EINVAL.
 */
int vr_overhead_set(vr_member *m, int dev, uint64_t bytes, uint64_t *in_use);
/* What this member holds on dev, handed out (lanes' spare excluded),
 * overhead included. */
uint64_t vr_mine(vr_member *m, int dev);
/* Another member's figures on one device, for checking the group's use on
 * the card (vr_member_uses). */
struct vr_member_use {
	int32_t pid;       /* the host PID (the first NSpid entry it recorded), 0 unknown */
	uint32_t flags;    /* its slot's VR_SLOT_F_* */
	uint64_t used;     /* held on dev, handed out, overhead included */
	uint64_t overhead; /* its overhead charge on dev */
};
/* Up to n other members with bytes or a slot on dev, read without the
 * lock (figures of one moment each, not of one moment together). Returns
 * how many, or a negative errno. */
int vr_member_uses(vr_member *m, int dev, struct vr_member_use *out, int n);
/* The PIDs (the first NSpid entry each recorded: the host's) of the
 * group's members, launchers left out, dead ones not yet reclaimed
 * included, read without the lock. Returns how many were written to out
 * (at most n), or a negative errno. */
int vr_member_pids(vr_member *m, int32_t *out, int n);

/* A member whose cap counts its allocations only (its overhead is 0):
 * asked for (--count allocations), or the driver cannot tell its use per
 * process (vramctl_proc.counting). Bits of its slot's flags (layout.h). */
enum { VR_SLOT_F_ALLOCATIONS = 1u << 1, VR_SLOT_F_NO_FIGURES = 1u << 2 };
/* Sets (on) or clears this member's VR_SLOT_F_ALLOCATIONS /
 * VR_SLOT_F_NO_FIGURES bits, for monitors. */
void vr_counting_set(vr_member *m, unsigned bits, int on);

/* The identity of the group's books, as this member joined them: their
 * random key, new each time the group starts (the device book tells groups
 * apart by it, with the owner's UID). 0 for NULL. */
uint64_t vr_group_key(const vr_member *m);

/* Host pinned bytes (not capped), shown apart. */
void vr_note_pinned(vr_member *m, int64_t delta);

/*
 * Spill (docs/spill.md): host memory served past device dev's cap, counted
 * against the group's one host budget (all devices, all members), fixed by
 * whoever started the group. vr_spill_reserve returns 0, -ENOSPC when the
 * group's spilled bytes plus bytes would pass the budget (nothing changed;
 * dead members' bytes are reclaimed before that answer), or -EINVAL (not a
 * device of the group); *spilled and *budget (when not NULL) get the
 * numbers either way. A member whose books are damaged holds its own
 * spilled bytes against the budget it joined with. vr_spill_release gives
 * bytes back; vr_spill_budget is the group's budget (0: spill off).
 */
int vr_spill_reserve(vr_member *m, int dev, uint64_t bytes, uint64_t *spilled, uint64_t *budget);
void vr_spill_release(vr_member *m, int dev, uint64_t bytes);
uint64_t vr_spill_budget(const vr_member *m);

/*
 * Waiting for room (wait.c; docs/architecture.md, "Waiting for
 * room"). A reserve of bytes on dev that the cap refused may wait for room
 * instead, within a deadline the caller keeps:
 *   vr_wait_enter  says so in this member's slot and takes its place in
 *                  the group's order. -E2BIG: bytes alone pass the cap;
 *                  -EDEADLK: every other live member of the group waits
 *                  too and this wait is the newest: nobody is left to
 *                  make room; -ESRCH: the group has no other live member
 *                  (launchers aside); -ENOTSUP: this member
 *                  keeps its own books (damage); -EINVAL. Nothing is held
 *                  on any error.
 *   vr_wait_turn   when this is the oldest live wait on dev, sets aside
 *                  the room there is (reserved in the books as any reserve
 *                  is, shown as claimed); 1 once all bytes are set aside:
 *                  the reserve is done, as if vr_reserve had granted them;
 *                  0 not yet; -EDEADLK or -ESRCH as above (members come
 *                  and go).
 *   vr_wait_sleep  sleeps until room may have been made (a futex the
 *                  books' releases wake) or the deadline (CLOCK_MONOTONIC
 *                  ns) passes; at most a slice (250 ms) before it looks for
 *                  dead members again.
 *   vr_wait_exit   the wait is over; what was set aside goes back unless
 *                  keep (then the caller holds it all).
 * One wait per member at a time (the caller serialises its threads).
 */
struct vr_wait {
	int dev;
	uint64_t bytes, claimed, ticket;
	uint32_t seen;
};
int vr_wait_enter(vr_member *m, int dev, uint64_t bytes, struct vr_wait *w);
int vr_wait_turn(vr_member *m, struct vr_wait *w);
void vr_wait_sleep(vr_member *m, struct vr_wait *w, uint64_t deadline_ns);
void vr_wait_exit(vr_member *m, struct vr_wait *w, int keep);
/* For a member that can be parked (--park-idle): when its last driver
 * call was seen (CLOCK_REALTIME ns, 0: now busy), for monitors. */
void vr_idle_note(vr_member *m, uint64_t since_ns, int parkable);

/*
 * Parking (park.c; docs/architecture.md, "Parking"). The driver moved
 * this process's device memory to host memory: its bytes leave the
 * group's totals and are held against the group's park budget until they
 * come back.
 *   vr_park_held     what this member holds in the books, every device.
 *   vr_park_reserve  bytes of the budget, before the driver is asked: 0,
 *                    -ENOSPC (with *parked and *budget the numbers: dead
 *                    members' given back first), -ENOTSUP (own books).
 *   vr_park_unreserve gives them back (the driver refused, or the process
 *                    runs again: with vr_park_end).
 *   vr_park_out      the driver holds nothing of it now: each device's
 *                    held bytes leave the totals (waiters woken), recorded
 *                    as parked; out[d] what device d's were. Its threads
 *                    are quiet (parked). 0 or a negative errno.
 *   vr_park_in       bytes of device dev back in the books, as they left
 *                    (never through a lane): 0, or -ENOSPC when the cap has
 *                    no room (then wait for it: vr_wait_enter).
 *   vr_park_back     device dev's bytes are back (the caller reserved them
 *                    again): its record cleared.
 *   vr_park_end      it runs again: every record cleared, host_bytes of
 *                    the budget given back.
 *   vr_park_budget   the group's budget (0: none).
 */
uint64_t vr_park_held(vr_member *m);
int vr_park_reserve(vr_member *m, uint64_t bytes, uint64_t *parked, uint64_t *budget);
void vr_park_unreserve(vr_member *m, uint64_t bytes);
int vr_park_out(vr_member *m, uint64_t out[VR_MAX_DEVICES]);
int vr_park_in(vr_member *m, int dev, uint64_t bytes);
void vr_park_back(vr_member *m, int dev);
void vr_park_end(vr_member *m, uint64_t host_bytes);
uint64_t vr_park_budget(const vr_member *m);

/*
 * A dead member's memory may stay in the driver after its process is
 * reaped, while its contexts are torn down (docs/fail-closed.md, "Dead
 * members"). A caller that can ask NVML sets a probe for the process; the
 * registry then keeps a reaped member's bytes while NVML lists its host
 * PID on a device where it holds some, at most 30 s after it first finds
 * it so. Without a probe, a reaped member is gone.
 */
struct vr_gpu_probe {
	/* 1 if NVML lists host PID pid on the GPU with this UUID, 0 if not,
	 * negative when it cannot tell (treated as not listed). Called on the
	 * reclaim path only (a denial, a join), never with a lock held. */
	int (*listed)(int32_t pid, const unsigned char uuid[VR_UUID_LEN]);
	/* One line, no prefix, no newline: a slot given back at the bound while
	 * NVML still listed it. NULL: nobody is told. */
	void (*say)(const char *line);
};
/* Sets this process's probe (NULL: none); *p must stay valid. */
void vr_gpu_probe_set(const struct vr_gpu_probe *p);

/*
 * The group's ghosts: members of its books before these, gone with
 * their last member, whose memory the driver may still hold while it tears
 * them down. Their host PIDs (none that a live process has now) into pids,
 * at most n, for 30 s after the group started (the teardown bound above);
 * returns how many. Whoever can ask NVML counts what it lists for them
 * (the injected library's check of the card).
 */
int vr_ghosts(vr_member *m, int32_t *pids, int n);

/*
 * Removes a group's door, its second name and its socket (the end of a run
 * or of a Slurm job on a node). Members still attached keep their books,
 * and make the socket again (a group lives while it has live members):
 * processes that join later still join them. Returns 0 (some name was
 * removed), -ENOENT (none was there), or another negative errno.
 */
int vr_group_remove(const char *dir, const char *group);

/*
 * For diagnostics and tests.
 */

/* Reclaims the slots of dead members now (it also happens on its own before
 * any denial and at each join). Returns how many were reclaimed, or -errno. */
int vr_reclaim(vr_member *m);

/* A consistent sample of one device's books, taken under the group's lock. */
struct vr_reg_sample {
	uint64_t cap;
	uint64_t in_use; /* the group's total */
	uint64_t peak;
	uint64_t slots_sum; /* sum of in-use over every occupied slot */
	uint32_t used_slots;
};
int vr_sample(vr_member *m, int dev, struct vr_reg_sample *out);

/* One other member's holding on a device, for the denial line. */
struct vr_holder {
	int32_t pid; /* as the member saw itself */
	uint64_t bytes;
	char command[128];
	/* 1: a launcher's charge for the job's processes that run outside the
	 * cap (the watcher: cli/escapees.h), not a member's holding. */
	int outside;
};
/* This member's in-use on dev (*self), the group's peak on it (*peak) and
 * the n largest other members' holdings (largest first). Returns how many
 * were filled (0..n), or a negative errno. */
int vr_holders(vr_member *m, int dev, uint64_t *self, uint64_t *peak, struct vr_holder *out, int n);

/* The longest this member waited for the group's lock, in ns (only waits
 * that found the lock taken are timed). */
uint64_t vr_max_lock_wait_ns(const vr_member *m);

/* The cap spec the group was created with (the text that applies to every
 * member), truncated to len - 1 bytes. Returns 0; 1 when the text may be cut
 * (the header keeps VR_SPEC_MAX - 1 bytes of it, or len was too small), so
 * it must not be handed on as a spec; or -EINVAL. */
int vr_group_spec(const vr_member *m, char *buf, size_t len);

/* This member's slot index in the segment, or -1 for NULL. */
int vr_slot_index(const vr_member *m);

/* The check a join makes of the registry directory, without creating it:
 * 0 (and its permission bits in *mode when not NULL), -ENOENT when it does
 * not exist, or the refusal's negative errno with a one-line reason in err
 * (-ELOOP symlink, -ENOTDIR, -EPERM another user's or open to others).
 * Changes nothing (vramctl doctor). */
int vr_check_dir(const char *dir, unsigned *mode, char *err, size_t errlen);

/* The registry directory used when none is given: $VRAMCTL_REGISTRY_DIR,
 * else $XDG_RUNTIME_DIR/vramctl, else /tmp/vramctl-<uid> unless another
 * user has taken that path (then, and from then on, $HOME/.vramctl-run-<host>).
 * Writes into buf. */
int vr_default_dir(char *buf, size_t len);

/* The registry directory of uid's per-user group (vramctl.conf's
 * user_limit), the same whatever the environment: the site's registry_dir
 * pattern, else /run/user/<uid>/vramctl when /run/user/<uid> is uid's,
 * else /tmp/vramctl-<uid>. 0 or -ENAMETOOLONG. */
int vr_user_dir(uid_t uid, char *buf, size_t len);

/* For launchers that run as root (the Slurm plugin): makes dir a directory
 * owned by uid:gid with mode 0700, moving aside whatever another user put
 * at that path. Its parent must exist. Returns 0 or a negative errno (with
 * a line in err). */
int vr_prepare_user_dir(const char *dir, uid_t uid, gid_t gid, char *err, size_t errlen);

/* Resolves a caller's registry directory: a NULL or empty *dir becomes
 * vr_default_dir() written into buf, with *dir pointed at buf. Returns 0, or
 * a negative errno with *dir untouched. */
int vr_dir_or_default(const char **dir, char *buf, size_t len);

#endif /* VRAMCTL_REGISTRY_H */
