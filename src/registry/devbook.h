/*
 * devbook.h - the device book: one book per GPU (by UUID) that every capped
 * process of every user on the machine reads and updates, so that a group
 * may allocate past its guarantee only from memory guaranteed to no other
 * group (issue 26; docs/architecture.md, "The device book").
 *
 *   entry  a group that holds a guarantee on the device (at most
 *          VR_DEVBOOK_GROUPS): its uid, key, name and guarantee. It lives
 *          while a live line points to it.
 *   line   a process using the book (at most VR_DEVBOOK_LINES): its host
 *          PID, its group's entry (or none) and the bytes it holds against
 *          the entry's guarantee. It lives while its process holds an OFD
 *          read lock on the line's byte of the door.
 *   the book's lock   an OFD write lock on a byte of the door, bounded
 *          waits: admission, reclaim and borrowing go one at a time.
 *
 * Layout in devdoor.h; writer in devbook.c, read-only view in
 * devbook_read.c. Nothing here prints, exits or aborts: errors are
 * negative errno values with one line in the caller's buffer.
 */
#ifndef VRAMCTL_REGISTRY_DEVBOOK_H
#define VRAMCTL_REGISTRY_DEVBOOK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "registry/devdoor.h" /* VR_DEVBOOK_GROUPS, VR_DEVBOOK_LINES: the layout's */

struct vr_devbook; /* this process's attachment of one device's book */

/* Where the books live: $VRAMCTL_DEVICE_DIR if set and not empty, else
 * /dev/shm. 0, or -ENAMETOOLONG / -EINVAL. */
int vr_devbook_dir(char *buf, size_t len);

/* Opens (creating if needed) the book of the GPU with this UUID and total
 * bytes (the capacity; the first creator records it, later openers use
 * the recorded one). dir NULL: vr_devbook_dir. 0, or -errno with one line
 * in err: -ELOOP (a symlink at the door's path), -EPERM (a door not
 * 0666), -EBADMSG (damage), -ETIMEDOUT (a door's lock held too long). */
int vr_devbook_open(const char *dir, const unsigned char uuid[16], uint64_t capacity,
                    struct vr_devbook **out, char *err, size_t errlen);

struct vr_devbook_proc {
	int32_t pid;
	uint64_t bytes;
}; /* NVML's per-process list, host PIDs */

struct vr_devbook_who {
	const char *group;  /* the group's name ("" for a process without one) */
	uint64_t group_key; /* identity of the group (its books' shm_key); 0: a lone process, never
	                       an entry */
	uint32_t uid;
	int32_t pid;        /* host PID */
	uint64_t guarantee; /* bytes guaranteed to the group on this device; 0: none */
	const struct vr_devbook_proc *procs; /* what the card holds per process, for admission */
	int nprocs;                          /* (NULL: unknown, outside counted as 0) */
};

/*
 * Takes this process's member line (once per device: -EALREADY after).
 * A line with group_key != 0 joins its group's live entry when there is
 * one (same uid and group_key; the entry's guarantee is the group's, see
 * vr_devbook_guarantee); with who->guarantee > 0 and no entry, admits a new
 * one: outside = sum of procs' bytes whose pid is no live line's pid;
 * refused with -ENOSPC and the numbers in err (guarantees given, outside,
 * asked, capacity) when the live entries' guarantees + who->guarantee +
 * outside > capacity. -EUSERS when no line or entry is free; -ETIMEDOUT,
 * -EBADMSG as vr_devbook_lock. On error the process holds no line.
 */
int vr_devbook_join(struct vr_devbook *b, const struct vr_devbook_who *who, char *err,
                    size_t errlen);

/* The header's word: the sum of the live entries' guarantees (maybe more:
 * entries of dead groups not reclaimed yet). One relaxed load: when it is
 * 0 nobody holds a guarantee and nothing else need be asked. Valid until
 * vr_devbook_close or vr_devbook_forget. */
const _Atomic uint64_t *vr_devbook_guaranteed_word(const struct vr_devbook *b);
/* This process's group's guarantee on the device (0: none). */
uint64_t vr_devbook_guarantee(const struct vr_devbook *b);

/*
 * `vramctl limit` (#35): the guarantee of group who->group_key's live entry
 * (of who->uid) becomes who->guarantee: lowered at once; raised only when
 * it fits, as admission checks (the other entries' guarantees, what
 * processes with no live line hold: who->procs; within the capacity),
 * else -ENOSPC with the numbers in err. *old: the guarantee before.
 * -ENOENT: the group holds no guarantee here (an entry lives only while a
 * member's line points to it, so none is made here). No line is taken.
 * The group's members see the new figure at once (vr_devbook_guarantee_now).
 */
int vr_devbook_regrant(struct vr_devbook *b, const struct vr_devbook_who *who, uint64_t *old,
                       char *err, size_t errlen);
/* This process's group's guarantee as the book holds it now. */
uint64_t vr_devbook_guarantee_now(const struct vr_devbook *b);

/* Takes the book's lock (threads of this process one at a time too), then
 * checks the book: bounded wait: 0, -ETIMEDOUT, -EBADMSG (damage, said by
 * vr_devbook_why; the lock is not held). */
int vr_devbook_lock(struct vr_devbook *b);
void vr_devbook_unlock(struct vr_devbook *b);

struct vr_devbook_holder {
	char group[72];
	uint32_t uid;
	int32_t pid;
	uint64_t guarantee, held;
};
/* Lock held: reclaims the dead, then returns the sum over OTHER live
 * entries of max(0, guarantee - held), held = sum of that entry's live
 * lines' bytes; *top (when not NULL) gets the entry with the most unused
 * guarantee (zeroed when none). On damage found meanwhile: UINT64_MAX (no
 * borrowing), top's group "(device book damaged)", vr_devbook_why says. */
uint64_t vr_devbook_unused_others(struct vr_devbook *b, struct vr_devbook_holder *top);

/* This process's bytes on the card counted against its group's guarantee
 * (the hook adds after memory is on the card, subtracts before it leaves):
 * an atomic add on its line. No-op for a line without an entry. */
void vr_devbook_held(struct vr_devbook *b, int64_t delta);
/*
 * A borrow granted (delta > 0, under the lock) or its block placed on the
 * card, or the driver failed it (delta < 0): this process's pending bytes,
 * which the card's free memory does not show yet. vr_devbook_pending_others
 * (lock held): the other lines' pending bytes, each counted for at most
 * VR_DEVBOOK_PENDING_NS after its last grant (a block whose end was never
 * told is on the card, or failed, by then).
 */
#define VR_DEVBOOK_PENDING_NS (200ull * 1000 * 1000)
void vr_devbook_pending(struct vr_devbook *b, int64_t delta);
uint64_t vr_devbook_pending_others(struct vr_devbook *b);

/* What was wrong when a call last found damage (NULL: nothing found). */
const char *vr_devbook_why(const struct vr_devbook *b);

/* Gives the line back (and the entry, when it was its group's last live
 * line) and frees b. NULL: nothing. */
void vr_devbook_close(struct vr_devbook *b);
/* In a fork child: unmap and free only; the parent keeps its line. */
void vr_devbook_forget(struct vr_devbook *b);

/* Read-only view for monitors (status/top/export), no lock taken, no line. */
struct vr_devbook_view {
	unsigned char uuid[16];
	uint64_t capacity, guaranteed;
	int lines_live;
	int n;
	struct {
		char group[72];
		uint32_t uid;
		int32_t pid;
		uint64_t group_key, guarantee, held;
		int live;
	} e[VR_DEVBOOK_GROUPS];
};
/* 0, -ENOENT (no book for this device, or no process in it), or another
 * negative errno (-EBADMSG: damage, -ELOOP, -EPERM). */
int vr_devbook_read(const char *dir, const unsigned char uuid[16], struct vr_devbook_view *out);
/* Books present in dir (NULL: vr_devbook_dir): how many (all of them; the
 * first n go in uuids), or a negative errno. */
int vr_devbook_list(const char *dir, unsigned char (*uuids)[16], int n);

#endif /* VRAMCTL_REGISTRY_DEVBOOK_H */
