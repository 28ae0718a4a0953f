/*
 * guarantee.c - guarantees on the card (guarantee.h; the device book:
 * registry/devbook.h; the design: docs/architecture.md, "Guarantees").
 *
 * A borrow (an allocation past the group's guarantee while some group has
 * a guarantee on the card) is decided without any lock another process can
 * hold: this process first puts the bytes on the board as pending (a lock
 * of its own), then reads what the others have pending, the other groups'
 * unused guarantees (the book, copied under its seqlock, and their held
 * counts) and the card's free memory (NVML's, every process counted). Its
 * pending bytes stay on the board until the driver has answered, however
 * long it takes, so two borrowers never take the same room: each sees the
 * other's. A guaranteed group's bytes count in its held words once they
 * are on the card and stop counting before they leave it: its unused
 * guarantee is never shown smaller than it is.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/contract.h"
#include "common/text.h"
#include "hook/books.h"
#include "hook/config.h"
#include "hook/guarantee.h"
#include "hook/guarantee_park.h"
#include "hook/log.h"
#include "hook/nvmlproc.h"
#include "registry/devbook.h"
#include "registry/devguard.h"
#include "registry/proc.h"

const _Atomic uint64_t vr_gt_none;
/* The word of a device whose book exists but cannot be read: never 0, so
 * every allocation past the group's guarantee asks, and is refused. */
static const _Atomic uint64_t unreadable = 1;

/* This process as an entry's holder: host PID and start time. */
static struct vr_devholder self_holder(void)
{
	struct vr_devholder h = {.pid = (int32_t)vr_nvml_host_pid(NULL)};
	if (vr_proc_start_time(NULL, 0, &h.start) != 0)
		h.start = 0;
	return h;
}

/* The card's free memory, for root's admission (devbook.h). */
static int card_free(void *arg, uint64_t *free_b)
{
	const struct vr_dev *d = arg;
	return vr_nvml_free(d->uuid_text, free_b) == NV_READY ? 0 : -EIO;
}

/* This process writes the book itself: root, seeing host PIDs (a root in
 * a container of its own names itself by a PID the host does not know,
 * and may see root's directory read-only: it asks the service, which the
 * kernel tells the host's PID). */
static int writes_itself(void)
{
	return geteuid() == 0 && vr_devbook_host_pids();
}

/* Has the group's guarantee of asked bytes admitted, or joins it as one
 * of the processes it lives for: as root in the book itself, else through
 * the guard service. 0, or a negative errno with the reason in err
 * (-ENOSPC: it does not fit now; the service's refusals are -EACCES). */
static int admit(struct vr_dev *d, uint64_t asked, uint64_t ident, char *err, size_t errlen)
{
	uint64_t given = 0;
	const char *group = vr_books_group();
	if (writes_itself()) {
		struct vr_devbook_ask a = {.capacity = d->phys_total, /* the driver's */
		                           .uid = (uint32_t)getuid(),
		                           .ident = ident,
		                           .guarantee = asked,
		                           .group = group,
		                           .holder = self_holder(),
		                           .card_free = card_free,
		                           .arg = d};
		int rc = vr_devbook_admit(NULL, d->uuid, &a, &given, err, errlen);
		return rc < 0 ? rc : 0;
	}
	struct vr_guard_req r = {.verb = VR_GUARD_ADMIT, .bytes = asked, .ident = ident};
	memcpy(r.uuid, d->uuid, 16);
	vr_text_copy(r.group, sizeof r.group, group && *group ? group : "-");
	int rc = vr_guard_ask(&r, &given, err, errlen);
	return rc < 0 ? rc : 0;
}

/* admit, and where the card has no room for the guarantee now: idle
 * borrowers that run with --park-idle are parked for it ("Guarantees
 * given back by parking"), then it is asked once more. Nobody is killed;
 * a borrower decides for itself whether this process may park it
 * (common/parkwire.h). 0, or admit's error. */
static int admit_parking(struct vr_dev *d, uint64_t asked, uint64_t ident, char *err, size_t errlen)
{
	int rc = admit(d, asked, ident, err, errlen);
	uint64_t free_b = 0;
	if (rc == 0 || asked > d->phys_total || card_free(d, &free_b) < 0)
		return rc;
	/* The book's refusal for room; the service's (any refusal) only
	 * when the card itself lacks the room. */
	if (!(rc == -ENOSPC || (rc == -EACCES && free_b < asked)))
		return rc;
	if (!vr_gt_park_borrowers(d, free_b < asked ? asked - free_b : asked))
		return rc;
	return admit(d, asked, ident, err, errlen);
}

/* The GPU has no book: root makes it, anyone else asks the service (quiet
 * when there is none: then nobody can give a guarantee here but root). */
static void make_book(struct vr_dev *d)
{
	char err[512];
	uint64_t given;
	if (writes_itself()) {
		vr_devbook_make(NULL, d->uuid, d->phys_total, err, sizeof err);
		return;
	}
	struct vr_guard_req r = {.verb = VR_GUARD_BOOK};
	memcpy(r.uuid, d->uuid, 16);
	vr_guard_ask(&r, &given, err, sizeof err);
}

/* Opens d's book, making it first when there is none. 0, 1 (no book: no
 * guarantee on the GPU), or -1 after one line (a book not used, or one
 * that cannot be read: d->gt.word set accordingly). */
static int open_book(struct vr_dev *d, int asked, struct vr_devbook **b)
{
	char err[512] = "";
	int rc = vr_devbook_open(NULL, d->uuid, b, err, sizeof err);
	if (rc == -ENOENT) {
		make_book(d);
		rc = vr_devbook_open(NULL, d->uuid, b, err, sizeof err);
	}
	if (rc == 0 || rc == -ENOENT)
		return rc == 0 ? 0 : 1;
	/* Not root's, or writable by another user: whatever it says is not
	 * a guarantee; this process goes on as on a GPU without a book. A
	 * book of root's that cannot be read leaves borrowing unchecked only
	 * if it is allowed: it is not. */
	int untrusted = rc == -EPERM || rc == -EINVAL;
	vr_log(asked ? VR_LOG_ERROR : VR_LOG_WARN,
	       "GPU %d: the device book (guarantees) %s: %s; %s%s", d->ordinal,
	       untrusted ? "is not used" : "cannot be read", err[0] ? err : strerror(-rc),
	       asked ? "this process's guarantee cannot be given; " : "",
	       untrusted ? "other groups' guarantees are not seen by this process (its cap holds)"
	                 : "allocations past the group's guarantee are refused (its cap holds)");
	if (!untrusted)
		d->gt.word = &unreadable;
	return -1;
}

/* The group's name in the book: the hash of the token a root launcher gave
 * it (VRAMCTL_GUARANTEE_TOKEN), else of its books' key; 0: none (no group). */
static uint64_t group_ident(void)
{
	const char *t = getenv(VR_ENV_GUARANTEE_TOKEN);
	char *end;
	if (t && *t) {
		uint64_t v = strtoull(t, &end, 16);
		if (!*end && v)
			return vr_devbook_ident(v);
		vr_log(VR_LOG_WARN, VR_ENV_GUARANTEE_TOKEN " is not 16 hex digits: the group is "
		                                           "named by its books instead");
	}
	uint64_t key = vr_books_group_key();
	return key ? vr_devbook_ident(key) : 0;
}

void vr_gt_setup(struct vr_dev *d)
{
	d->gt.word = &vr_gt_none;
	if (d->cap == 0)
		return; /* fail closed: nothing is allocated to borrow */
	uint64_t asked = vr_config_guarantee(d->ordinal, d->uuid_text, d->phys_total, d->cap);
	char err[512] = "", a[32];
	struct vr_devbook *b = NULL;
	if (open_book(d, asked != 0, &b) < 0)
		return;
	uint64_t ident = group_ident();
	struct vr_devholder self = self_holder();
	uint32_t uid = (uint32_t)getuid();
	if (asked && !ident) {
		vr_log(VR_LOG_ERROR,
		       "GPU %d: a guarantee of %s needs the group's books, which this process "
		       "could not join: it borrows like a process without one",
		       d->ordinal, vr_format_size(asked, a, sizeof a));
		asked = 0;
	}
	int64_t g = b && ident ? vr_devbook_find(b, uid, ident, &self, 0) : 0;
	/* With VRAMCTL_GUARANTEE, this process asks for the guarantee: it is
	 * admitted, or joined as one of the processes it lives for. One a
	 * launcher gave (found above) needs nothing more: its launcher holds it,
	 * so a join that cannot be had (no service) goes unsaid. */
	if (asked && admit_parking(d, asked, ident, err, sizeof err) != 0 && g <= 0)
		vr_log(VR_LOG_ERROR,
		       "GPU %d: the guarantee of %s cannot be given: %s; this process borrows "
		       "like a group without one",
		       d->ordinal, vr_format_size(asked, a, sizeof a), err);
	if (asked && !b && open_book(d, 1, &b) != 0)
		return;
	if (!b)
		return; /* no book: nobody holds a guarantee on the GPU */
	g = ident ? vr_devbook_find(b, uid, ident, &self, 1) : 0;
	if (g < 0) {
		vr_log(VR_LOG_WARN,
		       "GPU %d: the device book (guarantees) cannot be read; allocations past the "
		       "group's guarantee are refused (its cap holds)",
		       d->ordinal);
		g = 0;
	}
	d->gt.book = b;
	d->gt.guarantee = (uint64_t)g;
	if (g)
		atomic_fetch_or(&d->gt.flags, VR_GT_MIRROR);
	if (asked && g && (uint64_t)g != asked) {
		char t[32];
		vr_log(VR_LOG_WARN,
		       "GPU %d: the group's guarantee here is %s (its first member's), not %s",
		       d->ordinal, vr_format_size((uint64_t)g, t, sizeof t),
		       vr_format_size(asked, a, sizeof a));
	}
	d->gt.word = vr_devbook_guaranteed_word(b);
}

/* This thread's last refusal of a borrow, for the denial line. */
static __thread struct refusal {
	const struct vr_dev *d;
	uint64_t use, card_free, unused, pending;
	struct vr_devbook_holder top;
	const char *why; /* NULL: the guarantees; else what could not be checked */
} last;

static int refuse(struct vr_dev *d, uint64_t bytes, const struct refusal *r)
{
	vr_books_release(d, bytes);
	last = *r;
	last.d = d;
	return -1;
}

/* This thread's borrows in flight, ended when the driver answers. */
#define INFLIGHT_MAX 16
__thread int vr__gt_inflight __attribute__((tls_model("initial-exec")));
static __thread struct {
	struct vr_dev *d;
	uint64_t bytes;
} inflight[INFLIGHT_MAX];

void vr__gt_settle(void)
{
	int n = vr__gt_inflight;
	vr__gt_inflight = 0;
	for (int i = 0; i < n; i++)
		if (inflight[i].d->gt.book)
			vr_devbook_pending_sub(inflight[i].d->gt.book, inflight[i].bytes);
}

/* The group's guarantee now; said once when it ended. */
static uint64_t own_now(struct vr_dev *d)
{
	uint64_t g = d->gt.guarantee ? vr_devbook_own(d->gt.book) : 0;
	if (VR_UNLIKELY(d->gt.guarantee && !g)) {
		char a[32];
		vr_log(VR_LOG_WARN,
		       "GPU %d: the group's guarantee of %s has ended (root took it back, or the "
		       "processes it lived for are gone); this process borrows like any other",
		       d->ordinal, vr_format_size(d->gt.guarantee, a, sizeof a));
		d->gt.guarantee = 0;
	}
	return g;
}

int vr__gt_borrow(struct vr_dev *d, uint64_t bytes, uint64_t *in_use)
{
	struct vr_devbook *b = d->gt.book;
	uint64_t use = *in_use ? *in_use : vr_books_in_use(d);
	struct refusal r = {.use = use};
	if (!b) {
		if (d->gt.word == &vr_gt_none)
			return 0;
		r.why = "the device book cannot be read";
		return refuse(d, bytes, &r);
	}
	uint64_t own = own_now(d);
	if (own && use <= own)
		return 0;
	if (vr__gt_inflight == INFLIGHT_MAX) {
		r.why = "this thread has too many borrows in flight";
		return refuse(d, bytes, &r);
	}
	/* Pending first: from here a borrower that checks counts these bytes
	 * (or it had published its own before we read the board below). */
	int rc = vr_devbook_pending_add(b, bytes);
	if (rc < 0) {
		r.why = rc == -EBUSY
		            ? "the board of borrows in flight is full of others' locks"
		            : "this borrow cannot be put on the board of borrows in flight";
		return refuse(d, bytes, &r);
	}
	struct vr_devbook_state st;
	rc = vr_devbook_pending_others(b, &r.pending);
	if (rc < 0)
		r.why = rc == -E2BIG || rc == -EOVERFLOW
		            ? "the borrows in flight cannot be counted (too many locks on the book)"
		            : "the borrows in flight cannot be counted";
	else if (vr_devbook_state(b, &st) < 0)
		r.why = "the device book cannot be read";
	if (!r.why) {
		r.unused = st.unused;
		r.top = st.top;
	}
	/* No other group has room to keep: the driver alone decides. */
	int free_for_all = !r.why && r.unused == 0;
	if (!r.why && !free_for_all && vr_nvml_free(d->uuid_text, &r.card_free) != NV_READY)
		r.why = "NVML cannot tell the card's free memory";
	uint64_t held = r.unused + r.pending < r.unused ? UINT64_MAX : r.unused + r.pending;
	if (free_for_all || (!r.why && r.card_free > held && bytes <= r.card_free - held)) {
		inflight[vr__gt_inflight].d = d;
		inflight[vr__gt_inflight].bytes = bytes;
		vr__gt_inflight++;
		return 0;
	}
	vr_devbook_pending_sub(b, bytes);
	return refuse(d, bytes, &r);
}

void vr_gt_view(struct vr_dev *d, uint64_t *freep)
{
	struct vr_devbook *b = d->gt.book;
	if (!b || atomic_load_explicit(d->gt.word, memory_order_relaxed) == 0)
		return;
	uint64_t use = vr_books_in_use(d), g = own_now(d), pending = 0, card_free = 0;
	uint64_t own = g > use ? g - use : 0, room = 0;
	struct vr_devbook_state st;
	if (own >= *freep)
		return;
	int known = vr_devbook_state(b, &st) == 0;
	if (known && st.unused == 0)
		return; /* nothing kept from borrowers: the driver's figure stands */
	if (known && vr_devbook_pending_others(b, &pending) == 0 &&
	    vr_nvml_free(d->uuid_text, &card_free) == NV_READY) {
		uint64_t held = st.unused + pending < st.unused ? UINT64_MAX : st.unused + pending;
		room = card_free > held ? card_free - held : 0;
	}
	if (own > room)
		room = own;
	if (room < *freep)
		*freep = room;
}

void vr__gt_placed(struct vr_dev *d, uint64_t bytes)
{
	if (d->gt.book)
		vr_devbook_held(d->gt.book, (int64_t)bytes);
}

void vr__gt_leaving(struct vr_dev *d, uint64_t bytes)
{
	if (d->gt.book)
		vr_devbook_held(d->gt.book, -(int64_t)bytes);
}

void vr_gt_overhead(struct vr_dev *d, int64_t delta)
{
	if (d->gt.book && (atomic_load_explicit(&d->gt.flags, memory_order_relaxed) & VR_GT_MIRROR))
		vr_devbook_held(d->gt.book, delta);
}

void vr_gt_forget(struct vr_dev *d)
{
	vr__gt_inflight = 0; /* the parent's borrows, on the parent's lock */
	if (d->gt.book)
		vr_devbook_forget(d->gt.book);
	d->gt.book = NULL;
	d->gt.word = &vr_gt_none;
	d->gt.guarantee = 0;
	atomic_store(&d->gt.flags, 0);
}

int vr_gt_refused(const struct vr_dev *d)
{
	return last.d == d;
}

void vr_gt_say_denied(const struct vr_dev *d, uint64_t bytes)
{
	struct refusal r = last;
	char more[64], a[32], b[32], c[32], e[32], f[32], g[32], h[32], who[160] = "";
	last.d = NULL;
	if (!vr_log_denial_gate(more, sizeof more))
		return;
	uint64_t cap = d->cap;
	/* What the group holds without the request (r.use counts it: the
	 * books had granted it when it was checked). */
	uint64_t held = r.use > bytes ? r.use - bytes : 0;
	const uint64_t sizes[] = {bytes,       held,     cap,       d->gt.guarantee,
	                          r.card_free, r.unused, r.pending, r.top.guarantee,
	                          r.top.held};
	int dg = vr_size_digits(sizes, 9, 0);
	char mine[160];
	snprintf(mine, sizeof mine, "this group: cap %s, %s guaranteed, %s in use",
	         vr_dev_capped(d) ? vr_format_size_digits(cap, dg, a, sizeof a) : "none",
	         vr_format_size_digits(d->gt.guarantee, dg, b, sizeof b),
	         vr_format_size_digits(held, dg, c, sizeof c));
	if (r.why) {
		vr__log(VR_LOG_WARN,
		        "denied %s on GPU %d: past this group's guarantee, and %s: a borrow "
		        "cannot be checked against other groups' guarantees (%s)%s",
		        vr_format_size_digits(bytes, dg, e, sizeof e), d->ordinal, r.why, mine,
		        more);
		return;
	}
	char name[96];
	vr_text_escape(name, sizeof name, r.top.group);
	snprintf(who, sizeof who,
	         "group '%s' (uid %u, pid %d) holds a guarantee of %s, %s of it in use", name,
	         (unsigned)r.top.uid, (int)r.top.pid,
	         vr_format_size_digits(r.top.guarantee, dg, f, sizeof f),
	         vr_format_size_digits(r.top.held, dg, g, sizeof g));
	/* Two figures side by side, never one "of" the other: unused
	 * guarantees may be more than the card has free (borrowers took it
	 * before they were given). */
	char pend[96] = "";
	if (r.pending)
		snprintf(pend, sizeof pend,
		         ", and %s was granted to other borrowers and is not on "
		         "the card yet",
		         vr_format_size_digits(r.pending, dg, a, sizeof a));
	vr__log(VR_LOG_WARN,
	        "denied %s on GPU %d: the card's free memory is guaranteed to other groups: %s; "
	        "the card has %s free, other groups' unused guarantees are %s%s (%s); nothing "
	        "is killed: allocations pass again once the card has room outside the "
	        "guarantees%s",
	        vr_format_size_digits(bytes, dg, e, sizeof e), d->ordinal, who,
	        vr_format_size_digits(r.card_free, dg, c, sizeof c),
	        vr_format_size_digits(r.unused, dg, h, sizeof h), pend, mine, more);
}
