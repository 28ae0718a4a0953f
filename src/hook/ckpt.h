/*
 * ckpt.h - the driver's checkpoint API for this process (ckpt.c).
 * The API is for a controller acting on another PID (cuda.h: lock its CUDA
 * calls, move its device memory to host memory and back, unlock), so the
 * library asks a helper process, libexec/vramctl-checkpoint, started for
 * each operation without the program seeing it (no SIGCHLD, no child
 * reaped behind its back), and bounds how long it waits for it.
 */
#ifndef VRAMCTL_HOOK_CKPT_H
#define VRAMCTL_HOOK_CKPT_H

#include <stddef.h>

/* The helper's path, found beside the library: 0, or -1 with why (said by
 * the caller). */
int vr_ckpt_helper(const char **path, char *why, size_t len);

/* Locks this process's driver calls (in flight ones drain within
 * lock_ms) and checkpoints it: 0, or -1 with what failed in why (the
 * process is then running as before). */
int vr_ckpt_park(unsigned lock_ms, char *why, size_t len);
/* Restores this process and unlocks it: 0, or -1 with what failed in why;
 * *no_room is set when the card had no room for it (it stays parked). */
int vr_ckpt_restore(char *why, size_t len, int *no_room);

#endif /* VRAMCTL_HOOK_CKPT_H */
