/*
 * held.c - a dead member whose memory the driver still holds.
 *
 * A member's liveness lock drops when its process closes its files on the
 * way out; the process is reaped later, and the driver frees its memory
 * when it has torn its contexts down, which on a real GPU can take seconds
 * for a large one. reclaim.c keeps a dead member's bytes until the process is
 * reaped; here they are kept, after that, while NVML still lists its PID on
 * a device where it holds bytes (docs/fail-closed.md, "Dead members").
 *
 * The registry never loads NVML: a caller that can ask it (the injected
 * library, the CLI) sets a probe. Without one, or when the probe cannot
 * tell, a reaped member is gone, as before. The probe is asked only on the
 * reclaim path (a denial, a join), never with the group's lock held, and
 * its answer for a slot is kept VR_HELD_ASK_MS. A slot NVML keeps listing
 * is reclaimed anyway VR_HELD_BOUND_MS after this process first found it
 * reaped and listed (VRAMCTL_TEST_TEARDOWN_BOUND_MS changes it for tests),
 * with one line through the probe's say: a confused NVML never holds a
 * group's cap for good.
 *
 * What this process knows of each slot lives in its own memory (struct
 * vr_member.held_*), one word per slot, tagged with the slot's incarnation
 * so that a reused slot starts afresh; the layout is unchanged.
 *
 * A group whose last member died lost its books with it (segment.c): the
 * joiner that starts it afresh keeps the dead members the door names as
 * the new books' ghosts (layout.h, join.c), and vr_ghosts hands them to
 * whoever asks NVML, within the same bound from the group's start.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "registry/held.h"
#include "registry/member.h"
#include "registry/util.h"
#include "registry/proc.h"

#define VR_HELD_ASK_MS   250u
#define VR_HELD_BOUND_MS 30000u

static _Atomic(const struct vr_gpu_probe *) probe;
static uint64_t bound_ms = VR_HELD_BOUND_MS;
static pthread_once_t bound_once = PTHREAD_ONCE_INIT;

static void read_bound(void)
{
	const char *s = secure_getenv("VRAMCTL_TEST_TEARDOWN_BOUND_MS");
	if (s && *s >= '0' && *s <= '9')
		bound_ms = strtoull(s, NULL, 10);
}

void vr_gpu_probe_set(const struct vr_gpu_probe *p)
{
	atomic_store_explicit(&probe, p, memory_order_release);
}

/*
 * A word of what we know of a slot: the low 22 bits of its incarnation in
 * bits 42-63, a flag in bit 41 and a time in milliseconds (CLOCK_MONOTONIC)
 * in bits 0-40 (69 years). held_since: when it was first found reaped and
 * listed, the flag once the bound was said; held_asked: when the probe was
 * last asked, the flag when it answered "listed".
 */
#define TAG_SHIFT 42
#define FLAG      (1ull << 41)
#define MS_MASK   (FLAG - 1)

static uint64_t tag_of(uint64_t inc)
{
	return inc << TAG_SHIFT;
}
static int tagged(uint64_t w, uint64_t inc)
{
	return w && (w >> TAG_SHIFT) == (tag_of(inc) >> TAG_SHIFT);
}

/* The host PID NVML would list for the slot, or 0 when there is none we can
 * trust: a PID that a live process has now (reused: NVML's row for it is
 * that process's) cannot tell. */
static int32_t host_pid(const struct vr_slot *s)
{
	int32_t pid = s->nspid_outer > 0 ? s->nspid_outer : s->pid;
	if (pid <= 0 || vr_proc_exists(NULL, pid))
		return 0;
	return pid;
}

/* Asks the probe whether pid is listed on one of the devices where the
 * slot holds bytes: 1 listed, 0 on none of them, or cannot tell. */
static int ask(vr_member *m, const struct vr_gpu_probe *p, uint32_t i, int32_t pid)
{
	uint32_t ndev = vr_hdr_ndev(m->hdr);
	for (uint32_t d = 0; d < ndev; d++)
		if (vr_slot_held(m->hdr, i, d) && p->listed(pid, m->hdr->dev[d].uuid) > 0)
			return 1;
	return 0;
}

static int holds_bytes(vr_member *m, uint32_t i)
{
	uint32_t ndev = vr_hdr_ndev(m->hdr);
	for (uint32_t d = 0; d < ndev; d++)
		if (vr_slot_held(m->hdr, i, d))
			return 1;
	return 0;
}

int vr_ghosts(vr_member *m, int32_t *pids, int n)
{
	if (!m || n <= 0 || vr_is_detached(m))
		return 0;
	struct vr_hdr *h = m->hdr;
	pthread_once(&bound_once, read_bound);
	uint64_t created =
	    atomic_load_explicit((_Atomic uint64_t *)&h->created, memory_order_relaxed);
	/* Its start is known to the second: the bound, rounded up, and one. */
	if ((uint64_t)time(NULL) >= created + (bound_ms + 999u) / 1000u + 1u)
		return 0;
	int k = 0;
	for (int i = 0; i < VR_GHOSTS && k < n; i++) {
		int32_t pid = atomic_load_explicit((_Atomic int32_t *)&h->ghosts[i].host_pid,
		                                   memory_order_relaxed);
		if (pid <= 0)
			break;
		if (!vr_proc_exists(NULL, pid)) /* else a live process has the PID now */
			pids[k++] = pid;
	}
	return k;
}

int vr_dead_on_gpu(vr_member *m, uint32_t i, const struct vr_slot *s, uint64_t inc)
{
	const struct vr_gpu_probe *p = atomic_load_explicit(&probe, memory_order_acquire);
	if (!p || !p->listed || i >= VR_SLOTS || !holds_bytes(m, i))
		return 0;
	int32_t pid = host_pid(s);
	if (!pid)
		return 0;
	pthread_once(&bound_once, read_bound);
	uint64_t now = (vr_now_ns() / 1000000u) & MS_MASK, tag = tag_of(inc);

	/* Listed? A recent answer stands; else the probe is asked. Two
	 * threads may both ask: the answers agree, the last one stays. */
	uint64_t a = atomic_load_explicit(&m->held_asked[i], memory_order_relaxed);
	int listed;
	if (tagged(a, inc) && now - (a & MS_MASK) < VR_HELD_ASK_MS) {
		listed = (a & FLAG) != 0;
	} else {
		listed = ask(m, p, i, pid);
		atomic_store_explicit(&m->held_asked[i], tag | (listed ? FLAG : 0) | now,
		                      memory_order_relaxed);
	}
	if (!listed)
		return 0;

	/* Held, up to the bound from when we first saw it so. */
	uint64_t w = atomic_load_explicit(&m->held_since[i], memory_order_relaxed);
	if (!tagged(w, inc)) {
		uint64_t nw = tag | now;
		if (atomic_compare_exchange_strong(&m->held_since[i], &w, nw))
			w = nw;
	}
	if (now - (w & MS_MASK) < bound_ms)
		return 1;
	if (!(w & FLAG) && atomic_compare_exchange_strong(&m->held_since[i], &w, w | FLAG) &&
	    p->say) {
		char line[256];
		snprintf(line, sizeof(line),
		         "a dead member of the group (PID %d) is still listed by NVML %llu ms "
		         "after it was found reaped; its share is given back anyway",
		         (int)pid, (unsigned long long)bound_ms);
		p->say(line);
	}
	return 0;
}
