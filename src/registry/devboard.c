/*
 * devboard.c - the borrow board (devboard.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include "registry/devboard.h"
#include "registry/devdoor.h"
#include "registry/util.h"

/* Regions a process tries before it gives up: another's lock starting at
 * a region's start is a borrower there (or someone's lock). */
#define CLAIM_TRIES 8

static int setlk(int fd, short type, long long start, long long len)
{
	struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
	return fcntl(fd, F_OFD_SETLK, &fl) == 0 ? 0 : -errno;
}

/* The first lock (of another open file description) over [start, end),
 * into *fl: 0 (fl->l_type F_UNLCK: none) or -errno. */
static int getlk(int fd, long long start, long long end, struct flock *fl)
{
	*fl = (struct flock){
	    .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = start, .l_len = end - start};
	return fcntl(fd, F_OFD_GETLK, fl) == 0 ? 0 : -errno;
}

static long long region(void)
{
	uint32_t r = 0;
	if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
		r = (uint32_t)(vr_now_ns() ^ (uint64_t)getpid() << 20);
	return VR_BOARD_BASE + (long long)(r % VR_BOARD_REGIONS) * VR_BOARD_REGION;
}

int vr__board_grow(int fd, struct vr_board *b, uint64_t add)
{
	if (add == 0)
		return 0;
	if (add >= (uint64_t)VR_BOARD_REGION - b->len)
		return -EOVERFLOW;
	if (b->base >= 0)
		return setlk(fd, F_RDLCK, b->base, (long long)(b->len + add));
	/* A region of our own: whether another lock starts at it too is
	 * found by the count that follows (vr__board_others). */
	long long base = region();
	int rc = setlk(fd, F_RDLCK, base, (long long)add);
	if (rc == 0) {
		b->base = base;
		b->len = add;
	}
	return rc;
}

int vr__board_move(int fd, struct vr_board *b)
{
	for (int t = 0; t < CLAIM_TRIES; t++) {
		long long base = region();
		if (setlk(fd, F_RDLCK, base, (long long)b->len) != 0)
			continue;
		struct flock fl;
		if (getlk(fd, base, base + 1, &fl) == 0 &&
		    (fl.l_type == F_UNLCK || fl.l_start != base)) {
			setlk(fd, F_UNLCK, b->base, (long long)b->len); /* after: never uncounted */
			b->base = base;
			return 0;
		}
		setlk(fd, F_UNLCK, base, (long long)b->len);
	}
	return -EBUSY;
}

void vr__board_shrink(int fd, struct vr_board *b, uint64_t less)
{
	if (b->base < 0 || less == 0)
		return;
	if (less >= b->len) {
		setlk(fd, F_UNLCK, b->base, (long long)b->len);
		b->base = -1;
		b->len = 0;
		return;
	}
	setlk(fd, F_UNLCK, b->base + (long long)(b->len - less), (long long)less);
	b->len -= less;
}

int vr__board_others(int fd, const struct vr_board *mine, uint64_t *sum)
{
	/* Ranges still to ask about: each answer splits one in at most two
	 * (what lies before the lock found and after it). */
	long long lo[VR_BOARD_PROBES + 1], hi[VR_BOARD_PROBES + 1];
	int n = 1, asked = 0;
	lo[0] = VR_BOARD_BASE;
	hi[0] = VR_BOARD_END;
	*sum = 0;
	while (n > 0) {
		if (asked++ == VR_BOARD_PROBES)
			return -E2BIG;
		n--;
		long long a = lo[n], z = hi[n];
		struct flock fl;
		int rc = getlk(fd, a, z, &fl);
		if (rc < 0)
			return rc;
		if (fl.l_type == F_UNLCK)
			continue;
		if (fl.l_len <= 0)
			return -EOVERFLOW; /* to the end of the file, and beyond */
		if (mine && mine->base >= 0 && fl.l_start == mine->base)
			return -EADDRINUSE; /* another lock starts where ours does */
		*sum = vr__sat_add(*sum, (uint64_t)fl.l_len);
		long long s = fl.l_start, e = fl.l_start + fl.l_len;
		if (s > a && n <= VR_BOARD_PROBES) {
			lo[n] = a;
			hi[n++] = s;
		}
		if (e < z && n <= VR_BOARD_PROBES) {
			lo[n] = e;
			hi[n++] = z;
		}
		if (n > VR_BOARD_PROBES)
			return -E2BIG;
	}
	return 0;
}
