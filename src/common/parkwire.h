/*
 * parkwire.h - how a process that may be parked (--park-idle) and
 * whoever asks it to park or to come back talk (`vramctl park`/`unpark`,
 * another group's process whose guarantee borrowers hold). libc only: the
 * injected library serves it, the CLI and the library ask.
 *
 * Each such process listens on an abstract Unix socket named
 * VR_PARK_SOCKET_PREFIX and its PID as the host sees it (NVML's, the first
 * NSpid entry): no file, nothing left behind when it dies, reachable from
 * its network namespace. A request is one datagram (SOCK_SEQPACKET) of one
 * line, the answer one line:
 *
 *   state             "state WHAT idle_ms=N parked=BYTES" (WHAT: running,
 *                     parking, parked, restoring; idle_ms: since its last
 *                     driver call seen, -1 when it was busy at the last
 *                     look; parked: its bytes on the host)
 *   park              "parked BYTES" | "refused WHY"
 *   unpark            "restored" | "refused WHY"
 *   park-for UUID     as park, for a guarantee on the GPU "GPU-..." that
 *                     the asker's group is owed or is being given:
 *                     "parked BYTES" (what it held on that GPU) |
 *                     "refused WHY"
 *
 * The process learns who asks from the kernel (SO_PEERCRED): park and
 * unpark from its own user or root only; park-for only while its group
 * borrows on that GPU, from its own user or root (who may park it anyway)
 * or from a user whose group the device book shows owed its guarantee
 * there; every park only when idle VR_PARK_IDLE_MIN_MS at least (a busy
 * process would be restored at once, for nothing).
 */
#ifndef VRAMCTL_PARKWIRE_H
#define VRAMCTL_PARKWIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define VR_PARK_SOCKET_PREFIX "vramctl-park-"
#define VR_PARK_LINE          256
#define VR_PARK_IDLE_MIN_MS   1000ull

/* The listening socket for host PID pid: an fd (close-on-exec,
 * non-blocking), or a negative errno (-EADDRINUSE: another listens). */
int vr_park_listen(int pid);
/* Takes one request from a listening fd: the connection's fd with the
 * line in req (terminated) and the asker's uid in *uid, or a negative
 * errno (-EAGAIN: none waiting). */
int vr_park_take(int lfd, char *req, size_t len, uid_t *uid);
/* Answers on a connection fd and closes it. */
void vr_park_answer(int cfd, const char *line);
/* Asks host PID pid: 0 with its answer in reply, -ECONNREFUSED / -ENOENT
 * (nothing listens: not a process that can be parked, or gone),
 * -ETIMEDOUT (no answer within timeout_ms), another negative errno. */
int vr_park_ask(int pid, const char *req, char *reply, size_t len, int timeout_ms);

/*
 * Parking for a guarantee: the idle processes on one GPU that can be
 * parked are asked, the longest idle first, to park for it (park-for), until
 * `bytes` are freed or none is left; with wait_ms, again every 250 ms
 * while that lasts. Each decides for itself whether the asker may. list
 * gives the host PIDs on the GPU now (their count, at most max, or a
 * negative errno: then nothing is asked); parked, when not NULL, hears each
 * park. Returns the bytes freed. Bounded: each answer within the checkpoint
 * helper's time.
 */
struct vr_park_for {
	const char *uuid; /* the GPU, "GPU-..." */
	uint64_t bytes;
	uint64_t wait_ms;
	int self; /* this process's host PID, never asked */
	int (*list)(void *arg, int *pids, int max);
	void (*parked)(void *arg, int pid, long long idle_ms, uint64_t bytes);
	void *arg;
};
uint64_t vr_park_for_guarantee(const struct vr_park_for *r);

#endif /* VRAMCTL_PARKWIRE_H */
