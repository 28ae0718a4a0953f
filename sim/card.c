/*
 * card.c - the shared state of one simulated card: a small file per card in
 * the state directory, mmap'd by every process that uses the card. See sim.h
 * for the layout and the liveness rule (an OFD lock per slot, dropped by the
 * kernel when its owner dies), and for the history of usage each slot keeps
 * for NVML's lag.
 */
#include "sim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int ofd_lock(int fd, int type, off_t start, int wait)
{
	struct flock fl;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = (short)type;
	fl.l_whence = SEEK_SET;
	fl.l_start = start;
	fl.l_len = 1;
	for (;;) {
		if (fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl) == 0)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

/* The state directory: ours (0700), or one every user shares (sticky and
 * writable by all, as /tmp: a real card is shared by every user's
 * processes). *shared tells which. */
static int ensure_dir(const char *dir, int *shared)
{
	struct stat st;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return -1;
	if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return -1;
	*shared = (st.st_mode & 01777) == 01777;
	if (st.st_uid != getuid() && st.st_uid != geteuid() && !*shared) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

/* A card file: in a shared directory readable and writable by every user
 * (made 0666 by whoever creates it; opened without O_CREAT first, as
 * fs.protected_regular wants for another user's file there). */
static int open_card(const char *path, int shared)
{
	if (!shared)
		return open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 || errno != ENOENT)
		return fd;
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0)
		fchmod(fd, 0666);
	else if (errno == EEXIST)
		fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	return fd;
}

/* With the card locked: is slot i owned by a live process other than us? */
static int slot_live(struct sim_card *c, int i)
{
	struct flock fl;
	if (!c->file->slots[i].in_use)
		return 0;
	if (i == c->slot)
		return 1;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = SIM_SLOT_LOCK_BASE + i;
	fl.l_len = 1;
	if (fcntl(c->fd, F_OFD_GETLK, &fl) != 0)
		return 1; /* cannot tell: count it, never free someone's memory */
	return fl.l_type != F_UNLCK;
}

/*
 * With the card file locked and mapped: a new (or foreign) file is
 * initialised for the card dev; a known one takes dev's size unless a live
 * process uses it.
 */
static void adopt_file(struct sim_card *c, const struct sim_dev_cfg *dev)
{
	if (c->file->magic != SIM_CARD_MAGIC || c->file->version != SIM_CARD_VERSION ||
	    c->file->size != sizeof(struct sim_card_file)) {
		/* New (or foreign) file: initialise it under the lock. */
		memset(c->file, 0, sizeof(*c->file));
		c->file->version = SIM_CARD_VERSION;
		c->file->size = sizeof(struct sim_card_file);
		c->file->total = dev->total;
		snprintf(c->file->uuid, sizeof(c->file->uuid), "%s", dev->uuid_str);
		c->file->magic = SIM_CARD_MAGIC;
	} else if (c->file->total != dev->total) {
		/* A card in use keeps its size; an idle one takes the new one. */
		int busy = 0;
		for (int i = 0; i < SIM_MAX_SLOTS; i++)
			busy |= slot_live(c, i);
		if (busy)
			sim_warn("card %s is in use with %llu bytes; keeping that size",
			         dev->uuid_str, (unsigned long long)c->file->total);
		else
			c->file->total = dev->total;
	}
}

int sim_card_open(struct sim_card *c, int phys)
{
	const struct sim_config *cfg = sim_config();
	char path[700];
	struct stat st;
	void *map;
	int fd;

	int shared = 0;
	c->fd = -1;
	c->file = NULL;
	c->slot = -1;
	if (ensure_dir(cfg->state_dir, &shared) != 0) {
		sim_warn("cannot use state directory %s: %s", cfg->state_dir, strerror(errno));
		return -1;
	}
	snprintf(path, sizeof(path), "%s/card-%s", cfg->state_dir, cfg->dev[phys].uuid_str);
	fd = open_card(path, shared);
	if (fd < 0) {
		sim_warn("cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	if (ofd_lock(fd, F_WRLCK, 0, 1) != 0 || fstat(fd, &st) != 0) {
		sim_warn("cannot lock %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (st.st_size != (off_t)sizeof(struct sim_card_file) &&
	    ftruncate(fd, sizeof(struct sim_card_file)) != 0) {
		sim_warn("cannot size %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	map = mmap(NULL, sizeof(struct sim_card_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		sim_warn("cannot map %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	c->file = map;
	c->fd = fd;
	adopt_file(c, &cfg->dev[phys]);
	ofd_lock(fd, F_UNLCK, 0, 0);
	return 0;
}

void sim_card_close(struct sim_card *c)
{
	if (c->file)
		munmap(c->file, sizeof(struct sim_card_file));
	if (c->fd >= 0)
		close(c->fd);
	c->file = NULL;
	c->fd = -1;
	c->slot = -1;
}

void sim_card_lock(struct sim_card *c)
{
	pthread_mutex_lock(&c->mu);
	ofd_lock(c->fd, F_WRLCK, 0, 1);
}

void sim_card_unlock(struct sim_card *c)
{
	ofd_lock(c->fd, F_UNLCK, 0, 0);
	pthread_mutex_unlock(&c->mu);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int sim_card_slot_present(struct sim_card *c, int i)
{
	struct sim_slot *s = &c->file->slots[i];
	if (!s->in_use)
		return 0;
	if (slot_live(c, i)) {
		s->dead_since = 0;
		return 1;
	}
	if (!s->teardown_ms)
		return 0;
	uint64_t now = now_ns();
	if (!s->dead_since)
		s->dead_since = now;
	return now - s->dead_since < (uint64_t)s->teardown_ms * 1000000ull;
}

uint64_t sim_card_used(struct sim_card *c, int reap)
{
	uint64_t sum = 0;
	for (int i = 0; i < SIM_MAX_SLOTS; i++) {
		struct sim_slot *s = &c->file->slots[i];
		if (!s->in_use)
			continue;
		if (!sim_card_slot_present(c, i)) {
			if (reap) {
				s->in_use = 0;
				s->used = 0;
				s->pid = 0;
				s->dead_since = 0;
			}
			continue;
		}
		sum += s->used;
	}
	return sum;
}

/*
 * The PID real NVML would list: the kernel's PID in the host's namespace,
 * not getpid() inside a container. /proc/self/status's NSpid starts with the
 * PID in the namespace of the /proc that is mounted; where that is the host's
 * (a PID namespace without its own /proc, as the tests make), it is the host
 * PID. Elsewhere getpid() is the best a process can know.
 */
static int32_t nvml_pid(void)
{
	char buf[4096];
	int32_t pid = (int32_t)getpid();
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return pid;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return pid;
	buf[n] = '\0';
	const char *p = strstr(buf, "\nNSpid:");
	if (p) {
		long v = strtol(p + 8, NULL, 10);
		if (v > 0 && v <= INT32_MAX)
			pid = (int32_t)v;
	}
	return pid;
}

/* With the card locked: slot i's usage changed now. */
static void record(struct sim_slot *s)
{
	struct sim_sample *e = &s->hist[s->hist_n % SIM_SLOT_HIST];
	e->t = now_ns();
	e->used = s->used;
	s->hist_n++;
}

uint64_t sim_card_slot_used_at(struct sim_card *c, int i, uint32_t lag_ms)
{
	const struct sim_slot *s = &c->file->slots[i];
	uint64_t now = now_ns(), lag = (uint64_t)lag_ms * 1000000ull;
	if (lag == 0)
		return s->used;
	uint64_t then = now > lag ? now - lag : 0;
	if (s->since > then)
		return 0;
	uint32_t kept = s->hist_n < SIM_SLOT_HIST ? s->hist_n : SIM_SLOT_HIST;
	for (uint32_t k = 1; k <= kept; k++) {
		const struct sim_sample *e = &s->hist[(s->hist_n - k) % SIM_SLOT_HIST];
		if (e->t <= then)
			return e->used;
	}
	/* Older than every change remembered: 0 if none was forgotten. */
	return s->hist_n > SIM_SLOT_HIST ? s->hist[s->hist_n % SIM_SLOT_HIST].used : 0;
}

int sim_cgroup_within(const char *cg, const char *top)
{
	size_t n = strlen(top);
	if (!cg[0])
		return 0;
	if (!strcmp(top, "/"))
		return 1;
	return strncmp(cg, top, n) == 0 && (cg[n] == '\0' || cg[n] == '/');
}

uint64_t sim_card_cgroup_used(struct sim_card *c, const char *top)
{
	uint64_t sum = 0;
	for (int i = 0; i < SIM_MAX_SLOTS; i++)
		if (sim_card_slot_present(c, i) && sim_cgroup_within(c->file->slots[i].cgroup, top))
			sum += c->file->slots[i].used;
	return sum;
}

void sim_limit_room(struct sim_card *c, const char *cg, uint64_t *limit, uint64_t *room)
{
	*limit = *room = UINT64_MAX;
	if (!sim_limits_supported())
		return;
	for (int i = 0; i < SIM_MAX_LIMITS; i++) {
		const struct sim_limit *l = &c->file->limits[i];
		if (!l->in_use || !sim_cgroup_within(cg, l->path))
			continue;
		uint64_t used = sim_card_cgroup_used(c, l->path);
		uint64_t left = used >= l->hard ? 0 : l->hard - used;
		if (l->hard < *limit)
			*limit = l->hard;
		if (left < *room)
			*room = left;
	}
}

static int claim_slot(struct sim_card *c, int32_t pid, const char *cgroup)
{
	for (int i = 0; i < SIM_MAX_SLOTS; i++) {
		/* A dead owner's slot is taken only once its teardown is over. */
		if (sim_card_slot_present(c, i))
			continue;
		if (ofd_lock(c->fd, F_WRLCK, SIM_SLOT_LOCK_BASE + i, 0) != 0)
			continue;
		c->file->slots[i].pid = pid;
		c->file->slots[i].used = 0;
		c->file->slots[i].teardown_ms = sim_config()->teardown_ms;
		c->file->slots[i].dead_since = 0;
		c->file->slots[i].hist_n = 0;
		c->file->slots[i].since = now_ns();
		snprintf(c->file->slots[i].cgroup, sizeof(c->file->slots[i].cgroup), "%s", cgroup);
		c->file->slots[i].in_use = 1;
		c->slot = i;
		return 0;
	}
	return -1;
}

int sim_card_charge(struct sim_card *c, int64_t delta, int force)
{
	int rc = 0;
	int32_t pid = c->slot < 0 ? nvml_pid() : 0; /* outside the lock */
	char cgroup[SIM_CGROUP_LEN] = "";
	if (c->slot < 0)
		sim_cgroup_self(cgroup, sizeof(cgroup));
	sim_card_lock(c);
	if (c->slot < 0 && claim_slot(c, pid ? pid : (int32_t)getpid(), cgroup) != 0) {
		sim_warn("card %s: no free process slot", c->file->uuid);
		rc = -1;
	} else if (delta > 0) {
		uint64_t used = sim_card_used(c, 1);
		uint64_t limit, room;
		sim_limit_room(c, c->file->slots[c->slot].cgroup, &limit, &room);
		if (!force && (used > c->file->total || (uint64_t)delta > c->file->total - used ||
		               (uint64_t)delta > room))
			rc = -1;
		else
			c->file->slots[c->slot].used += (uint64_t)delta;
	} else {
		uint64_t *u = &c->file->slots[c->slot].used;
		*u = (uint64_t)-delta > *u ? 0 : *u - (uint64_t)-delta;
	}
	if (rc == 0 && delta != 0)
		record(&c->file->slots[c->slot]);
	sim_card_unlock(c);
	return rc;
}

void sim_card_release_slot(struct sim_card *c)
{
	sim_card_lock(c);
	if (c->slot >= 0 && c->file->slots[c->slot].used == 0) {
		c->file->slots[c->slot].in_use = 0;
		c->file->slots[c->slot].pid = 0;
		ofd_lock(c->fd, F_UNLCK, SIM_SLOT_LOCK_BASE + c->slot, 0);
		c->slot = -1;
	}
	sim_card_unlock(c);
}
