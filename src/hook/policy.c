/*
 * policy.c - the one place that decides whether an allocation fits, and
 * what the program is told about memory.
 *
 *   cap of a device: VRAMCTL_LIMIT read for the program's ordinal or UUID
 *     (a malformed limit fails closed: cap 0); the group's cap wins when the
 *     group already has one for that device (books.c);
 *   reserve: before the driver is called, against the cap in force; a
 *     request that does not fit is refused and said (rate limited);
 *   spill: past the cap, with a spill budget, the caller may serve the
 *     request from the host instead (spill.c); only when that fails too is
 *     it a denial;
 *   view: total = min(cap, physical total), free = min(cap - group in-use,
 *     physical free), so every framework sizes itself inside the cap.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/duration.h"
#include "common/siteconf.h"
#include "common/text.h"
#include "hook/books.h"
#include "hook/policy.h"
#include "hook/record.h"
#include "hook/wait.h"
#include "registry/caps.h"

/*
 * Does every device item of the cap name a device? Checked once, before the
 * first device is set up. An index must be one of the program's devices; a
 * UUID one of its devices or, when CUDA_VISIBLE_DEVICES hides some, a GPU
 * NVML knows on this machine (a launcher may give each rank one GPU of a
 * cap written for all). Anything else fails closed: cap 0 on every device.
 */
static atomic_int devices_checked; /* 1 once the check has run to the end */
static atomic_int devices_bad;     /* 1: an item names no device */
static atomic_int devices_said;

/* Does NVML know a GPU with this UUID text on this machine? */
static int nvml_knows(const char *uuid)
{
	nvmlDevice_t h;
	if (vr_real.nvmlInit_v2() != NVML_SUCCESS)
		return 0;
	nvmlReturn_t rc = vr_real.nvmlDeviceGetHandleByUUID(uuid, &h);
	if (vr_real.nvmlShutdown)
		vr_real.nvmlShutdown();
	return rc == NVML_SUCCESS;
}

/* Is the UUID text a GPU of this machine that CUDA_VISIBLE_DEVICES hides? */
static int hidden_gpu(const char *uuid)
{
	int known = 0;
	if (!secure_getenv("CUDA_VISIBLE_DEVICES") || vr_nvml_init() != 0 || !vr_real.nvmlInit_v2 ||
	    !vr_real.nvmlDeviceGetHandleByUUID)
		return 0;
	VR_OWN(known = nvml_knows(uuid));
	return known;
}

/* Does the item name device k of this process? -1 if the driver cannot say. */
static int names_device(const struct vr_limit *it, int k)
{
	CUdevice h;
	CUuuid u;
	memset(&u, 0, sizeof u);
	if (vr_real.cuDeviceGet(&h, k) != CUDA_SUCCESS)
		return -1;
	if (vr_real.cuDeviceGetUuid_v2)
		vr_real.cuDeviceGetUuid_v2(&u, h);
	else if (vr_real.cuDeviceGetUuid)
		vr_real.cuDeviceGetUuid(&u, h);
	return vr_limit_names(it, k, (const unsigned char *)u.bytes);
}

/* The first item that names no device of this process, or NULL. When the
 * driver cannot say, the item counts as unmatched (fail closed). */
static const struct vr_limit *unmatched(int count)
{
	for (int i = 0; i < vr_g.limits.count; i++) {
		const struct vr_limit *it = &vr_g.limits.item[i];
		int found = !it->dev[0];
		for (int k = 0; k < count && !found; k++) {
			found = names_device(it, k);
			if (found < 0)
				return it;
		}
		if (found)
			continue;
		int is_index = it->dev[0] >= '0' && it->dev[0] <= '9';
		if (is_index || !hidden_gpu(it->dev))
			return it;
	}
	return NULL;
}

void vr_policy_check_devices(void)
{
	if (VR_LIKELY(atomic_load_explicit(&devices_checked, memory_order_acquire)))
		return;
	int count = 0, device_items = 0;
	for (int i = 0; i < vr_g.limits.count; i++)
		device_items += vr_g.limits.item[i].dev[0] != 0;
	if (vr_g.limit_bad || !device_items) {
		atomic_store_explicit(&devices_checked, 1, memory_order_release);
		return;
	}
	if (!vr_real.cuDeviceGetCount || !vr_real.cuDeviceGet ||
	    vr_real.cuDeviceGetCount(&count) != CUDA_SUCCESS)
		return; /* before cuInit: no device can be set up either */
	const struct vr_limit *it = unmatched(count);
	if (it) {
		atomic_store(&devices_bad, 1);
		if (!atomic_exchange(&devices_said, 1))
			vr_log(VR_LOG_ERROR,
			       "VRAMCTL_LIMIT names GPU '%s', which this process does not have "
			       "(it has %d GPU%s%s); every device allocation is refused (fail "
			       "closed)",
			       it->dev, count, count == 1 ? "" : "s",
			       secure_getenv("CUDA_VISIBLE_DEVICES") ? " after CUDA_VISIBLE_DEVICES"
			                                             : "");
	}
	atomic_store_explicit(&devices_checked, 1, memory_order_release);
}

void vr_policy_device(struct vr_dev *d)
{
	uint64_t cap = UINT64_MAX, max = UINT64_MAX;
	vr_policy_check_devices(); /* normally done already, before the devices lock */
	if (vr_g.limit_bad || atomic_load(&devices_bad) ||
	    !atomic_load_explicit(&devices_checked, memory_order_acquire))
		cap = 0;
	else if (!vr_limits_cap_for(&vr_g.limits, d->ordinal, d->uuid_text, d->phys_total, &cap))
		cap = UINT64_MAX;
	/* The group's caps were changed while it ran (`vramctl limit`): its
	 * spec now, written with UUIDs, is the cap of a device it adds. */
	char gs[VR_GROUP_SPEC_MAX];
	struct vr_limits gl;
	uint64_t gcap;
	if (cap != 0 && vr_books_changed_spec(gs, sizeof gs) &&
	    vr_parse_limits(gs, &gl, NULL, 0) == 0 &&
	    vr_limits_cap_for(&gl, -1, d->uuid_text, d->phys_total, &gcap))
		cap = gcap;
	/* The admin's maximum (vramctl.conf(5)): the environment never raises it. */
	if (vr_site_max_for(vr_site_get(), d->ordinal, d->uuid_text, d->phys_total, &max) &&
	    max < cap) {
		if (cap != UINT64_MAX)
			vr_log(VR_LOG_WARN, "GPU %d: the cap is lowered to the site's maximum",
			       d->ordinal);
		cap = max;
	}
	atomic_store(&d->caps_seen, atomic_load(&vr_caps_taken));
	vr_books_device(d, cap);
	vr_card_setup(d);
	vr_gt_setup(d);
	if (d->cap > max) {
		/* A group fixed above the maximum (before the admin set it): this
		 * process holds the maximum in books of its own. */
		vr_log(VR_LOG_WARN,
		       "GPU %d: the group's cap is above the site's maximum; this process "
		       "keeps its own books under the maximum",
		       d->ordinal);
		d->reg = -1;
		d->cap = max;
	}
	vr_rec_device(d);
	vr_books_own(d); /* its own books, when it keeps some: shown to monitors */
	if (vr_dev_capped(d) && d->cap != cap && cap != UINT64_MAX)
		vr_log(VR_LOG_INFO, "GPU %d: the group's cap is in force", d->ordinal);
	if (vr_dev_capped(d) && d->phys_total && d->cap > d->phys_total) {
		/* Said, not silently meaningless: the card is the bound. */
		char a[32], b[32];
		int dg = vr_size_digits((uint64_t[]){d->cap, d->phys_total}, 2, 0);
		vr_log(VR_LOG_WARN,
		       "GPU %d: the cap (%s) is more than the card holds (%s): the card's size "
		       "is what bounds this process",
		       d->ordinal, vr_format_size_digits(d->cap, dg, a, sizeof a),
		       vr_format_size_digits(d->phys_total, dg, b, sizeof b));
	}
}

/*
 * The hint: one thing to try, chosen from what was seen. A first block of
 * at least half the cap is a framework preallocating (TensorFlow, JAX):
 * --growth. Else spill, when there is one to switch on. Else the group's
 * peak so far, and the cap that would have granted this request.
 */
static void hint(const struct vr_dev *d, uint64_t bytes, uint64_t in_use, uint64_t peak,
                 uint64_t first, int dg, char *out, size_t len)
{
	char a[32], b[32];
	uint64_t before = vr_books_cap_lowered(d);
	/* The cap was lowered while it ran and the request fits the old one:
	 * that is the reason, not its context or its start-up. */
	if (before && in_use + bytes <= before)
		snprintf(out, len,
		         "hint: vramctl limit lowered the group's cap from %s to %s while it ran: "
		         "the group must free memory, or the cap be raised again (vramctl limit)",
		         vr_format_size_digits(before, dg, a, sizeof a),
		         vr_format_size_digits(d->cap, dg, b, sizeof b));
	/* Preallocating is the reason only for a request the cap could hold. */
	else if (!vr_g.growth && vr_dev_capped(d) && first && first >= d->cap / 2 &&
	         bytes <= d->cap)
		snprintf(out, len,
		         "hint: this process took %s in one block at start-up (a framework "
		         "preallocating?): vramctl run --growth lets it grow on demand",
		         vr_format_size_digits(first, dg, a, sizeof a));
	else if (bytes > d->cap)
		snprintf(out, len,
		         "hint: the request alone is more than the cap; granting it needs a cap "
		         "of at least %llu MiB%s",
		         (unsigned long long)((in_use + bytes + (1 << 20) - 1) >> 20),
		         vr_books_spill_budget() ? ""
		                                 : ", or vramctl run --spill to serve what does "
		                                   "not fit from host memory (slower)");
	else
		snprintf(out, len,
		         "hint: the group's peak so far is %s; granting this request needs a "
		         "cap of at least %llu MiB%s",
		         vr_format_size_digits(peak, dg, a, sizeof a),
		         (unsigned long long)((in_use + bytes + (1 << 20) - 1) >> 20),
		         vr_books_spill_budget() ? ""
		                                 : ", or vramctl run --spill to serve what does "
		                                   "not fit from host memory (slower)");
}

#define DENY_HOLDERS 3

/*
 * The denial line keeps its form ("denied X on GPU n: cap C, U in use") and
 * adds what a user needs to act: this process's use, the largest other
 * holders in the group (PID, command, bytes) and one hint. asked, when it
 * is not bytes, is what the program asked for, which the card takes in
 * whole pages (vr_on_card).
 */
/* This thread's last wait for room, for the denial line that
 * follows it: how it ended and how long it took (ns 0: none). */
static __thread struct vr_waited last_wait;

static void say_denied(const struct vr_dev *d, uint64_t bytes, uint64_t asked, uint64_t in_use)
{
	char a[32], b[32], c[32], s[32], more[64], others[256] = "", tip[200], pages[96] = "";
	char lead[64] = "denied ", took[32];
	const char *why = "";
	if (last_wait.end == VR_WAITED_TIME || last_wait.end == VR_WAITED_OTHER)
		snprintf(lead, sizeof lead, "waited %s for ",
		         vr_format_duration(last_wait.ns / 1000000, took, sizeof took));
	else if (last_wait.end != VR_WAITED_GRANTED)
		why = vr_wait_why(last_wait.end);
	last_wait = (struct vr_waited){0};
	if (!vr_log_denial_gate(more, sizeof more))
		return;
	/* A cap of 0 is a cap that could not be read (fail closed: said when
	 * it was read); no size of cap is the reason. */
	if (d->cap == 0) {
		vr__log(VR_LOG_WARN,
		        "denied %s on GPU %d: the cap could not be read (said above: a malformed "
		        "VRAMCTL_LIMIT, a device it names that this process does not have, or an "
		        "unusable configuration file), so every allocation is refused: fix that "
		        "and start the program again%s",
		        vr_format_size(bytes, a, sizeof a), d->ordinal, more);
		return;
	}
	struct vr_holder h[DENY_HOLDERS];
	uint64_t self = 0, peak = 0;
	int nh = vr_books_holders(d, &self, &peak, h, DENY_HOLDERS);
	/* "in use" is the card's (card.h): at least the group's use on the
	 * card as last seen, of which `overhead` is not blocks; this process's
	 * blocks are said apart from its own overhead (the program's figure). */
	uint64_t overhead, own = atomic_load(&((struct vr_dev *)d)->card.overhead);
	uint64_t card = vr_card_use((struct vr_dev *)d, &overhead);
	int counts = vr_card_counts(d);
	if (counts && in_use < card)
		in_use = card;
	if (!counts || own > self)
		own = 0;
	self -= own;
	if (peak < in_use)
		peak = in_use;
	/* Enough digits that the numbers never seem to contradict the denial
	 * or each other (never "cap 1.5 GiB, 1.4 GiB in use" for 32 MiB under
	 * 1500 MiB): in use + asked over the cap reads so. */
	uint64_t first =
	    atomic_load_explicit(&((struct vr_dev *)d)->first_block, memory_order_relaxed);
	const uint64_t sizes[] = {in_use, bytes, d->cap, self, peak, first, overhead, own};
	int dg = vr_size_digits(sizes, 8, 1);
	size_t used = 0;
	for (int i = 0; i < nh && used < sizeof others; i++) {
		char sz[32], name[24], shown[96];
		size_t wl;
		const char *w = vr_command_name(h[i].command, &wl);
		/* Another process's text: escaped before it reaches a terminal. */
		snprintf(name, sizeof name, "%.*s", (int)(wl ? (wl > 20 ? 20 : wl) : 1),
		         wl ? w : "?");
		vr_text_escape(shown, sizeof shown, name);
		/* A watcher's charge: the job's processes outside the cap. */
		int k =
		    h[i].outside
		        ? snprintf(others + used, sizeof others - used,
		                   "%sprocesses of the job outside the cap (vramctl status lists "
		                   "them) %s",
		                   i ? ", " : "; largest others: ",
		                   vr_format_size_digits(h[i].bytes, dg, sz, sizeof sz))
		        : snprintf(others + used, sizeof others - used, "%s%s (pid %d) %s",
		                   i ? ", " : "; largest others: ", shown, h[i].pid,
		                   vr_format_size_digits(h[i].bytes, dg, sz, sizeof sz));
		if (k < 0)
			break;
		used += (size_t)k;
	}
	hint(d, bytes, in_use, peak, first, dg, tip, sizeof tip);
	char oh[32], ohs[96] = "", mine[32], mines[96] = "";
	if (overhead)
		snprintf(ohs, sizeof ohs, " on the card, %s of it contexts and driver use",
		         vr_format_size_digits(overhead, dg, oh, sizeof oh));
	if (own)
		snprintf(mines, sizeof mines, " allocated + %s overhead",
		         vr_format_size_digits(own, dg, mine, sizeof mine));
	if (asked != bytes) /* exact: a rounded size could read as a whole MiB */
		snprintf(pages, sizeof pages, " (%llu bytes asked, in whole 2 MiB pages)",
		         (unsigned long long)asked);
	vr__log(VR_LOG_WARN, "%s%s%s on GPU %d%s: cap %s, %s in use%s (this process %s%s%s); %s%s",
	        lead, vr_format_size_digits(bytes, dg, a, sizeof a), pages, d->ordinal, why,
	        vr_format_size_digits(d->cap, dg, b, sizeof b),
	        vr_format_size_digits(in_use, dg, c, sizeof c), ohs,
	        vr_format_size_digits(self, dg, s, sizeof s), mines, others, tip, more);
}

/* A refusal of bytes (asked: see say_denied) recorded and said. */
static void refused(struct vr_dev *d, uint64_t bytes, uint64_t asked, uint64_t in_use)
{
	if (vr_gt_refused(d) || vr_outer_refused(d)) {
		/* Their own line says why; a wait before it is said first. */
		char took[32], sz[32];
		if (last_wait.ns &&
		    (last_wait.end == VR_WAITED_TIME || last_wait.end == VR_WAITED_OTHER))
			vr_log(VR_LOG_WARN, "waited %s for %s on GPU %d, then:",
			       vr_format_duration(last_wait.ns / 1000000, took, sizeof took),
			       vr_format_size(bytes, sz, sizeof sz), d->ordinal);
		last_wait = (struct vr_waited){0};
	}
	if (vr_gt_refused(d)) {
		vr_rec_denied(d, bytes, in_use, VR_DENY_GUARANTEE);
		vr_gt_say_denied(d, bytes);
		return;
	}
	vr_rec_denied(d, bytes, in_use, VR_DENY_CAP);
	if (!vr_outer_say_refused(d, bytes, in_use))
		say_denied(d, bytes, asked, in_use);
}

/*
 * --wait: an allocation the group's cap refused waits for room
 * (wait.h); what the group then grants is asked of the card and the
 * guarantees as any grant is. 1 granted (charged), 0 refused: the thread's
 * last_wait says how long it waited and why it stopped, for the line. A
 * grant the card or another group's guarantee refuses is not the books':
 * no release of this group wakes it, so it is asked again every
 * VR_WAIT_RETRY_NS while time is left.
 */
#define VR_WAIT_RETRY_NS 250000000ull
static int waited(struct vr_dev *d, uint64_t bytes, uint64_t *in_use)
{
	uint64_t t0 = vr_mono_ns(), deadline = t0 + vr_wait_budget_ns();
	struct vr_waited w = {0};
	for (;;) {
		if (vr_wait_room(d, bytes, deadline, &w) == 0) {
			*in_use = vr_books_in_use(d);
			if (vr__policy_granted(d, bytes, in_use) == 0) {
				vr_rec_charge(d, (int64_t)bytes);
				vr_rec_wait(d, bytes, vr_mono_ns() - t0, 1);
				last_wait = (struct vr_waited){0};
				return 1;
			}
			w.end = VR_WAITED_OTHER; /* the card or a guarantee refused */
		}
		uint64_t now = vr_mono_ns();
		if ((w.end != VR_WAITED_TIME && w.end != VR_WAITED_OTHER) || now >= deadline)
			break;
		if (w.end == VR_WAITED_OTHER) {
			uint64_t left = deadline - now;
			left = left < VR_WAIT_RETRY_NS ? left : VR_WAIT_RETRY_NS;
			struct timespec ts = {(time_t)(left / 1000000000ull),
			                      (long)(left % 1000000000ull)};
			while (nanosleep(&ts, &ts) != 0)
				;
		}
	}
	w.ns = vr_mono_ns() - t0;
	last_wait = w;
	vr_rec_wait(d, bytes, w.ns, 0);
	vr_books_denied(d, bytes); /* the refusal counts now, not before the wait */
	return 0;
}

/* Waits when --wait asks for it: 1 granted. */
static int wait_granted(struct vr_dev *d, uint64_t bytes, uint64_t *in_use)
{
	return vr_wait_budget_ns() && waited(d, bytes, in_use);
}

/* d's cap as the group's books say now (`vramctl limit`). */
static void cap_sync(struct vr_dev *d)
{
	unsigned taken = atomic_load_explicit(&vr_caps_taken, memory_order_acquire);
	if (vr_books_cap_sync(d))
		vr_card_cap_changed(d);
	atomic_store_explicit(&d->caps_seen, taken, memory_order_relaxed);
}

int vr__policy_card(struct vr_dev *d, uint64_t bytes, uint64_t *in_use)
{
	/* The books granted it under the cap they hold: the card is checked
	 * against the same (`vramctl limit` raised or lowered it). */
	if (atomic_load_explicit(&vr_caps_taken, memory_order_acquire) !=
	    atomic_load_explicit(&d->caps_seen, memory_order_relaxed))
		cap_sync(d);
	if (*in_use <= atomic_load_explicit(&d->card.watch, memory_order_relaxed) ||
	    vr_card_grant(d, bytes, *in_use) == 0)
		return 0;
	vr_books_release(d, bytes);
	vr_unpeak(); /* refused: never held */
	*in_use = vr_card_use(d, NULL);
	return -1;
}

/* Before a refusal the card is asked again: this process's overhead may
 * have gone down (a context's limits lowered, modules unloaded). 1 when
 * the request was granted on the second try (quiet: the first counted its
 * refusal already, where it was to be counted). */
static int second_try(struct vr_dev *d, uint64_t bytes, uint64_t *in_use)
{
	cap_sync(d); /* a refusal says the cap in force */
	if (!vr_card_before_refusal(d))
		return 0;
	*in_use = 0;
	if (vr__policy_take(d, bytes, in_use, 1) != 0)
		return 0;
	vr_rec_charge(d, (int64_t)bytes);
	return 1;
}

int vr__policy_refused(struct vr_dev *d, uint64_t bytes, uint64_t in_use, int report)
{
	if (VR_UNLIKELY(!d)) /* no device known: nothing to hold it against */
		return 0;
	if (second_try(d, bytes, &in_use))
		return 0;
	if (report && wait_granted(d, bytes, &in_use))
		return 0;
	if (report)
		refused(d, bytes, bytes, in_use);
	return -1;
}

int vr__policy_reserve_pages(struct vr_dev *d, uint64_t bytes, uint64_t page, int spillable,
                             uint64_t *charged)
{
	uint64_t in_use = 0;
	*charged = page;
	if (vr__policy_take(d, page, &in_use, 1) == 0 || second_try(d, page, &in_use)) {
		vr_rec_charge(d, (int64_t)page);
		return 0;
	}
	/* All that is left, asked for as the program was shown it: granted as
	 * asked, while no other short block of d lives (policy.h). */
	uint64_t none = 0;
	if (vr_dev_capped(d) && in_use < d->cap && bytes == d->cap - in_use &&
	    atomic_compare_exchange_strong(&d->short_block, &none, VR_SHORT_PENDING)) {
		*charged = bytes;
		if (vr__policy_take(d, bytes, &in_use, 1) == 0) {
			vr_rec_charge(d, (int64_t)bytes);
			return 0;
		}
		atomic_store(&d->short_block, 0);
	}
	if (spillable && vr_books_spill_budget())
		return 1; /* the host may serve it: nothing said here */
	*charged = page;
	if (wait_granted(d, page, &in_use))
		return 0;
	vr_books_denied(d, *charged); /* as the reserve does when not quiet */
	refused(d, *charged, bytes, in_use);
	return -1;
}

void vr_policy_short_settle(struct vr_dev *d, uint64_t ptr)
{
	atomic_store(&d->short_block, ptr);
}

void vr__policy_short_freed(struct vr_dev *d, uint64_t key)
{
	uint64_t expect = key;
	if (key > VR_SHORT_PENDING)
		atomic_compare_exchange_strong(&d->short_block, &expect, 0);
}

int vr_policy_try(struct vr_dev *d, uint64_t bytes)
{
	return vr__policy_reserve(d, bytes, 0);
}

int vr__policy_spillable(struct vr_dev *d, uint64_t bytes)
{
	uint64_t in_use = 0;
	if (!d)
		return 0;
	if (vr__policy_take(d, bytes, &in_use, 1) != 0 && !second_try(d, bytes, &in_use))
		return 1;
	vr_rec_charge(d, (int64_t)bytes);
	return 0;
}

void vr_policy_deny(struct vr_dev *d, uint64_t bytes, const char *why)
{
	uint64_t in_use = vr_books_in_use(d);
	vr_books_denied(d, bytes);
	vr_rec_denied(d, bytes, in_use, VR_DENY_CAP);
	vr_log_denied_why(d->ordinal, bytes, d->cap, in_use, why);
}

void vr_policy_view(struct vr_dev *d, uint64_t *freep, uint64_t *totalp)
{
	cap_sync(d);
	uint64_t used = vr_card_use(d, NULL);
	uint64_t room = used < d->cap ? d->cap - used : 0;
	if (*totalp > d->cap)
		*totalp = d->cap;
	if (*freep > room)
		*freep = room;
	if (*freep > *totalp)
		*freep = *totalp;
	if (d->nouter)
		vr_outer_view(d, freep, totalp);
	vr_gt_view(d, freep); /* under others' guarantees: what can be had */
}

uint64_t vr_policy_total(struct vr_dev *d, uint64_t total)
{
	cap_sync(d);
	if (vr_dev_capped(d) && total > d->cap)
		total = d->cap;
	return d->nouter ? vr_outer_total(d, total) : total;
}
