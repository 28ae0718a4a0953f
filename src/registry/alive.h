/*
 * alive.h - whether members are alive, asked of the kernel through their
 * liveness bytes in the door (alive.c).
 */
#ifndef VRAMCTL_REGISTRY_ALIVE_H
#define VRAMCTL_REGISTRY_ALIVE_H

#include <stdint.h>
#include <sys/types.h>

/* 1 if some open file description other than fd's holds slot i's liveness
 * byte, 0 if none does (its owner is gone), negative errno on error. */
int vr_slot_alive(int fd, uint32_t i);
/* The PID, in the caller's PID namespace, of the process holding slot i's
 * classic lock on its PID byte (layout.h, vr_slot_pid_byte): 0 when it
 * cannot be seen (another PID namespace, the lock lost, the caller's own,
 * or no member). For display and for looking at the member in /proc only:
 * liveness never depends on it. */
pid_t vr_slot_pid(int fd, uint32_t i);
/* 1 if a member other than slot `self` holds any slot's liveness byte
 * (or it cannot tell). */
int vr_others_alive(int fd, uint32_t self);
/* 1 if a lock word names a live member: alive[] (one byte per slot, from a
 * reader's lock table) when not NULL, else asked of the kernel through fd. */
int vr_lock_word_alive(int fd, uint32_t word, const unsigned char *alive);

#endif /* VRAMCTL_REGISTRY_ALIVE_H */
