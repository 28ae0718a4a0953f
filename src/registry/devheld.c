/*
 * devheld.c - a guaranteed group's bytes on the card, in semaphores
 * (devheld.h).
 */
#include <errno.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/random.h>
#include <sys/sem.h>
#include <unistd.h>

#include "registry/devheld.h"
#include "registry/util.h"

union semun {
	int val;
	struct semid_ds *buf;
	unsigned short *array;
};

/* The smallest power of two, at least VR_HELD_UNIT_MIN, with which half
 * the semaphores hold the whole card. */
static uint64_t unit_for(uint64_t capacity)
{
	uint64_t u = VR_HELD_UNIT_MIN, half = (uint64_t)VR_HELD_SEMS / 2 * VR_HELD_MAX;
	while (u < (1ull << 40) && u * half < capacity)
		u <<= 1;
	return u;
}

int vr__held_create(struct vr_deventry *e, uint32_t uid, uint64_t capacity)
{
	for (int tries = 0; tries < 16; tries++) {
		uint32_t key = 0;
		if (getrandom(&key, sizeof key, GRND_NONBLOCK) != (ssize_t)sizeof key)
			key = (uint32_t)(vr_now_ns() ^ (uint64_t)getpid() << 16);
		if (key == 0 || (key_t)key == IPC_PRIVATE)
			continue;
		int id = semget((key_t)key, VR_HELD_SEMS, IPC_CREAT | IPC_EXCL | 0644);
		if (id < 0 && errno == EEXIST)
			continue;
		if (id < 0)
			return -errno;
		struct semid_ds ds;
		union semun a = {.buf = &ds};
		if (semctl(id, 0, IPC_STAT, a) != 0) {
			int rc = -errno;
			semctl(id, 0, IPC_RMID);
			return rc;
		}
		ds.sem_perm.uid = uid;
		ds.sem_perm.mode = 0644;
		if (semctl(id, 0, IPC_SET, a) != 0) {
			int rc = -errno;
			semctl(id, 0, IPC_RMID);
			return rc;
		}
		e->semid = id;
		e->semkey = key;
		e->nsems = VR_HELD_SEMS;
		e->unit = unit_for(capacity);
		return 0;
	}
	return -EEXIST;
}

int vr__held_valid(const struct vr_deventry *e)
{
	struct semid_ds ds;
	union semun a = {.buf = &ds};
	if (e->semid < 0 || e->nsems != VR_HELD_SEMS || semctl(e->semid, 0, IPC_STAT, a) != 0)
		return 0;
	return (uint32_t)ds.sem_perm.__key == e->semkey && ds.sem_perm.cuid == 0 &&
	       ds.sem_perm.uid == e->uid && !(ds.sem_perm.mode & 022) &&
	       ds.sem_nsems == VR_HELD_SEMS;
}

void vr__held_remove(const struct vr_deventry *e)
{
	if (vr__held_valid(e))
		semctl(e->semid, 0, IPC_RMID);
}

uint64_t vr__held_read(const struct vr_deventry *e)
{
	return vr__held_valid(e) ? vr__held_sum(e) : 0;
}

uint64_t vr__held_sum(const struct vr_deventry *e)
{
	unsigned short v[VR_HELD_SEMS];
	union semun a = {.array = v};
	if (e->unit == 0 || semctl(e->semid, 0, GETALL, a) != 0)
		return 0;
	uint64_t units = 0;
	for (int i = 0; i < VR_HELD_SEMS; i++)
		units += v[i];
	return units > UINT64_MAX / e->unit ? UINT64_MAX : units * e->unit;
}

void vr__held_init(struct vr_heldpub *p)
{
	memset(p, 0, sizeof *p);
	pthread_mutex_init(&p->mu, NULL);
	p->semid = -1;
}

void vr__held_start(struct vr_heldpub *p, const struct vr_deventry *e)
{
	pthread_mutex_lock(&p->mu);
	if (p->semid < 0 && vr__held_valid(e) && e->unit) {
		p->semid = e->semid;
		p->nsems = e->nsems;
		p->unit = e->unit;
		memset(p->pub, 0, sizeof p->pub);
	}
	pthread_mutex_unlock(&p->mu);
}

/* One semop of n units (signed) on semaphore j, with SEM_UNDO, never
 * waiting: 0 or -errno. */
static int op(int id, uint32_t j, int n)
{
	struct sembuf s = {
	    .sem_num = (unsigned short)j, .sem_op = (short)n, .sem_flg = SEM_UNDO | IPC_NOWAIT};
	return semop(id, &s, 1) == 0 ? 0 : -errno;
}

/* Adds up to need units, where they fit: the units added. */
static uint64_t add(struct vr_heldpub *p, uint64_t need)
{
	uint64_t done = 0;
	uint32_t j0 = (uint32_t)getpid() % p->nsems;
	for (uint32_t k = 0; k < p->nsems && done < need && p->semid >= 0; k++) {
		uint32_t j = (j0 + k) % p->nsems;
		uint64_t give = need - done;
		if (give > VR_HELD_MAX - p->pub[j])
			give = VR_HELD_MAX - p->pub[j];
		int rc = give ? op(p->semid, j, (int)give) : 0;
		if (rc == -ERANGE) { /* the others' parts fill it: what is left */
			int v = semctl(p->semid, (int)j, GETVAL);
			give = v >= 0 && v < VR_HELD_MAX && (uint64_t)(VR_HELD_MAX - v) < give
			           ? (uint64_t)(VR_HELD_MAX - v)
			           : 0;
			rc = give ? op(p->semid, j, (int)give) : 0;
		}
		if (rc == -EINVAL || rc == -EIDRM || rc == -EACCES) {
			p->semid = -1; /* the entry ended */
			break;
		}
		if (rc == 0) {
			p->pub[j] += (uint32_t)give;
			done += give;
		}
	}
	return done;
}

/* Takes up to less units off this process's parts. */
static void take(struct vr_heldpub *p, uint64_t less)
{
	for (uint32_t j = 0; j < p->nsems && less && p->semid >= 0; j++) {
		uint64_t t = p->pub[j] < less ? p->pub[j] : less;
		if (!t)
			continue;
		int rc = op(p->semid, j, -(int)t);
		if (rc == -EAGAIN) { /* less there than we put (the group's own user) */
			int v = semctl(p->semid, (int)j, GETVAL);
			t = v > 0 && (uint64_t)v < t ? (uint64_t)v : 0;
			rc = t ? op(p->semid, j, -(int)t) : 0;
			p->pub[j] = (uint32_t)t; /* what is left of ours is gone */
		}
		if (rc == -EINVAL || rc == -EIDRM || rc == -EACCES) {
			p->semid = -1;
			break;
		}
		if (rc == 0) {
			p->pub[j] -= (uint32_t)t;
			less -= t;
		}
	}
}

void vr__held_move(struct vr_heldpub *p, int64_t delta)
{
	pthread_mutex_lock(&p->mu);
	if (delta < 0 && (uint64_t)-delta > p->bytes)
		p->bytes = 0;
	else
		p->bytes += (uint64_t)delta;
	if (p->semid >= 0) {
		uint64_t cur = 0, target = p->bytes / p->unit;
		for (uint32_t j = 0; j < p->nsems; j++)
			cur += p->pub[j];
		if (target > cur)
			add(p, target - cur);
		else if (target < cur)
			take(p, cur - target);
	}
	pthread_mutex_unlock(&p->mu);
}
