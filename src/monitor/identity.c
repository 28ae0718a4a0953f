/*
 * identity.c - each live process's container ID, pod UID and names
 * (identity.h), read through the registry's /proc layer.
 */
#include <stdlib.h>
#include <string.h>

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
	int found;
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

/* Reads pid's cgroup and environ into *id. buf holds ENVIRON_MAX bytes. */
static void ident_read(const char *root, pid_t pid, char *buf, struct ident *id)
{
	memset(id, 0, sizeof(*id));
	if (vr_proc_read(root, pid, "cgroup", buf, CGROUP_MAX) > 0) {
		struct mon_cgroup_id cg;
		mon_cgroup_id_parse(buf, &cg);
		memcpy(id->container_id, cg.container_id, sizeof(cg.container_id));
		memcpy(id->pod_uid, cg.pod_uid, sizeof(cg.pod_uid));
		id->found = 1;
	}
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
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

void mon_identity_fill(struct mon_model *m, const char *proc_root)
{
	int n = 0;
	for (int i = 0; i < m->nprocs; i++)
		n += row_live(&m->procs[i]);
	if (!n)
		return;
	/* Rows of one process (one per GPU it uses) are read once: sorted by PID. */
	struct by_pid *v = malloc(sizeof(*v) * (size_t)n);
	char *buf = malloc(ENVIRON_MAX);
	if (!v || !buf) {
		free(v);
		free(buf);
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
			ident_read(proc_root, v[k].pid, buf, &id);
		ident_put(&m->procs[v[k].row], &id);
	}
	free(v);
	free(buf);
}
