/*
 * members.h - the CLI's view of a run's member records (common/record.h):
 * received on the run's socket, checked, mapped.
 */
#ifndef VRAMCTL_REPORT_MEMBERS_H
#define VRAMCTL_REPORT_MEMBERS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/record.h"

struct rep_member {
	struct vr_rec_hdr *h; /* mapped read-write: the CLI moves the ring's tail */
	/* How it ended, when vramctl reaped it (the command, or an orphan). */
	int reaped;
	int wstatus;
	/* Trace state (trace.c): its blocks, its overhead on the card (known
	 * once card[d]: it measured it) and what it spilled, per device. */
	uint64_t in_use[VR_REC_DEVS];
	uint64_t overhead[VR_REC_DEVS], spilled[VR_REC_DEVS];
	unsigned char card[VR_REC_DEVS];
	int started, ended, released;
	uint64_t gone_ns; /* when vramctl saw it gone without exit handlers */
};

struct rep_members {
	struct rep_member *v;
	int n, cap;
};

/* Adds the records members sent to sock (the run's datagram socket, read
 * without waiting) since the last call. Returns how many were added, or
 * -errno. Descriptors that fail the checks are closed and skipped. */
int rep_members_scan(struct rep_members *ms, int sock);
void rep_members_free(struct rep_members *ms);
/* The member with this pid (the latest one), or NULL. */
struct rep_member *rep_members_by_pid(struct rep_members *ms, pid_t pid);

/* 1 while the member's process lives (same PID and start time). */
int rep_member_alive(const struct vr_rec_hdr *h);
/* Reaps the member if it is a zombie child of vramctl (an orphan reparented
 * to it) that the WNOHANG loop missed; returns 1 if it did. */
int rep_member_reap(struct rep_member *m);
/* When its memory went back: its exit handlers' time, or when vramctl saw
 * it gone (0: it still lives, as far as vramctl knows). */
uint64_t rep_member_gone(struct rep_member *m, uint64_t now);

/* Bounded access to a record's sections (NULL when out of range). */
const struct vr_rec_site *rep_site(const struct vr_rec_hdr *h, uint32_t site1);
const struct vr_rec_module *rep_module(const struct vr_rec_hdr *h, uint32_t idx);
const struct vr_rec_leak *rep_leaks(const struct vr_rec_hdr *h, uint32_t *n);

#endif /* VRAMCTL_REPORT_MEMBERS_H */
