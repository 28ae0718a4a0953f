/*
 * identity.c - each live process's container ID, pod UID and names
 * (identity.h), read through the registry's /proc layer.
 *
 * A member's come from the record it wrote at its join (registry/ident.h):
 * its names as they are (its own claim, as its environment is), its
 * cgroups once the kernel confirms them (cgcheck.c: a read of each
 * cgroup's processes, not one per process). Anything else (an uncapped
 * process, a member of an older build, cgroups the kernel does not
 * confirm) is read from /proc/PID/cgroup and environ, once per process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/contract.h"
#include "common/text.h"
#include "monitor/cgcheck.h"
#include "monitor/cgroup_id.h"
#include "monitor/identity.h"
#include "registry/proc.h"

/* The environment is read up to this many bytes: a pod's service links
 * (FOO_SERVICE_HOST, ... for each service of its namespace) come before
 * the container's own variables and can run to tens of kilobytes. */
#define ENVIRON_MAX (256 * 1024)
#define CGROUP_MAX  (16 * 1024)

struct ident {
	char container_id[MON_CONTAINER_ID_LEN + 1];
	char pod_uid[MON_POD_UID_LEN + 1];
	char pod_name[MON_POD_NAME_MAX];
	char pod_namespace[MON_K8S_LABEL_MAX];
	char container_name[MON_K8S_LABEL_MAX];
	char cgroup2[VR_CGROUP2_LEN];
	int found;
	/* Its environment preloads vramctl's library with a cap: capped in
	 * books of a registry directory (books_dir, "" unsaid) this reader
	 * may not read. */
	int preloaded, limited;
	char books_dir[128];
};

/* Copies the value of entry e ("NAME=value") into out when e is NAME's and
 * the value is neither empty nor too long for out. */
static void env_take(const char *e, size_t elen, const char *name, char *out, size_t len)
{
	size_t n = strlen(name);
	if (elen <= n + 1 || memcmp(e, name, n) || e[n] != '=')
		return;
	size_t vlen = elen - n - 1;
	if (vlen >= len)
		return;
	memcpy(out, e + n + 1, vlen);
	out[vlen] = '\0';
}

/* The container, pod and cgroup v2 path in a /proc/PID/cgroup text. */
static void ident_cgroup(const char *text, struct ident *id)
{
	struct mon_cgroup_id cg;
	mon_cgroup_id_parse(text, &cg);
	memcpy(id->container_id, cg.container_id, sizeof(cg.container_id));
	memcpy(id->pod_uid, cg.pod_uid, sizeof(cg.pod_uid));
	vr_cgroup2_parse(text, id->cgroup2, sizeof(id->cgroup2));
	id->found = 1;
}

/* Reads pid's environ's names into *id. buf holds ENVIRON_MAX bytes. */
static void ident_environ(const char *root, pid_t pid, char *buf, struct ident *id)
{
	ssize_t n = vr_proc_read(root, pid, "environ", buf, ENVIRON_MAX);
	if (n <= 0)
		return;
	id->found = 1;
	/* NUL-separated entries; a last one cut by the buffer's end is left out. */
	for (size_t off = 0; off < (size_t)n;) {
		const char *e = buf + off;
		size_t elen = strnlen(e, (size_t)n - off);
		if (off + elen >= (size_t)n && (size_t)n == ENVIRON_MAX - 1)
			break;
		if (elen > 11 && !memcmp(e, "LD_PRELOAD=", 11) && memmem(e, elen, "libvramctl", 10))
			id->preloaded = 1;
		if (elen > 14 && !memcmp(e, VR_ENV_LIMIT "=", 14))
			id->limited = 1;
		env_take(e, elen, VR_ENV_REGISTRY_DIR, id->books_dir, sizeof(id->books_dir));
		if (elen > 8 && !memcmp(e, "VRAMCTL_", 8)) {
			env_take(e, elen, MON_ENV_POD_NAME, id->pod_name, sizeof(id->pod_name));
			env_take(e, elen, MON_ENV_POD_NAMESPACE, id->pod_namespace,
			         sizeof(id->pod_namespace));
			env_take(e, elen, MON_ENV_CONTAINER_NAME, id->container_name,
			         sizeof(id->container_name));
		}
		off += elen + 1;
	}
}

/* Process pid's identity into *id: from its record when it has one (rec,
 * NULL otherwise), its cgroups confirmed by the kernel, else from /proc.
 * buf holds ENVIRON_MAX bytes. */
static void ident_read(const char *root, pid_t pid, const struct vramctl_proc_ident *rec,
                       struct mon_cgcheck *ck, char *buf, struct ident *id)
{
	memset(id, 0, sizeof(*id));
	if (rec) {
		/* The record's names fit (ident.c keeps only those that do). */
		vr_text_copy(id->pod_name, sizeof(id->pod_name), rec->pod_name);
		vr_text_copy(id->pod_namespace, sizeof(id->pod_namespace), rec->pod_namespace);
		vr_text_copy(id->container_name, sizeof(id->container_name), rec->container_name);
		id->found = 1;
		if (mon_cgcheck_holds(ck, rec->cgns, rec->cgroup, pid)) {
			ident_cgroup(rec->cgroup, id);
			return;
		}
	}
	if (vr_proc_read(root, pid, "cgroup", buf, CGROUP_MAX) > 0)
		ident_cgroup(buf, id);
	if (!rec)
		ident_environ(root, pid, buf, id);
}

static void ident_put(struct mon_proc *p, const struct ident *id)
{
	if (!id->found)
		return;
	p->valid |= MON_P_IDENTITY;
	memcpy(p->container_id, id->container_id, sizeof(p->container_id));
	memcpy(p->pod_uid, id->pod_uid, sizeof(p->pod_uid));
	memcpy(p->pod_name, id->pod_name, sizeof(p->pod_name));
	memcpy(p->pod_namespace, id->pod_namespace, sizeof(p->pod_namespace));
	memcpy(p->container_name, id->container_name, sizeof(p->container_name));
	if (id->cgroup2[0]) {
		memcpy(p->cgroup2, id->cgroup2, sizeof(p->cgroup2));
		p->valid |= MON_P_CGROUP2;
	}
	if (id->preloaded && id->limited && !(p->valid & MON_P_CAPPED)) {
		p->valid |= MON_P_ELSEWHERE;
		memcpy(p->books_dir, id->books_dir, sizeof(p->books_dir));
	}
}

/* A row whose host PID is a live process's. */
static int row_live(const struct mon_proc *p)
{
	if (!(p->valid & MON_P_HOST_PID) || p->host_pid <= 0)
		return 0;
	return !(p->valid & MON_P_CAPPED) || p->state == MON_PROC_ALIVE;
}

struct by_pid {
	pid_t pid;
	int row;
};

static int cmp_by_pid(const void *a, const void *b)
{
	const struct by_pid *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

/* The record of the first row of a PID's run v[k..] that has one. */
static const struct vramctl_proc_ident *record_of(const struct mon_model *m,
                                                  const struct vramctl_snapshot *s,
                                                  const struct by_pid *v, int n, int k)
{
	for (int j = k; j < n && v[j].pid == v[k].pid; j++) {
		int r = m->procs[v[j].row].rec;
		if (s && r >= 0 && r < s->nprocs && s->procs[r].ident)
			return s->procs[r].ident;
	}
	return NULL;
}

void mon_identity_fill(struct mon_model *m, const char *proc_root, const struct vramctl_snapshot *s)
{
	int n = 0;
	for (int i = 0; i < m->nprocs; i++)
		n += row_live(&m->procs[i]);
	if (!n)
		return;
	/* Rows of one process (one per GPU it uses) are read once: sorted by PID. */
	struct by_pid *v = malloc(sizeof(*v) * (size_t)n);
	char *buf = malloc(ENVIRON_MAX), self[600];
	snprintf(self, sizeof(self), "%s/self", proc_root ? proc_root : "/proc");
	struct mon_cgcheck *ck = mon_cgcheck_new(self);
	if (!v || !buf) {
		free(v);
		free(buf);
		mon_cgcheck_free(ck);
		return;
	}
	n = 0;
	for (int i = 0; i < m->nprocs; i++)
		if (row_live(&m->procs[i]))
			v[n++] = (struct by_pid){m->procs[i].host_pid, i};
	qsort(v, (size_t)n, sizeof(*v), cmp_by_pid);
	struct ident id;
	for (int k = 0; k < n; k++) {
		if (k == 0 || v[k].pid != v[k - 1].pid)
			ident_read(proc_root, v[k].pid, record_of(m, s, v, n, k), ck, buf, &id);
		ident_put(&m->procs[v[k].row], &id);
	}
	mon_cgcheck_free(ck);
	free(v);
	free(buf);
}
