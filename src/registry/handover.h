/*
 * handover.h - a group's books handed over through a unix socket in the
 * registry directory (handover.c): the socket's name, making it, asking
 * it for the books, and answering one who asks. The thread that answers
 * for a member is serve.c's.
 *
 * Whoever reaches the directory (the group's user, or root) connects to
 * <dir>/.<group>.vrg.sock and receives, with SCM_RIGHTS, the group's books
 * (the sealed memfd, layout.h), a read-only descriptor of its door, and
 * the listening socket itself: a member that joins answers on the same
 * socket from then on, so the socket lives, and answers, as long as any
 * member does. Nothing is read from the asker; the answer is one message.
 */
#ifndef VRAMCTL_REGISTRY_HANDOVER_H
#define VRAMCTL_REGISTRY_HANDOVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The answer's header (then its descriptors, in the order below). */
#define VR_HO_MAGIC 0x4f485256u /* "VRHO" read little-endian */
#define VR_HO_FDS   3
struct vr_ho_answer {
	uint32_t magic;
	uint32_t version; /* VR_LAYOUT_VERSION: members of one version share books */
	uint64_t key;     /* the books' shm_key */
	uint32_t nfds;    /* VR_HO_FDS */
	uint32_t pad;
};

/* What an answer hands over: all three, or nothing (-1 each). */
struct vr_ho_fds {
	int books;  /* the memfd, read-write */
	int door;   /* the door, read-only (an open file of the server's own: no locks) */
	int listen; /* the group's listening socket */
	uint64_t key;
};

/* Closes what is open in *f and marks it empty. */
void vr_ho_close(struct vr_ho_fds *f);

/* The socket's name in the registry directory: ".<group>.vrg.sock". */
#define VR_HO_NAME_MAX 96
void vr_ho_name(const char *group, char *buf, size_t len);

/*
 * Makes the group's listening socket (SOCK_SEQPACKET, close-on-exec,
 * non-blocking) and binds it under a temporary name in dfd (dir is its path),
 * then puts it in place: replacing what is at the name (replace 1: the maker
 * of new books, under the door's lock: a socket left by an ended group) or
 * only where there is none (replace 0: -EEXIST otherwise). Its mode is 0666:
 * who reaches it is decided by the directory (0700) and who is answered by
 * the server's check of the peer (vr_ho_answer_one). Returns the socket, or a
 * negative errno (nothing is left behind).
 */
int vr_ho_listen(int dfd, const char *dir, const char *group, int replace);

/*
 * Asks the group's socket for its books: connects (retrying while its
 * queue is full), checks that the process that listens runs as `owner`,
 * and waits for the answer until `end` (vr_now_ns). Fills *out (all -1 on
 * error). 0, or -ENOENT (no socket), -ECONNREFUSED (one nobody listens on:
 * an ended group's), -ETIMEDOUT (nobody answered), -EPERM (another user
 * listens), -EPROTO (not an answer of this version), or another negative
 * errno. The descriptors come close-on-exec.
 */
int vr_ho_fetch(int dfd, const char *dir, const char *group, uid_t owner, uint64_t end,
                struct vr_ho_fds *out);

/* One message of len bytes from buf with the n descriptors fds (SCM_RIGHTS,
 * at most 8), sent without blocking and without SIGPIPE. 0 or a negative
 * errno. */
int vr_ho_sendfds(int s, const void *buf, size_t len, const int *fds, int n);
/* Receives, without blocking, one message of exactly len bytes into buf
 * with one to n descriptors (close-on-exec) into fds: how many, or a
 * negative errno (-EAGAIN: none yet; -EPROTO: another message; nothing
 * kept). */
int vr_ho_recvfds(int s, void *buf, size_t len, int *fds, int n);

/*
 * Answers one accepted connection c: the peer must run as owner (whose
 * books these are), as our effective uid or as root (SO_PEERCRED); then
 * one message with what f holds, sent without blocking and without
 * SIGPIPE. Does not close c. 0 or a negative errno.
 */
int vr_ho_answer_one(int c, const struct vr_ho_fds *f, uid_t owner);

#endif /* VRAMCTL_REGISTRY_HANDOVER_H */
