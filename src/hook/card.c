/*
 * card.c - the cap counts what the card holds (card.h says when the
 * figures are taken and why).
 *
 * This process's overhead on a device is NVML's figure for its host PID
 * less its blocks (the books' charge for them). A figure is used only when
 * it is as new as the driver's last change on the card: NVML's free memory
 * is then the driver's own (cuMemGetInfo, read before and after), which
 * follows every change at once. NVML keeps a sample that may lag the card,
 * so a look near the cap waits for that, a bounded time, and a figure that
 * never agrees is used as it is, said once.
 *
 * A fresh figure raises the overhead at once: pages the driver keeps after
 * the blocks in them were freed, a small block that took a new page, a
 * module loaded through no hooked call. It lowers it only once the
 * process's blocks have held still for CARD_SETTLE_MS (seen at two
 * looks): a grant of another thread still with the driver is in the books
 * before it is on the card, and would read as overhead gone. Other members
 * charge their own overhead; what NVML shows for them over their books is
 * counted here too (their "extra") until they do, so that a grant near the
 * cap never rests on another member's stale charge.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hook/books.h"
#include "hook/card.h"
#include "hook/guarantee.h"
#include "hook/nvmlproc.h"
#include "hook/record.h"
#include "registry/proc.h"

#define MS              1000000ull
#define CARD_FRESH_MS   20   /* near the cap, older figures of others are taken again */
#define CARD_SETTLE_MS  1000 /* blocks unchanged this long: NVML's figure may lower overhead */
#define CARD_ABSENT_MS  2000 /* not listed this long while holding memory: NVML cannot tell */
#define CARD_MARGIN_MIN ((uint64_t)256 << 20)
#define CARD_OTHERS_MAX 1024
#define CARD_WAIT_MS    1000 /* how long a look waits for NVML to agree with the driver */
#define CARD_RETRY_US   2000 /* between two tries of such a look */

/* d->card.said: what has been said. */
enum { SAID_BIG = 1, SAID_OVER = 2, SAID_NO_FIGURES = 4, OFF = 8, SAID_LAG = 16 };

/* How a look ended (look()). */
enum { LOOK_NONE, LOOK_FRESH, LOOK_OLD };

/*
 * What this process knows of the driver's figures on each device (by
 * ordinal): how NVML's free memory differs from the driver's when both
 * agree (0 on every driver measured; a driver that counts otherwise is
 * learned once, said: card.h), under the look's busy flag; and the
 * driver's free memory at the last look, less the whole pages granted
 * since (UINT64_MAX: not known): a driver that shows another figure has
 * changed since, through a hooked call or not (a module loaded at a
 * kernel launch, another process).
 */
static struct {
	int64_t offset;
	_Atomic uint64_t free;
	/* Bytes of blocks of 1 MiB or less freed since the last look, near
	 * the cap: their pages are still on the card, and the figure counts
	 * them until NVML's does (card_figure); and of those granted since,
	 * which the driver answered: where its free memory shows nothing new
	 * at the next check, they went into those pages (a hole less). */
	_Atomic uint64_t holes, landed;
} drv_seen[VR_MAX_DEVICES];

/* A new context's check (vr_card_context) looks without charging: the
 * overhead the look finds is kept here, and charged only once the context
 * stands, so that a refused context never counts as memory the group held
 * (its books' peaks, the record's, the status's PEAK). */
static __thread struct {
	int on, seen;
	uint64_t want, booked;
} dry;

/* The ordinal + 1 of the device whose new context was refused last, 0 none
 * (card.h, vr_card_refused_context). */
static atomic_int ctx_refused;

/* This thread's grant of 1 MiB or less near the cap whose driver call has
 * not returned (card.h, vr_card_landed), and its bytes. */
__thread struct vr_dev *vr__card_flight __attribute__((tls_model("initial-exec")));
static __thread uint64_t flight_bytes
    __attribute__((tls_model("initial-exec"))); /* 0: the driver's free memory cannot tell */

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* This process's overhead charge on d becomes `bytes`: in the books, and
 * against its group's guarantee in the device book (guarantee.h). */
static void charge_overhead(struct vr_dev *d, uint64_t bytes)
{
	uint64_t was = atomic_load(&d->card.overhead);
	vr_books_overhead(d, bytes);
	vr_gt_overhead(d, (int64_t)atomic_load(&d->card.overhead) - (int64_t)was);
}

uint64_t vr_card_margin(uint64_t cap)
{
	uint64_t m = cap / 8;
	if (m < CARD_MARGIN_MIN)
		m = CARD_MARGIN_MIN;
	return m < cap ? m : cap;
}

int vr_card_counts(const struct vr_dev *d)
{
	return !vr_g.count_allocations &&
	       !(atomic_load_explicit(&((struct vr_dev *)d)->card.said, memory_order_relaxed) &
	         (SAID_NO_FIGURES | OFF));
}

/* The next watch line once the books hold `total`: half a margin higher,
 * at most the cap less its margin. */
static void set_watch(struct vr_dev *d, uint64_t total)
{
	uint64_t cap = vr_dev_capped(d) ? d->cap : UINT64_MAX;
	uint64_t m = vr_card_margin(vr_dev_capped(d) ? d->cap : d->phys_total);
	uint64_t w = total + m / 2, near = cap - m;
	atomic_store_explicit(&d->card.watch, w < near ? w : near, memory_order_relaxed);
}

void vr_card_setup(struct vr_dev *d)
{
	/* Nothing of a parent's figures (a fork child sets its devices up
	 * again). */
	struct vr_card *c = &d->card;
	atomic_store(&c->overhead, 0);
	atomic_store(&c->extra, 0);
	atomic_store(&c->others, 0);
	atomic_store(&c->seen_ns, 0);
	atomic_store(&c->busy, 0);
	atomic_store(&c->said, 0);
	atomic_store(&c->seen_held, 0);
	atomic_store(&c->flags, 0);
	atomic_store(&drv_seen[d->ordinal].holes, 0);
	atomic_store(&drv_seen[d->ordinal].landed, 0);
	atomic_store(&c->small, 0);
	c->booked = c->stable_ns = c->absent_ns = 0;
	if (vr_g.count_allocations) {
		atomic_store(&d->card.watch, UINT64_MAX);
		vr_books_counting(VR_SLOT_F_ALLOCATIONS);
		return;
	}
	/* A cap of 0 fails closed (a cap that cannot be read): every
	 * allocation is refused, nothing more; the card is not asked. */
	if (d->cap == 0) {
		atomic_fetch_or(&d->card.said, OFF);
		atomic_store(&d->card.watch, UINT64_MAX);
		return;
	}
	/* The first grant that reaches the books takes the figures (not here:
	 * this runs under the devices lock, and NVML may have to load). */
	atomic_store(&d->card.watch, 0);
}

void vr_card_cap_changed(struct vr_dev *d)
{
	uint64_t w = atomic_load(&d->card.watch);
	if (w != UINT64_MAX)
		atomic_compare_exchange_strong(&d->card.watch, &w, 0);
}

/* From now on d's cap counts allocations only: said once, shown in the
 * slot, and the overhead charged so far given back. */
static void no_figures(struct vr_dev *d, const char *why)
{
	if (atomic_fetch_or(&d->card.said, SAID_NO_FIGURES) & SAID_NO_FIGURES)
		return;
	atomic_store(&d->card.watch, UINT64_MAX);
	charge_overhead(d, 0);
	vr_books_counting(VR_SLOT_F_NO_FIGURES);
	vr_log(VR_LOG_WARN,
	       "GPU %d: the driver does not tell this process's use of the card (%s): its cap "
	       "counts what it allocates only; its context and the driver's own use are not "
	       "counted",
	       d->ordinal, why);
}

/* The lines of a device over its cap: a context larger than the cap, or
 * a group whose card figure passed it (each said once while it lasts). */
static void say_over(struct vr_dev *d, uint64_t card, uint64_t overhead)
{
	char a[32], b[32], c[32];
	uint64_t own = atomic_load(&d->card.overhead);
	int said = atomic_load_explicit(&d->card.said, memory_order_relaxed);
	if (!vr_dev_capped(d))
		return;
	if (card <= d->cap && own <= d->cap) { /* the common case: nothing to say */
		if (said & SAID_OVER)
			atomic_fetch_and(&d->card.said, ~SAID_OVER);
		return;
	}
	int big = own > d->cap, bit = big ? SAID_BIG : SAID_OVER;
	if ((said & bit) || (atomic_fetch_or(&d->card.said, bit) & bit))
		return;
	int dg = vr_size_digits((uint64_t[]){card, d->cap, own, overhead}, 4, 1);
	const char *then = vr_books_spill_budget() ? "what is allocated goes to host memory (spill)"
	                                           : "allocations are refused";
	if (big)
		vr_log(VR_LOG_ERROR,
		       "GPU %d: this process's context and the driver's use take %s on the card, "
		       "more than the cap (%s): %s (vramctl run --count allocations caps only what "
		       "the program allocates)",
		       d->ordinal, vr_format_size_digits(own, dg, a, sizeof a),
		       vr_format_size_digits(d->cap, dg, b, sizeof b), then);
	else if (vr_books_cap_lowered(d) && card <= vr_books_cap_lowered(d))
		/* The cap came down below what it held: that is why. */
		vr_log(VR_LOG_WARN,
		       "GPU %d: the group holds %s on the card, over its cap (%s), which vramctl "
		       "limit lowered from %s while it ran; %s until it is back under the cap",
		       d->ordinal, vr_format_size_digits(card, dg, a, sizeof a),
		       vr_format_size_digits(d->cap, dg, b, sizeof b),
		       vr_format_size_digits(vr_books_cap_lowered(d), dg, c, sizeof c), then);
	else
		vr_log(
		    VR_LOG_WARN,
		    "GPU %d: the group holds %s on the card, over its cap (%s): contexts, modules "
		    "and the driver's own use take %s of it; %s until it is back under the cap",
		    d->ordinal, vr_format_size_digits(card, dg, a, sizeof a),
		    vr_format_size_digits(d->cap, dg, b, sizeof b),
		    vr_format_size_digits(overhead, dg, c, sizeof c), then);
}

static const struct vr_nvml_proc *find(const struct vr_nvml_proc *l, unsigned n, pid_t pid)
{
	for (unsigned i = 0; i < n; i++)
		if (pid > 0 && l[i].pid == (unsigned)pid)
			return &l[i];
	return NULL;
}

/* This process's overhead from NVML's figure `used` (card.c's header;
 * fresh: the figure is as new as the driver's last change). pending:
 * bytes the books hold for a request the driver has not been asked for
 * yet (the grant being checked): not on the card. */
static void own_overhead(struct vr_dev *d, uint64_t used, uint64_t pending, uint64_t t, int fresh)
{
	struct vr_card *c = &d->card;
	uint64_t held = vr_books_held(d), oh = atomic_load(&c->overhead);
	uint64_t booked = held > oh ? held - oh : 0;
	booked = booked > pending ? booked - pending : 0;
	if (booked != c->booked) {
		c->booked = booked;
		c->stable_ns = t;
	}
	uint64_t want = used > booked ? used - booked : 0;
	/* Lowered only on a fresh figure once the blocks held still: a grant
	 * of another thread still with the driver reads as overhead gone. */
	if (want < oh && !(fresh && t - c->stable_ns >= CARD_SETTLE_MS * MS))
		want = oh;
	if (dry.on) { /* a new context's check: charged once it stands */
		dry.seen = 1;
		dry.want = want;
		dry.booked = booked;
		return;
	}
	if (want != oh)
		charge_overhead(d, want);
	vr_rec_overhead(d, want, booked + want); /* measured, even when 0 */
}

/* Other members' overhead: charged (into *charged) and not yet (returned),
 * and what dead members of the group's books before these still hold. */
static uint64_t others(struct vr_dev *d, const struct vr_nvml_proc *l, unsigned n,
                       uint64_t *charged)
{
	uint64_t extra = 0;
	*charged = 0;
	if (d->reg < 0)
		return 0;
	struct vr_member_use *u = malloc(CARD_OTHERS_MAX * sizeof *u);
	int k = u ? vr_books_others(d, u, CARD_OTHERS_MAX) : 0;
	for (int i = 0; i < k; i++) {
		*charged += u[i].overhead;
		const struct vr_nvml_proc *p = find(l, n, u[i].pid);
		if (!p || p->used == NVML_VALUE_NOT_AVAILABLE ||
		    (u[i].flags & (VR_SLOT_F_ALLOCATIONS | VR_SLOT_F_NO_FIGURES)))
			continue;
		if (p->used > u[i].used)
			extra += p->used - u[i].used;
	}
	free(u);
	/* Members of the group's books before these, dead, that the driver is
	 * still tearing down (registry.h, vr_ghosts): all NVML lists is theirs. */
	int32_t g[16];
	int ng = vr_ghosts(vr__books_member, g, 16);
	for (int i = 0; i < ng; i++) {
		const struct vr_nvml_proc *p = find(l, n, g[i]);
		if (p && p->used != NVML_VALUE_NOT_AVAILABLE)
			extra += p->used;
	}
	return extra;
}

/* The driver's free memory on d into *f: 1, or 0 when the calling thread's
 * current context is not on d (the driver cannot be asked about it). */
static int driver_free(struct vr_dev *d, uint64_t *f)
{
	CUdevice h;
	size_t fr = 0, t = 0;
	int ok = 0;
	if (!vr_real.cuCtxGetDevice || !vr_real.cuMemGetInfo_v2)
		return 0;
	VR_OWN(ok = vr_real.cuCtxGetDevice(&h) == CUDA_SUCCESS && h == d->handle &&
	            vr_real.cuMemGetInfo_v2(&fr, &t) == CUDA_SUCCESS);
	*f = fr;
	return ok;
}

static void sleep_us(unsigned us)
{
	nanosleep(&(struct timespec){0, (long)us * 1000}, NULL);
}

/* One line, once a process, when NVML's figures did not agree with the
 * driver's within the wait (they lag more, or count otherwise). */
static void say_lag(struct vr_dev *d, int64_t off)
{
	char a[32];
	if (atomic_fetch_or(&d->card.said, SAID_LAG) & SAID_LAG)
		return;
	vr_log(VR_LOG_WARN,
	       "GPU %d: NVML's figures did not catch up with the driver's within %d ms (its free "
	       "memory stays %s%s off): grants near the cap are checked with NVML's figures as "
	       "they are, and may pass the cap by what NVML does not show yet",
	       d->ordinal, CARD_WAIT_MS, off < 0 ? "-" : "",
	       vr_format_size((uint64_t)(off < 0 ? -off : off), a, sizeof a));
}

/*
 * NVML's process list for d into *l, *n, taken when it agrees with the
 * driver (waiting at most wait_ms for that; 0: no wait). Returns
 * LOOK_FRESH (it agrees, or the driver cannot be asked from this thread),
 * LOOK_OLD (it did not within the wait: used as it is; a wait that ran
 * out learns the difference and says so), or LOOK_NONE with *up NVML's
 * state when it gave no list.
 */
static int take_list(struct vr_dev *d, unsigned wait_ms, struct vr_nvml_proc **l, unsigned *n,
                     nvmlReturn_t *rc, int *up)
{
	uint64_t until = now_ns() + (uint64_t)wait_ms * MS, f1, f2, nf = 0, first_nf = 0,
	         first_f = 0;
	int k = d->ordinal, tries = 0;
	for (;;) {
		int asked = driver_free(d, &f1);
		atomic_store(&drv_seen[k].free, UINT64_MAX);
		*up = vr_nvml_list(d->uuid_text, l, n, rc);
		if (*up != NV_READY)
			return LOOK_NONE;
		if (!asked || vr_nvml_free(d->uuid_text, &nf) != NV_READY || !driver_free(d, &f2))
			return LOOK_FRESH; /* nothing to compare with: as it is */
		if (f1 == f2)
			atomic_store(&drv_seen[k].free, f2);
		if (f1 == f2 && (int64_t)(nf - f1) == drv_seen[k].offset)
			return LOOK_FRESH;
		if (tries++ == 0)
			first_nf = nf, first_f = f1;
		if (now_ns() >= until)
			break;
		free(*l);
		*l = NULL;
		sleep_us(CARD_RETRY_US);
	}
	/* Neither moved over the whole wait and still they differ: not a lag
	 * this wait can see the end of, but how NVML counts (or a lag longer
	 * than the wait): taken as the difference from now on, said once. */
	if (wait_ms && f1 == f2 && f1 == first_f && nf == first_nf) {
		drv_seen[k].offset = (int64_t)(nf - f1);
		say_lag(d, drv_seen[k].offset);
	}
	return LOOK_OLD;
}

/*
 * Takes the figures of d (pending: own_overhead), waiting at most wait_ms
 * for NVML to agree with the driver. 2 taken now, 1 another thread is
 * taking them, 0 NVML cannot tell yet.
 */
static int look(struct vr_dev *d, uint64_t pending, unsigned wait_ms)
{
	struct vr_card *c = &d->card;
	if (!vr_card_counts(d))
		return 0;
	int idle = 0;
	if (!atomic_compare_exchange_strong(&c->busy, &idle, 1))
		return 1;
	uint64_t held = vr_books_held(d);
	uint32_t stale = atomic_fetch_and(&c->flags, ~VR_CARD_STALE) & VR_CARD_STALE;
	struct vr_nvml_proc *l = NULL;
	unsigned n = 0;
	nvmlReturn_t rc;
	int up = NV_UNUSABLE;
	int how = take_list(d, wait_ms, &l, &n, &rc, &up);
	uint64_t t = now_ns();
	if (how == LOOK_NONE && up == NV_UNUSABLE) {
		char why[96];
		snprintf(why, sizeof why, "NVML: %s",
		         rc == NVML_ERROR_UNINITIALIZED ? "not available"
		                                        : "its process list failed");
		no_figures(d, why);
	} else if (how != LOOK_NONE) {
		const struct vr_nvml_proc *me = find(l, n, vr_nvml_host_pid(NULL));
		if (me && me->used == NVML_VALUE_NOT_AVAILABLE) {
			no_figures(d, "NVML gives no per-process figure");
		} else if (me) {
			c->absent_ns = 0;
			/* NVML's figure has the pages of the blocks freed since. */
			atomic_store(&drv_seen[d->ordinal].holes, 0);
			atomic_store(&drv_seen[d->ordinal].landed, 0);
			own_overhead(d, me->used, pending, t, how == LOOK_FRESH);
		} else if (vr_books_held(d)) {
			/* Not listed while holding memory: a new context NVML has
			 * not caught up with, or a PID it cannot map (containers). */
			if (!c->absent_ns)
				c->absent_ns = t;
			else if (t - c->absent_ns >= CARD_ABSENT_MS * MS)
				no_figures(d, "NVML does not list this process");
		}
		uint64_t charged;
		atomic_store(&c->extra, others(d, l, n, &charged));
		atomic_store(&c->others, charged);
		atomic_store(&c->seen_held, held > pending ? held - pending : 0);
		atomic_store_explicit(&c->seen_ns, t, memory_order_release);
	}
	/* A figure that may not show this process's last grant yet leaves
	 * the next look to be taken as well. */
	if (stale && how != LOOK_FRESH)
		atomic_fetch_or(&c->flags, VR_CARD_STALE);
	free(l);
	atomic_store(&c->busy, 0);
	return how == LOOK_NONE ? 0 : 2;
}

/* Are d's figures older than what this process's books show it did since
 * (pending, the grant being checked, left out), or than CARD_FRESH_MS
 * (other members' use), or (strict: a grant's check, a new context, new
 * limits) than a change NVML did not show at the last look? Memory queries
 * and refusals do not look again for that one within CARD_FRESH_MS, so
 * that a program that asks again and again under a lagging NVML does not
 * ask NVML each time. */
static int old_figures(struct vr_dev *d, uint64_t pending, int strict, const uint64_t *grant_free)
{
	struct vr_card *c = &d->card;
	int k = d->ordinal;
	uint64_t seen = atomic_load_explicit(&c->seen_ns, memory_order_acquire);
	uint64_t held = vr_books_held(d);
	if (!seen || atomic_load(&c->seen_held) != (held > pending ? held - pending : 0) ||
	    now_ns() - seen >= CARD_FRESH_MS * MS)
		return 1;
	if (strict && (atomic_load(&c->flags) & VR_CARD_STALE))
		return 1;
	if (!grant_free)
		return 0;
	/* A grant's check (grant_free: the driver's free memory now, or
	 * UINT64_MAX where it cannot be asked: then the age says): also when
	 * the driver changed since. Where it did not, the small blocks that
	 * landed since took no new page. */
	if (*grant_free != UINT64_MAX && *grant_free != atomic_load(&drv_seen[k].free))
		return 1;
	uint64_t b = atomic_exchange(&drv_seen[k].landed, 0), h = atomic_load(&drv_seen[k].holes);
	while (b && h && !atomic_compare_exchange_weak(&drv_seen[k].holes, &h, h > b ? h - b : 0))
		;
	return 0;
}

/* Looks when the figures are old (wait_ms: look), or waits a little for
 * the thread that is looking. 1 when d's figures can be used. */
static int refresh(struct vr_dev *d, uint64_t pending, unsigned wait_ms, const uint64_t *grant_free)
{
	/* Another thread's look may wait for NVML as long as this one would. */
	unsigned tries = (wait_ms + 100) * 10;
	for (unsigned i = 0; i < tries && old_figures(d, pending, wait_ms != 0, grant_free); i++) {
		int r = look(d, pending, wait_ms);
		if (r != 1)
			return r == 2;
		sleep_us(100); /* another thread is looking: its figures will do */
	}
	return atomic_load_explicit(&d->card.seen_ns, memory_order_relaxed) != 0;
}

/* The group's overhead on d as last seen: this process's, the other
 * members' charged, and what they hold and have not charged yet. */
static uint64_t group_overhead(struct vr_dev *d)
{
	return atomic_load(&d->card.overhead) + atomic_load(&d->card.others) +
	       atomic_load(&d->card.extra);
}

/* The card's figure for the group on d: its books plus the overhead other
 * members have not charged yet, and the pages this process's freed small
 * blocks left since the last look. */
static uint64_t card_figure(struct vr_dev *d)
{
	return vr_books_in_use(d) + atomic_load(&d->card.extra) +
	       atomic_load(&drv_seen[d->ordinal].holes);
}

void vr__card_freed(struct vr_dev *d, uint64_t bytes)
{
	int k = d->ordinal;
	atomic_fetch_sub(&d->card.seen_held, bytes);
	if (bytes <= VR_PAGE / 2) {
		atomic_fetch_add(&drv_seen[k].holes, bytes);
		return;
	}
	uint64_t f = atomic_load(&drv_seen[k].free);
	while (f != UINT64_MAX && !atomic_compare_exchange_weak(&drv_seen[k].free, &f, f + bytes))
		;
}

void vr__card_landed(void)
{
	struct vr_dev *d = vr__card_flight;
	vr__card_flight = NULL;
	atomic_fetch_sub(&d->card.small, 1);
	/* The card may hold a new page: the next check's look at the driver's
	 * free memory tells (old_figures); where it cannot, NVML is asked. */
	if (flight_bytes)
		atomic_fetch_add(&drv_seen[d->ordinal].landed, flight_bytes);
	else
		atomic_fetch_or(&d->card.flags, VR_CARD_STALE);
}

static void card_atfork_child(void)
{
	vr__card_flight = NULL;
}
VR_ATFORK_CHILD(card_atfork_child);

int vr_card_grant(struct vr_dev *d, uint64_t bytes, uint64_t total)
{
	if (!vr_card_counts(d))
		return 0;
	if (vr__card_flight) /* this thread's last one ended where nobody said */
		vr__card_landed();
	/* Figures as new as this process's last change (the books read again:
	 * its overhead may have moved), else the total the grant left, which
	 * counts this process's lanes' spare too (errs on the side of the
	 * cap). */
	uint64_t now_free;
	if (!driver_free(d, &now_free))
		now_free = UINT64_MAX;
	uint64_t card = refresh(d, bytes, CARD_WAIT_MS, &now_free)
	                    ? card_figure(d)
	                    : total + atomic_load_explicit(&d->card.extra, memory_order_relaxed);
	set_watch(d, total > card ? total : card);
	say_over(d, card, group_overhead(d));
	/* Near the cap, frees keep the figure (vr_card_freed). */
	uint64_t m = vr_card_margin(vr_dev_capped(d) ? d->cap : d->phys_total);
	if (vr_dev_capped(d) && card + m > d->cap)
		atomic_fetch_or(&d->card.flags, VR_CARD_NEAR);
	else
		atomic_fetch_and(&d->card.flags, ~VR_CARD_NEAR);
	/* Each grant of 1 MiB or less of this process's other threads that
	 * the driver has not answered yet may take a new page. */
	uint64_t slack = (uint64_t)atomic_load(&d->card.small) * VR_PAGE;
	if (vr_dev_capped(d) && (card > d->cap || slack > d->cap - card))
		return -1;
	if (bytes > VR_PAGE / 2) {
		/* Whole pages: the card takes what the books hold for it, so the
		 * figures stay as new as they were once the driver has it (a
		 * release if the driver refuses it moves the books, another
		 * figure of the driver's tells a change: looked at again). */
		atomic_fetch_add(&d->card.seen_held, bytes);
		uint64_t f = atomic_load(&drv_seen[d->ordinal].free);
		while (f != UINT64_MAX &&
		       !atomic_compare_exchange_weak(&drv_seen[d->ordinal].free, &f,
		                                     f > bytes ? f - bytes : 0))
			;
		return 0;
	}
	/* 1 MiB or less: carved from a page the process keeps, or a new one.
	 * Counted at its size (a hole: the figure counts it twice until it
	 * settles); a new page shows in the driver's free memory, which the
	 * next check compares (else, NVML is asked again). */
	atomic_fetch_add(&d->card.seen_held, bytes);
	if (now_free == UINT64_MAX)
		atomic_fetch_or(&d->card.flags, VR_CARD_STALE);
	atomic_fetch_add(&d->card.small, 1);
	vr__card_flight = d;
	flight_bytes = now_free == UINT64_MAX ? 0 : bytes;
	return 0;
}

int vr_card_before_refusal(struct vr_dev *d)
{
	uint64_t was = atomic_load(&d->card.overhead);
	if (!vr_card_counts(d) || !refresh(d, 0, 0, NULL))
		return 0;
	say_over(d, card_figure(d), group_overhead(d));
	return atomic_load(&d->card.overhead) < was;
}

uint64_t vr_card_use(struct vr_dev *d, uint64_t *overhead)
{
	if (overhead)
		*overhead = 0;
	if (!vr_card_counts(d))
		return vr_books_in_use(d);
	refresh(d, 0, 0, NULL);
	if (overhead)
		*overhead = group_overhead(d);
	return card_figure(d);
}

void vr_card_event(struct vr_dev *d)
{
	if (!d || !vr_card_counts(d))
		return;
	atomic_fetch_or(&d->card.flags, VR_CARD_STALE);
	if (!refresh(d, 0, CARD_WAIT_MS, NULL))
		return;
	uint64_t card = card_figure(d);
	set_watch(d, card);
	say_over(d, card, group_overhead(d));
}

/* NVML's figure for this process on d, or 0 (not listed, not known). */
static uint64_t listed_used(struct vr_dev *d)
{
	struct vr_nvml_proc *l = NULL;
	unsigned n = 0;
	nvmlReturn_t rc;
	uint64_t used = 0;
	if (vr_nvml_list(d->uuid_text, &l, &n, &rc) == NV_READY) {
		const struct vr_nvml_proc *me = find(l, n, vr_nvml_host_pid(NULL));
		if (me && me->used != NVML_VALUE_NOT_AVAILABLE)
			used = me->used;
	}
	free(l);
	return used;
}

uint64_t vr_card_listed(struct vr_dev *d)
{
	return d && vr_card_counts(d) && vr_dev_capped(d) ? listed_used(d) : 0;
}

int vr_card_context(struct vr_dev *d, uint64_t listed, uint64_t *was)
{
	char a[32], b[32], c[32];
	uint64_t f;
	*was = d ? atomic_load(&d->card.overhead) : 0;
	if (!d || !vr_card_counts(d) || !vr_dev_capped(d))
		return 0;
	/* NVML may show the new context late. Where the driver can be asked
	 * (the new context is current), the look waits until NVML agrees
	 * with it, however little the context took; else until NVML shows
	 * more than before, a bounded time. */
	int host_listable = 0;
	vr_nvml_host_pid(&host_listable);
	if (!driver_free(d, &f))
		for (int i = 0; i < CARD_WAIT_MS / 10 && host_listable && listed_used(d) <= listed;
		     i++)
			sleep_us(10000);
	atomic_fetch_or(&d->card.flags, VR_CARD_STALE);
	dry.on = 1;
	dry.seen = 0;
	refresh(d, 0, CARD_WAIT_MS, NULL);
	dry.on = 0;
	/* The overhead with the context (another thread's look may have
	 * charged it already), and the card's figure with it. */
	uint64_t cur = atomic_load(&d->card.overhead), own = dry.seen ? dry.want : cur;
	uint64_t card = card_figure(d) - cur + own;
	/* Spill is "slower, not dead": with it the context stays, over the
	 * cap, and what the program allocates past it goes to host memory. */
	int stays = vr_books_spill_budget() != 0;
	if (card <= d->cap || own <= *was || stays) {
		if (own != cur)
			charge_overhead(d, own);
		if (dry.seen)
			vr_rec_overhead(d, own, dry.booked + own);
		set_watch(d, card);
		if (card <= d->cap || own <= *was)
			return 0;
	}
	uint64_t cost = own - *was;
	int dg = vr_size_digits((uint64_t[]){cost, card, d->cap}, 3, 1);
	if (!stays) {
		/* A refusal like an allocation's: counted (the group's DENIED,
		 * the report, the trace), never held. */
		vr_books_denied(d, cost);
		vr_rec_context_refused(d, cost, card);
		atomic_store(&ctx_refused, d->ordinal + 1);
	}
	char with[96] = "";
	if (cost <= d->cap)
		snprintf(with, sizeof with, "; with it the group would hold %s",
		         vr_format_size_digits(card, dg, c, sizeof c));
	vr_log(stays ? VR_LOG_WARN : VR_LOG_ERROR,
	       "GPU %d: a new CUDA context of this process takes %s on the card%s, over its cap "
	       "(%s): %s",
	       d->ordinal, vr_format_size_digits(cost, dg, a, sizeof a), with,
	       vr_format_size_digits(d->cap, dg, b, sizeof b),
	       stays ? "with spill on it stays, and allocations go to host memory"
	             : "it is refused (CUDA_ERROR_OUT_OF_MEMORY; vramctl run --count allocations "
	               "caps only what the program allocates)");
	return stays ? 0 : -1;
}

void vr_card_context_gone(struct vr_dev *d, uint64_t was)
{
	charge_overhead(d, was);
	atomic_store(&d->card.seen_ns, 0); /* the next grant looks again */
}

int vr_card_refused_context(void)
{
	return atomic_load_explicit(&ctx_refused, memory_order_relaxed) - 1;
}
