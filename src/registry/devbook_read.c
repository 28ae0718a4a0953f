/*
 * devbook_read.c - the device books as monitors see them (status, top,
 * export): which books a directory holds, and one book's groups with what
 * each holds on the card, copied without a lock (devbook.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "registry/devbook.h"
#include "registry/devheld.h"

int vr_devbook_read(const char *dir, const unsigned char uuid[16], struct vr_devbook_view *out)
{
	char dirbuf[4096], err[512];
	memset(out, 0, sizeof *out);
	if (!dir) {
		int rc = vr_devbook_dir(dirbuf, sizeof dirbuf);
		if (rc < 0)
			return rc;
		dir = dirbuf;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	const char *why;
	int rc = vr__devdir_check(dfd, &why), fd = -1;
	const struct vr_devfile *f = NULL;
	if (rc == 0)
		rc = vr__devbook_map(dfd, dir, uuid, &fd, &f, err, sizeof err);
	close(dfd);
	if (rc < 0)
		return rc;
	struct vr_devsnap *s = malloc(sizeof *s);
	rc = s ? vr__devbook_snap(f, s) : -ENOMEM;
	if (rc == 0) {
		memcpy(out->uuid, uuid, 16);
		out->capacity = s->capacity;
		for (int k = 0; k < s->n; k++) {
			const struct vr_deventry *e = &s->e[k];
			int n = out->n++;
			memcpy(out->e[n].group, e->group, sizeof out->e[n].group);
			out->e[n].uid = e->uid;
			out->e[n].guarantee = e->guarantee;
			out->e[n].held = vr__held_read(e);
			for (int i = 0; i < VR_DEVBOOK_HOLDERS && !out->e[n].pid; i++)
				if (vr__devholder_alive(&e->holder[i], 0))
					out->e[n].pid = e->holder[i].pid;
			out->e[n].live = vr__deventry_alive(e, 0);
			if (out->e[n].live)
				out->guaranteed = vr__sat_add(out->guaranteed, e->guarantee);
		}
	}
	free(s);
	munmap((void *)f, VR_DEVBOOK_SIZE);
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
		if (vr__devbook_uuid(de->d_name, u) != 0)
			continue;
		if (count < n && uuids)
			memcpy(uuids[count], u, 16);
		if (count < 0x7fffffff)
			count++;
	}
	closedir(d);
	return count;
}
