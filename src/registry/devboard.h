/*
 * devboard.h - the borrow board of a device book (devboard.c): what each
 * borrower was granted and has not placed on the card yet, as the length
 * of one OFD read lock it holds at the start of a region of its own past
 * the book's end ([VR_BOARD_BASE, VR_BOARD_END), devdoor.h).
 *
 * Why locks: the kernel keeps them, drops them when their process dies or
 * closes the book, and lets no one change another's. A read lock needs only
 * the read access every user has to the book, so anyone can add locks of
 * their own: those count as pending too (a reader counts every lock's
 * whole length; one lying over a borrower's can hide it, but then is at
 * least as long), which can only make borrowers stricter. No one waits on
 * any of them: they are taken and asked with F_OFD_SETLK and F_OFD_GETLK.
 */
#ifndef VRAMCTL_REGISTRY_DEVBOARD_H
#define VRAMCTL_REGISTRY_DEVBOARD_H

#include <stdint.h>

/* The most locks a reader asks about before it gives up (-E2BIG): borrows
 * in flight at one instant, plus anyone's stray locks. */
#define VR_BOARD_PROBES 512

/* This process's lock on the board: its region's start (-1: none) and
 * length. */
struct vr_board {
	long long base;
	uint64_t len;
};

/* Lengthens this process's lock by add bytes, taking a region at random
 * first when it has none (vr__board_others then says whether another lock
 * starts there too). 0 or a negative errno (b unchanged). */
int vr__board_grow(int fd, struct vr_board *b, uint64_t add);
/* Moves this process's lock to another region whose start no other lock
 * has (the new one taken before the old one is dropped: its bytes are
 * never uncounted); a few tries, then -EBUSY. */
int vr__board_move(int fd, struct vr_board *b);
/* Shortens it by less bytes (dropping it, and the region, at 0). */
void vr__board_shrink(int fd, struct vr_board *b, uint64_t less);
/* The sum of the lengths of every other open file description's locks on
 * the board: 0, -E2BIG (more than VR_BOARD_PROBES questions), -EOVERFLOW
 * (a lock to the end of the file), -EADDRINUSE (another lock starts where
 * mine, when not NULL, does: a reader could take one for the other), or
 * another negative errno. */
int vr__board_others(int fd, const struct vr_board *mine, uint64_t *sum);

#endif /* VRAMCTL_REGISTRY_DEVBOARD_H */
