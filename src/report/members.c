/*
 * members.c - receives and maps the run's member records: memfds the
 * members' libraries send to the run's socket (common/record.h). The socket
 * is in the run's own directory (mkdtemp, 0700); each record is still
 * checked (sealed against shrinking, the exact size, magic and version)
 * since a member's library made it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry/proc.h"
#include "report/members.h"

/*
 * Maps one record descriptor a member sent, if it is one: sealed so that it
 * can neither shrink (a shrunk mapping raises SIGBUS in whoever touches it)
 * nor lose its seals, the exact size, complete (magic and version). Takes
 * fd (closed). Returns 1 (added), 0 (not a record: ignored) or -errno.
 */
static int add(struct rep_members *ms, int fd)
{
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK) || !(seals & F_SEAL_SEAL) ||
	    fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != VR_REC_SIZE) {
		close(fd);
		return 0;
	}
	void *p = mmap(NULL, VR_REC_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	struct vr_rec_hdr *h = p;
	if (atomic_load_explicit((_Atomic uint64_t *)&h->magic, memory_order_acquire) !=
	        VR_REC_MAGIC ||
	    h->version != VR_REC_VERSION || h->file_size != VR_REC_SIZE) {
		munmap(p, VR_REC_SIZE);
		return 0; /* members send complete records only */
	}
	if (ms->n == ms->cap) {
		int nc = ms->cap ? ms->cap * 2 : 16;
		struct rep_member *nv = realloc(ms->v, (size_t)nc * sizeof *nv);
		if (!nv) {
			munmap(p, VR_REC_SIZE);
			return -ENOMEM;
		}
		ms->v = nv;
		ms->cap = nc;
	}
	struct rep_member *m = &ms->v[ms->n++];
	memset(m, 0, sizeof *m);
	m->h = h;
	h->command[sizeof h->command - 1] = '\0';
	return 1;
}

int rep_members_scan(struct rep_members *ms, int sock)
{
	int added = 0;
	for (;;) {
		int32_t pid;
		struct iovec iov = {.iov_base = &pid, .iov_len = sizeof pid};
		union {
			char buf[CMSG_SPACE(4 * sizeof(int))];
			struct cmsghdr align;
		} u;
		struct msghdr m = {.msg_iov = &iov,
		                   .msg_iovlen = 1,
		                   .msg_control = u.buf,
		                   .msg_controllen = sizeof u.buf};
		ssize_t n = recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? added : -errno;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < nfd; i++) {
				int fd;
				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
				int rc = add(ms, fd);
				if (rc < 0)
					return rc;
				added += rc;
			}
		}
	}
}

void rep_members_free(struct rep_members *ms)
{
	for (int i = 0; i < ms->n; i++)
		munmap(ms->v[i].h, VR_REC_SIZE);
	free(ms->v);
	memset(ms, 0, sizeof *ms);
}

struct rep_member *rep_members_by_pid(struct rep_members *ms, pid_t pid)
{
	struct rep_member *best = NULL;
	for (int i = 0; i < ms->n; i++)
		if (ms->v[i].h->pid == pid &&
		    (!best || ms->v[i].h->start_mono_ns > best->h->start_mono_ns))
			best = &ms->v[i];
	return best;
}

const struct vr_rec_site *rep_site(const struct vr_rec_hdr *h, uint32_t site1)
{
	uint32_t n = atomic_load_explicit((_Atomic uint32_t *)&h->nsites, memory_order_acquire);
	if (site1 == 0 || site1 > n || site1 > VR_REC_SITES)
		return NULL;
	return VR_REC_SECTION(h, VR_REC_OFF_SITES, const struct vr_rec_site) + (site1 - 1);
}

const struct vr_rec_module *rep_module(const struct vr_rec_hdr *h, uint32_t idx)
{
	uint32_t n = atomic_load_explicit((_Atomic uint32_t *)&h->nmodules, memory_order_acquire);
	if (idx >= n || idx >= VR_REC_MODULES)
		return NULL;
	return VR_REC_SECTION(h, VR_REC_OFF_MODULES, const struct vr_rec_module) + idx;
}

const struct vr_rec_leak *rep_leaks(const struct vr_rec_hdr *h, uint32_t *n)
{
	*n = h->nleaks > VR_REC_LEAKS ? VR_REC_LEAKS : h->nleaks;
	return VR_REC_SECTION(h, VR_REC_OFF_LEAKS, const struct vr_rec_leak);
}

/* The state letter of /proc/PID/stat (after the command's closing
 * parenthesis), or 0. */
static char proc_state(pid_t pid)
{
	char buf[512];
	if (vr_proc_read(NULL, pid, "stat", buf, sizeof buf) <= 0)
		return 0;
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

int rep_member_alive(const struct vr_rec_hdr *h)
{
	uint64_t st = 0;
	if (h->pid <= 0 || vr_proc_start_time(NULL, h->pid, &st) != 0 || st != h->proc_start)
		return 0;
	char c = proc_state(h->pid);
	return c != 'Z' && c != 'X'; /* a zombie has ended */
}

int rep_member_reap(struct rep_member *m)
{
	int st;
	if (m->reaped || rep_member_alive(m->h))
		return 0;
	/* Ours only if it is our zombie: waitpid on another parent's child fails. */
	if (waitpid(m->h->pid, &st, WNOHANG) == m->h->pid) {
		m->reaped = 1;
		m->wstatus = st;
		return 1;
	}
	return 0;
}

uint64_t rep_member_gone(struct rep_member *m, uint64_t now)
{
	if (atomic_load_explicit((_Atomic uint32_t *)&m->h->end, memory_order_acquire) ==
	    VR_REC_EXITED)
		return m->h->end_mono_ns;
	if (!m->gone_ns && (m->reaped || !rep_member_alive(m->h)))
		m->gone_ns = now;
	return m->gone_ns;
}
