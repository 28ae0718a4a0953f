/*
 * record.c - what a member hands to `vramctl run --report/--trace`: its
 * numbers per device, the trace ring, the call sites of its allocations and,
 * when its exit handlers run, the blocks it still holds (docs/report.md).
 *
 * Everything lives in one sealed memfd of fixed size (common/record.h),
 * mapped MAP_SHARED and handed to vramctl over its socket: a member killed
 * with SIGKILL leaves its numbers behind in the memory vramctl holds. Only atomics and a spinlock
 * for new call sites; nothing is ever malloc'ed, nothing blocks (the hand-over waits a second at
 * most), and a failure to make or hand over the record only means this member goes unrecorded (one
 * message).
 *
 * With neither flag the library never maps anything and every hook below is
 * one load and a branch (vr_rec == NULL).
 */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "hook/ptrmap.h"
#include "common/fsize.h"
#include "hook/record.h"
#include "registry/proc.h"
#include "registry/util.h"

struct vr_rec_hdr *_Atomic vr_rec;
static unsigned rec_flags;
static int rec_fd = -1;           /* kept to reserve the blocks' pages at exit */
static uint32_t leak_room;        /* blocks whose pages are reserved */
static uint64_t self_lo, self_hi; /* this library's text: frames to skip */

/* Sites already stored, by hash (index + 1; 0 empty). Private, never shared. */
#define SITE_TABLE 4096
static _Atomic uint16_t site_table[SITE_TABLE];

static inline uint64_t now_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t now_real(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define A(x)   ((_Atomic uint64_t *)&(x))
#define A32(x) ((_Atomic uint32_t *)&(x))

static unsigned parse_flags(const char *s)
{
	unsigned f = 0;
	while (*s) {
		size_t n = strcspn(s, ",");
		if (n == 6 && !strncmp(s, "report", 6))
			f |= VR_REC_F_REPORT;
		else if (n == 5 && !strncmp(s, "trace", 5))
			f |= VR_REC_F_TRACE;
		else if (n == 6 && !strncmp(s, "stacks", 6))
			f |= VR_REC_F_STACKS | VR_REC_F_REPORT;
		s += n;
		if (*s == ',')
			s++;
	}
	return f;
}

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	if ((uint64_t)info->dlpi_addr != (uint64_t)(uintptr_t)arg)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		if (p->p_type != PT_LOAD || !(p->p_flags & PF_X))
			continue;
		uint64_t lo = info->dlpi_addr + p->p_vaddr, hi = lo + p->p_memsz;
		if (!self_lo || lo < self_lo)
			self_lo = lo;
		if (hi > self_hi)
			self_hi = hi;
	}
	return 1;
}

/* In the constructor (the loader's lock is ours already there): glibc's
 * backtrace loads libgcc_s at its first call; do it now, never later under
 * one of our locks. Also learns our own text range, to skip our frames. */
void vr_rec_prime(void)
{
	if (!vr_g.record_dir[0] || !(parse_flags(vr_g.record_flags) & VR_REC_F_STACKS))
		return;
	void *buf[4];
	backtrace(buf, 4);
	Dl_info di;
	if (dladdr((void *)(uintptr_t)vr_rec_prime, &di) && di.dli_fbase)
		dl_iterate_phdr(find_self, di.dli_fbase);
}

/*
 * Makes this member's record: a memfd (never a file in a directory, which
 * anyone who can write there could truncate under the mapping: SIGBUS in
 * the program), sized once, sealed against shrinking and growing, and the
 * pages that will be written reserved now (memory that cannot be had then
 * fails here, not as SIGBUS at the first touch), then mapped. Returns the
 * mapping with its descriptor in *fdp, or NULL (said).
 */
static struct vr_rec_hdr *make_record(int *fdp)
{
	int fd = memfd_create("vramctl-record", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	int rc = fd < 0 ? -1 : ftruncate(fd, (off_t)VR_REC_SIZE);
	if (rc == 0)
		rc = fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	if (rc == 0)
		rc = fallocate(fd, 0, 0, VR_REC_OFF_SITES);
	if (rc == 0 && (rec_flags & VR_REC_F_STACKS))
		rc = fallocate(fd, 0, VR_REC_OFF_SITES, VR_REC_OFF_LEAKS - VR_REC_OFF_SITES);
	if (rc == 0 && (rec_flags & VR_REC_F_TRACE))
		rc = fallocate(fd, 0, VR_REC_OFF_RING, VR_REC_SIZE - VR_REC_OFF_RING);
	void *p = rc == 0 ? mmap(NULL, VR_REC_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
	                  : MAP_FAILED;
	if (p == MAP_FAILED) {
		vr_log(VR_LOG_ERROR,
		       "cannot make the run's record: %s; this process is left out of the report",
		       strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	*fdp = fd;
	return p;
}

/*
 * Sends the record's descriptor to `vramctl run` (the socket VR_REC_SOCKET
 * in the run's directory), which keeps it: the record stays readable after
 * this process ends, however it ends. vramctl reads its socket all the
 * time; a full queue is retried for at most a second, never longer (the
 * devices lock is held). Returns 0, or -1 (said).
 */
static int hand_over(int fd)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int dfd = -1;
	/* A path too long for an address goes through the directory's
	 * descriptor (/proc/self/fd/N/NAME), as vramctl bound it. */
	if (snprintf(a.sun_path, sizeof a.sun_path, "%s/%s", vr_g.record_dir, VR_REC_SOCKET) >=
	    (int)sizeof a.sun_path) {
		dfd = open(vr_g.record_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			goto fail;
		snprintf(a.sun_path, sizeof a.sun_path, "/proc/self/fd/%d/%s", dfd, VR_REC_SOCKET);
	}
	int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		if (dfd >= 0)
			close(dfd);
		goto fail;
	}
	int32_t pid = (int32_t)getpid();
	struct iovec iov = {.iov_base = &pid, .iov_len = sizeof pid};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof u);
	struct msghdr m = {.msg_name = &a,
	                   .msg_namelen = sizeof a,
	                   .msg_iov = &iov,
	                   .msg_iovlen = 1,
	                   .msg_control = u.buf,
	                   .msg_controllen = sizeof u.buf};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	ssize_t n = -1;
	for (int i = 0; i < 200; i++) {
		n = sendmsg(s, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n >= 0 || (errno != EAGAIN && errno != EINTR))
			break;
		const struct timespec pause = {0, 5 * 1000 * 1000};
		nanosleep(&pause, NULL);
	}
	int err = errno;
	close(s);
	if (dfd >= 0)
		close(dfd);
	errno = err;
	if (n >= 0)
		return 0;
fail:
	vr_log(VR_LOG_ERROR,
	       "cannot hand the run's record to vramctl (%s/%s): %s; this process is left "
	       "out of the report",
	       vr_g.record_dir, VR_REC_SOCKET, strerror(errno));
	return -1;
}

void vr_rec_open(void)
{
	if (vr_rec || !vr_g.record_dir[0])
		return;
	rec_flags = parse_flags(vr_g.record_flags);
	if (!rec_flags)
		return;
	/* A file size limit below the record's size would make ftruncate raise
	 * SIGXFSZ in the program: leave this process out instead. */
	if (vr_fsize_below(VR_REC_SIZE)) {
		vr_log(VR_LOG_ERROR,
		       "the file size limit (ulimit -f) is below the run's record (%llu bytes); "
		       "this process is left out of the report",
		       (unsigned long long)VR_REC_SIZE);
		return;
	}
	int fd = -1;
	struct vr_rec_hdr *h = make_record(&fd);
	if (!h)
		return;
	h->version = VR_REC_VERSION;
	h->hdr_size = VR_REC_HDR_SIZE;
	h->file_size = VR_REC_SIZE;
	h->pid = (int32_t)getpid();
	h->flags = rec_flags;
	h->growth = (uint32_t)vr_g.growth;
	h->start_mono_ns = now_mono();
	h->start_real_ns = now_real();
	vr_proc_start_time(NULL, 0, &h->proc_start);
	vr_proc_cmdline(NULL, 0, 0, h->command, sizeof h->command);
	h->interval = h->start_mono_ns / VR_REC_INTERVAL;
	atomic_store_explicit(A(h->magic), VR_REC_MAGIC, memory_order_release);
	if (hand_over(fd) < 0) {
		munmap(h, VR_REC_SIZE);
		close(fd);
		return;
	}
	rec_fd = fd;
	vr_rec = h;
}

/* Called for each device as it joins the books. */
void vr_rec_device(const struct vr_dev *d)
{
	if (!vr_rec || d->ordinal < 0 || d->ordinal >= VR_REC_DEVS)
		return;
	struct vr_rec_dev *r = &vr_rec->dev[d->ordinal];
	memcpy(r->uuid, d->uuid, sizeof r->uuid);
	r->cap = d->cap;
	atomic_store(A32(r->used), 1);
}

static inline struct vr_rec_dev *rdev(int ordinal)
{
	return ordinal >= 0 && ordinal < VR_REC_DEVS ? &vr_rec->dev[ordinal] : NULL;
}

/* ---- the trace ring --------------------------------------------------- */

/* Stores one record, or returns -1 when the CLI has not drained the ring. */
static int ring_put(struct vr_rec_hdr *h, int type, int dev, uint64_t t, uint64_t bytes,
                    uint64_t in_use, uint32_t count)
{
	uint64_t head = atomic_load_explicit(A(h->head), memory_order_relaxed);
	do {
		if (head - atomic_load_explicit(A(h->tail), memory_order_acquire) >= VR_REC_RING)
			return -1;
	} while (!atomic_compare_exchange_weak_explicit(
	    A(h->head), &head, head + 1, memory_order_relaxed, memory_order_relaxed));
	struct vr_rec_ev *e =
	    VR_REC_SECTION(h, VR_REC_OFF_RING, struct vr_rec_ev) + (head % VR_REC_RING);
	e->t_ns = t;
	e->bytes = bytes;
	e->in_use = in_use;
	e->count = count;
	e->type = (uint8_t)type;
	e->dev = (uint8_t)dev;
	e->kind = 0;
	atomic_store_explicit(A(e->seq), head + 1, memory_order_release);
	return 0;
}

/* Writes the sums folded so far as SUM records stamped t. The event that
 * ends an interval has already moved its device's in-use: `undo` (its
 * delta, on device `dev`) is taken back, so the sums carry the in-use as
 * their interval left it. */
static void flush_sums(struct vr_rec_hdr *h, uint64_t t, int dev, int64_t undo)
{
	for (int i = 0; i < VR_REC_DEVS; i++) {
		struct vr_rec_dev *r = &h->dev[i];
		if (!atomic_load_explicit(A32(r->used), memory_order_relaxed))
			continue;
		uint64_t in_use = atomic_load_explicit(A(r->in_use), memory_order_relaxed);
		if (i == dev)
			in_use -= (uint64_t)undo;
		uint64_t na = atomic_exchange(A(r->pend_allocs), 0);
		uint64_t ba = atomic_exchange(A(r->pend_alloc_bytes), 0);
		uint64_t mx = atomic_exchange(A(r->pend_max), 0);
		if ((na || ba) && ring_put(h, VR_EV_SUM_ALLOC, i, t, ba, mx > in_use ? mx : in_use,
		                           (uint32_t)na) != 0) {
			atomic_fetch_add(A(r->pend_allocs), na);
			atomic_fetch_add(A(r->pend_alloc_bytes), ba);
		}
		uint64_t nf = atomic_exchange(A(r->pend_frees), 0);
		uint64_t bf = atomic_exchange(A(r->pend_free_bytes), 0);
		if ((nf || bf) &&
		    ring_put(h, VR_EV_SUM_FREE, i, t, bf, in_use, (uint32_t)nf) != 0) {
			atomic_fetch_add(A(r->pend_frees), nf);
			atomic_fetch_add(A(r->pend_free_bytes), bf);
		}
	}
}

/* One event: single while under VR_REC_PER_INTERVAL in this interval and
 * the ring has room, else folded into the interval's sums. */
static void trace(int type, int dev, uint64_t bytes, uint64_t in_use, uint64_t t)
{
	struct vr_rec_hdr *h = vr_rec;
	uint64_t iv = t / VR_REC_INTERVAL;
	uint64_t cur = atomic_load_explicit(A(h->interval), memory_order_relaxed);
	int foldable = type == VR_EV_ALLOC || type == VR_EV_FREE;
	if (iv > cur && atomic_compare_exchange_strong(A(h->interval), &cur, iv)) {
		atomic_store(A(h->in_interval), 0);
		int64_t delta = type == VR_EV_ALLOC  ? (int64_t)bytes
		                : type == VR_EV_FREE ? -(int64_t)bytes
		                                     : 0;
		flush_sums(h, (cur + 1) * VR_REC_INTERVAL - 1, dev, delta);
	}
	if (foldable && atomic_fetch_add(A(h->in_interval), 1) >= VR_REC_PER_INTERVAL)
		goto fold;
	if (ring_put(h, type, dev, t, bytes, in_use, 1) == 0)
		return;
	atomic_fetch_add(A(h->ring_folded), 1);
	if (!foldable)
		return;
fold:;
	struct vr_rec_dev *r = &h->dev[dev];
	uint64_t mx = atomic_load_explicit(A(r->pend_max), memory_order_relaxed);
	while (in_use > mx && !atomic_compare_exchange_weak(A(r->pend_max), &mx, in_use))
		;
	if (type == VR_EV_ALLOC) {
		atomic_fetch_add(A(r->pend_allocs), 1);
		atomic_fetch_add(A(r->pend_alloc_bytes), bytes);
	} else {
		atomic_fetch_add(A(r->pend_frees), 1);
		atomic_fetch_add(A(r->pend_free_bytes), bytes);
	}
}

/* ---- the numbers ------------------------------------------------------ */

static void store_max(uint64_t *where, uint64_t v)
{
	uint64_t m = atomic_load_explicit(A(*where), memory_order_relaxed);
	while (v > m && !atomic_compare_exchange_weak(A(*where), &m, v))
		;
}

/* Raises *peak to v if v is higher, and then stamps *ns with t (read from
 * the clock when 0: only for a new peak). Returns t, or the clock it read,
 * so that a second peak raised by the same event reads it once. */
static uint64_t raise_peak(uint64_t *peak, uint64_t *ns, uint64_t v, uint64_t t)
{
	uint64_t p = atomic_load_explicit(A(*peak), memory_order_relaxed);
	while (v > p) {
		if (atomic_compare_exchange_weak(A(*peak), &p, v)) {
			if (!t)
				t = now_mono();
			atomic_store_explicit(A(*ns), t, memory_order_relaxed);
			break;
		}
	}
	return t;
}

void vr__rec_charge(const struct vr_dev *d, int64_t delta)
{
	struct vr_rec_dev *r = rdev(d->ordinal);
	if (!r || delta == 0)
		return;
	int tracing = (rec_flags & VR_REC_F_TRACE) != 0;
	/* The clock only for a new peak when not tracing. */
	uint64_t t = tracing ? now_mono() : 0, now;
	if (delta > 0) {
		now = atomic_fetch_add(A(r->in_use), (uint64_t)delta) + (uint64_t)delta;
		uint64_t tp = raise_peak(&r->peak, &r->peak_ns, now, t);
		/* On the card: the blocks plus the overhead as last measured (0
		 * until it is), so card_peak is never below peak. */
		uint64_t card = now + atomic_load_explicit(A(r->overhead), memory_order_relaxed);
		raise_peak(&r->card_peak, &r->card_peak_ns, card, tp);
		store_max(&r->need_peak,
		          card + atomic_load_explicit(A(r->spilled), memory_order_relaxed));
	} else {
		now = atomic_fetch_sub(A(r->in_use), (uint64_t)-delta) - (uint64_t)-delta;
	}
	if (tracing)
		trace(delta > 0 ? VR_EV_ALLOC : VR_EV_FREE, d->ordinal,
		      delta > 0 ? (uint64_t)delta : (uint64_t)-delta, now, t);
}

/* The overhead on d was measured (card.c, through vr_rec_overhead): kept
 * as it is now and at most, and `card` (blocks + overhead) raises the peak
 * on the card. The blocks charged later raise it too (vr__rec_charge). */
void vr__rec_overhead(const struct vr_dev *d, uint64_t overhead, uint64_t card)
{
	struct vr_rec_dev *r = rdev(d->ordinal);
	if (!r)
		return;
	uint64_t was = atomic_exchange_explicit(A(r->overhead), overhead, memory_order_relaxed);
	store_max(&r->overhead_peak, overhead);
	raise_peak(&r->card_peak, &r->card_peak_ns, card, 0);
	store_max(&r->need_peak, card + atomic_load_explicit(A(r->spilled), memory_order_relaxed));
	int first = !atomic_load_explicit(A32(r->card_known), memory_order_relaxed);
	atomic_store_explicit(A32(r->card_known), 1, memory_order_release);
	/* The trace's on-card counters: the overhead as it moves (not each
	 * look that finds it where it was). */
	if ((rec_flags & VR_REC_F_TRACE) && (first || was != overhead))
		trace(VR_EV_OVERHEAD, d->ordinal, overhead, card > overhead ? card - overhead : 0,
		      now_mono());
}

/* A refusal counted: every cause in denials and the trace's marker; the
 * cap's in denied_max and denied_need (what a larger cap would grant),
 * other groups' guarantees apart. */
static void denied(struct vr_rec_dev *r, int ordinal, uint64_t bytes, uint64_t need,
                   enum vr_rec_cause why)
{
	atomic_fetch_add(A(r->denials), 1);
	if (why == VR_DENY_GUARANTEE) {
		atomic_fetch_add(A(r->gt_denials), 1);
		store_max(&r->gt_denied_max, bytes);
	} else {
		store_max(&r->denied_max, bytes);
		store_max(&r->denied_need, need);
	}
	if (rec_flags & VR_REC_F_TRACE)
		trace(VR_EV_DENY, ordinal, bytes, atomic_load(A(r->in_use)), now_mono());
}

void vr__rec_denied(const struct vr_dev *d, uint64_t bytes, uint64_t group_in_use,
                    enum vr_rec_cause why)
{
	struct vr_rec_dev *r = rdev(d->ordinal);
	if (r)
		denied(r, d->ordinal, bytes,
		       group_in_use + bytes > group_in_use ? group_in_use + bytes : UINT64_MAX,
		       why);
}

void vr__rec_context_refused(const struct vr_dev *d, uint64_t cost, uint64_t card)
{
	struct vr_rec_dev *r = rdev(d->ordinal);
	if (!r)
		return;
	atomic_fetch_add(A(r->ctx_denials), 1);
	store_max(&r->ctx_denied_max, cost);
	denied(r, d->ordinal, cost, card, VR_DENY_CAP);
}

/* Spill (docs/report.md): the spill engine calls this once per block, with
 * the bytes it serves from host memory (+) or gives back (-). A spilled
 * block is one of the program's allocations and its release one of its
 * frees: counted as such, so that allocations - frees is what is still
 * held (never "5 allocations, 1 free", then 5 blocks at exit). */
void vr__rec_spilled(const struct vr_dev *d, int64_t delta)
{
	struct vr_rec_dev *r = rdev(d->ordinal);
	if (!r)
		return;
	atomic_fetch_add(delta > 0 ? A(r->allocs) : A(r->frees), 1);
	uint64_t now = atomic_fetch_add(A(r->spilled), (uint64_t)delta) + (uint64_t)delta;
	if (now >= (1ull << 63))
		return;
	store_max(&r->spilled_peak, now);
	if (delta > 0)
		store_max(&r->need_peak,
		          now + atomic_load(A(r->in_use)) + atomic_load(A(r->overhead)));
	if (rec_flags & VR_REC_F_TRACE)
		trace(delta > 0 ? VR_EV_SPILL : VR_EV_UNSPILL, d->ordinal,
		      delta > 0 ? (uint64_t)delta : (uint64_t)-delta, now, now_mono());
}

/* One event of its own, never folded (waits and parks are rare): with
 * its kind and its count (ms it took). */
static void trace_kind(int type, int dev, uint64_t bytes, uint64_t in_use, uint32_t ms, int kind)
{
	struct vr_rec_hdr *h = vr_rec;
	uint64_t head = atomic_load_explicit(A(h->head), memory_order_relaxed);
	do {
		if (head - atomic_load_explicit(A(h->tail), memory_order_acquire) >= VR_REC_RING) {
			atomic_fetch_add(A(h->ring_folded), 1);
			return;
		}
	} while (!atomic_compare_exchange_weak_explicit(
	    A(h->head), &head, head + 1, memory_order_relaxed, memory_order_relaxed));
	struct vr_rec_ev *e =
	    VR_REC_SECTION(h, VR_REC_OFF_RING, struct vr_rec_ev) + (head % VR_REC_RING);
	e->t_ns = now_mono();
	e->bytes = bytes;
	e->in_use = in_use;
	e->count = ms;
	e->type = (uint8_t)type;
	e->dev = (uint8_t)dev;
	e->kind = (uint8_t)kind;
	atomic_store_explicit(A(e->seq), head + 1, memory_order_release);
}

static uint32_t ms_of(uint64_t ns)
{
	uint64_t ms = ns / 1000000;
	return ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
}

void vr__rec_wait(const struct vr_dev *d, uint64_t bytes, uint64_t ns, int granted)
{
	struct vr_rec_dev *r = rdev(d->ordinal);
	if (!r)
		return;
	atomic_fetch_add(A(r->waits), 1);
	if (granted)
		atomic_fetch_add(A(r->waits_granted), 1);
	atomic_fetch_add(A(r->wait_ns), ns);
	store_max(&r->wait_ns_max, ns);
	if (rec_flags & VR_REC_F_TRACE)
		trace_kind(VR_EV_WAIT, d->ordinal, bytes, atomic_load(A(r->in_use)), ms_of(ns),
		           granted);
}

void vr__rec_park(const struct vr_dev *d, uint64_t bytes, uint64_t ns, int parked)
{
	struct vr_rec_dev *r = rdev(d->ordinal);
	if (!r)
		return;
	if (parked) {
		atomic_fetch_add(A(r->parks), 1);
		store_max(&r->parked_max, bytes);
	}
	if (rec_flags & VR_REC_F_TRACE)
		trace_kind(VR_EV_PARK, d->ordinal, bytes, atomic_load(A(r->in_use)), ms_of(ns),
		           parked);
}

void vr__rec_pinned(int64_t delta)
{
	uint64_t now = atomic_fetch_add(A(vr_rec->pinned), (uint64_t)delta) + (uint64_t)delta;
	uint64_t peak = atomic_load(A(vr_rec->pinned_peak));
	while (now > peak && now < (1ull << 63) &&
	       !atomic_compare_exchange_weak(A(vr_rec->pinned_peak), &peak, now))
		;
}

void vr__rec_freed(int ordinal)
{
	struct vr_rec_dev *r = rdev(ordinal);
	if (r)
		atomic_fetch_add(A(r->frees), 1);
}

/* ---- call sites ------------------------------------------------------- */

static uint16_t module_of(struct vr_rec_hdr *h, const Dl_info *di)
{
	struct vr_rec_module *mods = VR_REC_SECTION(h, VR_REC_OFF_MODULES, struct vr_rec_module);
	uint32_t n = h->nmodules;
	for (uint32_t i = 0; i < n; i++)
		if (mods[i].base == (uint64_t)(uintptr_t)di->dli_fbase)
			return (uint16_t)i;
	if (n >= VR_REC_MODULES)
		return 0xffff;
	mods[n].base = (uint64_t)(uintptr_t)di->dli_fbase;
	/* The main program is named as it was started (argv[0], maybe relative). */
	ssize_t k = -1;
	if (!di->dli_fname || di->dli_fname[0] != '/')
		k = readlink("/proc/self/exe", mods[n].path, sizeof mods[n].path - 1);
	if (k > 0)
		mods[n].path[k] = '\0';
	else
		snprintf(mods[n].path, sizeof mods[n].path, "%s",
		         di->dli_fname ? di->dli_fname : "?");
	atomic_store_explicit(A32(h->nmodules), n + 1, memory_order_release);
	return (uint16_t)n;
}

static uint32_t hash_pcs(void *const *pc, int n)
{
	uint64_t x = 1469598103934665603ull;
	for (int i = 0; i < n; i++)
		x = (x ^ (uint64_t)(uintptr_t)pc[i]) * 1099511628211ull;
	return (uint32_t)(x ^ (x >> 32));
}

static int same_site(const struct vr_rec_site *s, uint32_t hash, void *const *pc, int n)
{
	if (s->hash != hash || s->nframes != n)
		return 0;
	for (int i = 0; i < n; i++)
		if (s->pc[i] != (uint64_t)(uintptr_t)pc[i])
			return 0;
	return 1;
}

/* The site of the current allocation (index + 1), or 0. Our own frames at
 * the top are skipped; a site seen before costs a hash probe. */
static uint16_t capture_site(void)
{
	struct vr_rec_hdr *h = vr_rec;
	void *raw[VR_REC_FRAMES + 4];
	int n = backtrace(raw, (int)VR_ARRAY_LEN(raw)), skip = 0;
	/* Past the last of our frames near the top (a sanitizer's backtrace
	 * interceptor may sit above them). */
	for (int i = 0; i < n && i < 8; i++)
		if ((uint64_t)(uintptr_t)raw[i] >= self_lo && (uint64_t)(uintptr_t)raw[i] < self_hi)
			skip = i + 1;
	void **pc = raw + skip;
	n -= skip;
	if (n > VR_REC_FRAMES)
		n = VR_REC_FRAMES;
	if (n <= 0)
		return 0;
	struct vr_rec_site *sites = VR_REC_SECTION(h, VR_REC_OFF_SITES, struct vr_rec_site);
	uint32_t hash = hash_pcs(pc, n);
	for (uint32_t i = hash % SITE_TABLE, k = 0; k < SITE_TABLE; i = (i + 1) % SITE_TABLE, k++) {
		uint16_t v = atomic_load_explicit(&site_table[i], memory_order_acquire);
		if (!v)
			break;
		if (same_site(&sites[v - 1], hash, pc, n))
			return v;
	}
	/* New: learn the modules first (dladdr takes the loader's lock; never
	 * under ours), then add under the spinlock. */
	Dl_info di[VR_REC_FRAMES];
	int ok[VR_REC_FRAMES];
	for (int i = 0; i < n; i++)
		ok[i] = dladdr(pc[i], &di[i]) && di[i].dli_fbase;
	while (atomic_exchange_explicit(A32(h->site_lock), 1, memory_order_acquire))
		;
	uint16_t got = 0;
	uint32_t i = hash % SITE_TABLE;
	for (uint32_t k = 0; k < SITE_TABLE; i = (i + 1) % SITE_TABLE, k++) {
		uint16_t v = atomic_load_explicit(&site_table[i], memory_order_relaxed);
		if (!v)
			break;
		if (same_site(&sites[v - 1], hash, pc, n)) {
			got = v;
			break;
		}
	}
	if (!got && h->nsites < VR_REC_SITES && !site_table[i]) {
		struct vr_rec_site *s = &sites[h->nsites];
		s->hash = hash;
		s->nframes = (uint16_t)n;
		for (int f = 0; f < n; f++) {
			s->pc[f] = (uint64_t)(uintptr_t)pc[f];
			s->module[f] = ok[f] ? module_of(h, &di[f]) : 0xffff;
		}
		got = (uint16_t)(h->nsites + 1);
		atomic_store_explicit(A32(h->nsites), h->nsites + 1, memory_order_release);
		atomic_store_explicit(&site_table[i], got, memory_order_release);
	}
	atomic_store_explicit(A32(h->site_lock), 0, memory_order_release);
	return got;
}

uint16_t vr__rec_alloc(const struct vr_dev *d, uint64_t bytes)
{
	struct vr_rec_dev *r = d ? rdev(d->ordinal) : NULL;
	if (r) {
		uint64_t zero = 0;
		atomic_compare_exchange_strong(A(r->first_block), &zero, bytes);
		atomic_fetch_add(A(r->allocs), 1);
	}
	return (rec_flags & VR_REC_F_STACKS) ? capture_site() : 0;
}

/* ---- exit --------------------------------------------------------------- */

static void leak(void *arg, int kind, uint64_t key, int dev, uint64_t bytes, uint16_t site)
{
	struct vr_rec_hdr *h = arg;
	if (kind == VR_KIND_GRAPH) /* graphs' nodes: charged at instantiation */
		return;
	if (h->nleaks >= leak_room && h->nleaks < VR_REC_LEAKS) {
		/* Reserve the next pages of the list first (never a SIGBUS). */
		uint32_t more = VR_REC_LEAKS - leak_room < 4096 ? VR_REC_LEAKS - leak_room : 4096;
		if (fallocate(rec_fd, 0,
		              (off_t)(VR_REC_OFF_LEAKS + leak_room * sizeof(struct vr_rec_leak)),
		              (off_t)(more * sizeof(struct vr_rec_leak))) == 0)
			leak_room += more;
	}
	if (h->nleaks >= leak_room) {
		h->leaks_more_bytes += bytes;
		h->leaks_more_count++;
		return;
	}
	struct vr_rec_leak *l = VR_REC_SECTION(h, VR_REC_OFF_LEAKS, struct vr_rec_leak) + h->nleaks;
	*l = (struct vr_rec_leak){
	    .key = key, .bytes = bytes, .dev = dev, .site = site, .kind = (uint8_t)kind};
	h->nleaks++;
}

static int find_frameworks(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uint32_t *fw = arg;
	const char *n = info->dlpi_name;
	if (!n || !*n)
		return 0;
	if (strstr(n, "libc10_cuda") || strstr(n, "libtorch_cuda"))
		*fw |= VR_FW_TORCH;
	if (strstr(n, "libtensorflow") || strstr(n, "_pywrap_tensorflow"))
		*fw |= VR_FW_TF;
	if (strstr(n, "xla_extension") || strstr(n, "jaxlib"))
		*fw |= VR_FW_JAX;
	if (strstr(n, "cupy"))
		*fw |= VR_FW_CUPY;
	return 0;
}

/* When exit handlers run: the blocks still held, the frameworks loaded, the
 * sums not yet written. A member killed by a signal never gets here: its
 * record then says so (end == VR_REC_RUNNING). */
__attribute__((destructor)) static void rec_fini(void)
{
	struct vr_rec_hdr *h = vr_rec;
	if (!h)
		return;
	uint32_t fw = 0;
	dl_iterate_phdr(find_frameworks, &fw);
	h->frameworks = fw;
	vr_map_walk(leak, h);
	if (rec_flags & VR_REC_F_TRACE)
		flush_sums(h, now_mono(), -1, 0);
	h->end_mono_ns = now_mono();
	atomic_store_explicit(A32(h->end), VR_REC_EXITED, memory_order_release);
}

/* In a child after fork: the parent's record is not ours; the child makes
 * its own when it joins. The site table is filled only into a record, so
 * a parent that had none left it empty: then it is not written at all (a
 * shell or launcher that forks often would pay a copied page and 4,096
 * stores in every child). The child has one thread: plain stores do. */
static void rec_atfork_child(void)
{
	if (rec_fd >= 0)
		close(rec_fd);
	rec_fd = -1;
	leak_room = 0;
	if (!vr_rec)
		return;
	munmap(vr_rec, VR_REC_SIZE);
	vr_rec = NULL;
	for (int i = 0; i < SITE_TABLE; i++)
		atomic_store_explicit(&site_table[i], 0, memory_order_relaxed);
}
VR_ATFORK_CHILD(rec_atfork_child);
