/*
 * devbook_read.c - the device books as monitors see them (status, top,
 * export): which books a directory holds, and one book's groups, copied
 * without its lock and without taking a line (devbook.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry/devbook.h"

/* Copies of a segment taken before one that checks is given up: a copy
 * made while a holder of the lock changes the entries may be torn. */
#define READ_TRIES 4

/* Fills out from a checked copy of the segment; fd (our own open file
 * description of the door) asks who is alive. */
static void view_fill(const struct vr_devseg *c, int fd, struct vr_devbook_view *out)
{
	unsigned char live[VR_DEVBOOK_GROUPS] = {0};
	uint64_t held[VR_DEVBOOK_GROUPS] = {0};
	memcpy(out->uuid, c->h.uuid, sizeof(out->uuid));
	out->capacity = c->h.capacity;
	out->guaranteed = atomic_load_explicit(&c->h.guaranteed, memory_order_relaxed);
	for (uint32_t i = 0; i < c->h.lines_hw; i++) {
		const struct vr_devline *l = &c->l[i];
		if (l->used != 1 || !vr__devline_alive(fd, i))
			continue;
		out->lines_live++;
		if (l->entry >= 0) {
			live[l->entry] = 1;
			held[l->entry] = vr__sat_add(
			    held[l->entry], atomic_load_explicit(&l->held, memory_order_relaxed));
		}
	}
	for (int e = 0; e < VR_DEVBOOK_GROUPS; e++) {
		const struct vr_deventry *x = &c->e[e];
		if (x->used != 1)
			continue;
		int k = out->n++;
		memcpy(out->e[k].group, x->group, sizeof(out->e[k].group));
		out->e[k].uid = x->uid;
		out->e[k].pid = x->pid;
		out->e[k].group_key = x->group_key;
		out->e[k].guarantee = x->guarantee;
		out->e[k].held = held[e];
		out->e[k].live = live[e];
	}
}

int vr_devbook_read(const char *dir, const unsigned char uuid[16], struct vr_devbook_view *out)
{
	char dirbuf[4096], name[VR_DEVDOOR_NAME_MAX];
	memset(out, 0, sizeof(*out));
	if (!dir) {
		int rc = vr_devbook_dir(dirbuf, sizeof(dirbuf));
		if (rc < 0)
			return rc;
		dir = dirbuf;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	vr__devdoor_name(uuid, name);
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	int rc = fd < 0 ? -errno : 0;
	close(dfd);
	if (rc < 0)
		return rc;
	struct stat st;
	struct vr_devhdr door;
	const char *why = NULL;
	struct vr_devseg *s = NULL, *copy = NULL;
	rc = vr__devdoor_check(fd, uuid, &st, &door, &why);
	if (rc == 0 && (s = vr__devseg_attach(&door, 1, &why)) == NULL)
		/* No segment: nobody is in the book (it went with its last
		 * process), unless a live one uses a segment we cannot reach. */
		rc = vr__devlines_any_alive(fd) ? -EBADMSG : -ENOENT;
	if (rc == 0 && (copy = malloc(sizeof(*copy))) == NULL)
		rc = -ENOMEM;
	if (rc == 0) {
		rc = -EBADMSG;
		for (int t = 0; t < READ_TRIES && rc != 0; t++) {
			memcpy(copy, s, sizeof(*copy));
			rc = vr__devseg_check(copy, &door, &why);
		}
	}
	if (rc == 0)
		view_fill(copy, fd, out);
	free(copy);
	if (s)
		shmdt(s);
	close(fd);
	return rc;
}

int vr_devbook_list(const char *dir, unsigned char (*uuids)[16], int n)
{
	char dirbuf[4096];
	if (!dir) {
		int rc = vr_devbook_dir(dirbuf, sizeof(dirbuf));
		if (rc < 0)
			return rc;
		dir = dirbuf;
	}
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	int count = 0;
	struct dirent *de;
	unsigned char u[16];
	while ((de = readdir(d)) != NULL) {
		if (vr__devdoor_uuid(de->d_name, u) != 0)
			continue;
		if (count < n && uuids)
			memcpy(uuids[count], u, 16);
		if (count < 0x7fffffff)
			count++;
	}
	closedir(d);
	return count;
}
