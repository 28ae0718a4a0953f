/*
 * books.h - where the bytes are held (books.c): the group's shared registry
 * or, when it cannot be joined, this process's own books. Mechanism only:
 * what may be reserved is the policy's call (policy.h).
 */
#ifndef VRAMCTL_HOOK_BOOKS_H
#define VRAMCTL_HOOK_BOOKS_H

#include "hook/devices.h"

/* Joins the group once per process (thread-safe; later calls return at once). */
void vr_books_join(void);
/* Adds d to the books with cap_if_new (the group's cap wins if the group
 * already has one): fills d->reg and d->cap. Joins first if needed. */
void vr_books_device(struct vr_dev *d, uint64_t cap_if_new);
/* Adds bytes to d's in-use if it stays within d->cap (the group's cap on the
 * registry). Returns 0, or -1 with *in_use the figure that did not leave room
 * (a registry that fails also refuses: the cap is never passed). */
int vr_books_reserve(struct vr_dev *d, uint64_t bytes, uint64_t *in_use);
void vr_books_release(struct vr_dev *d, uint64_t bytes);
/* Group-wide in-use of d. */
uint64_t vr_books_in_use(struct vr_dev *d);
/* Pinned host memory: counted apart, never capped. */
void vr_books_pinned(int64_t delta);
/* In a child after fork (one thread left): drop the parent's membership. */
void vr_books_atfork_child(void);

#endif /* VRAMCTL_HOOK_BOOKS_H */
