/*
 * reader.c - the read-only snapshot of a registry directory, for monitors
 * (vramctl status/top/export). See include/vramctl/registry.h.
 *
 * For each door in the directory: check it (door.c), attach its segment
 * read-only and copy it under its seqlock (segcopy.c), then build the
 * group's and its members' entries from the copy and note damage. Readers
 * never take the lock and never write, so a monitor can neither block nor
 * corrupt a job.
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
#include "common/contract.h"
#include "common/size.h"
#include "registry/alive.h"
#include "registry/caps.h"
#include "registry/dir.h"
#include "registry/door.h"
#include "registry/ident.h"
#include "registry/handover.h"
#include "registry/ipcns.h"
#include "registry/member.h"
#include "registry/memfd.h"
#include "registry/segcopy.h"
#include "registry/segment.h"
#include "registry/proc.h"
#include "registry/layout.h"
#include "registry/registry.h"
#include "registry/util.h"
#include "vramctl/registry.h"

_Static_assert(sizeof(((struct vramctl_proc *)0)->group) ==
                   sizeof(((struct vramctl_group *)0)->name),
               "a member's group is its group's name");

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

/* Makes room for n more elements at once (one realloc per group; with
 * double, at least twice the room, for many small additions). */
static int reserve_grow(struct growbuf *b, int n, int twice)
{
	if (b->n + n <= b->cap)
		return 0;
	int nc = b->n + n;
	if (twice && nc < 2 * b->cap)
		nc = 2 * b->cap;
	void *np = realloc(b->p, (size_t)nc * b->elem);
	if (!np)
		return -ENOMEM;
	b->p = np;
	b->cap = nc;
	return 0;
}

static int reserve_room(struct growbuf *b, int n)
{
	return reserve_grow(b, n, 0);
}

/* Fills alive[] and pid[] (VR_SLOTS each) for the door st. */
static void lock_table_door(const struct vr_proc_locks *t, const struct stat *st,
                            unsigned char *alive, pid_t *pid)
{
	for (int i = 0; i < t->n; i++) {
		const struct vr_proc_lock *l = &t->e[i];
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

/*
 * What a member must match to be believed without its PID lock (lost, or
 * never taken by whatever wrote the slot): its start time, and the books'
 * owner. PID and start time are anyone's to read in /proc, so books a user
 * can write may name another user's process; only the kernel's word that
 * the process runs as the books' owner ties it to them.
 */
struct member_key {
	uint64_t start;
	uid_t owner; /* the door's owner, as this reader sees it */
};

/* 1 if the status read says the process runs as uid (real or effective). */
static int status_is(const struct vr_proc_status *ps, uid_t uid)
{
	return (ps->have & VR_PROC_UID) && (ps->uid == uid || ps->euid == uid);
}

/* 1 if pid is the member k names: its start time, the books' owner's uid. */
static int proc_is_member(pid_t pid, const struct member_key *k)
{
	struct vr_proc_status ps;
	return pid > 0 && proc_start_time(pid) == k->start && vr_proc_status(NULL, pid, &ps) == 0 &&
	       status_is(&ps, k->owner);
}

/* For members whose host PID is still unknown, scan /proc once: a process
 * whose innermost NSpid is the member's PID, whose start time matches and
 * that runs as the books' owner. */
static void resolve_by_scan(struct vramctl_proc *procs, const struct member_key *want, int n)
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
			if (st == want[i].start && status_is(&ps, want[i].owner)) {
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
	struct growbuf groups, procs, keys, devs, devidx, idents, identidx, text;
	size_t last_text; /* the last cgroup text interned (0: none) */
	struct user_cache uc;
	struct vr_proc_locks locks;
	struct vr_seg_copy copy; /* the group being read, and its scratch */
	struct vr_ipcns ns;      /* entering members' IPC namespaces (System V books) */
	uint64_t own_ipc_ns;     /* the reader's IPC namespace (its inode), 0: unknown */
	int probe_max;           /* VR_PROBE_MAX; tests force either way */
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

/* The group a door's name (<group>.vrg) names, cut to what a name may hold
 * (a longer one fails the door's check). */
static void group_of(const char *name, char group[VR_GROUP_NAME_MAX + 1])
{
	size_t glen = strlen(name) - 4; /* without ".vrg" */
	if (glen > VR_GROUP_NAME_MAX)
		glen = VR_GROUP_NAME_MAX;
	memcpy(group, name, glen);
	group[glen] = '\0';
}

/* Checks the door fd of group (its name in dir: name). 0, or -1 (fd
 * closed) when it cannot be read: then *rc is 0 (an entry in errors[] says
 * why) or -ENOMEM. */
static int check_door(struct reader *r, int fd, const char *dir, const char *name,
                      const char *group, struct stat *st, struct vr_hdr *hdr, int *rc)
{
	const char *why = NULL;
	int v = vr_door_validate(fd, group, VR_DOOR_READ, st, hdr, &why);
	if (v == 0)
		return 0;
	if (!why)
		why = strerror(-v);
	close(fd);
	*rc = add_error(r->snap, "%s/%s: %s", dir, name, why);
	return -1;
}

/*
 * Opens and checks the door `name`. Returns its fd, or -1 when it cannot
 * be read: then *rc is 0 (an entry in errors[] says why) or -ENOMEM.
 */
static int open_door(struct reader *r, int dfd, const char *dir, const char *name,
                     const char *group, struct stat *st, struct vr_hdr *hdr, int *rc)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		*rc = add_error(r->snap, "%s/%s: cannot open: %s", dir, name,
		                e == ELOOP ? "is a symlink" : strerror(e));
		return -1;
	}
	return check_door(r, fd, dir, name, group, st, hdr, rc) == 0 ? fd : -1;
}

/* How long a reader waits for a member to hand the books over: members
 * answer at once; a group whose members are all stopped is a note. */
#define VR_READER_WAIT_NS 500000000ull

/*
 * Maps, read-only, the books the door fd (header door, owned by `owner`)
 * names: from the group's socket (handover.c: the memfd itself, whatever
 * namespaces its members are in), else through a live member's
 * /proc/PID/fd (memfd.c); a System V segment (made where no memfd could
 * be) by its id, else, for a privileged reader, in a live member's IPC
 * namespace (ipcns.c). Neither can shrink under us (a mapped file could,
 * and a read of it would fault). ho, when not NULL, is what the
 * socket handed over already. NULL when there is none: then *rc is 0 (with
 * an entry in errors[] when live members have lost their books) or
 * -ENOMEM.
 */
static const struct vr_hdr *attach_segment(struct reader *r, int dfd, int fd, uid_t owner,
                                           const struct vr_hdr *door, const char *dir,
                                           const char *name, const char *group,
                                           struct vr_ho_fds *ho, int *rc)
{
	const struct vr_hdr *h = NULL;
	struct vr_ho_fds f = {.books = -1, .door = -1, .listen = -1};
	*rc = 0;
	if (door->shm_id == VR_SHM_ID_MEMFD) {
		if (ho)
			f = *ho, ho->books = ho->door = ho->listen = -1;
		else
			(void)vr_ho_fetch(dfd, dir, group, owner, vr_now_ns() + VR_READER_WAIT_NS,
			                  &f);
		if (f.books >= 0 && f.key == door->shm_key)
			h = vr_memfd_map(f.books, door, 1);
		vr_ho_close(&f);
		if (!h)
			h = vr_memfd_attach(fd, door, 1, NULL);
	} else if (door->shm_id >= 0 && !(h = vr_segment_attach(door, 1))) {
		/* A System V segment in a container's own IPC namespace? */
		const char *why = NULL;
		uint64_t ns_ino;
		h = vr_ipcns_attach(&r->ns, fd, door, &ns_ino, &why);
		if (why && (*rc = add_error(r->snap, "%s/%s: %s", dir, name, why)) < 0)
			return NULL;
	}
	if (h) {
		/* The copy reads every slot in use, and the members' identity
		 * records: their pages mapped in one call each. */
		vr_segment_prefault(h, 0, 0);
		vr_segment_prefault_ident(h);
		return h;
	}
	if (!vr_others_alive(fd, VR_SLOTS)) /* no live member: nothing held, nothing to show */
		return NULL;
	*rc = add_error(r->snap,
	                "%s/%s: the group has live members but their books cannot be "
	                "read (none hands them over: stopped; a segment in another IPC "
	                "namespace; or overwritten)",
	                dir, name);
	return NULL;
}

/* The group's last cap changes, oldest first; none when the ring fails its
 * checks (overwritten, or copied while changed): returns 0 then, else 1. */
static int add_changes(struct vramctl_group *g, const struct vr_changes *ch)
{
	if (!vr_changes_whole(ch))
		return 0;
	uint64_t total = ch->count, first = vr_changes_first(total, 0);
	_Static_assert(VR_CHANGES == VRAMCTL_CAP_CHANGES, "the snapshot holds every kept change");
	g->changes_total = total;
	g->nchanges = (int)(total - first);
	for (int k = 0; k < g->nchanges; k++) {
		vr_change_public(&ch->c[(first + (uint64_t)k) % VR_CHANGES], &g->changes[k]);
	}
	return 1;
}

/* The group's entry in the snapshot, from the copy; *changes_ok 0 when its
 * record of cap changes failed its checks. NULL: out of memory. */
static struct vramctl_group *add_group(struct reader *r, const struct stat *st, int *changes_ok)
{
	const struct vr_seg_copy *c = &r->copy;
	struct vramctl_group *g = grow(&r->groups);
	if (!g)
		return NULL;
	/* Cut to the snapshot's fields: a damaged header may hold a longer name. */
	snprintf(g->name, sizeof(g->name), "%.*s", (int)sizeof(g->name) - 1, c->gname);
	snprintf(g->limit_spec, sizeof(g->limit_spec), "%s", c->spec);
	g->growth = (int)c->growth;
	g->spill_budget = c->spill_budget;
	g->denials = c->denials;
	g->spilled = c->spilled;
	g->park_budget = c->park_budget;
	g->parked = c->parked;
	g->owner = st->st_uid;
	g->ndev = (int)c->ndev;
	g->consistent = c->consistent;
	*changes_ok = add_changes(g, &c->changes);
	for (uint32_t d = 0; d < c->ndev; d++) {
		vr_format_uuid(c->gdev[d].uuid, g->dev[d].uuid, sizeof(g->dev[d].uuid));
		g->dev[d].cap = c->gdev[d].cap;
		g->dev[d].peak = c->gdev[d].peak;
		g->dev[d].books_in_use = vr_tot_bytes(c->gdev[d].total);
	}
	return g;
}

/* Liveness and PIDs from /proc/locks, for a group large enough (or when the
 * table was read anyway): *alive and *pid (VR_SLOTS each), or both NULL
 * to ask the kernel slot by slot. 0 or -ENOMEM. */
static int lock_tables(struct reader *r, const struct stat *st, unsigned char **alive, pid_t **pid)
{
	int nsc = r->copy.nsc;
	if (nsc > r->probe_max && !r->locks.read)
		vr_proc_locks_read(NULL, &r->locks);
	if ((nsc > r->probe_max || (r->locks.read && r->probe_max < INT_MAX)) && r->locks.ok) {
		*alive = calloc(VR_SLOTS, 1);
		*pid = calloc(VR_SLOTS, sizeof(**pid));
		if (!*alive || !*pid)
			return -ENOMEM;
		lock_table_door(&r->locks, st, *alive, *pid);
	}
	return 0;
}

/* The members' entries: one per copied slot, alive or dead, with their
 * numbers added to the group's. 0 or -ENOMEM. */
/* A member's identity record while the snapshot is built: its strings as
 * offsets into the text arena (which moves as it grows). */
struct ident_off {
	uint64_t cgns;
	size_t cgroup, pod_name, pod_namespace, container_name;
};

/* Offset of str in the arena: added, or the one before when the same (the
 * members of a job mostly share their cgroups), or 0 for "" (the arena
 * begins with a NUL). -1: out of memory. */
static long long intern(struct reader *r, const char *str)
{
	size_t n = strlen(str);
	if (!n)
		return 0;
	const char *a = r->text.p;
	if (r->last_text && !strcmp(a + r->last_text, str))
		return (long long)r->last_text;
	if (reserve_grow(&r->text, (int)n + 1, 1) < 0)
		return -1;
	size_t off = (size_t)r->text.n;
	memcpy((char *)r->text.p + off, str, n + 1);
	r->text.n += (int)n + 1;
	return (long long)off;
}

/* Slot idx's identity record into the snapshot, for its member p (alive):
 * *identidx gets its place, or -1. 0 or -ENOMEM. */
static int add_ident(struct reader *r, const struct vr_hdr *h, uint32_t idx,
                     const struct vramctl_proc *p, int *identidx)
{
	struct vr_ident rec;
	*identidx = -1;
	if (!vr_ident_get(h, idx, p->pid, p->start_time, &rec))
		return 0;
	if (!r->text.n) { /* "" at offset 0 */
		if (reserve_room(&r->text, 1) < 0)
			return -ENOMEM;
		*(char *)r->text.p = '\0';
		r->text.n = 1;
	}
	struct ident_off *o = grow(&r->idents);
	long long cg = intern(r, rec.cgroup);
	if (cg > 0)
		r->last_text = (size_t)cg;
	long long pn = intern(r, rec.pod_name), pns = intern(r, rec.pod_namespace),
	          cn = intern(r, rec.container_name);
	if (!o || cg < 0 || pn < 0 || pns < 0 || cn < 0)
		return -ENOMEM;
	*o = (struct ident_off){rec.cgns, (size_t)cg, (size_t)pn, (size_t)pns, (size_t)cn};
	*identidx = r->idents.n - 1;
	return 0;
}

static int add_members(struct reader *r, int fd, const struct stat *st, const struct vr_hdr *h,
                       struct vramctl_group *g, const unsigned char *lk_alive, const pid_t *lk_pid)
{
	const struct vr_seg_copy *c = &r->copy;
	uint32_t ndev = c->ndev;
	for (int k = 0; k < c->nsc; k++) {
		const struct vr_slot_copy *s = &c->sc[k];
		const struct vramctl_counts *sdev = &c->sd[(size_t)k * ndev];
		struct vramctl_proc *p = grow(&r->procs);
		struct member_key *key = grow(&r->keys);
		int *devidx = grow(&r->devidx);
		int *identidx = grow(&r->identidx);
		if (!p || !key || !devidx || !identidx)
			return -ENOMEM;
		*identidx = -1;
		/* Room for the devices was made before; every byte is written below. */
		struct vramctl_proc_dev *pdev =
		    ndev ? (struct vramctl_proc_dev *)r->devs.p + r->devs.n : NULL;
		*devidx = ndev ? r->devs.n : -1;
		r->devs.n += (int)ndev;
		*key = (struct member_key){.start = s->start_time, .owner = st->st_uid};
		p->pid = s->pid;
		p->start_time = s->start_time;
		/* Every member runs as the books' owner (a joiner opens them only
		 * as it): the kernel's uid of the door, as this reader sees it, not
		 * the one the slot says (a member in a user namespace sees itself
		 * as another uid). */
		p->uid = st->st_uid;
		user_name(&r->uc, p->uid, p->user);
		memcpy(p->command, s->command, sizeof(p->command));
		p->command[sizeof(p->command) - 1] = '\0';
		memcpy(p->group, g->name, sizeof(p->group)); /* cut in add_group */
		p->host_pinned = s->host_pinned;
		p->outer_pid = s->nspid_outer;
		p->counting = s->flags & VR_SLOT_F_NO_FIGURES    ? VRAMCTL_COUNTING_NO_FIGURES
		              : s->flags & VR_SLOT_F_ALLOCATIONS ? VRAMCTL_COUNTING_ALLOCATIONS
		                                                 : VRAMCTL_COUNTING_CARD;
		p->ndev = (int)ndev;
		/* The views show it where it is not the reader's own. */
		p->ipc_ns = s->ipc_ns != r->own_ipc_ns ? s->ipc_ns : 0;
		p->wait_dev = s->wait.dev && s->wait.dev <= ndev ? (int)s->wait.dev - 1 : -1;
		p->wait_bytes = p->wait_dev >= 0 ? s->wait.bytes : 0;
		p->wait_claimed = p->wait_dev >= 0 ? s->wait.claimed : 0;
		p->wait_since = p->wait_dev >= 0 ? s->wait.since : 0;
		p->parked = s->wait.park == VR_PARK_PARKED;
		p->parked_since = p->parked ? s->wait.parked_since : 0;
		p->parkable = (s->wait.flags & VR_PARK_F_PARKABLE) != 0;
		p->idle_since = s->wait.idle_since;
		p->launcher = (s->flags & VR_SLOT_F_LAUNCHER) != 0;

		int alive = slot_liveness(fd, s->idx, lk_alive, lk_pid, &p->host_pid);
		p->state = alive ? VRAMCTL_PROC_ALIVE : VRAMCTL_PROC_DEAD;
		p->host_pid_seen = alive && p->host_pid > 0;
		if (alive && p->host_pid == 0) {
			if (proc_is_member(s->nspid_outer, key))
				p->host_pid = s->nspid_outer;
			else if (proc_is_member(s->pid, key))
				p->host_pid = s->pid;
			else
				r->need_scan = 1;
			p->host_pid_seen = p->host_pid > 0;
		}
		if (alive && !(s->flags & VR_SLOT_F_LAUNCHER))
			g->nmembers++;
		if (alive && p->wait_dev >= 0)
			g->waiting++;
		if (alive && add_ident(r, h, s->idx, p, identidx) < 0)
			return -ENOMEM;
		for (uint32_t d = 0; d < ndev; d++) {
			struct vramctl_proc_dev *pd = &pdev[d];
			memcpy(pd->uuid, g->dev[d].uuid, sizeof(pd->uuid));
			pd->counts = sdev[d];
			pd->parked = p->parked ? c->pk[(size_t)k * ndev + d] : 0;
			if (alive)
				g->dev[d].in_use += sdev[d].in_use;
			else
				g->dev[d].dead_in_use += sdev[d].in_use;
			g->dev[d].spilled += sdev[d].spilled;
			g->dev[d].overhead += sdev[d].overhead;
		}
	}
	return 0;
}

/*
 * Damage a member would find too: a total or cap that fails its check (in
 * a copy taken between locked writes), or totals that are not their
 * members' sums in two quiet copies in a row. The first becomes an entry
 * in errors[]. 0 or -ENOMEM.
 */
static int check_totals(struct reader *r, const struct vramctl_group *g, const char *dir,
                        const char *name)
{
	const struct vr_seg_copy *c = &r->copy;
	for (uint32_t d = 0; (c->consistent || c->mismatch) && d < c->ndev; d++) {
		const char *bad = !vr_dev_ok(&c->gdev[d])
		                      ? "a device's cap, UUID or total was overwritten"
		                  : c->mismatch && vr_tot_bytes(c->gdev[d].total) !=
		                                       g->dev[d].in_use + g->dev[d].dead_in_use
		                      ? "a device's total differs from its members' holdings"
		                      : NULL;
		if (bad)
			return add_error(r->snap, "%s/%s: damaged: %s (device %s)", dir, name, bad,
			                 g->dev[d].uuid) < 0
			           ? -ENOMEM
			           : 0;
	}
	return 0;
}

/*
 * Reads one group's books into the snapshot, from its door fd (checked:
 * st, hdr; closed here) and what its socket handed over already (ho, or
 * NULL). Problems with the files become entries in errors[]; only running
 * out of memory fails the snapshot.
 */
static int read_books(struct reader *r, int dfd, const char *dir, const char *name,
                      const char *group, int fd, const struct stat *st, const struct vr_hdr *hdr,
                      struct vr_ho_fds *ho)
{
	int rc = 0;
	const struct vr_hdr *h =
	    attach_segment(r, dfd, fd, st->st_uid, hdr, dir, name, group, ho, &rc);
	if (!h) {
		close(fd);
		return rc;
	}
	rc = vr__seg_copy(&r->copy, h);
	if (rc < 0) {
		vr_segment_detach((struct vr_hdr *)h);
		close(fd);
		return rc;
	}

	unsigned char *lk_alive = NULL;
	pid_t *lk_pid = NULL;
	int nsc = r->copy.nsc, ndev = (int)r->copy.ndev;
	uint32_t lockword = r->copy.lockword;
	int changes_ok = 1;
	struct vramctl_group *g = add_group(r, st, &changes_ok);
	if (!g || reserve_room(&r->procs, nsc) < 0 || reserve_room(&r->keys, nsc) < 0 ||
	    reserve_room(&r->identidx, nsc) < 0 || reserve_room(&r->devidx, nsc) < 0 ||
	    reserve_room(&r->devs, nsc * ndev) < 0 || lock_tables(r, st, &lk_alive, &lk_pid) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	if (lockword && !vr_lock_word_alive(fd, lockword, lk_alive) &&
	    add_error(r->snap,
	              "%s/%s: damaged: the group's lock is held by something that is not a live "
	              "member (lock word %#x); the next member that waits for it takes it over",
	              dir, name, lockword) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	/* A copy taken between writes whose ring fails its checks: damage,
	 * said, and no change shown (never a count or caps read from garbage). */
	if (!changes_ok && r->copy.seq_clean &&
	    add_error(r->snap,
	              "%s/%s: damaged: its record of cap changes was overwritten (the changes "
	              "are not shown)",
	              dir, name) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	/* The segment stays attached for the members' identity records: only
	 * the live ones' are read. */
	rc = add_members(r, fd, st, h, g, lk_alive, lk_pid);
	if (rc == 0)
		rc = check_totals(r, g, dir, name);
out:
	vr_segment_detach((struct vr_hdr *)h);
	free(lk_alive);
	free(lk_pid);
	close(fd);
	return rc;
}

/* Reads the group whose door is `name`. */
static int read_group(struct reader *r, int dfd, const char *dir, const char *name)
{
	struct stat st;
	struct vr_hdr hdr;
	char group[VR_GROUP_NAME_MAX + 1];
	int rc = 0;
	group_of(name, group);
	int fd = open_door(r, dfd, dir, name, group, &st, &hdr, &rc);
	return fd < 0 ? rc : read_books(r, dfd, dir, name, group, fd, &st, &hdr, NULL);
}

/*
 * A socket `sock` (.<group>.vrg.sock) whose group has no door by name: its
 * door's two names were removed while it lives (its members join through
 * the socket, join.c). Read through the socket, said. 0 (also when there
 * is nothing to read) or -ENOMEM.
 */
static int read_nameless(struct reader *r, int dfd, const char *dir, const char *sock)
{
	static const char tail[] = ".vrg.sock";
	char group[VR_GROUP_NAME_MAX + 1], name[VR_GROUP_NAME_MAX + 8];
	size_t l = strlen(sock), t = sizeof(tail) - 1;
	struct stat st;
	if (l <= t + 1 || l - t - 1 > VR_GROUP_NAME_MAX)
		return 0;
	memcpy(group, sock + 1, l - t - 1);
	group[l - t - 1] = '\0';
	snprintf(name, sizeof(name), "%s.vrg", group);
	if (vr_group_name_check(group, NULL, 0) < 0 ||
	    fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT ||
	    fstatat(dfd, sock, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISSOCK(st.st_mode))
		return 0;
	struct vr_ho_fds f;
	if (vr_ho_fetch(dfd, dir, group, st.st_uid, vr_now_ns() + VR_READER_WAIT_NS, &f) != 0)
		return 0; /* an ended group's socket */
	struct vr_hdr hdr;
	int rc = 0, fd = f.door;
	f.door = -1;
	if (check_door(r, fd, dir, name, group, &st, &hdr, &rc) == 0) {
		rc = add_error(r->snap,
		               "%s/%s: removed while the group has live members: read through its "
		               "socket %s, which they join by",
		               dir, name, sock);
		rc = rc < 0 ? rc : read_books(r, dfd, dir, name, group, fd, &st, &hdr, &f);
	}
	vr_ho_close(&f);
	return rc;
}

static int name_is_door(const char *n)
{
	size_t l = strlen(n);
	return n[0] != '.' && l > 4 && strcmp(n + l - 4, ".vrg") == 0;
}

static int name_is_socket(const char *n)
{
	size_t l = strlen(n);
	return n[0] == '.' && l > 10 && strcmp(n + l - 9, ".vrg.sock") == 0;
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
	                   .keys = {.elem = sizeof(struct member_key)},
	                   .devs = {.elem = sizeof(struct vramctl_proc_dev)},
	                   .devidx = {.elem = sizeof(int)},
	                   .idents = {.elem = sizeof(struct ident_off)},
	                   .text = {.elem = 1},
	                   .identidx = {.elem = sizeof(int)},
	                   .probe_max = VR_PROBE_MAX};
	/* Test-only: VRAMCTL_TEST_PROC_LOCKS=always (or never) takes every
	 * group's liveness from /proc/locks (or from fcntl). */
	const char *t = secure_getenv("VRAMCTL_TEST_PROC_LOCKS");
	if (t && !strcmp(t, "always"))
		r.probe_max = -1;
	else if (t && !strcmp(t, "never"))
		r.probe_max = INT_MAX;
	struct stat ns;
	if (stat("/proc/self/ns/ipc", &ns) == 0)
		r.own_ipc_ns = (uint64_t)ns.st_ino;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		if (name_is_door(e->d_name))
			rc = read_group(&r, dirfd(d), dir, e->d_name);
		else if (name_is_socket(e->d_name))
			rc = read_nameless(&r, dirfd(d), dir, e->d_name);
	}
	closedir(d);
	vr_ipcns_close(&r.ns);
	free(r.locks.e);
	free(r.copy.sc);
	free(r.copy.sd);
	free(r.copy.pk);
	snap->groups = r.groups.p;
	snap->ngroups = r.groups.n;
	snap->procs = r.procs.p;
	snap->nprocs = r.procs.n;
	snap->proc_devs = r.devs.p;
	/* The devices' storage stopped moving: point each record at its own. */
	/* The identities' strings stopped moving too. */
	snap->ident_text = r.text.p;
	if (r.idents.n &&
	    !(snap->proc_idents = malloc((size_t)r.idents.n * sizeof(*snap->proc_idents))))
		rc = rc ? rc : -ENOMEM;
	for (int i = 0; snap->proc_idents && i < r.idents.n; i++) {
		const struct ident_off *o = (const struct ident_off *)r.idents.p + i;
		snap->proc_idents[i] = (struct vramctl_proc_ident){
		    .cgns = o->cgns,
		    .cgroup = snap->ident_text + o->cgroup,
		    .pod_name = snap->ident_text + o->pod_name,
		    .pod_namespace = snap->ident_text + o->pod_namespace,
		    .container_name = snap->ident_text + o->container_name};
	}
	for (int i = 0; i < snap->nprocs; i++) {
		int k = ((int *)r.devidx.p)[i], id = ((int *)r.identidx.p)[i];
		snap->procs[i].dev = k >= 0 ? snap->proc_devs + k : NULL;
		snap->procs[i].ident = id >= 0 && snap->proc_idents ? snap->proc_idents + id : NULL;
	}
	free(r.devidx.p);
	free(r.identidx.p);
	free(r.idents.p);
	if (rc == 0 && r.need_scan)
		resolve_by_scan(snap->procs, r.keys.p, snap->nprocs);
	free(r.keys.p);
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
	free(s->proc_idents);
	free(s->ident_text);
	free(s);
}
