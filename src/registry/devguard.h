/*
 * devguard.h - talking to the guard service (vramctl guard, devguard.c):
 * the root program that writes guarantees into the device books for users
 * who are not root. One request a connection, one line each way:
 *
 *   book  <uuid: 32 hex>                           makes the GPU's book
 *   admit <uuid> <bytes> <ident: 16 hex> <group>   admits the group's
 *                                                  guarantee, or joins it
 *   reply ok <bytes> | no <one line>
 *
 * The service takes the caller's user and process from the kernel
 * (SO_PEERCRED, SO_PEERPIDFD), never from the request: the guarantee is
 * the caller's user's, and it lives while the caller (and whoever joined)
 * lives. A client trusts what the book then says, not the reply.
 */
#ifndef VRAMCTL_REGISTRY_DEVGUARD_H
#define VRAMCTL_REGISTRY_DEVGUARD_H

#include <stddef.h>
#include <stdint.h>

/* The service's socket: $VRAMCTL_GUARD_SOCKET, else this. */
#define VR_GUARD_SOCKET "/run/vramctl/guard.sock"
/* What a refusal for want of the service says how to fix. */
#define VR_GUARD_HOWTO                                                                             \
	"guarantees for users other than root need the vramctl guard service "                     \
	"(systemctl enable --now vramctl-guard.socket; vramctl-guard(8))"

/* The longest a client waits for the service's answer. */
#define VR_GUARD_WAIT_MS 15000

enum vr_guard_verb { VR_GUARD_BOOK = 1, VR_GUARD_ADMIT };

struct vr_guard_req {
	enum vr_guard_verb verb;
	unsigned char uuid[16];
	uint64_t bytes; /* admit: the guarantee asked */
	uint64_t ident; /* admit: the group's name in the book */
	char group[72]; /* admit: its name for the views */
};

/* The socket's path into buf: 0 or -ENAMETOOLONG. */
int vr_guard_socket(char *buf, size_t len);

/* A request's line (with its newline) into buf: its length, or -ENAMETOOLONG. */
int vr_guard_format(const struct vr_guard_req *r, char *buf, size_t len);
/* Parses a request line: 0, or -EINVAL. */
int vr_guard_parse(const char *line, struct vr_guard_req *r);

/*
 * Sends r to the service and reads its answer: 0 with *bytes (ok), or a
 * negative errno with one line in err: -ENOENT / -ECONNREFUSED (no service:
 * err says how to get one), -EACCES (refused: the service's line),
 * -ETIMEDOUT, another.
 */
int vr_guard_ask(const struct vr_guard_req *r, uint64_t *bytes, char *err, size_t errlen);

#endif /* VRAMCTL_REGISTRY_DEVGUARD_H */
