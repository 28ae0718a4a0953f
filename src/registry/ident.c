/*
 * ident.c - a member's identity record (ident.h). The record is written
 * under a sequence word (odd while it changes), as the books' seqlock is:
 * a reader copies it between two reads of an even word that did not move,
 * and keeps it only when it names its slot's member.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/contract.h"
#include "registry/ident.h"
#include "registry/proc.h"

/* Copies the value of environment variable name into out, when it is set,
 * not empty and fits (a name cut short would be another name). */
static void env_take(const char *name, char *out, size_t len)
{
	const char *v = getenv(name);
	size_t n = v ? strlen(v) : 0;
	if (n && n < len)
		memcpy(out, v, n + 1);
}

void vr_ident_read(struct vr_ident *out)
{
	struct stat ns;
	memset(out, 0, sizeof(*out));
	if (stat("/proc/self/ns/cgroup", &ns) == 0)
		out->cgns = (uint64_t)ns.st_ino;
	/* A text that fills the field may have been cut: none then (the
	 * monitor reads /proc for it, as for a member of an older build). */
	ssize_t n = vr_proc_read(NULL, 0, "cgroup", out->cgroup, sizeof(out->cgroup));
	if (n <= 0 || (size_t)n >= sizeof(out->cgroup) - 1)
		out->cgroup[0] = '\0';
	env_take(VR_ENV_POD_NAME, out->pod_name, sizeof(out->pod_name));
	env_take(VR_ENV_POD_NAMESPACE, out->pod_namespace, sizeof(out->pod_namespace));
	env_take(VR_ENV_CONTAINER_NAME, out->container_name, sizeof(out->container_name));
}

static _Atomic uint64_t *seq_of(const struct vr_ident *r)
{
	return (_Atomic uint64_t *)&r->check;
}

void vr_ident_put(struct vr_hdr *h, uint32_t i, const struct vr_ident *id, int32_t pid,
                  uint64_t start_time)
{
	struct vr_ident *r = vr_ident_at(h, i);
	uint64_t seq = atomic_load_explicit(seq_of(r), memory_order_relaxed);
	seq += (seq & 1) ? 1 : 2; /* a writer that died midway left it odd */
	atomic_store_explicit(seq_of(r), seq - 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	memcpy(r->cgroup, id->cgroup, sizeof(r->cgroup));
	memcpy(r->pod_name, id->pod_name, sizeof(r->pod_name));
	memcpy(r->pod_namespace, id->pod_namespace, sizeof(r->pod_namespace));
	memcpy(r->container_name, id->container_name, sizeof(r->container_name));
	r->cgns = id->cgns;
	r->pid = pid;
	r->start_time = start_time;
	atomic_store_explicit(seq_of(r), seq, memory_order_release);
}

int vr_ident_get(const struct vr_hdr *h, uint32_t i, int32_t pid, uint64_t start_time,
                 struct vr_ident *out)
{
	const struct vr_ident *r = vr_ident_at((struct vr_hdr *)h, i);
	uint64_t s1 = atomic_load_explicit(seq_of(r), memory_order_acquire);
	if (s1 == 0 || (s1 & 1))
		return 0;
	memcpy(out, r, sizeof(*out));
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(seq_of(r), memory_order_relaxed) != s1 || out->pid != pid ||
	    out->start_time != start_time)
		return 0;
	out->cgroup[sizeof(out->cgroup) - 1] = '\0';
	out->pod_name[sizeof(out->pod_name) - 1] = '\0';
	out->pod_namespace[sizeof(out->pod_namespace) - 1] = '\0';
	out->container_name[sizeof(out->container_name) - 1] = '\0';
	return 1;
}
