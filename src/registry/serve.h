/*
 * serve.h - the thread that answers on a group's socket for a member
 * (serve.c; the socket and its answer: handover.h).
 */
#ifndef VRAMCTL_REGISTRY_SERVE_H
#define VRAMCTL_REGISTRY_SERVE_H

#include <stdint.h>

#include "registry/handover.h"

struct vr_serve; /* the member's side of its thread */

/* What the thread is started with. Its own descriptors are taken from
 * these (the caller keeps and closes what it passed): copies put in flight
 * on a socket pair, which the thread takes once it has a table of its own. */
struct vr_serve_args {
	int books;             /* the memfd */
	int door;              /* the member's descriptor of the door (reopened read-only) */
	const char *door_name; /* the door's name in dir (where /proc cannot reopen it) */
	int listen;            /* the group's listening socket */
	int dfd;               /* the registry directory */
	const char *dir;       /* its path */
	const char *group;
	uint64_t key; /* the books' shm_key */
	/* Said once, from the thread, when the socket's name comes to name
	 * another group's books (vr_join_opts.notice); NULL: nothing said. */
	void (*notice)(const char *line);
};

/*
 * Starts the thread, which answers on a->listen until vr_serve_stop (or the
 * process's end): every connection gets the books (vr_ho_answer_one), one
 * at a time, without blocking. The thread has every signal blocked, keeps
 * its descriptors in a table of its own where the kernel allows it (a
 * program that closes all its descriptors cannot take them from it, nor
 * have them kept open by it), makes the socket again when its name is
 * removed (and takes one another member made), and never touches the
 * member's memory. Returns, with 0 and *out, once the thread holds its
 * descriptors (at most a second), or a negative errno (no thread).
 */
int vr_serve_start(struct vr_serve **out, const struct vr_serve_args *a);
/* Tells the thread to end, waits (at most a second) until it has closed
 * its descriptors, and frees s. */
void vr_serve_stop(struct vr_serve *s);
/* In a fork child (which has no such thread): closes the child's copies
 * of what the parent's thread uses, and frees s. */
void vr_serve_forget(struct vr_serve *s);

#endif /* VRAMCTL_REGISTRY_SERVE_H */
