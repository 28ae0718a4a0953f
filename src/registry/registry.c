/*
 * registry.c - joining a group's region, and the books every allocation goes
 * through. See region.h for the layout and docs/architecture.md, "The shared registry" for why.
 *
 * Locking: one robust process-shared mutex per region, held for a few loads
 * and stores only (never across a system call on the hot path, never across
 * a driver call). Liveness: each member holds an OFD write lock on one byte
 * of its slot for its whole life; the kernel drops it when the last
 * descriptor of that open file goes away, i.e. at death, at exec (O_CLOEXEC)
 * or at vr_leave. A USED slot whose byte nobody holds belongs to a dead
 * process and is reclaimed. PIDs are only recorded for display.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/compiler.h"
#include "registry/region.h"
#include "registry/registry.h"
#include "registry/util.h"

struct vr_member {
	struct vr_region_hdr *hdr;
	struct vr_slot *slot;
	int fd;
	dev_t st_dev; /* the region file, to know our fd is still ours */
	ino_t st_ino;
	uint32_t slot_idx;
	uint64_t incarnation;
	_Atomic uint64_t max_wait_ns;
};

/* Test-only: VRAMCTL_TEST_STOP_IN_LOCK=N stops the process (SIGSTOP) inside
 * its Nth locked write section, holding the mutex with the books half open
 * (seqlock odd). Read once at the first join. */
static _Atomic long stop_in_lock_countdown;
static pthread_once_t test_env_once = PTHREAD_ONCE_INIT;

static void read_test_env(void)
{
	const char *s = getenv("VRAMCTL_TEST_STOP_IN_LOCK");
	if (s && *s) {
		long n = strtol(s, NULL, 10);
		if (n > 0)
			atomic_store(&stop_in_lock_countdown, n);
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Fields that reclaim_dead() reads without the mutex (slots_hw, a slot's
 * state and incarnation) are written with atomic stores, under the mutex. */
#define STORE32(p, v) atomic_store_explicit((_Atomic uint32_t *)(p), (v), memory_order_release)
#define STORE64(p, v) atomic_store_explicit((_Atomic uint64_t *)(p), (v), memory_order_release)

/* ---- seqlock: readers without the mutex see whether they raced a writer */

static inline void books_begin(struct vr_region_hdr *h)
{
	uint64_t s = atomic_load_explicit((_Atomic uint64_t *)&h->seq, memory_order_relaxed);
	atomic_store_explicit((_Atomic uint64_t *)&h->seq, s + 1, memory_order_relaxed);
	/* Later stores must not pass this one. x86 never reorders stores, so a
	 * compiler barrier is enough there (and TSan rejects thread fences). */
#if defined(__x86_64__) || defined(__i386__)
	atomic_signal_fence(memory_order_seq_cst);
#else
	atomic_thread_fence(memory_order_release);
#endif
	/* Test-only: stop here, mutex held and the books open (seq odd). */
	if (VR_UNLIKELY(atomic_load_explicit(&stop_in_lock_countdown, memory_order_relaxed) > 0) &&
	    atomic_fetch_sub(&stop_in_lock_countdown, 1) == 1)
		raise(SIGSTOP);
}

static inline void books_end(struct vr_region_hdr *h)
{
	uint64_t s = atomic_load_explicit((_Atomic uint64_t *)&h->seq, memory_order_relaxed);
	atomic_store_explicit((_Atomic uint64_t *)&h->seq, s + 1, memory_order_release);
}

/* Recomputes what a writer that died holding the mutex may have left half
 * done: the per-device totals (from the slots, which each writer updates
 * with single stores) and the seqlock parity. Called with the mutex held. */
static void region_recover(struct vr_region_hdr *h)
{
	uint32_t hw = h->slots_hw < h->slot_count ? h->slots_hw : h->slot_count;
	uint32_t ndev = h->ndev < VR_MAX_DEVICES ? h->ndev : VR_MAX_DEVICES;
	h->ndev = ndev;
	STORE32(&h->slots_hw, hw);
	uint64_t seq = atomic_load_explicit((_Atomic uint64_t *)&h->seq, memory_order_relaxed);
	if (seq & 1)
		STORE64(&h->seq, seq + 1);
	books_begin(h);
	for (uint32_t d = 0; d < ndev; d++) {
		uint64_t sum = 0;
		for (uint32_t i = 0; i < hw; i++) {
			struct vr_slot *s = vr_region_slot(h, i);
			if (s->state == VR_SLOT_USED)
				sum += s->dev[d].in_use;
		}
		h->dev[d].in_use = sum;
		if (h->dev[d].peak < sum)
			h->dev[d].peak = sum;
	}
	books_end(h);
}

#define VR_LOCK_SLICE_NS 10000000 /* 10 ms */

#if defined(__SANITIZE_THREAD__)
#define VR_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define VR_TSAN 1
#endif
#endif
#ifndef VR_TSAN
#define VR_TSAN 0
#endif

static int region_lock(vr_member *m)
{
	pthread_mutex_t *mx = &m->hdr->lock.mutex;
	int rc = pthread_mutex_trylock(mx);
	if (VR_UNLIKELY(rc == EBUSY)) {
		/* Wait in slices, never once for good: the kernel wakes one
		 * waiter when a holder dies, and if that waiter is killed too
		 * before it takes the lock, the wake-up is lost with it. A
		 * waiter whose slice runs out looks at the lock word again and
		 * takes an abandoned lock itself. */
		uint64_t t0 = now_ns();
#if VR_TSAN
		/* TSan's timedlock interceptor does not count EOWNERDEAD as
		 * locked; TSan builds wait in one piece. */
		rc = pthread_mutex_lock(mx);
#else
		do {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += VR_LOCK_SLICE_NS;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			rc = pthread_mutex_timedlock(mx, &ts);
		} while (rc == ETIMEDOUT);
#endif
		uint64_t w = now_ns() - t0;
		uint64_t old = atomic_load_explicit(&m->max_wait_ns, memory_order_relaxed);
		while (w > old && !atomic_compare_exchange_weak(&m->max_wait_ns, &old, w))
			;
	}
	if (VR_UNLIKELY(rc == EOWNERDEAD)) {
		pthread_mutex_consistent(mx);
		region_recover(m->hdr);
		rc = 0;
	}
	if (VR_UNLIKELY(rc != 0))
		return -rc;
	return 0;
}

static inline void region_unlock(vr_member *m)
{
	pthread_mutex_unlock(&m->hdr->lock.mutex);
}

/* ---- liveness */

/* 1 if some open file description other than ours holds slot i's byte, 0 if
 * none does (its owner is gone), negative errno on error. */
static int slot_alive(int fd, uint32_t i)
{
	struct flock fl = {
	    .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = vr_slot_live_byte(i), .l_len = 1};
	if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
		return -errno;
	return fl.l_type != F_UNLCK;
}

/* Returns a dead slot's bytes to the group and frees it. Mutex held. */
static void slot_reclaim_locked(struct vr_region_hdr *h, struct vr_slot *s)
{
	uint32_t ndev = h->ndev;
	for (uint32_t d = 0; d < ndev; d++) {
		uint64_t b = s->dev[d].in_use;
		h->dev[d].in_use -= b < h->dev[d].in_use ? b : h->dev[d].in_use;
	}
	STORE32(&s->state, VR_SLOT_FREE);
	STORE64(&s->incarnation, s->incarnation + 1);
}

/*
 * Reclaims the slots of dead members. The liveness probes (system calls)
 * run without the mutex; a slot seen USED and unheld with incarnation X is
 * reclaimed under the mutex only if it is still USED with incarnation X: a
 * member takes its lock before it marks the slot USED and marks it FREE
 * before it drops the lock, so "USED, unheld, same incarnation" can only
 * mean its owner died. Returns the number of slots reclaimed.
 */
static int reclaim_dead(vr_member *m)
{
	struct vr_region_hdr *h = m->hdr;
	uint32_t hw = atomic_load_explicit((_Atomic uint32_t *)&h->slots_hw, memory_order_acquire);
	if (hw > h->slot_count)
		hw = h->slot_count;
	int total = 0;
	uint32_t i = 0;
	while (i < hw) {
		struct {
			uint32_t idx;
			uint64_t inc;
		} cand[32];
		int n = 0;
		for (; i < hw && n < (int)VR_ARRAY_LEN(cand); i++) {
			if (i == m->slot_idx)
				continue;
			struct vr_slot *s = vr_region_slot(h, i);
			uint64_t inc = atomic_load_explicit((_Atomic uint64_t *)&s->incarnation,
			                                    memory_order_acquire);
			if (atomic_load_explicit((_Atomic uint32_t *)&s->state,
			                         memory_order_acquire) != VR_SLOT_USED)
				continue;
			if (slot_alive(m->fd, i) == 0) {
				cand[n].idx = i;
				cand[n].inc = inc;
				n++;
			}
		}
		if (n == 0)
			continue;
		if (region_lock(m) != 0)
			return total;
		books_begin(h);
		for (int k = 0; k < n; k++) {
			struct vr_slot *s = vr_region_slot(h, cand[k].idx);
			if (s->state == VR_SLOT_USED && s->incarnation == cand[k].inc) {
				slot_reclaim_locked(h, s);
				total++;
			}
		}
		books_end(h);
		region_unlock(m);
	}
	return total;
}

int vr_reclaim(vr_member *m)
{
	if (!m)
		return -EINVAL;
	return reclaim_dead(m);
}

/* ---- opening and creating regions */

/* Opens (creating if missing) the registry directory and checks that it is
 * ours and private. Returns a directory fd or a negative errno. */
static int open_registry_dir(const char *dir, int create, char *err, size_t errlen)
{
	int created = 0;
	if (create && mkdir(dir, 0700) == 0)
		created = 1;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		int e = errno;
		struct stat lst;
		if ((e == ELOOP || e == ENOTDIR) && lstat(dir, &lst) == 0 && S_ISLNK(lst.st_mode)) {
			vr_seterr(err, errlen, "registry directory %s is a symlink: refusing", dir);
			return -ELOOP;
		}
		if (e == ENOTDIR)
			vr_seterr(err, errlen, "registry directory %s is not a directory", dir);
		else
			vr_seterr(err, errlen, "cannot open registry directory %s: %s", dir,
			        strerror(e));
		return -e;
	}
	struct stat st;
	if (fstat(dfd, &st) < 0) {
		int e = errno;
		close(dfd);
		vr_seterr(err, errlen, "cannot stat registry directory %s: %s", dir, strerror(e));
		return -e;
	}
	/* mkdir's mode went through the host's umask; set it exactly instead of
	 * touching the umask. */
	if (created && (st.st_mode & 07777) != 0700 && st.st_uid == geteuid()) {
		if (fchmod(dfd, 0700) == 0)
			st.st_mode = (st.st_mode & ~07777u) | 0700;
	}
	if (st.st_uid != geteuid()) {
		close(dfd);
		vr_seterr(err, errlen,
		        "registry directory %s is owned by uid %u, not by uid %u: refusing", dir,
		        (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (st.st_mode & 022) {
		close(dfd);
		vr_seterr(err, errlen,
		        "registry directory %s is group or world writable (mode %04o): refusing",
		        dir, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return dfd;
}

int vr_group_name_ok(const char *g)
{
	size_t n = 0;
	if (!g || !*g || g[0] == '.')
		return 0;
	for (; g[n]; n++) {
		char c = g[n];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return 0;
		if (n >= VR_GROUP_MAX)
			return 0;
	}
	return 1;
}

int vr_region_check(const struct vr_region_hdr *h, uint64_t file_size, const char **why)
{
	if (file_size < sizeof(*h)) {
		*why = "truncated (shorter than a region header)";
		return -EBADMSG;
	}
	if (h->magic != VR_REGION_MAGIC) {
		*why = "not a vramctl region (bad magic)";
		return -EBADMSG;
	}
	if (h->version != VR_REGION_VERSION) {
		*why = "written by another vramctl version (region version differs)";
		return -EPROTONOSUPPORT;
	}
	if (h->hdr_size != VR_REGION_HDR_SIZE || h->slot_size != sizeof(struct vr_slot) ||
	    h->slot_count != VR_REGION_SLOTS || h->total_size != VR_REGION_SIZE) {
		*why = "corrupt (sizes in the header do not match this version)";
		return -EBADMSG;
	}
	if (file_size < h->total_size) {
		*why = "truncated";
		return -EBADMSG;
	}
	if (h->ndev > VR_MAX_DEVICES || h->slots_hw > h->slot_count) {
		*why = "corrupt (counts out of range)";
		return -EBADMSG;
	}
	return 0;
}

/*
 * Opens an existing region for writing, never following a symlink and never
 * opening another user's file for writing: it is first opened read-only,
 * checked, then reopened read-write and checked to be the same file.
 * Returns an fd, -ENOENT if there is none, or another negative errno.
 */
static int open_region(int dfd, const char *dir, const char *group, const char *name, char *err,
                       size_t errlen)
{
	int ro = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (ro < 0) {
		int e = errno;
		if (e == ENOENT)
			return -ENOENT;
		if (e == ELOOP)
			vr_seterr(err, errlen, "region %s/%s is a symlink: refusing", dir, name);
		else
			vr_seterr(err, errlen, "cannot open region %s/%s: %s", dir, name,
			        strerror(e));
		return -e;
	}
	struct stat st;
	int rc = 0;
	const char *why = NULL;
	struct vr_region_hdr hdr;
	memset(&st, 0, sizeof(st));
	if (fstat(ro, &st) < 0) {
		rc = -errno;
		why = "cannot stat";
	} else if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		why = "not a regular file";
	} else if (st.st_uid != geteuid()) {
		rc = -EPERM;
		why = "owned by another user";
	} else if (st.st_mode & 077) {
		rc = -EPERM;
		why = "readable or writable by others (mode is not 0600)";
	} else {
		ssize_t got = pread(ro, &hdr, sizeof(hdr), 0);
		if (got < 0) {
			rc = -errno;
			why = "cannot read";
		} else {
			uint64_t size = (uint64_t)st.st_size;
			if ((size_t)got < sizeof(hdr))
				size = (uint64_t)got;
			rc = vr_region_check(&hdr, size, &why);
			if (rc == 0 && (memchr(hdr.group, '\0', sizeof(hdr.group)) == NULL ||
			                strcmp(hdr.group, group) != 0)) {
				rc = -EBADMSG;
				why = "corrupt (it names another group)";
			}
		}
	}
	if (rc != 0) {
		close(ro);
		if (rc == -EPERM && st.st_uid != geteuid())
			vr_seterr(err, errlen,
			        "region %s/%s is owned by uid %u, not uid %u: refusing", dir, name,
			        (unsigned)st.st_uid, (unsigned)geteuid());
		else
			vr_seterr(err, errlen, "region %s/%s: %s; remove it to start afresh", dir,
			        name, why);
		return rc;
	}
	int rw = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	struct stat st2;
	if (rw < 0 || fstat(rw, &st2) < 0 || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino ||
	    st2.st_size < st.st_size) {
		int e = rw < 0 ? errno : EAGAIN;
		if (rw >= 0)
			close(rw);
		close(ro);
		vr_seterr(err, errlen, "region %s/%s changed while being opened", dir, name);
		return -e;
	}
	close(ro);
	return rw;
}

static void init_header(struct vr_region_hdr *h, const struct vr_join_opts *o)
{
	h->version = VR_REGION_VERSION;
	h->hdr_size = VR_REGION_HDR_SIZE;
	h->total_size = VR_REGION_SIZE;
	h->slot_count = VR_REGION_SLOTS;
	h->slot_size = sizeof(struct vr_slot);
	h->owner_uid = (uint32_t)geteuid();
	h->created = (uint64_t)time(NULL);
	h->growth = o->growth ? 1 : 0;
	vr_strlcpy(h->group, o->group, sizeof(h->group));
	vr_strlcpy(h->limit_spec, o->limit_spec ? o->limit_spec : "", sizeof(h->limit_spec));
}

/*
 * Creates the region under a temporary name and links it into place only
 * when complete. Returns an fd, -EEXIST if another process published the
 * region first, or another negative errno.
 */
static int create_region(int dfd, const char *dir, const char *name, const struct vr_join_opts *o,
                         char *err, size_t errlen)
{
	static _Atomic unsigned counter;
	char tmp[128];
	snprintf(tmp, sizeof(tmp), ".%s.%ld.%u.tmp", o->group, (long)getpid(),
	         atomic_fetch_add(&counter, 1));
	int fd =
	    openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0) {
		int e = errno;
		vr_seterr(err, errlen, "cannot create region in %s: %s", dir, strerror(e));
		return -e;
	}
	int rc = 0;
	void *map = MAP_FAILED;
	if (fchmod(fd, 0600) < 0 || ftruncate(fd, (off_t)VR_REGION_SIZE) < 0) {
		rc = -errno;
		goto fail;
	}
	map = mmap(NULL, VR_REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		rc = -errno;
		goto fail;
	}
	struct vr_region_hdr *h = map;
	init_header(h, o);
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	int e = pthread_mutex_init(&h->lock.mutex, &a);
	pthread_mutexattr_destroy(&a);
	if (e != 0) {
		rc = -e;
		goto fail;
	}
	atomic_store_explicit((_Atomic uint64_t *)&h->magic, VR_REGION_MAGIC, memory_order_release);
	munmap(map, VR_REGION_SIZE);
	map = MAP_FAILED;
	if (linkat(dfd, tmp, dfd, name, 0) < 0) {
		rc = -errno;
		unlinkat(dfd, tmp, 0);
		close(fd);
		if (rc != -EEXIST)
			vr_seterr(err, errlen, "cannot publish region %s/%s: %s", dir, name,
			        strerror(-rc));
		return rc;
	}
	unlinkat(dfd, tmp, 0);
	return fd;
fail:
	vr_seterr(err, errlen, "cannot create region %s/%s: %s", dir, name, strerror(-rc));
	if (map != MAP_FAILED)
		munmap(map, VR_REGION_SIZE);
	unlinkat(dfd, tmp, 0);
	close(fd);
	return rc;
}

/* ---- this process's identity, recorded in its slot for display */

struct proc_info {
	uint64_t start_time;
	int32_t nspid_outer;
	char command[VR_COMMAND_MAX];
};

static void read_proc_info(struct proc_info *p)
{
	char buf[1024];
	memset(p, 0, sizeof(*p));
	ssize_t n = vr_read_file("/proc/self/stat", buf, sizeof(buf));
	if (n > 0)
		p->start_time = vr_stat_start_time(buf);
	n = vr_read_file("/proc/self/cmdline", p->command, sizeof(p->command));
	if (n > 0) {
		for (ssize_t i = 0; i < n - 1; i++)
			if (p->command[i] == '\0')
				p->command[i] = ' ';
		p->command[sizeof(p->command) - 1] = '\0';
	}
	char status[4096];
	n = vr_read_file("/proc/self/status", status, sizeof(status));
	if (n > 0) {
		const char *l = strstr(status, "\nNSpid:");
		if (l)
			p->nspid_outer = (int32_t)strtol(l + 7, NULL, 10);
	}
}

/* ---- join and leave */

/* Takes a free (or dead) slot: its liveness byte is ours once F_OFD_SETLK
 * succeeds, since no live member holds it. Returns the index or -errno. */
static int claim_slot(int fd, struct vr_region_hdr *h)
{
	uint32_t n = h->slot_count;
	uint32_t start = atomic_fetch_add((_Atomic uint32_t *)&h->slot_hint, 1) % n;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = (start + k) % n;
		struct flock fl = {.l_type = F_WRLCK,
		                   .l_whence = SEEK_SET,
		                   .l_start = vr_slot_live_byte(i),
		                   .l_len = 1};
		if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
			return (int)i;
		if (errno != EAGAIN && errno != EACCES)
			return -errno;
	}
	return -EUSERS;
}

int vr_join(const struct vr_join_opts *opts, vr_member **out, int *spec_differs, char *err,
            size_t errlen)
{
	char dirbuf[PATH_MAX];
	char name[VR_GROUP_MAX + 8];
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (spec_differs)
		*spec_differs = 0;
	if (!opts || !out) {
		vr_seterr(err, errlen, "vr_join: missing arguments");
		return -EINVAL;
	}
	if (!vr_group_name_ok(opts->group)) {
		vr_seterr(err, errlen,
		        "bad group name '%.80s': use 1 to 64 of A-Z a-z 0-9 . _ -, not starting "
		        "with '.'",
		        opts->group ? opts->group : "(null)");
		return -EINVAL;
	}
	pthread_once(&test_env_once, read_test_env);
	const char *dir = opts->dir;
	rc = vr_dir_or_default(&dir, dirbuf, sizeof(dirbuf));
	if (rc < 0) {
		vr_seterr(err, errlen, "registry directory path too long");
		return rc;
	}
	snprintf(name, sizeof(name), "%s.vrg", opts->group);

	int dfd = open_registry_dir(dir, 1, err, errlen);
	if (dfd < 0)
		return dfd;
	int fd = -1;
	for (int attempt = 0; attempt < 8 && fd < 0; attempt++) {
		fd = open_region(dfd, dir, opts->group, name, err, errlen);
		if (fd == -ENOENT)
			fd = create_region(dfd, dir, name, opts, err, errlen);
		if (fd < 0 && fd != -EEXIST && fd != -ENOENT)
			break;
	}
	close(dfd);
	if (fd < 0) {
		if (fd == -EEXIST || fd == -ENOENT)
			vr_seterr(err, errlen, "region %s/%s keeps changing while being opened", dir,
			        name);
		return fd;
	}

	void *map = mmap(NULL, VR_REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		rc = -errno;
		vr_seterr(err, errlen, "cannot map region %s/%s: %s", dir, name, strerror(-rc));
		close(fd);
		return rc;
	}
	vr_member *m = calloc(1, sizeof(*m));
	if (!m) {
		munmap(map, VR_REGION_SIZE);
		close(fd);
		vr_seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	m->hdr = map;
	m->fd = fd;
	struct stat mst;
	if (fstat(fd, &mst) == 0) {
		m->st_dev = mst.st_dev;
		m->st_ino = mst.st_ino;
	}
	struct vr_region_hdr *h = m->hdr;

	struct proc_info pi;
	read_proc_info(&pi);

	rc = claim_slot(fd, h);
	if (rc < 0) {
		if (rc == -EUSERS)
			vr_seterr(err, errlen, "group %s is full (%u members)", opts->group,
			        VR_REGION_SLOTS);
		else
			vr_seterr(err, errlen, "cannot lock a slot in %s/%s: %s", dir, name,
			        strerror(-rc));
		goto fail;
	}
	m->slot_idx = (uint32_t)rc;
	m->slot = vr_region_slot(h, m->slot_idx);
	/* Best effort: a classic POSIX lock tells readers our PID in their own
	 * namespace. Liveness never depends on it. */
	struct flock pl = {.l_type = F_WRLCK,
	                   .l_whence = SEEK_SET,
	                   .l_start = vr_slot_pid_byte(m->slot_idx),
	                   .l_len = 1};
	(void)fcntl(fd, F_SETLK, &pl);

	rc = region_lock(m);
	if (rc < 0) {
		vr_seterr(err, errlen, "cannot lock region %s/%s: %s", dir, name, strerror(-rc));
		goto fail;
	}
	books_begin(h);
	struct vr_slot *s = m->slot;
	if (s->state == VR_SLOT_USED) /* we hold its byte: its owner is gone */
		slot_reclaim_locked(h, s);
	/* Is anybody else alive? Dead members met on the way are reclaimed. */
	int live_other = 0;
	for (uint32_t i = 0; i < h->slots_hw && !live_other; i++) {
		struct vr_slot *o = vr_region_slot(h, i);
		if (i == m->slot_idx || o->state != VR_SLOT_USED)
			continue;
		int a = slot_alive(fd, i);
		if (a == 0)
			slot_reclaim_locked(h, o);
		else
			live_other = 1; /* alive, or cannot tell: assume alive */
	}
	if (live_other && opts->fresh) {
		books_end(h);
		region_unlock(m);
		vr_seterr(err, errlen,
		        "group %s is in use by a live process; a new run needs a new name",
		        opts->group);
		rc = -EEXIST;
		goto fail;
	}
	if (!live_other) {
		/* A group lives as long as it has live members: whoever finds it
		 * empty starts it afresh, so an earlier run's caps never apply. */
		h->ndev = 0;
		memset(h->dev, 0, sizeof(h->dev));
		h->growth = opts->growth ? 1 : 0;
		h->created = (uint64_t)time(NULL);
		vr_strlcpy(h->limit_spec, opts->limit_spec ? opts->limit_spec : "",
		           sizeof(h->limit_spec));
		h->epoch++;
	} else if (spec_differs) {
		char mine[VR_SPEC_MAX]; /* compared as stored: truncated alike */
		vr_strlcpy(mine, opts->limit_spec ? opts->limit_spec : "", sizeof(mine));
		*spec_differs = strcmp(h->limit_spec, mine) != 0;
	}
	uint64_t inc = s->incarnation + 1;
	STORE64(&s->incarnation, inc);
	/* Everything but state and incarnation, which others read unlocked. */
	memset((char *)s + offsetof(struct vr_slot, pid), 0,
	       offsetof(struct vr_slot, incarnation) - offsetof(struct vr_slot, pid));
	memset((char *)s + offsetof(struct vr_slot, start_time), 0,
	       sizeof(*s) - offsetof(struct vr_slot, start_time));
	s->pid = (int32_t)getpid();
	s->start_time = pi.start_time;
	s->nspid_outer = pi.nspid_outer;
	s->uid = (uint32_t)getuid();
	s->joined = (uint64_t)time(NULL);
	s->growth = opts->growth ? 1 : 0;
	memcpy(s->command, pi.command, sizeof(s->command));
	atomic_store_explicit((_Atomic uint32_t *)&s->state, VR_SLOT_USED, memory_order_release);
	if (h->slots_hw <= m->slot_idx)
		atomic_store_explicit((_Atomic uint32_t *)&h->slots_hw, m->slot_idx + 1,
		                      memory_order_release);
	m->incarnation = inc;
	books_end(h);
	region_unlock(m);
	*out = m;
	return 0;
fail:
	munmap(map, VR_REGION_SIZE);
	close(fd); /* drops our slot's locks */
	free(m);
	return rc;
}

/* 1 if m->fd is still our descriptor: the program may have closed it and
 * the number may now belong to another file, or to another member's open
 * of the same file. Call while our mapping (hence our lock) still exists. */
static int fd_is_ours(vr_member *m)
{
	struct stat st;
	if (fstat(m->fd, &st) != 0 || st.st_dev != m->st_dev || st.st_ino != m->st_ino)
		return 0;
	/* Same file; same open file description? Through ours, our own slot
	 * lock does not conflict; through another member's, it does. */
	return slot_alive(m->fd, m->slot_idx) == 0;
}

void vr_leave(vr_member *m)
{
	if (!m)
		return;
	struct vr_region_hdr *h = m->hdr;
	if (region_lock(m) == 0) {
		if (m->slot->state == VR_SLOT_USED && m->slot->incarnation == m->incarnation) {
			books_begin(h);
			slot_reclaim_locked(h, m->slot);
			books_end(h);
		}
		region_unlock(m);
	}
	int ours = fd_is_ours(m);
	/* The OFD lock goes with the last reference: the fd and the mapping. */
	munmap(m->hdr, VR_REGION_SIZE);
	if (ours)
		close(m->fd);
	free(m);
}

void vr_forget(vr_member *m)
{
	if (!m)
		return;
	/* The open file description, and with it the OFD lock, stays the
	 * parent's: closing our copy of the fd releases nothing of it. */
	int ours = fd_is_ours(m);
	munmap(m->hdr, VR_REGION_SIZE);
	if (ours)
		close(m->fd);
	free(m);
}

/* ---- the books */

int vr_device(vr_member *m, const unsigned char uuid[VR_UUID_LEN], uint64_t cap_if_new,
              uint64_t *cap)
{
	if (!m || !uuid)
		return -EINVAL;
	struct vr_region_hdr *h = m->hdr;
	int rc = region_lock(m);
	if (rc < 0)
		return rc;
	int idx = -ENOSPC;
	for (uint32_t d = 0; d < h->ndev; d++) {
		if (memcmp(h->dev[d].uuid, uuid, VR_UUID_LEN) == 0) {
			idx = (int)d;
			break;
		}
	}
	if (idx < 0 && h->ndev < VR_MAX_DEVICES) {
		books_begin(h);
		uint32_t d = h->ndev;
		memset(&h->dev[d], 0, sizeof(h->dev[d]));
		memcpy(h->dev[d].uuid, uuid, VR_UUID_LEN);
		h->dev[d].cap = cap_if_new;
		h->ndev = d + 1;
		books_end(h);
		idx = (int)d;
	}
	if (idx >= 0 && cap)
		*cap = h->dev[idx].cap;
	region_unlock(m);
	return idx;
}

/* Mutex held. Our slot may have been reclaimed if our liveness lock was
 * lost (someone closed our fd): then we must not write into it. */
static inline int slot_ours(const vr_member *m)
{
	return m->slot->incarnation == m->incarnation;
}

static int try_reserve_locked(vr_member *m, int dev, uint64_t bytes, uint64_t *in_use)
{
	struct vr_region_hdr *h = m->hdr;
	struct vr_region_dev *g = &h->dev[dev];
	uint64_t cur = g->in_use;
	if (bytes > g->cap || cur > g->cap - bytes) {
		if (in_use)
			*in_use = cur;
		return -ENOSPC;
	}
	struct vr_slot_dev *s = &m->slot->dev[dev];
	books_begin(h);
	g->in_use = cur + bytes;
	if (g->peak < cur + bytes)
		g->peak = cur + bytes;
	s->in_use += bytes;
	if (s->peak < s->in_use)
		s->peak = s->in_use;
	books_end(h);
	return 0;
}

int vr_reserve(vr_member *m, int dev, uint64_t bytes, uint64_t *in_use)
{
	if (VR_UNLIKELY(!m || dev < 0 || dev >= VR_MAX_DEVICES))
		return -EINVAL;
	int rc = region_lock(m);
	if (VR_UNLIKELY(rc < 0))
		return rc;
	if (VR_UNLIKELY((uint32_t)dev >= m->hdr->ndev || !slot_ours(m))) {
		region_unlock(m);
		return (uint32_t)dev >= m->hdr->ndev ? -EINVAL : -ESTALE;
	}
	rc = try_reserve_locked(m, dev, bytes, in_use);
	region_unlock(m);
	if (VR_LIKELY(rc == 0))
		return 0;

	/* Before anyone is denied, give back what dead members held, then try
	 * once more (live members may also have freed some meanwhile). */
	reclaim_dead(m);
	rc = region_lock(m);
	if (rc < 0)
		return rc;
	if (!slot_ours(m)) {
		region_unlock(m);
		return -ESTALE;
	}
	rc = try_reserve_locked(m, dev, bytes, in_use);
	if (rc == 0) {
		region_unlock(m);
		return 0;
	}
	struct vr_region_hdr *h = m->hdr;
	books_begin(h);
	m->slot->dev[dev].denied_count++;
	m->slot->dev[dev].last_denied = bytes;
	if (in_use)
		*in_use = h->dev[dev].in_use;
	books_end(h);
	region_unlock(m);
	return -ENOSPC;
}

void vr_release(vr_member *m, int dev, uint64_t bytes)
{
	if (VR_UNLIKELY(!m || dev < 0 || dev >= VR_MAX_DEVICES))
		return;
	if (VR_UNLIKELY(region_lock(m) < 0))
		return;
	struct vr_region_hdr *h = m->hdr;
	if (VR_LIKELY((uint32_t)dev < h->ndev && slot_ours(m))) {
		struct vr_slot_dev *s = &m->slot->dev[dev];
		uint64_t b = bytes < s->in_use ? bytes : s->in_use;
		books_begin(h);
		s->in_use -= b;
		h->dev[dev].in_use -= b < h->dev[dev].in_use ? b : h->dev[dev].in_use;
		books_end(h);
	}
	region_unlock(m);
}

void vr_usage(vr_member *m, int dev, uint64_t *in_use, uint64_t *cap)
{
	uint64_t u = 0, c = UINT64_MAX;
	if (m && dev >= 0 && dev < VR_MAX_DEVICES && region_lock(m) == 0) {
		if ((uint32_t)dev < m->hdr->ndev) {
			u = m->hdr->dev[dev].in_use;
			c = m->hdr->dev[dev].cap;
		}
		region_unlock(m);
	}
	if (in_use)
		*in_use = u;
	if (cap)
		*cap = c;
}

static void add_clamped(uint64_t *v, int64_t delta)
{
	if (delta >= 0)
		*v += (uint64_t)delta;
	else
		*v -= (uint64_t)(-(delta + 1)) + 1 < *v ? (uint64_t)(-(delta + 1)) + 1 : *v;
}

void vr_note_pinned(vr_member *m, int64_t delta)
{
	if (!m || region_lock(m) < 0)
		return;
	if (slot_ours(m)) {
		books_begin(m->hdr);
		add_clamped(&m->slot->host_pinned, delta);
		books_end(m->hdr);
	}
	region_unlock(m);
}

void vr_note_spilled(vr_member *m, int dev, int64_t delta)
{
	if (!m || dev < 0 || dev >= VR_MAX_DEVICES || region_lock(m) < 0)
		return;
	if ((uint32_t)dev < m->hdr->ndev && slot_ours(m)) {
		books_begin(m->hdr);
		add_clamped(&m->slot->dev[dev].spilled, delta);
		books_end(m->hdr);
	}
	region_unlock(m);
}

int vr_sample(vr_member *m, int dev, struct vr_books_sample *out)
{
	if (!m || !out || dev < 0 || dev >= VR_MAX_DEVICES)
		return -EINVAL;
	int rc = region_lock(m);
	if (rc < 0)
		return rc;
	struct vr_region_hdr *h = m->hdr;
	memset(out, 0, sizeof(*out));
	if ((uint32_t)dev >= h->ndev) {
		region_unlock(m);
		return -EINVAL;
	}
	out->cap = h->dev[dev].cap;
	out->in_use = h->dev[dev].in_use;
	out->peak = h->dev[dev].peak;
	for (uint32_t i = 0; i < h->slots_hw; i++) {
		struct vr_slot *s = vr_region_slot(h, i);
		if (s->state == VR_SLOT_USED) {
			out->slots_sum += s->dev[dev].in_use;
			out->used_slots++;
		}
	}
	region_unlock(m);
	return 0;
}

uint64_t vr_max_lock_wait_ns(const vr_member *m)
{
	return m ? atomic_load(&((vr_member *)m)->max_wait_ns) : 0;
}

int vr_slot_index(const vr_member *m)
{
	return m ? (int)m->slot_idx : -1;
}

int vr_group_remove(const char *dir, const char *group)
{
	char dirbuf[PATH_MAX];
	char name[VR_GROUP_MAX + 8];
	if (!vr_group_name_ok(group))
		return -EINVAL;
	int rc = vr_dir_or_default(&dir, dirbuf, sizeof(dirbuf));
	if (rc < 0)
		return rc;
	int dfd = open_registry_dir(dir, 0, NULL, 0);
	if (dfd < 0)
		return dfd;
	snprintf(name, sizeof(name), "%s.vrg", group);
	rc = unlinkat(dfd, name, 0) < 0 ? -errno : 0;
	close(dfd);
	return rc;
}

int vr_default_dir(char *buf, size_t len)
{
	const char *e = getenv("VRAMCTL_REGISTRY_DIR");
	int n;
	if (!buf || len == 0)
		return -EINVAL;
	if (e && *e) {
		n = snprintf(buf, len, "%s", e);
	} else if ((e = getenv("XDG_RUNTIME_DIR")) && e[0] == '/') {
		n = snprintf(buf, len, "%s/vramctl", e);
	} else {
		n = snprintf(buf, len, "/tmp/vramctl-%u", (unsigned)geteuid());
	}
	if (n < 0 || (size_t)n >= len) {
		buf[0] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
}

int vr_dir_or_default(const char **dir, char *buf, size_t len)
{
	if (*dir && **dir)
		return 0;
	int rc = vr_default_dir(buf, len);
	if (rc < 0)
		return rc;
	*dir = buf;
	return 0;
}
