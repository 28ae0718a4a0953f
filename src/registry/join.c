/*
 * join.c - joining a group's region and leaving it.
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

#include "registry/member.h"
#include "registry/proc.h"
#include "registry/util.h"

/* ---- this process's identity, recorded in its slot for display */

struct proc_info {
	uint64_t start_time;
	int32_t nspid_outer;
	char command[VR_COMMAND_MAX];
};

static void read_proc_info(struct proc_info *p)
{
	struct vr_proc_status ps;
	memset(p, 0, sizeof(*p));
	(void)vr_proc_start_time(NULL, 0, &p->start_time);
	vr_proc_cmdline(NULL, 0, 0, p->command, sizeof(p->command));
	if (vr_proc_status(NULL, 0, &ps) == 0 && (ps.have & VR_PROC_NSPID))
		p->nspid_outer = (int32_t)ps.nspid_outer;
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

/* Checks the arguments and resolves the directory into dirbuf. */
static int check_args(const struct vr_join_opts *opts, vr_member **out, const char **dir,
                      char *dirbuf, size_t dirlen, char *err, size_t errlen)
{
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
	*dir = opts->dir;
	int rc = vr_dir_or_default(dir, dirbuf, dirlen);
	if (rc < 0)
		vr_seterr(err, errlen, "registry directory path too long");
	return rc;
}

/* Opens the group's region, creating it if there is none. Returns an fd. */
static int open_or_create(const struct vr_join_opts *opts, const char *dir, const char *name,
                          char *err, size_t errlen)
{
	int dfd = vr_open_registry_dir(dir, 1, err, errlen);
	if (dfd < 0)
		return dfd;
	int fd = -1;
	for (int attempt = 0; attempt < 8 && fd < 0; attempt++) {
		fd = vr_region_open(dfd, dir, opts->group, name, err, errlen);
		if (fd == -ENOENT)
			fd = vr_region_create(dfd, dir, name, opts, err, errlen);
		if (fd < 0 && fd != -EEXIST && fd != -ENOENT)
			break;
	}
	close(dfd);
	if (fd == -EEXIST || fd == -ENOENT)
		vr_seterr(err, errlen, "region %s/%s keeps changing while being opened", dir, name);
	return fd;
}

/* Maps the region and makes a member of it (no slot yet). Closes fd on failure. */
static int map_member(int fd, const char *dir, const char *name, vr_member **out, char *err,
                      size_t errlen)
{
	void *map = mmap(NULL, VR_REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		int rc = -errno;
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
	*out = m;
	return 0;
}

/* Takes a slot and its liveness lock (and, best effort, the PID lock). */
static int take_slot(vr_member *m, const char *group, const char *dir, const char *name, char *err,
                     size_t errlen)
{
	int rc = claim_slot(m->fd, m->hdr);
	if (rc < 0) {
		if (rc == -EUSERS)
			vr_seterr(err, errlen, "group %s is full (%u members)", group,
			          VR_REGION_SLOTS);
		else
			vr_seterr(err, errlen, "cannot lock a slot in %s/%s: %s", dir, name,
			          strerror(-rc));
		return rc;
	}
	m->slot_idx = (uint32_t)rc;
	m->slot = vr_region_slot(m->hdr, m->slot_idx);
	/* Best effort: a classic POSIX lock tells readers our PID in their own
	 * namespace. Liveness never depends on it. */
	struct flock pl = {.l_type = F_WRLCK,
	                   .l_whence = SEEK_SET,
	                   .l_start = vr_slot_pid_byte(m->slot_idx),
	                   .l_len = 1};
	(void)fcntl(m->fd, F_SETLK, &pl);
	return 0;
}

/* 1 if another member is alive; dead ones met on the way are reclaimed.
 * Lock held, books open. */
static int live_others_locked(vr_member *m)
{
	struct vr_region_hdr *h = m->hdr;
	for (uint32_t i = 0; i < h->slots_hw; i++) {
		struct vr_slot *o = vr_region_slot(h, i);
		if (i == m->slot_idx || o->state != VR_SLOT_USED)
			continue;
		if (vr_slot_alive(m->fd, i) != 0)
			return 1; /* alive, or cannot tell: assume alive */
		vr_slot_reclaim_locked(h, o);
	}
	return 0;
}

/* A group lives as long as it has live members: whoever finds it empty
 * starts it afresh, so an earlier run's caps never apply. Lock held. */
static void start_group_locked(struct vr_region_hdr *h, const struct vr_join_opts *opts)
{
	h->ndev = 0;
	memset(h->dev, 0, sizeof(h->dev));
	h->growth = opts->growth ? 1 : 0;
	h->created = (uint64_t)time(NULL);
	vr_strlcpy(h->limit_spec, opts->limit_spec ? opts->limit_spec : "", sizeof(h->limit_spec));
	h->epoch++;
}

/* Writes this process into its slot and marks it USED. Lock held, books open. */
static void fill_slot_locked(vr_member *m, const struct vr_join_opts *opts,
                             const struct proc_info *pi)
{
	struct vr_region_hdr *h = m->hdr;
	struct vr_slot *s = m->slot;
	uint64_t inc = s->incarnation + 1;
	STORE64(&s->incarnation, inc);
	/* Everything but state and incarnation, which others read unlocked. */
	memset((char *)s + offsetof(struct vr_slot, pid), 0,
	       offsetof(struct vr_slot, incarnation) - offsetof(struct vr_slot, pid));
	memset((char *)s + offsetof(struct vr_slot, start_time), 0,
	       sizeof(*s) - offsetof(struct vr_slot, start_time));
	s->pid = (int32_t)getpid();
	s->start_time = pi->start_time;
	s->nspid_outer = pi->nspid_outer;
	s->uid = (uint32_t)getuid();
	s->joined = (uint64_t)time(NULL);
	s->growth = opts->growth ? 1 : 0;
	memcpy(s->command, pi->command, sizeof(s->command));
	atomic_store_explicit((_Atomic uint32_t *)&s->state, VR_SLOT_USED, memory_order_release);
	if (h->slots_hw <= m->slot_idx)
		atomic_store_explicit((_Atomic uint32_t *)&h->slots_hw, m->slot_idx + 1,
		                      memory_order_release);
	m->incarnation = inc;
}

/* Under the group's lock: starts the group afresh or checks it, and enters
 * this process in its slot. */
static int enter_group(vr_member *m, const struct vr_join_opts *opts, const struct proc_info *pi,
                       int *spec_differs, const char *dir, const char *name, char *err,
                       size_t errlen)
{
	struct vr_region_hdr *h = m->hdr;
	int rc = vr_region_lock(m);
	if (rc < 0) {
		vr_seterr(err, errlen, "cannot lock region %s/%s: %s", dir, name, strerror(-rc));
		return rc;
	}
	books_begin(h);
	if (m->slot->state == VR_SLOT_USED) /* we hold its byte: its owner is gone */
		vr_slot_reclaim_locked(h, m->slot);
	int live_other = live_others_locked(m);
	if (live_other && opts->fresh) {
		books_end(h);
		vr_region_unlock(m);
		vr_seterr(err, errlen,
		          "group %s is in use by a live process; a new run needs a new name",
		          opts->group);
		return -EEXIST;
	}
	if (!live_other) {
		start_group_locked(h, opts);
	} else if (spec_differs) {
		char mine[VR_SPEC_MAX]; /* compared as stored: truncated alike */
		vr_strlcpy(mine, opts->limit_spec ? opts->limit_spec : "", sizeof(mine));
		*spec_differs = strcmp(h->limit_spec, mine) != 0;
	}
	fill_slot_locked(m, opts, pi);
	books_end(h);
	vr_region_unlock(m);
	return 0;
}

static void drop_member(vr_member *m)
{
	munmap(m->hdr, VR_REGION_SIZE);
	close(m->fd); /* drops our slot's locks */
	free(m);
}

int vr_join(const struct vr_join_opts *opts, vr_member **out, int *spec_differs, char *err,
            size_t errlen)
{
	static pthread_once_t test_env_once = PTHREAD_ONCE_INIT;
	char dirbuf[PATH_MAX];
	char name[VR_GROUP_MAX + 8];
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

	int fd = open_or_create(opts, dir, name, err, errlen);
	if (fd < 0)
		return fd;
	rc = map_member(fd, dir, name, &m, err, errlen);
	if (rc < 0)
		return rc;
	struct proc_info pi;
	read_proc_info(&pi);
	rc = take_slot(m, opts->group, dir, name, err, errlen);
	if (rc == 0)
		rc = enter_group(m, opts, &pi, spec_differs, dir, name, err, errlen);
	if (rc < 0) {
		drop_member(m);
		return rc;
	}
	*out = m;
	return 0;
}

void vr_leave(vr_member *m)
{
	if (!m)
		return;
	struct vr_region_hdr *h = m->hdr;
	if (vr_region_lock(m) == 0) {
		if (m->slot->state == VR_SLOT_USED && m->slot->incarnation == m->incarnation) {
			books_begin(h);
			vr_slot_reclaim_locked(h, m->slot);
			books_end(h);
		}
		vr_region_unlock(m);
	}
	int ours = vr_fd_is_ours(m);
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
	int ours = vr_fd_is_ours(m);
	munmap(m->hdr, VR_REGION_SIZE);
	if (ours)
		close(m->fd);
	free(m);
}
