/*
 * own.c - a process's own books, published and found (own.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsize.h"
#include "registry/memfd.h"
#include "registry/own.h"
#include "registry/proc.h"

struct vr_own *vr_own_publish(const char *group, const char *why, int *fd)
{
	/* Sizing a memfd past the file size limit (ulimit -f) raises SIGXFSZ,
	 * which would kill the program: then nothing is published. */
	*fd = -1;
	if (vr_fsize_below(VR_OWN_SIZE))
		return NULL;
	*fd = memfd_create(VR_OWN_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (*fd < 0)
		return NULL;
	void *p = MAP_FAILED;
	if (fchmod(*fd, 0600) == 0 && ftruncate(*fd, VR_OWN_SIZE) == 0 &&
	    fcntl(*fd, F_ADD_SEALS, VR_MEMFD_SEALS) == 0)
		p = mmap(NULL, VR_OWN_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (p == MAP_FAILED) {
		close(*fd);
		*fd = -1;
		return NULL;
	}
	struct vr_own *o = p;
	o->version = VR_OWN_VERSION;
	o->pid = (int32_t)getpid();
	(void)vr_proc_start_time(NULL, 0, &o->start_time);
	snprintf(o->group, sizeof(o->group), "%s", group ? group : "");
	snprintf(o->why, sizeof(o->why), "%s", why ? why : "");
	atomic_store_explicit((_Atomic uint64_t *)&o->magic, VR_OWN_MAGIC, memory_order_release);
	return o;
}

struct vr_own_dev *vr_own_device(struct vr_own *o, const unsigned char uuid[VR_UUID_LEN],
                                 uint64_t cap)
{
	uint32_t n = atomic_load_explicit((_Atomic uint32_t *)&o->ndev, memory_order_relaxed);
	for (uint32_t i = 0; i < n; i++)
		if (!memcmp(o->dev[i].uuid, uuid, VR_UUID_LEN))
			return &o->dev[i];
	if (n >= VR_MAX_DEVICES)
		return NULL;
	memcpy(o->dev[n].uuid, uuid, VR_UUID_LEN);
	o->dev[n].cap = cap;
	atomic_store_explicit((_Atomic uint32_t *)&o->ndev, n + 1, memory_order_release);
	return &o->dev[n];
}

/* Reads fd's record into out when it is whole and names the process that
 * started at start: 1, else 0. */
static int read_own(int fd, uint64_t start, struct vr_own *out)
{
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != VR_OWN_SIZE ||
	    pread(fd, out, sizeof(*out), 0) != (ssize_t)sizeof(*out))
		return 0;
	if (out->magic != VR_OWN_MAGIC || out->version != VR_OWN_VERSION ||
	    out->start_time != start)
		return 0; /* another version's, or a parent's inherited across fork */
	if (out->ndev > VR_MAX_DEVICES)
		out->ndev = VR_MAX_DEVICES;
	out->group[sizeof(out->group) - 1] = '\0';
	out->why[sizeof(out->why) - 1] = '\0';
	return 1;
}

int vr_own_find(const char *proc_root, pid_t pid, struct vr_own *out)
{
	char dir[320], path[600], link[128];
	const char *root = proc_root && *proc_root ? proc_root : "/proc";
	uint64_t start;
	if (pid <= 0 || vr_proc_start_time(proc_root, pid, &start) != 0)
		return 0;
	snprintf(dir, sizeof(dir), "%s/%d/fd", root, (int)pid);
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	static const char want[] = "/memfd:" VR_OWN_NAME;
	int found = 0;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		ssize_t n = readlink(path, link, sizeof(link) - 1);
		if (n < (ssize_t)sizeof(want) - 1 || memcmp(link, want, sizeof(want) - 1))
			continue;
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		found = read_own(fd, start, out);
		close(fd);
	}
	closedir(d);
	return found;
}
