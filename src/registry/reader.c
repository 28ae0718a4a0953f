/*
 * reader.c - the read-only snapshot of a registry directory, for monitors
 * (vramctl status/top/export). See include/vramctl/registry.h.
 *
 * Each segment is attached read-only and copied under its seqlock: the copy is
 * retried while a writer was active, a bounded number of times; after that
 * the last copy is used (every counter is an aligned 64-bit word, so each
 * number is real, only their sum may be torn) and the group is marked not
 * consistent. Readers never take the lock and never write, so a monitor
 * can neither block nor corrupt a job.
 *
 * Liveness comes from the slot's OFD lock (F_OFD_GETLK works on a read-only
 * descriptor). The PID as the reader sees it comes from the member's classic
 * POSIX lock (F_GETLK reports the holder's PID in the caller's namespace);
 * failing that, from /proc, matched on the recorded start time.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/size.h"
#include "registry/alive.h"
#include "registry/dir.h"
#include "registry/door.h"
#include "registry/member.h"
#include "registry/segment.h"
#include "registry/proc.h"
#include "registry/layout.h"
#include "registry/registry.h"
#include "registry/util.h"
#include "vramctl/registry.h"

_Static_assert(sizeof(((struct vramctl_proc *)0)->group) ==
                   sizeof(((struct vramctl_group *)0)->name),
               "a member's group is its group's name");

#define SEQ_TRIES 64

struct growbuf {
	void *p;
	int n, cap;
	size_t elem;
};

/* Appends one zeroed element. */
static void *grow(struct growbuf *b)
{
	if (b->n == b->cap) {
		int nc = b->cap ? b->cap * 2 : 16;
		void *np = realloc(b->p, (size_t)nc * b->elem);
		if (!np)
			return NULL;
		b->p = np;
		b->cap = nc;
	}
	void *e = (char *)b->p + (size_t)b->n * b->elem;
	memset(e, 0, b->elem);
	b->n++;
	return e;
}

static int add_error(struct vramctl_snapshot *s, const char *fmt, ...) VR_PRINTF(2, 3);
static int add_error(struct vramctl_snapshot *s, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	char **ne = realloc(s->errors, (size_t)(s->nerrors + 1) * sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	s->errors = ne;
	s->errors[s->nerrors] = strdup(line);
	if (!s->errors[s->nerrors])
		return -ENOMEM;
	s->nerrors++;
	return 0;
}

/* A small cache of uid -> user name (most members share one user). */
struct user_cache {
	uid_t uid[8];
	char name[8][32];
	int n;
};

static void user_name(struct user_cache *c, uid_t uid, char out[32])
{
	for (int i = 0; i < c->n; i++) {
		if (c->uid[i] == uid) {
			memcpy(out, c->name[i], 32);
			return;
		}
	}
	char buf[1024];
	struct passwd pw, *res = NULL;
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res)
		snprintf(out, 32, "%s", res->pw_name);
	else
		snprintf(out, 32, "%u", (unsigned)uid);
	int k = c->n < 8 ? c->n++ : (int)(uid % 8);
	c->uid[k] = uid;
	memcpy(c->name[k], out, 32);
}

/* One slot, copied compactly (its devices go to a separate array, only as
 * many as the group has): a monitor reads 1,000 members in a few hundred
 * kilobytes instead of touching megabytes of fresh memory. */
struct slot_copy {
	uint32_t idx;
	int32_t pid;
	uint64_t start_time;
	int32_t nspid_outer;
	uint32_t uid;
	uint64_t host_pinned;
	uint32_t flags;
	char command[VR_COMMAND_MAX];
	uint64_t lanes[VR_LANES]; /* lane words: spare held, not handed out */
};

/* The bytes a copied slot's lanes hold spare on device d. */
static uint64_t copy_spare(const struct slot_copy *c, uint32_t d)
{
	uint64_t spare = 0;
	for (int i = 0; i < VR_LANES; i++)
		spare += vr_lane_spare_on(c->lanes[i], d);
	return spare;
}

/* Makes room for n more elements at once (one realloc per group). */
static int reserve_room(struct growbuf *b, int n)
{
	if (b->n + n <= b->cap)
		return 0;
	int nc = b->n + n;
	void *np = realloc(b->p, (size_t)nc * b->elem);
	if (!np)
		return -ENOMEM;
	b->p = np;
	b->cap = nc;
	return 0;
}

/*
 * Held locks, from one read of /proc/locks: asking the kernel slot by slot
 * (F_GETLK) walks the file's whole lock list each time, so 1,000 members
 * cost a million steps; the table costs one pass. OFD entries say who is
 * alive, POSIX entries give the PID in our namespace (owners we cannot see
 * are left out by the kernel; their OFD entry still shows).
 */
struct held_lock {
	unsigned maj, min;
	unsigned long long ino;
	long long start;
	int ofd;
	int pid;
};

struct lock_table {
	struct held_lock *e;
	int n;
	int ok;   /* 0: /proc/locks unreadable, ask fcntl per slot */
	int read; /* read once, when a group first needs it */
};

/* Skips spaces, then one word; returns a pointer past it (NULL at the end). */
static const char *word(const char *p, const char **start, size_t *len)
{
	while (*p == ' ')
		p++;
	if (!*p)
		return NULL;
	*start = p;
	while (*p && *p != ' ')
		p++;
	*len = (size_t)(p - *start);
	return p;
}

/*
 * A number in base 10 or 16 after optional spaces and, where neg is not
 * NULL, a minus sign (OFD locks show PID -1). Returns a pointer past its
 * digits, or NULL when there is none. strtol and strtoul cost more than the
 * rest of a 2,000-line /proc/locks together; this file's numbers are
 * plain digits that fit (no 0x, no plus, no overflow to report).
 */
static const char *lock_num(const char *p, unsigned base, int *neg, unsigned long long *out)
{
	while (*p == ' ')
		p++;
	if (neg) {
		*neg = *p == '-';
		p += *neg;
	}
	unsigned long long v = 0;
	const char *start = p;
	for (;; p++) {
		unsigned d;
		if (*p >= '0' && *p <= '9')
			d = (unsigned)(*p - '0');
		else if (base == 16 && *p >= 'a' && *p <= 'f')
			d = (unsigned)(*p - 'a' + 10);
		else if (base == 16 && *p >= 'A' && *p <= 'F')
			d = (unsigned)(*p - 'A' + 10);
		else
			break;
		v = v * base + d;
	}
	if (p == start)
		return NULL;
	*out = v;
	return p;
}

/* Parses one /proc/locks line by hand (sscanf costs more than the rest). */
static int parse_lock_line(const char *p, struct held_lock *h)
{
	const char *w;
	size_t n;
	int neg;
	unsigned long long v;
	if (!(p = word(p, &w, &n)) || w[n - 1] != ':') /* "N:" */
		return -1;
	if (!(p = word(p, &w, &n)))
		return -1;
	if (n == 5 && !memcmp(w, "POSIX", 5))
		h->ofd = 0;
	else if (n == 6 && !memcmp(w, "OFDLCK", 6))
		h->ofd = 1;
	else
		return -1;                                    /* "->" waiters, FLOCK, LEASE... */
	if (!(p = word(p, &w, &n)) || !(p = word(p, &w, &n))) /* ADVISORY, WRITE */
		return -1;
	if (!(p = lock_num(p, 10, &neg, &v)))
		return -1;
	h->pid = neg ? -(int)v : (int)v;
	/* MAJ:MIN:INO, the first two in hex. */
	if (!(p = lock_num(p, 16, NULL, &v)) || *p != ':')
		return -1;
	h->maj = (unsigned)v;
	if (!(p = lock_num(p + 1, 16, NULL, &v)) || *p != ':')
		return -1;
	h->min = (unsigned)v;
	if (!(p = lock_num(p + 1, 10, NULL, &v)))
		return -1;
	h->ino = v;
	if (!(p = lock_num(p, 10, &neg, &v)))
		return -1;
	h->start = neg ? -(long long)v : (long long)v;
	return 0;
}

static void lock_table_read(struct lock_table *t)
{
	memset(t, 0, sizeof(*t));
	t->read = 1;
	int fd = open("/proc/locks", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (len + 4096 > cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (!buf)
		return;
	buf[len] = '\0';
	int ecap = 0;
	for (char *line = buf; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		/* "N: POSIX  ADVISORY  WRITE PID MAJ:MIN:INO START END"; lines
		 * with "->" are waiters, not holders, and are skipped. */
		struct held_lock h;
		if (parse_lock_line(line, &h) == 0) {
			if (t->n == ecap) {
				ecap = ecap ? ecap * 2 : 256;
				struct held_lock *ne = realloc(t->e, (size_t)ecap * sizeof(*ne));
				if (!ne)
					break;
				t->e = ne;
			}
			t->e[t->n++] = h;
		}
		line = nl ? nl + 1 : NULL;
	}
	free(buf);
	t->ok = 1;
}

/* Fills alive[] and pid[] (VR_SLOTS each) for the door st. */
static void lock_table_door(const struct lock_table *t, const struct stat *st, unsigned char *alive,
                            pid_t *pid)
{
	for (int i = 0; i < t->n; i++) {
		const struct held_lock *l = &t->e[i];
		if (l->ino != (unsigned long long)st->st_ino || l->maj != major(st->st_dev) ||
		    l->min != minor(st->st_dev) || l->start < (long long)VR_HDR_SIZE)
			continue;
		long long rel = l->start - (long long)VR_HDR_SIZE;
		long long slot = rel / VR_LIVE_STRIDE;
		long long off = rel % VR_LIVE_STRIDE;
		if (slot >= VR_SLOTS)
			continue;
		if (l->ofd && off == 0)
			alive[slot] = 1;
		else if (!l->ofd && off == 1 && l->pid > 0)
			pid[slot] = l->pid;
	}
}

/* /proc start time of pid, 0 if it does not exist. */
static uint64_t proc_start_time(pid_t pid)
{
	uint64_t t = 0;
	if (pid <= 0 || vr_proc_start_time(NULL, pid, &t) < 0)
		return 0;
	return t;
}

/* For members whose host PID is still unknown, scan /proc once: a process
 * whose innermost NSpid is the member's PID and whose start time matches. */
static void resolve_by_scan(struct vramctl_proc *procs, const uint64_t *want_start, int n)
{
	DIR *d = opendir("/proc");
	if (!d)
		return;
	struct dirent *e;
	int left = 0;
	for (int i = 0; i < n; i++)
		left += procs[i].state == VRAMCTL_PROC_ALIVE && procs[i].host_pid == 0;
	while (left > 0 && (e = readdir(d))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		pid_t host = (pid_t)atoi(e->d_name);
		struct vr_proc_status ps;
		if (vr_proc_status(NULL, host, &ps) < 0 || !(ps.have & VR_PROC_NSPID))
			continue;
		pid_t inner = ps.nspid_inner;
		if (inner <= 0)
			continue;
		uint64_t st = 0;
		for (int i = 0; i < n; i++) {
			struct vramctl_proc *p = &procs[i];
			if (p->state != VRAMCTL_PROC_ALIVE || p->host_pid != 0 || p->pid != inner)
				continue;
			if (!st)
				st = proc_start_time(host);
			if (st == want_start[i]) {
				p->host_pid = host;
				p->host_pid_seen = 1;
				left--;
			}
		}
	}
	closedir(d);
}

/*
 * Groups with more members than this take liveness and PIDs from one read
 * of /proc/locks (and so does every group after it, the table being read);
 * smaller ones ask the kernel slot by slot. A probe walks the door
 * file's locks (two a member), so a group of n costs about n^2 steps that
 * way, while /proc/locks costs the formatting of every lock on the
 * machine: at 1,000 members in ten groups the probes take a third of the
 * time, at 1,000 in one group the table wins.
 */
#define VR_PROBE_MAX 128

/* What one snapshot builds, and scratch reused from group to group. */
struct reader {
	struct vramctl_snapshot *snap;
	struct growbuf groups, procs, starts, devs, devidx;
	struct user_cache uc;
	struct lock_table locks;
	struct slot_copy *sc;      /* VR_SLOTS */
	struct vramctl_counts *sd; /* VR_SLOTS x sd_ndev */
	uint32_t sd_ndev;
	int probe_max; /* VR_PROBE_MAX; tests force either way */
	int need_scan;
};

/* Is slot idx's member alive, and its PID in our namespace (0: unknown)?
 * From the lock table when there is one, else (or when the table, read in
 * pieces while others take and drop locks, shows it dead) by fcntl: the
 * classic lock names the holder in our namespace, the OFD lock says alive. */
static int slot_liveness(int fd, uint32_t idx, const unsigned char *lk_alive, const pid_t *lk_pid,
                         pid_t *host_pid)
{
	*host_pid = 0;
	if (lk_alive && lk_alive[idx]) {
		*host_pid = lk_pid[idx];
		return 1;
	}
	struct flock fl = {
	    .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = vr_slot_pid_byte(idx), .l_len = 1};
	if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK) {
		*host_pid = fl.l_pid > 0 ? fl.l_pid : 0;
		return 1;
	}
	struct flock ol = {
	    .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = vr_slot_live_byte(idx), .l_len = 1};
	return fcntl(fd, F_OFD_GETLK, &ol) == 0 && ol.l_type != F_UNLCK;
}

/*
 * Reads one group's books (its door, then its segment) into the snapshot. Problems with the file
 * become an entry in errors[]; only running out of memory fails the snapshot.
 */
static int read_group(struct reader *r, int dfd, const char *dir, const char *name)
{
	struct vramctl_snapshot *snap = r->snap;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		return add_error(snap, "%s/%s: cannot open: %s", dir, name,
		                 e == ELOOP ? "is a symlink" : strerror(e));
	}
	struct stat st;
	struct vr_hdr hdr;
	const char *why = NULL;
	char group[VR_GROUP_NAME_MAX + 1];
	size_t glen = strlen(name) - 4; /* without ".vrg" */
	if (glen >= sizeof(group))      /* too long a name: its check fails */
		glen = sizeof(group) - 1;
	memcpy(group, name, glen);
	group[glen] = '\0';
	int rc = vr_door_validate(fd, group, VR_DOOR_READ, &st, &hdr, &why);
	if (rc == 0)
		why = NULL;
	else if (!why)
		why = strerror(-rc);
	if (why) {
		close(fd);
		return add_error(snap, "%s/%s: %s", dir, name, why);
	}
	/* The segment, attached read-only: it cannot shrink under us (a mapped
	 * file could, and a read of it would fault). */
	const struct vr_hdr *h = vr_segment_attach(&hdr, 1);
	if (!h) {
		int alive = vr_others_alive(fd, VR_SLOTS);
		close(fd);
		if (!alive) /* no live member: nothing is held, nothing to show */
			return 0;
		return add_error(snap,
		                 "%s/%s: the group has live members but their books cannot be "
		                 "read (gone, in another IPC namespace, or overwritten)",
		                 dir, name);
	}
	uint32_t lockword = 0;
	/* The copy reads every slot in use: their pages mapped in one call. */
	vr_segment_prefault(h, 0, 0);

	/* Copy the books under the seqlock. */
	struct slot_copy *sc = r->sc;
	struct vramctl_counts *sd = r->sd;
	unsigned char *lk_alive = NULL;
	pid_t *lk_pid = NULL;
	int nsc = 0, consistent = 0, mismatch = 0, same = 0, last_nsc = -1;
	uint64_t last_sum = 0, last_total = 0;
	uint32_t ndev = 0;
	struct vr_hdr_dev gdev[VR_MAX_DEVICES];
	char gname[VR_GROUP_FIELD], spec[VR_SPEC_MAX];
	uint32_t growth = 0;
	uint64_t spill_budget = 0, spilled = 0;
	for (int t = 0; t < SEQ_TRIES; t++) {
		uint64_t s1 =
		    atomic_load_explicit((_Atomic uint64_t *)&h->seq, memory_order_acquire);
		/* A writer is inside (or stopped inside): give it the CPU, but
		 * copy anyway, so that the last try leaves a (torn) copy. */
		if ((s1 & 1) && t > 0)
			sched_yield();
		ndev = h->ndev;
		if (ndev > VR_MAX_DEVICES)
			ndev = VR_MAX_DEVICES;
		uint32_t hw = h->slots_hw;
		if (hw > VR_SLOTS)
			hw = VR_SLOTS;
		memcpy(gdev, h->dev, ndev * sizeof(gdev[0]));
		memcpy(gname, h->group, sizeof(gname));
		memcpy(spec, h->limit_spec, sizeof(spec));
		growth = h->growth;
		spill_budget = h->spill_budget;
		spilled = h->spilled;
		if (!sc)
			sc = r->sc = malloc((size_t)VR_SLOTS * sizeof(*sc));
		if (sc && (!sd || ndev > r->sd_ndev)) {
			free(sd);
			r->sd_ndev = ndev;
			sd = r->sd = malloc((size_t)VR_SLOTS * (ndev ? ndev : 1) * sizeof(*sd));
		}
		if (!sc || !sd) {
			vr_segment_detach((struct vr_hdr *)h);
			close(fd);
			return -ENOMEM;
		}
		nsc = 0;
		for (uint32_t i = 0; i < hw; i++) {
			const struct vr_slot *s = vr_slot_at((struct vr_hdr *)h, i);
			if (s->state != VR_SLOT_USED)
				continue;
			struct slot_copy *c = &sc[nsc];
			c->idx = i;
			c->pid = s->pid;
			c->start_time = s->start_time;
			c->nspid_outer = s->nspid_outer;
			c->uid = s->uid;
			c->host_pinned = s->host_pinned;
			c->flags = s->flags;
			memcpy(c->command, s->command, sizeof(c->command));
			for (int l = 0; l < VR_LANES; l++)
				c->lanes[l] = vr_lane_word(s, (uint32_t)l);
			for (uint32_t d = 0; d < ndev; d++)
				sd[(size_t)nsc * ndev + d] =
				    *vr_counts_at((struct vr_hdr *)h, i, d);
			nsc++;
		}
		/* The copy's loads must not pass the second read of seq: x86 keeps
		 * loads in order, so a compiler barrier is enough there. */
#if defined(__x86_64__) || defined(__i386__)
		atomic_signal_fence(memory_order_seq_cst);
#else
		atomic_thread_fence(memory_order_acquire);
#endif
		uint64_t s2 =
		    atomic_load_explicit((_Atomic uint64_t *)&h->seq, memory_order_relaxed);
		/* Members change the totals and their slot words without the
		 * seqlock: a copy is of one moment when no copied slot was busy
		 * and no total moved while it was taken. Then the totals are the
		 * slots' sums, or the books are damaged once four such copies in
		 * a row differ alike. */
		int quiet = s1 == s2 && !(s1 & 1);
		uint64_t sum[VR_MAX_DEVICES] = {0};
		for (int k = 0; quiet && k < nsc; k++)
			for (uint32_t d = 0; d < ndev; d++) {
				uint64_t w = sd[(size_t)k * ndev + d].in_use;
				quiet &= !(w & VR_W_BUSY);
				sum[d] += vr_w_bytes(w);
			}
		int equal = quiet;
		for (uint32_t d = 0; quiet && d < ndev; d++) {
			quiet &= gdev[d].total == vr_dev_total_word(&h->dev[d]);
			equal &= vr_tot_bytes(gdev[d].total) == sum[d];
		}
		if (quiet && equal) {
			consistent = 1;
			break;
		}
		/* The same mismatch in 4 quiet copies in a row, a scheduler's
		 * turn apart: not a member caught between two operations while
		 * the totals read the same before and after the copy. */
		if (quiet && nsc == last_nsc && sum[0] == last_sum &&
		    vr_tot_bytes(gdev[0].total) == last_total) {
			if (++same >= 3) {
				mismatch = 1;
				break;
			}
		} else {
			same = 0;
		}
		last_nsc = quiet ? nsc : -1;
		last_sum = sum[0];
		last_total = ndev ? vr_tot_bytes(gdev[0].total) : 0;
		if (quiet)
			sched_yield();
		if (!quiet && t > 2)
			sched_yield();
	}
	/* What members hold is what they handed out: their lanes' spare is
	 * in the totals (books_in_use), not in their in_use. */
	for (int k = 0; k < nsc; k++)
		for (uint32_t d = 0; d < ndev; d++) {
			uint64_t held = vr_w_bytes(sd[(size_t)k * ndev + d].in_use);
			uint64_t spare = copy_spare(&sc[k], d);
			sd[(size_t)k * ndev + d].in_use = held - (spare < held ? spare : held);
		}
	lockword = atomic_load_explicit((_Atomic uint32_t *)&h->lock.word, memory_order_relaxed);
	vr_segment_detach((struct vr_hdr *)h);
	gname[sizeof(gname) - 1] = '\0';
	spec[sizeof(spec) - 1] = '\0';

	struct vramctl_group *g = grow(&r->groups);
	if (!g) {
		rc = -ENOMEM;
		goto out;
	}
	/* Cut to the snapshot's fields: a damaged header may hold a longer name. */
	snprintf(g->name, sizeof(g->name), "%s", gname);
	snprintf(g->limit_spec, sizeof(g->limit_spec), "%s", spec);
	g->growth = (int)growth;
	g->spill_budget = spill_budget;
	g->spilled = spilled;
	g->owner = st.st_uid;
	g->ndev = (int)ndev;
	g->consistent = consistent;
	for (uint32_t d = 0; d < ndev; d++) {
		vr_format_uuid(gdev[d].uuid, g->dev[d].uuid, sizeof(g->dev[d].uuid));
		g->dev[d].cap = gdev[d].cap;
		g->dev[d].peak = gdev[d].peak;
		g->dev[d].books_in_use = vr_tot_bytes(gdev[d].total);
	}
	if (reserve_room(&r->procs, nsc) < 0 || reserve_room(&r->starts, nsc) < 0 ||
	    reserve_room(&r->devidx, nsc) < 0 || reserve_room(&r->devs, nsc * (int)ndev) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	if (nsc > r->probe_max && !r->locks.read)
		lock_table_read(&r->locks);
	if ((nsc > r->probe_max || (r->locks.read && r->probe_max < INT_MAX)) && r->locks.ok) {
		lk_alive = calloc(VR_SLOTS, 1);
		lk_pid = calloc(VR_SLOTS, sizeof(*lk_pid));
		if (!lk_alive || !lk_pid) {
			rc = -ENOMEM;
			goto out;
		}
		lock_table_door(&r->locks, &st, lk_alive, lk_pid);
	}
	if (lockword && !vr_lock_word_alive(fd, lockword, lk_alive) &&
	    add_error(snap,
	              "%s/%s: damaged: the group's lock is held by something that is not a live "
	              "member (lock word %#x); the next member that waits for it takes it over",
	              dir, name, lockword) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	for (int k = 0; k < nsc; k++) {
		const struct slot_copy *s = &sc[k];
		const struct vramctl_counts *sdev = &sd[(size_t)k * ndev];
		struct vramctl_proc *p = grow(&r->procs);
		uint64_t *start = grow(&r->starts);
		int *devidx = grow(&r->devidx);
		if (!p || !start || !devidx) {
			rc = -ENOMEM;
			goto out;
		}
		/* Room for the devices was made above; every byte is written below. */
		struct vramctl_proc_dev *pdev =
		    ndev ? (struct vramctl_proc_dev *)r->devs.p + r->devs.n : NULL;
		*devidx = ndev ? r->devs.n : -1;
		r->devs.n += (int)ndev;
		*start = s->start_time;
		p->pid = s->pid;
		p->start_time = s->start_time;
		p->uid = s->uid;
		user_name(&r->uc, s->uid, p->user);
		memcpy(p->command, s->command, sizeof(p->command));
		p->command[sizeof(p->command) - 1] = '\0';
		memcpy(p->group, g->name, sizeof(p->group)); /* cut above */
		p->host_pinned = s->host_pinned;
		p->outer_pid = s->nspid_outer;
		p->ndev = (int)ndev;

		int alive = slot_liveness(fd, s->idx, lk_alive, lk_pid, &p->host_pid);
		p->state = alive ? VRAMCTL_PROC_ALIVE : VRAMCTL_PROC_DEAD;
		p->host_pid_seen = alive && p->host_pid > 0;
		if (alive && p->host_pid == 0) {
			if (s->nspid_outer > 0 && proc_start_time(s->nspid_outer) == s->start_time)
				p->host_pid = s->nspid_outer;
			else if (proc_start_time(s->pid) == s->start_time)
				p->host_pid = s->pid;
			else
				r->need_scan = 1;
			p->host_pid_seen = p->host_pid > 0;
		}
		if (alive && !(s->flags & VR_SLOT_F_LAUNCHER))
			g->nmembers++;
		for (uint32_t d = 0; d < ndev; d++) {
			struct vramctl_proc_dev *pd = &pdev[d];
			memcpy(pd->uuid, g->dev[d].uuid, sizeof(pd->uuid));
			pd->counts = sdev[d];
			if (alive)
				g->dev[d].in_use += sdev[d].in_use;
			else
				g->dev[d].dead_in_use += sdev[d].in_use;
			g->dev[d].spilled += sdev[d].spilled;
		}
	}
	/* Damage a member would find too: a total or cap that fails its check
	 * (in a copy taken between locked writes), or totals that are not
	 * their members' sums in two quiet copies in a row. */
	for (uint32_t d = 0; (consistent || mismatch) && d < ndev; d++) {
		const char *bad = !vr_dev_ok(&gdev[d])
		                      ? "a device's cap, UUID or total was overwritten"
		                  : mismatch && vr_tot_bytes(gdev[d].total) !=
		                                    g->dev[d].in_use + g->dev[d].dead_in_use
		                      ? "a device's total differs from its members' holdings"
		                      : NULL;
		if (bad) {
			if (add_error(snap, "%s/%s: damaged: %s (device %s)", dir, name, bad,
			              g->dev[d].uuid) < 0)
				rc = -ENOMEM;
			break;
		}
	}
out:
	free(lk_alive);
	free(lk_pid);
	close(fd);
	return rc;
}

static int name_is_door(const char *n)
{
	size_t l = strlen(n);
	return n[0] != '.' && l > 4 && strcmp(n + l - 4, ".vrg") == 0;
}

int vramctl_snapshot_take(const char *dir, struct vramctl_snapshot **out)
{
	char dirbuf[PATH_MAX];
	if (!out)
		return -EINVAL;
	*out = NULL;
	int rc = vr_dir_or_default(&dir, dirbuf, sizeof(dirbuf));
	if (rc < 0)
		return rc;
	struct vramctl_snapshot *snap = calloc(1, sizeof(*snap));
	if (!snap)
		return -ENOMEM;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		int e = errno;
		if (e == ENOENT) { /* no registry yet: nothing capped */
			*out = snap;
			return 0;
		}
		free(snap);
		return -e;
	}
	DIR *d = fdopendir(dfd);
	if (!d) {
		int e = errno;
		close(dfd);
		free(snap);
		return -e;
	}
	struct reader r = {.snap = snap,
	                   .groups = {.elem = sizeof(struct vramctl_group)},
	                   .procs = {.elem = sizeof(struct vramctl_proc)},
	                   .starts = {.elem = sizeof(uint64_t)},
	                   .devs = {.elem = sizeof(struct vramctl_proc_dev)},
	                   .devidx = {.elem = sizeof(int)},
	                   .probe_max = VR_PROBE_MAX};
	/* Test-only: VRAMCTL_TEST_PROC_LOCKS=always (or never) takes every
	 * group's liveness from /proc/locks (or from fcntl). */
	const char *t = getenv("VRAMCTL_TEST_PROC_LOCKS");
	if (t && !strcmp(t, "always"))
		r.probe_max = -1;
	else if (t && !strcmp(t, "never"))
		r.probe_max = INT_MAX;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		if (!name_is_door(e->d_name))
			continue;
		rc = read_group(&r, dirfd(d), dir, e->d_name);
	}
	closedir(d);
	free(r.locks.e);
	free(r.sc);
	free(r.sd);
	snap->groups = r.groups.p;
	snap->ngroups = r.groups.n;
	snap->procs = r.procs.p;
	snap->nprocs = r.procs.n;
	snap->proc_devs = r.devs.p;
	/* The devices' storage stopped moving: point each record at its own. */
	for (int i = 0; i < snap->nprocs; i++) {
		int k = ((int *)r.devidx.p)[i];
		snap->procs[i].dev = k >= 0 ? snap->proc_devs + k : NULL;
	}
	free(r.devidx.p);
	if (rc == 0 && r.need_scan)
		resolve_by_scan(snap->procs, r.starts.p, snap->nprocs);
	free(r.starts.p);
	if (rc < 0) {
		vramctl_snapshot_free(snap);
		return rc;
	}
	*out = snap;
	return 0;
}

void vramctl_snapshot_free(struct vramctl_snapshot *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nerrors; i++)
		free(s->errors[i]);
	free(s->errors);
	free(s->groups);
	free(s->procs);
	free(s->proc_devs);
	free(s);
}
