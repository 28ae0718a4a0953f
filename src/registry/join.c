/*
 * join.c - joining a group's books and leaving them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/contract.h"
#include "common/size.h"
#include "registry/alive.h"
#include "registry/books.h"
#include "registry/damage.h"
#include "registry/dir.h"
#include "registry/door.h"
#include "registry/handover.h"
#include "registry/held.h"
#include "registry/ident.h"
#include "registry/knobs.h"
#include "registry/lanes.h"
#include "registry/lock.h"
#include "registry/member.h"
#include "registry/memfd.h"
#include "registry/reclaim.h"
#include "registry/segment.h"
#include "registry/serve.h"
#include "registry/proc.h"
#include "registry/util.h"

/* ---- this process's identity, recorded in its slot for display */

struct proc_info {
	uint64_t start_time;
	uint64_t ipc_ns;
	int32_t nspid_outer;
	uint32_t uid; /* as the parent user namespace sees it */
	char command[VR_COMMAND_MAX];
	struct vr_ident ident; /* its cgroups and names, for monitors (ident.h) */
};

static void read_proc_info(struct proc_info *p)
{
	struct vr_proc_status ps;
	struct stat ns;
	memset(p, 0, sizeof(*p));
	(void)vr_proc_start_time(NULL, 0, &p->start_time);
	vr_proc_cmdline(NULL, 0, 0, p->command, sizeof(p->command));
	p->uid = (uint32_t)vr_proc_outer_uid();
	vr_ident_read(&p->ident);
	/* /proc/self/status is the costliest file of a join to read; only a
	 * process in a PID namespace of its own needs its NSpid line. */
	if (stat("/proc/self/ns/pid", &ns) == 0 && ns.st_ino == VR_PID_INIT_INO)
		p->nspid_outer = (int32_t)getpid();
	else if (vr_proc_status(NULL, 0, &ps) == 0 && (ps.have & VR_PROC_NSPID))
		p->nspid_outer = (int32_t)ps.nspid_outer;
	/* For the views: which container's IPC namespace the member is in. */
	if (stat("/proc/self/ns/ipc", &ns) == 0)
		p->ipc_ns = (uint64_t)ns.st_ino;
}

/* ---- join and leave */

/*
 * Takes a free (or dead) slot: its liveness byte is ours once F_OFD_SETLK
 * succeeds, since no live member holds it. Returns the index or -errno.
 *
 * The order keeps the slots in use compact, since every audit, reclaim
 * and reader walks all of them (and the pages they span): first up to
 * VR_CLAIM_PROBES of the slots used before, from a rotating hint (joiners
 * at once try different ones; from slot 0 when nobody else is alive), then
 * a never-used slot from the header's counter (slot_next: joiners at once
 * get different ones), then every slot in that order. A slot is tried by
 * its lock first (a live member's fails at once); only a dead member's is
 * checked further: a dead member not yet reaped, or still on the GPU,
 * keeps its slot and its bytes, and one that died inside an operation is
 * left to be reclaimed.
 */
#define VR_CLAIM_PROBES 8u
#define VR_FRESH_TRIES  4

static int slot_used(struct vr_slot *s)
{
	return atomic_load_explicit((_Atomic uint32_t *)&s->state, memory_order_acquire) ==
	       VR_SLOT_USED;
}

/* An operation in flight: its owner is inside a reserve or release, or died
 * there. Such a slot is left to a freezer (who knows what it held only
 * once the others are quiet); holding its liveness byte would make that
 * freezer wait for it as if its owner lived. */
static int slot_busy(struct vr_hdr *h, uint32_t i)
{
	uint32_t ndev = vr_hdr_ndev(h);
	for (uint32_t d = 0; d < ndev; d++)
		if (atomic_load_explicit(vr_slot_word(h, i, d), memory_order_acquire) & VR_W_BUSY)
			return 1;
	return 0;
}

static int slot_lock(int fd, uint32_t i, short type)
{
	struct flock fl = {
	    .l_type = type, .l_whence = SEEK_SET, .l_start = vr_slot_live_byte(i), .l_len = 1};
	return fcntl(fd, F_OFD_SETLK, &fl) == 0 ? 0 : -errno;
}

/* Tries slot i: 1 when it is ours, 0 when not (a live member's, or a dead
 * one's that keeps it), -errno when the lock cannot be asked for. */
static int try_slot(vr_member *m, uint32_t i)
{
	int fd = m->fd;
	struct vr_hdr *h = m->hdr;
	struct vr_slot *s = vr_slot_at(h, i);
	if (slot_used(s) && slot_busy(h, i))
		return 0;
	int rc = slot_lock(fd, i, F_WRLCK);
	if (rc == -EAGAIN || rc == -EACCES)
		return 0; /* a live member's */
	if (rc < 0)
		return rc;
	if (!slot_used(s))
		return 1;
	/* Its owner is dead. Asking NVML whether it is still on the GPU may
	 * take a while: not while holding the byte, which a waiter for the
	 * group's lock would read as its owner's life. */
	uint64_t inc =
	    atomic_load_explicit((_Atomic uint64_t *)&s->incarnation, memory_order_acquire);
	int take = !slot_busy(h, i) && vr_member_gone(s, 0);
	slot_lock(fd, i, F_UNLCK);
	if (!take || vr_dead_on_gpu(m, i, s, inc) || slot_lock(fd, i, F_WRLCK) < 0)
		return 0;
	if (!slot_used(s) || (atomic_load_explicit((_Atomic uint64_t *)&s->incarnation,
	                                           memory_order_acquire) == inc &&
	                      !slot_busy(h, i)))
		return 1;
	slot_lock(fd, i, F_UNLCK); /* taken and left again meanwhile */
	return 0;
}

/* The next never-used slot, from the header's counter: joiners at once each
 * get their own instead of all trying the same ones in turn (each try walks
 * the door's list of locks). Advisory: a counter behind the used range (a
 * fresh group, a joiner that does not count) is moved past it, one out of
 * range is not used; either way the full search below still runs. */
static uint32_t next_fresh(struct vr_hdr *h, uint32_t hw)
{
	_Atomic uint32_t *f = (_Atomic uint32_t *)&h->slot_next;
	uint32_t c = atomic_fetch_add_explicit(f, 1, memory_order_relaxed);
	if (c < hw) {
		uint32_t seen = c + 1;
		atomic_compare_exchange_strong_explicit(f, &seen, hw + 1, memory_order_relaxed,
		                                        memory_order_relaxed);
		c = hw;
	}
	return c;
}

static int claim_slot(vr_member *m)
{
	struct vr_hdr *h = m->hdr;
	uint32_t n = VR_SLOTS; /* never the header's: it may be damaged */
	uint32_t hw = vr_hdr_hw(h), hint = atomic_fetch_add((_Atomic uint32_t *)&h->slot_hint, 1);
	uint32_t start = hw && vr_others_alive(m->fd, n) ? hint % hw : 0;
	uint32_t near = hw < VR_CLAIM_PROBES ? hw : VR_CLAIM_PROBES;
	int rc;
	for (uint32_t k = 0; k < near; k++) {
		uint32_t i = (start + k) % hw;
		if ((rc = try_slot(m, i)) != 0)
			return rc < 0 ? rc : (int)i;
	}
	for (int t = 0; t < VR_FRESH_TRIES; t++) {
		uint32_t i = next_fresh(h, hw);
		if (i >= n)
			break;
		if ((rc = try_slot(m, i)) != 0)
			return rc < 0 ? rc : (int)i;
	}
	/* Every slot: the free ones first (in a full group the one a leaver
	 * just gave back), then all (a dead member's is taken over). Each try
	 * walks the door's list of locks: trying every live member's first
	 * made a join into a group of 1,000 take milliseconds. */
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t k = near; k < n; k++) {
			uint32_t i =
			    k < near + n - hw ? hw + (k - near) : (start + k - (n - hw)) % hw;
			if (pass == 0 && slot_used(vr_slot_at(h, i)))
				continue;
			if ((rc = try_slot(m, i)) != 0)
				return rc < 0 ? rc : (int)i;
		}
	return -EUSERS;
}

/* Checks the arguments and resolves the directory into dirbuf. */
static int check_args(const struct vr_join_opts *opts, vr_member **out, const char **dir,
                      char *dirbuf, size_t dirlen, char *err, size_t errlen)
{
	if (!opts || !out) {
		vr_seterr(err, errlen, "vr_join: missing arguments");
		return -EINVAL;
	}
	if (vr_group_name_check(opts->group, err, errlen) < 0)
		return -EINVAL;
	*dir = opts->dir;
	int rc = vr_dir_or_default(dir, dirbuf, dirlen);
	if (rc < 0)
		vr_seterr(err, errlen, "registry directory path too long");
	return rc;
}

/* How long one hand-over may take before the joiner looks elsewhere (then
 * asks again): a live member answers at once, unless the machine is busy
 * or every member is stopped. With the door's lock held, a shorter look. */
#define VR_HANDOVER_WAIT_NS 1000000000ull
#define VR_HANDOVER_LOOK_NS 100000000ull

/* The sooner of now + ns and end. */
static uint64_t within(uint64_t ns, uint64_t end)
{
	uint64_t t = vr_now_ns() + ns;
	return t < end ? t : end;
}

/*
 * The door of a group whose door's two names were removed while it lives,
 * from its socket: our own read-write open file of it (the descriptor
 * handed over is the server's open file, and liveness locks belong to an
 * open file), checked as any door is. The books come with it in *ho. An fd;
 * -ENOENT when nobody listens on the socket (no such group: a new door may
 * be made); -EBADMSG when something listens but hands over no door of this
 * group before the call's bound (a new door would split the group).
 */
static int door_from_socket(int dfd, const char *dir, const char *group, struct vr_ho_fds *ho)
{
	uint64_t end = vr_wait_deadline(vr_now_ns());
	int rc;
	while ((rc = vr_ho_fetch(dfd, dir, group, vr_owner(), within(VR_HANDOVER_WAIT_NS, end),
	                         ho)) == -ETIMEDOUT &&
	       vr_now_ns() < end)
		;
	if (rc == -ENOENT || rc == -ECONNREFUSED || rc == -ECONNRESET)
		return -ENOENT; /* nobody listens, or the last one just left */
	if (rc < 0)
		return -EBADMSG;
	char path[64];
	struct stat got, want;
	struct vr_hdr hdr;
	const char *why = NULL;
	int fd = -1;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", ho->door);
	if (fstat(ho->door, &want) == 0 && S_ISREG(want.st_mode))
		fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd >= 0 &&
	    (vr_door_validate(fd, group, VR_DOOR_WRITE, &got, &hdr, &why) != 0 ||
	     got.st_dev != want.st_dev || got.st_ino != want.st_ino || hdr.shm_key != ho->key)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0)
		vr_ho_close(ho);
	return fd < 0 ? -EBADMSG : fd;
}

/* Opens the group's door, creating it if there is none. Returns an fd. */
static int open_or_create(const struct vr_join_opts *opts, int dfd, const char *dir,
                          const char *name, struct vr_ho_fds *ho, char *err, size_t errlen)
{
	int fd = -1;
	for (int attempt = 0; attempt < 8 && fd < 0; attempt++) {
		fd = vr_door_open(dfd, dir, opts->group, name, err, errlen);
		/* A door removed under live members comes back: a new one would
		 * start a second group of the same name. */
		if (fd == -ENOENT && vr_door_restore(dfd, opts->group, name) == 1)
			continue;
		/* Both its names removed: the group, if it lives, still answers
		 * on its socket, with its door. */
		if (fd == -ENOENT) {
			int got = door_from_socket(dfd, dir, opts->group, ho);
			if (got >= 0)
				return got;
			if (got == -EBADMSG) {
				vr_seterr(
				    err, errlen,
				    "group %s: its door %s/%s was removed, and its socket hands "
				    "nothing over (its members stopped?): not starting a second "
				    "group of that name",
				    opts->group, dir, name);
				return -EBADMSG;
			}
		}
		if (fd == -ENOENT && opts->existing) {
			vr_seterr(err, errlen, "no group %s in %s", opts->group, dir);
			break;
		}
		if (fd == -ENOENT)
			fd = vr_door_create(dfd, dir, name, opts, err, errlen);
		if (fd < 0 && fd != -EEXIST && fd != -ENOENT)
			break;
	}
	if (fd == -EEXIST || (fd == -ENOENT && !opts->existing))
		vr_seterr(err, errlen, "books %s/%s keeps changing while being opened", dir, name);
	return fd;
}

/* Makes a member of the door fd (no segment, no slot yet). Closes fd on failure. */
static int new_member(int fd, const struct vr_join_opts *opts, vr_member **out, char *err,
                      size_t errlen)
{
	vr_member *m = calloc(1, sizeof(*m));
	/* A mapping of the door that is never touched: it keeps the door's
	 * open file description, hence our liveness lock, alive even if the
	 * program closes our descriptor (it cannot fault: nothing reads it). */
	void *pin = m ? mmap(NULL, VR_DOOR_SIZE, PROT_NONE, MAP_SHARED, fd, 0) : MAP_FAILED;
	if (!m || pin == MAP_FAILED) {
		int e = m ? errno : ENOMEM;
		free(m);
		close(fd);
		vr_seterr(err, errlen, "cannot map the books: %s", strerror(e));
		return -e;
	}
	m->pin = pin;
	m->fd = fd;
	m->books_fd = -1;
	m->notice = opts->notice;
	m->waits = opts->waits != 0;
	struct stat mst;
	if (fstat(fd, &mst) == 0) {
		m->st_dev = mst.st_dev;
		m->st_ino = mst.st_ino;
	}
	*out = m;
	return 0;
}

/* The books handed over in *ho (asked of the group's socket until `end`
 * when it holds none yet), if they are the ones the door names: then they
 * are the member's. 0, the hand-over's negative errno (vr_ho_fetch:
 * -ENOENT or -ECONNREFUSED when nobody listens, -ETIMEDOUT when nobody
 * answered), or -EBADMSG (other books; *ho emptied). */
static int take_handed(vr_member *m, const struct vr_hdr *door, int dfd, const char *dir,
                       const char *group, struct vr_ho_fds *ho, uint64_t end)
{
	int rc = ho->books < 0 ? vr_ho_fetch(dfd, dir, group, vr_owner(), end, ho) : 0;
	if (rc < 0)
		return rc;
	if (ho->key != door->shm_key || !(m->hdr = vr_memfd_map(ho->books, door, 0))) {
		vr_ho_close(ho);
		return -EBADMSG;
	}
	m->books_fd = ho->books;
	ho->books = -1;
	return 0;
}

/* The door's books without its lock: from the socket and, while its live
 * members are slow to answer (a busy machine), through /proc; asked again
 * until `end`, unless nobody listens on the socket. 1 when the member has
 * them. */
static int books_unlocked(vr_member *m, const struct vr_hdr *door, int dfd, const char *dir,
                          const char *group, struct vr_ho_fds *ho, uint64_t end)
{
	for (;;) {
		int rc =
		    take_handed(m, door, dfd, dir, group, ho, within(VR_HANDOVER_WAIT_NS, end));
		if (rc == 0 || (m->hdr = vr_memfd_attach(m->fd, door, 0, &m->books_fd)) != NULL)
			return 1;
		if (rc != -ETIMEDOUT || vr_now_ns() >= end)
			return 0;
	}
}

/* The door's books, with its lock held: through a live member's
 * /proc/PID/fd, else a short look at the socket. Live members that hand
 * nothing over yet (their socket's name was removed: one of them makes it
 * again within VR_SERVE_CHECK_MS) are asked again until `end`. */
static void books_locked(vr_member *m, const struct vr_hdr *door, int dfd, const char *dir,
                         const char *group, struct vr_ho_fds *ho, uint64_t end)
{
	for (;;) {
		if ((m->hdr = vr_memfd_attach(m->fd, door, 0, &m->books_fd)) != NULL ||
		    take_handed(m, door, dfd, dir, group, ho, within(VR_HANDOVER_LOOK_NS, end)) ==
		        0)
			return;
		if (!vr_others_alive(m->fd, VR_SLOTS) || vr_now_ns() >= end)
			return;
		struct timespec ts = {.tv_nsec = 20000000};
		nanosleep(&ts, NULL);
	}
}

/*
 * Attaches the group's books, or makes them when the group has no live
 * member, with the door's lock held so that two joiners never make two.
 * Books that cannot be reached while members are alive (none answers, a
 * segment in another IPC namespace, or the door was overwritten) are
 * refused: making new ones would split the group.
 *
 * The books are first asked of the group's socket without the door's lock
 * (handover.c: any live member answers, in any namespace), and checked
 * (owner, mode, seals, size, header, key, group); the lock only orders
 * makers of new books, which happens only when nobody hands them over.
 * Hundreds of joiners at once then do not queue on the door (its lock is
 * polled, not waited on).
 *
 * Made or taken with the door's lock held, it stays held (m->door_held)
 * until this member's slot says where its descriptor is (take_slot): a
 * joiner that finds no answer on the socket never finds the group's only
 * live members unable to hand the books over through /proc, nor no live
 * member while we are between the two. The maker makes the group's socket
 * too (ho->listen), replacing one an ended group left.
 */
static int attach_segment(vr_member *m, const struct vr_join_opts *opts, int dfd, const char *dir,
                          const char *name, struct vr_ho_fds *ho, char *err, size_t errlen)
{
	struct vr_hdr door;
	struct stat st;
	uint64_t end = vr_wait_deadline(vr_now_ns());
	uint64_t tried = 0; /* the key of books the socket did not hand over */
	int rc;
	for (int attempt = 0;; attempt++) {
		int got = pread(m->fd, &door, sizeof(door), 0) == (ssize_t)sizeof(door);
		/* A System V segment (made where no memfd could be): by its id. */
		if (got && door.shm_id >= 0 && (m->hdr = vr_segment_attach(&door, 0)) != NULL)
			return 0;
		if (got && door.shm_id == VR_SHM_ID_MEMFD && door.shm_key != tried &&
		    books_unlocked(m, &door, dfd, dir, opts->group, ho, end) &&
		    fstat(m->books_fd, &st) == 0) {
			m->books_dev = st.st_dev;
			m->books_ino = st.st_ino;
			return 0;
		}
		tried = door.shm_key;
		rc = vr_door_lock(m->fd, 1);
		if (rc < 0) {
			vr_seterr(err, errlen, "cannot lock books %s/%s: %s", dir, name,
			          strerror(-rc));
			return rc;
		}
		if (pread(m->fd, &door, sizeof(door), 0) != (ssize_t)sizeof(door)) {
			vr_door_lock(m->fd, 0);
			vr_seterr(err, errlen, "books %s/%s: truncated while being opened", dir,
			          name);
			return -EBADMSG;
		}
		/* Books made while we waited for the lock (joiners at once wait
		 * for the first): asked for without it, as everyone's are. */
		if (door.shm_id != VR_SHM_ID_MEMFD || door.shm_key == tried || attempt == 8)
			break;
		vr_door_lock(m->fd, 0);
	}
	if (door.shm_id == VR_SHM_ID_MEMFD)
		books_locked(m, &door, dfd, dir, opts->group, ho, end);
	else if (door.shm_id >= 0)
		m->hdr = vr_segment_attach(&door, 0);
	rc = 0;
	if (!m->hdr) {
		if (vr_others_alive(m->fd, VR_SLOTS)) {
			vr_door_lock(m->fd, 0);
			vr_seterr(
			    err, errlen,
			    "books %s/%s: the group has live members but their books cannot be "
			    "reached (none hands them over: stopped; a segment in another IPC "
			    "namespace; or the door was overwritten)",
			    dir, name);
			return -EBADMSG;
		}
		rc = vr_segment_create(m->fd, opts, &m->hdr, &m->books_fd);
		if (rc < 0)
			vr_seterr(err, errlen, "cannot create the books of %s/%s: %s", dir, name,
			          strerror(-rc));
		/* Without a socket (a path it cannot be bound at) the books are
		 * still handed over through /proc to joiners that can see us. */
		else if (m->books_fd >= 0 && ho->listen < 0)
			ho->listen = vr_ho_listen(dfd, dir, opts->group, 1);
	}
	if (rc == 0 && m->books_fd >= 0 && fstat(m->books_fd, &st) == 0) {
		m->books_dev = st.st_dev;
		m->books_ino = st.st_ino;
		m->door_held = 1;
		return 0;
	}
	vr_door_lock(m->fd, 0);
	return rc;
}

/* Takes a slot and its liveness lock (and, best effort, the PID lock). */
static int take_slot(vr_member *m, const char *group, const char *dir, const char *name, char *err,
                     size_t errlen)
{
	int rc = claim_slot(m);
	if (rc < 0) {
		if (rc == -EUSERS)
			vr_seterr(err, errlen, "group %s is full (%u members)", group, VR_SLOTS);
		else
			vr_seterr(err, errlen, "cannot lock a slot in %s/%s: %s", dir, name,
			          strerror(-rc));
		return rc;
	}
	m->slot_idx = (uint32_t)rc;
	m->slot = vr_slot_at(m->hdr, m->slot_idx);
	m->lock_id = vr_lock_id(m->slot_idx);
	/* Best effort: a classic POSIX lock tells readers our PID in their own
	 * namespace. Liveness never depends on it. */
	struct flock pl = {.l_type = F_WRLCK,
	                   .l_whence = SEEK_SET,
	                   .l_start = vr_slot_pid_byte(m->slot_idx),
	                   .l_len = 1};
	(void)fcntl(m->fd, F_SETLK, &pl);
	/* Books in a memfd: where joiners find our descriptor of them. */
	if (m->books_fd >= 0)
		(void)vr_memfd_publish(m->fd, m->slot_idx, m->books_fd, m->hdr->shm_key);
	return 0;
}

/* The dead members of the group's books before these (struct vr_ghost,
 * layout.h), from the records the door keeps: up to VR_GHOSTS into g.
 * Without the lock (it reads the door). */
static int find_ghosts(vr_member *m, struct vr_ghost *g)
{
	struct stat st;
	if (fstat(m->fd, &st) != 0 || st.st_size <= (off_t)VR_DOOR_SIZE)
		return 0;
	uint64_t last = ((uint64_t)st.st_size - VR_DOOR_SIZE) / VR_LIVE_STRIDE + 1;
	int n = 0;
	for (uint32_t i = 0; i < last && i < VR_SLOTS && n < VR_GHOSTS; i++) {
		struct vr_member_ref r;
		/* Our own slot's too: its record is still its last owner's. */
		if (pread(m->fd, &r, sizeof(r), vr_slot_member_byte(i)) != (ssize_t)sizeof(r) ||
		    r.tag != VR_MEMBER_REF_TAG || r.host_pid <= 0 || r.key == m->hdr->shm_key ||
		    vr_slot_alive(m->fd, i) != 0 || vr_proc_exists(NULL, r.host_pid))
			continue;
		g[n].host_pid = r.host_pid;
		g[n].start_time = r.start_time;
		n++;
	}
	return n;
}

/* This member in the door, for a joiner after the books are gone. */
static void write_member_ref(vr_member *m, const struct proc_info *pi)
{
	struct vr_member_ref r = {.tag = VR_MEMBER_REF_TAG,
	                          .host_pid = pi->nspid_outer ? pi->nspid_outer : (int32_t)getpid(),
	                          .start_time = pi->start_time,
	                          .key = m->hdr->shm_key};
	(void)!pwrite(m->fd, &r, sizeof(r), vr_slot_member_byte(m->slot_idx));
}

/* A group lives as long as it has live members: whoever finds it empty
 * starts it afresh, so an earlier run's caps never apply; its dead members
 * that may still be on the card (ghosts) are kept. Lock held. */
static void start_group_locked(vr_member *m, const struct vr_join_opts *opts,
                               const struct vr_ghost *ghosts, int nghosts)
{
	struct vr_hdr *h = m->hdr;
	memset(h->ghosts, 0, sizeof(h->ghosts));
	memcpy(h->ghosts, ghosts, (size_t)nghosts * sizeof(*ghosts));
	/* Whatever the slots say, nobody else is alive: free them all, and
	 * clear every slot's numbers on the devices the group had (it starts
	 * with none; a device is added only over zeros). */
	uint32_t hw = vr_hdr_hw(h), ndev = vr_hdr_ndev(h);
	for (uint32_t i = 0; i < hw; i++) {
		struct vr_slot *o = vr_slot_at(h, i);
		if (i != m->slot_idx && o->state != VR_SLOT_FREE) {
			STORE32(&o->state, VR_SLOT_FREE);
			STORE64(&o->incarnation, o->incarnation + 1);
		}
	}
	for (uint32_t d = 0; d < ndev; d++)
		for (uint32_t i = 0; i < hw; i++)
			vr_counts_clear(vr_counts_at(h, i, d));
	/* The slots in use start again from ours (joiners claim from 0 when
	 * nobody is alive), and so does the hint. */
	STORE32(&h->slots_hw, m->slot_idx + 1);
	STORE32(&h->slot_hint, m->slot_idx + 1);
	STORE32(&h->slot_next, m->slot_idx + 1);
	h->ndev = 0;
	memset(h->dev, 0, sizeof(h->dev));
	h->spilled = 0;
	memset(vr_changes_at(h), 0, sizeof(struct vr_changes));
	h->spill_budget = opts->spill_budget;
	/* Nobody waits and nobody is parked in a group starting afresh. */
	memset(&h->wait, 0, sizeof(h->wait));
	h->wait.park_budget = opts->park_budget;
	h->growth = opts->growth ? 1 : 0;
	h->created = (uint64_t)time(NULL);
	/* Cut to the field, as every joiner cuts its own to compare. */
	snprintf(h->limit_spec, sizeof(h->limit_spec), "%s",
	         opts->limit_spec ? opts->limit_spec : "");
	h->epoch++;
}

/* Writes this process into its slot and marks it USED. Lock held, books open. */
static void fill_slot_locked(vr_member *m, const struct vr_join_opts *opts,
                             const struct proc_info *pi)
{
	struct vr_hdr *h = m->hdr;
	struct vr_slot *s = m->slot;
	uint64_t inc = s->incarnation + 1;
	STORE64(&s->incarnation, inc);
	/* Everything but state and incarnation, which others read unlocked. */
	memset((char *)s + offsetof(struct vr_slot, pid), 0,
	       offsetof(struct vr_slot, incarnation) - offsetof(struct vr_slot, pid));
	memset((char *)s + offsetof(struct vr_slot, start_time), 0,
	       sizeof(*s) - offsetof(struct vr_slot, start_time));
	/* Its numbers on the group's devices (0 on the others: layout.h). */
	for (uint32_t d = 0; d < vr_hdr_ndev(h); d++)
		vr_counts_clear(vr_counts_at(h, m->slot_idx, d));
	s->pid = (int32_t)getpid();
	s->start_time = pi->start_time;
	s->nspid_outer = pi->nspid_outer;
	s->uid = pi->uid;
	s->ipc_ns = pi->ipc_ns;
	s->joined = (uint64_t)time(NULL);
	s->growth = opts->growth ? 1 : 0;
	s->flags = opts->launcher ? VR_SLOT_F_LAUNCHER : 0;
	memcpy(s->command, pi->command, sizeof(s->command));
	vr_ident_put(h, m->slot_idx, &pi->ident, s->pid, s->start_time);
	atomic_store_explicit((_Atomic uint32_t *)&s->state, VR_SLOT_USED, memory_order_release);
	if (h->slots_hw <= m->slot_idx)
		atomic_store_explicit((_Atomic uint32_t *)&h->slots_hw, m->slot_idx + 1,
		                      memory_order_release);
	m->incarnation = inc;
}

/* Under the group's lock: starts the group afresh or checks it, and enters
 * this process in its slot. A group with live members is never started
 * afresh, and is not joined when its books are damaged. */
static int enter_group(vr_member *m, const struct vr_join_opts *opts, const struct proc_info *pi,
                       int *spec_differs, const char *dir, const char *name, char *err,
                       size_t errlen)
{
	/* No live member: a dead one whose memory NVML still lists (the
	 * driver tearing it down) keeps the books, found before the lock
	 * (NVML may be asked) and checked again under it; the dead members
	 * of books gone before these are found in the door. */
	uint64_t held_inc = 0;
	uint32_t held = 0;
	struct vr_ghost ghosts[VR_GHOSTS];
	int nghosts = 0;
	if (!vr_others_alive(m->fd, m->slot_idx)) {
		held = vr_dead_held(m, &held_inc);
		nghosts = find_ghosts(m, ghosts);
	}
	struct vr_hdr *h = m->hdr;
	/* The audit below reads every slot: their pages are mapped before the
	 * lock is taken, not one fault at a time while others wait for it. */
	vr_segment_prefault(h, m->slot_idx + 1, 1);
	int rc = vr_group_lock(m);
	if (rc < 0) {
		vr_seterr(err, errlen, "cannot lock books %s/%s: %s (held by a live member)", dir,
		          name, strerror(-rc));
		return rc;
	}
	int live_other = vr_others_alive(m->fd, m->slot_idx) || vr_unreaped_others(h, m->slot_idx);
	struct vr_slot *hs = held ? vr_slot_at(h, held - 1) : NULL;
	int keep = live_other ||
	           (hs && !opts->fresh && hs->state == VR_SLOT_USED && hs->incarnation == held_inc);
	const char *bad = NULL;
	if (!live_other && opts->existing) {
		rc = -ESRCH;
		vr_seterr(err, errlen, "group %s has no live member", opts->group);
	} else if (live_other && opts->fresh) {
		rc = -EEXIST;
		vr_seterr(err, errlen,
		          "group %s is in use by a live process; a new run needs a new name",
		          opts->group);
	} else if (keep) {
		/* The group's budget is the one we join under (the audit checks
		 * the books against it). */
		m->spill_budget = h->spill_budget;
		/* Our slot's previous owner is gone (we hold its byte). */
		bad = vr_audit_locked(m);
		if (!bad && m->slot->state == VR_SLOT_USED &&
		    vr_slot_reclaim_locked(m, m->slot_idx) != 0)
			bad = "a dead member's slot holds more than the group's total";
		if (bad) {
			rc = -EBADMSG;
			vr_seterr(err, errlen,
			          "books %s/%s: the books of group %s are damaged (%s) and it has "
			          "live members: not joining them",
			          dir, name, opts->group, bad);
		} else if (spec_differs) {
			char mine[VR_SPEC_MAX], theirs[VR_SPEC_MAX];
			/* Compared as stored (truncated alike), as amounts: "5G" is
			 * the cap "5120M" asks for. */
			snprintf(mine, sizeof(mine), "%s",
			         opts->limit_spec ? opts->limit_spec : "");
			snprintf(theirs, sizeof(theirs), "%.*s", (int)sizeof(theirs) - 1,
			         h->limit_spec);
			*spec_differs = !vr_limits_same(theirs, mine);
		}
	}
	if (rc == 0) {
		vr_seq_begin(h);
		if (!keep)
			start_group_locked(m, opts, ghosts, nghosts);
		fill_slot_locked(m, opts, pi);
		m->spill_budget = h->spill_budget;
		vr_seq_end(h);
	}
	vr_group_unlock(m);
	return rc;
}

static void drop_member(vr_member *m)
{
	vr_segment_detach(m->hdr);
	if (m->books_fd >= 0)
		close(m->books_fd);
	munmap(m->pin, VR_DOOR_SIZE);
	close(m->fd); /* drops our slot's locks */
	free(m);
}

static int join_call(const struct vr_join_opts *opts, const char *dir, const char *name,
                     vr_member **out, int *spec_differs, char *err, size_t errlen);

int vr_join(const struct vr_join_opts *opts, vr_member **out, int *spec_differs, char *err,
            size_t errlen)
{
	static pthread_once_t test_env_once = PTHREAD_ONCE_INIT;
	char dirbuf[PATH_MAX];
	char name[VR_GROUP_NAME_MAX + 8]; /* <group>.vrg */
	const char *dir = NULL;
	vr_member *m = NULL;

	if (err && errlen)
		err[0] = '\0';
	if (spec_differs)
		*spec_differs = 0;
	int rc = check_args(opts, out, &dir, dirbuf, sizeof(dirbuf), err, errlen);
	if (rc < 0)
		return rc;
	pthread_once(&test_env_once, vr_read_test_env);
	snprintf(name, sizeof(name), "%s.vrg", opts->group);
	uint64_t call = vr_call_begin(); /* all its waits share one bound */
	int as_owner = opts->as_owner && geteuid() == 0 && opts->owner != 0;
	vr_owner_set(as_owner, opts->owner);
	rc = join_call(opts, dir, name, &m, spec_differs, err, errlen);
	vr_owner_set(0, 0);
	vr_call_end(call);
	if (rc == 0)
		*out = m;
	return rc;
}

/* Starts this member's thread answering on the group's socket (serve.c),
 * with the listening socket handed over or made (ho->listen; without one
 * the thread looks for the group's socket, or makes it). Best effort: a
 * member that cannot start one still holds its cap; the others answer. */
static void start_serving(vr_member *m, const struct vr_join_opts *opts, int dfd, const char *dir,
                          const char *name, const struct vr_ho_fds *ho)
{
	struct vr_serve_args a = {.books = m->books_fd,
	                          .door = m->fd,
	                          .door_name = name,
	                          .listen = ho->listen,
	                          .dfd = dfd,
	                          .dir = dir,
	                          .group = opts->group,
	                          .key = m->hdr->shm_key,
	                          .notice = opts->notice};
	if (m->books_fd >= 0)
		(void)vr_serve_start(&m->serve, &a);
}

static int join_call(const struct vr_join_opts *opts, const char *dir, const char *name,
                     vr_member **out, int *spec_differs, char *err, size_t errlen)
{
	vr_member *m = NULL;
	/* What the group's socket handed over, until the member takes it. */
	struct vr_ho_fds ho = {.books = -1, .door = -1, .listen = -1};
	int dfd = vr_open_registry_dir(dir, 1, err, errlen);
	if (dfd < 0)
		return dfd;
	int rc = open_or_create(opts, dfd, dir, name, &ho, err, errlen);
	if (rc >= 0)
		rc = new_member(rc, opts, &m, err, errlen);
	struct proc_info pi;
	read_proc_info(&pi);
	if (rc == 0)
		rc = attach_segment(m, opts, dfd, dir, name, &ho, err, errlen);
	if (rc == 0)
		rc = take_slot(m, opts->group, dir, name, err, errlen);
	if (m && m->door_held) {
		vr_door_lock(m->fd, 0);
		m->door_held = 0;
	}
	if (rc == 0)
		rc = enter_group(m, opts, &pi, spec_differs, dir, name, err, errlen);
	if (rc < 0) {
		if (m)
			drop_member(m);
		vr_ho_close(&ho);
		close(dfd);
		return rc;
	}
	write_member_ref(m, &pi);
	/* Dead members are given back whenever someone joins, not only before
	 * a denial: their records do not pile up in a group nobody is refused.
	 * A join looks at the members after its own slot (joiners' slots
	 * rotate, so the joins together look at all); a denial at all. */
	vr_reclaim_near(m);
	if (opts->lanes)
		vr_lanes_attach(m);
	start_serving(m, opts, dfd, dir, name, &ho);
	vr_ho_close(&ho);
	close(dfd);
	*out = m;
	return 0;
}

void vr_leave(vr_member *m)
{
	if (!m)
		return;
	/* A detached member never writes into the books again: its slot is
	 * reclaimed (or found damaged) by the others once it is gone. */
	/* Our thread answers no more (it closes its own descriptors). */
	vr_serve_stop(m->serve);
	m->serve = NULL;
	uint64_t call = vr_call_begin();
	if (!atomic_load(&m->detached) && vr_group_lock(m) == 0) {
		if (m->slot->state == VR_SLOT_USED && m->slot->incarnation == m->incarnation)
			(void)vr_slot_reclaim_locked(m, m->slot_idx);
		vr_group_unlock(m);
	}
	vr_call_end(call);
	vr_forget(m);
}

void vr_forget(vr_member *m)
{
	if (!m)
		return;
	/* After a fork the open file description, and with it the OFD lock,
	 * stays the parent's: closing our copy of the fd releases nothing of
	 * it. At vr_leave it is ours and goes with the fd and the pin. */
	vr_lanes_detach(m);
	/* A fork child has no such thread: its copies of the thread's
	 * descriptors go. */
	vr_serve_forget(m->serve);
	int ours = vr_fd_is_ours(m);
	/* Our descriptor of books in a memfd: not left open in a child that
	 * forgets its parent's membership (nor, if the program closed it and
	 * the number is another file's now, closed). */
	struct stat bst;
	if (m->books_fd >= 0 && fstat(m->books_fd, &bst) == 0 && bst.st_dev == m->books_dev &&
	    bst.st_ino == m->books_ino)
		close(m->books_fd);
	vr_segment_detach(m->hdr);
	munmap(m->pin, VR_DOOR_SIZE);
	if (ours)
		close(m->fd);
	free(m);
}
