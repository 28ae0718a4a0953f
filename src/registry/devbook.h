/*
 * devbook.h - the device book: one book per GPU (by UUID) holding the
 * guarantees groups of every user have on it, so that a group may
 * allocate past its guarantee only from memory guaranteed to no other
 * group (issues 26 and 38; docs/architecture.md, "The device book").
 *
 * Who writes what, and why no neighbour can break a guarantee:
 *
 *   the book     root's file, writable by nobody else (devdoor.h). Root
 *                launchers and the guard service (vramctl guard) admit
 *                guarantees in it: vr_devbook_admit, the one place where
 *                admission is decided. Everyone else maps it read-only and
 *                copies it without a lock.
 *   held         what a group has on the card: semaphores root creates
 *                for the entry and gives to the group's user; its members
 *                add their bytes with SEM_UNDO (the kernel takes a dead
 *                member's back). Only that user can change them, and it can
 *                only lend less of its own guarantee.
 *   pending      what a borrower was granted and has not placed on the
 *                card yet: the length of an OFD read lock it holds on the
 *                book's board, from before its check until the driver has
 *                answered; the kernel drops it when the process dies.
 *
 * Deciding a borrow waits on nothing: no lock is ever waited for, and a
 * borrow costs the same whatever the number of processes on the GPU (a
 * fixed number of system calls, plus one per other guaranteed group and
 * per borrow in flight). Nothing here prints, exits or aborts: errors are
 * negative errno values with one line in the caller's buffer.
 */
#ifndef VRAMCTL_REGISTRY_DEVBOOK_H
#define VRAMCTL_REGISTRY_DEVBOOK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "registry/devdoor.h" /* VR_DEVBOOK_GROUPS, struct vr_devholder */

/* The default directory of the books: created by root (0755). */
#define VR_DEVBOOK_DEFAULT_DIR "/run/vramctl"

/* Where the books live: $VRAMCTL_DEVICE_DIR if set and not empty, else
 * VR_DEVBOOK_DEFAULT_DIR. 0, or -ENAMETOOLONG / -EINVAL (a relative one). */
int vr_devbook_dir(char *buf, size_t len);

/* The name a group has in the book for a secret (its books' key, or a
 * launcher's token): its SipHash-2-4 under a fixed key, never 0. */
uint64_t vr_devbook_ident(uint64_t secret);

/* ---- readers: every capped process -------------------------------------- */

struct vr_devbook; /* this process's view of one device's book */

/*
 * Opens the book of the GPU with this UUID read-only (dir NULL:
 * vr_devbook_dir's, whose refusal it says). 0, or a negative errno with
 * one line in err: -ENOENT (no book: nobody holds a guarantee on the GPU;
 * err empty), -EPERM (a book or directory that is not root's or that
 * another user can write: not used), -EBADMSG (not a book of this
 * version), -EINVAL (a relative VRAMCTL_DEVICE_DIR).
 */
int vr_devbook_open(const char *dir, const unsigned char uuid[16], struct vr_devbook **out,
                    char *err, size_t errlen);

/* The header's sum of the used entries' guarantees: 0 when nobody holds
 * one (one relaxed load per allocation). Valid until vr_devbook_close or
 * vr_devbook_forget. */
const _Atomic uint64_t *vr_devbook_guaranteed_word(const struct vr_devbook *b);

/* The card's capacity the book records (the driver's, as root saw it). */
uint64_t vr_devbook_capacity(const struct vr_devbook *b);

/*
 * Looks for this process's group's live entry (its user uid and its name
 * ident) and remembers it, with self (this process: host PID and start
 * time, to know itself among the entry's holders): its guarantee, 0 when
 * the group holds none (or -EAGAIN / -EBADMSG when the book cannot be
 * read). With publish, this process's bytes on the card are counted in
 * the entry's held words from then on (vr_devbook_held).
 */
int64_t vr_devbook_find(struct vr_devbook *b, uint32_t uid, uint64_t ident,
                        const struct vr_devholder *self, int publish);
/* The guarantee of the entry vr_devbook_find remembered, now: 0 once it
 * ended (root took it back, or its processes are all gone: asked at most
 * every VR_DEVBOOK_ALIVE_NS when this process is not among its holders).
 * A few loads from the book; no system call on most calls. */
#define VR_DEVBOOK_ALIVE_NS (50ull * 1000 * 1000)
uint64_t vr_devbook_own(struct vr_devbook *b);

struct vr_devbook_holder {
	char group[72];
	uint32_t uid;
	int32_t pid;
	uint64_t guarantee, held;
};
/* What a borrow is checked against, read without a lock. */
struct vr_devbook_state {
	uint64_t own;                 /* this process's group's guarantee now (0: none, or ended) */
	uint64_t unused;              /* other live groups' unused guarantees: guarantee - held */
	struct vr_devbook_holder top; /* the one with the most unused (zeroed: none) */
};
/* 0, or -EAGAIN (the book kept changing), -EBADMSG (out of range). */
int vr_devbook_state(struct vr_devbook *b, struct vr_devbook_state *st);

/*
 * Pending bytes (a borrow granted, its block not on the card yet):
 * vr_devbook_pending_add publishes bytes more (before the check, so that
 * two borrowers never count the same room: each sees the other's, at
 * worst both are refused), vr_devbook_pending_sub takes them back (the
 * driver answered, or the borrow was refused). add: 0, or -EBUSY (no
 * region of the board could be taken), another negative errno.
 * vr_devbook_pending_others: the other processes' pending bytes, into
 * *sum: 0, -E2BIG (more locks on the board than a check reads: too many
 * borrows at once, or someone's locks), -EOVERFLOW (a lock without end).
 */
int vr_devbook_pending_add(struct vr_devbook *b, uint64_t bytes);
void vr_devbook_pending_sub(struct vr_devbook *b, uint64_t bytes);
int vr_devbook_pending_others(struct vr_devbook *b, uint64_t *sum);

/* This process's bytes on the card moved by delta (after the driver
 * placed a block, before one leaves): counted in its group's held words.
 * No-op until vr_devbook_find found the entry with publish. */
void vr_devbook_held(struct vr_devbook *b, int64_t delta);

/* Unmaps and frees b (its pending lock and held counts go with the
 * process or its descriptor). NULL: nothing. */
void vr_devbook_close(struct vr_devbook *b);
/* In a fork child: frees b without touching the parent's locks or
 * counts (the child's semaphore adjustments start empty). */
void vr_devbook_forget(struct vr_devbook *b);

/* ---- the writer: root only ---------------------------------------------- */

struct vr_devbook_ask {
	uint64_t capacity; /* the card's usable bytes, from the driver (NVML's total) */
	uint32_t uid;      /* the group's user, as the kernel said (SO_PEERCRED) */
	uint64_t ident;    /* vr_devbook_ident of the group's secret */
	uint64_t guarantee;
	const char *group;           /* its name, for the views */
	struct vr_devholder holder;  /* the process it lives for */
	struct vr_devholder manager; /* the service keeping it, pid 0: none */
	/* The card's free memory now (NVML's: every process counted), read
	 * after the entry is published: 0, or a negative errno. */
	int (*card_free)(void *arg, uint64_t *free_bytes);
	void *arg;
};

/*
 * The one place where a guarantee is admitted (root only). Under the
 * writers' lock: makes the book when there is none, ends the entries of
 * groups whose processes are all gone, then
 *   - the group's entry exists (uid and ident): the holder is added to it;
 *     returns 1 with *given its guarantee;
 *   - else it is admitted when it fits: asked <= the card's free memory
 *     less the other groups' unused guarantees less the borrows in flight
 *     (all read after the entry is published, so a borrower either sees
 *     it or is seen), so a guarantee given can be reached at once; returns
 *     0 with *given = asked. Refused: -ENOSPC with the numbers in err, the
 *     entry taken back.
 * Other errors: -EPERM (not root, or a directory another user can write),
 * -EUSERS (VR_DEVBOOK_GROUPS entries used), -EIO (the card's free memory
 * unknown), -ETIMEDOUT (another writer held the lock 10 s).
 */
int vr_devbook_admit(const char *dir, const unsigned char uuid[16], const struct vr_devbook_ask *a,
                     uint64_t *given, char *err, size_t errlen);

/* Makes the book of a GPU (root only) when there is none: 0 (made, or it
 * was there), or a negative errno with err. */
int vr_devbook_make(const char *dir, const unsigned char uuid[16], uint64_t capacity, char *err,
                    size_t errlen);

/* A holder leaves the entry of (uid, ident) (root only): the entry ends
 * when no holder of it is alive and no manager keeps it. 0, -ENOENT. */
int vr_devbook_leave(const char *dir, const unsigned char uuid[16], uint32_t uid, uint64_t ident,
                     int32_t pid);

/* Ends the entry of (uid, ident) (root only: the service, when the last
 * of its holders is gone). 0, -ENOENT. */
int vr_devbook_end(const char *dir, const unsigned char uuid[16], uint32_t uid, uint64_t ident);

/* For the service at its start (root only): every entry kept by a manager
 * that is gone is given to manager instead (NULL: to none, its holders
 * alone keep it) while one of its holders lives (each live holder passed
 * to adopt), and ended otherwise; then every entry whose processes are
 * all gone ends. The number of entries adopted, or a negative errno. */
int vr_devbook_adopt(const char *dir, const unsigned char uuid[16],
                     const struct vr_devholder *manager,
                     void (*adopt)(void *arg, const unsigned char uuid[16], uint32_t uid,
                                   uint64_t ident, const struct vr_devholder *h),
                     void *arg);

/* ---- monitors: status, top, export --------------------------------------- */

struct vr_devbook_view {
	unsigned char uuid[16];
	uint64_t capacity, guaranteed;
	int n;
	struct {
		char group[72];
		uint32_t uid;
		int32_t pid; /* the first live holder's */
		uint64_t guarantee, held;
		int live;
	} e[VR_DEVBOOK_GROUPS];
};
/* 0, -ENOENT (no book for this device), or another negative errno
 * (-EBADMSG: damage, -EPERM: not root's, -EAGAIN). */
int vr_devbook_read(const char *dir, const unsigned char uuid[16], struct vr_devbook_view *out);
/* Books present in dir (NULL: vr_devbook_dir): how many (all of them; the
 * first n go in uuids), or a negative errno. */
int vr_devbook_list(const char *dir, unsigned char (*uuids)[16], int n);

#endif /* VRAMCTL_REGISTRY_DEVBOOK_H */
