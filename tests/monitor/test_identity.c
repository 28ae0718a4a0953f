/*
 * test_identity - each process's container ID, pod UID and names on a fake
 * /proc (cgroup and environ beside status, stat and cmdline), through the
 * join (mon_merge_registry), shown in JSON, Prometheus labels and the
 * table's CONTAINER column: a capped process in a Kubernetes pod (systemd
 * driver, names in its environment), an uncapped one in a podman
 * container, one on the host (no container), one whose namespace in the
 * environment is too long (left unknown), and a dead record (no identity:
 * its PID is not its own any more).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../test.h"
#include "monitor/format.h"
#include "monitor/merge.h"

#define GiB (1024ULL * 1024 * 1024)
#define CID "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d"
#define PID "34dc0b5e626f2c5c4c5170e34b10e7654ce36f0fcd532739f4445baabea03376"
#define UID "74c13223-5a00-11e9-b385-42010a80018d"

#define U0S "GPU-00000000-0000-0000-0000-000000000001"
static const char *const U0 = U0S;
static char root[512];

static void put(int pid, const char *name, const char *data, size_t len)
{
	char path[700];
	snprintf(path, sizeof(path), "%s/%d/%s", root, pid, name);
	FILE *f = fopen(path, "w");
	ASSERT(f);
	ASSERT_EQ(fwrite(data, 1, len, f), len);
	fclose(f);
}

/* A fake /proc/PID: status, stat, cmdline, cgroup and (env_len > 0) environ. */
static void fake_proc(int pid, unsigned long long start, const char *cgroup, const char *env,
                      size_t env_len)
{
	char path[700], text[256];
	snprintf(path, sizeof(path), "%s/%d", root, pid);
	ASSERT_EQ(mkdir(path, 0755), 0);
	snprintf(text, sizeof(text), "Name:\tx\nUid:\t0\t0\t0\t0\nNSpid:\t%d\n", pid);
	put(pid, "status", text, strlen(text));
	snprintf(text, sizeof(text), "%d (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0\n",
	         pid, start);
	put(pid, "stat", text, strlen(text));
	put(pid, "cmdline", "train\0", 6);
	put(pid, "cgroup", cgroup, strlen(cgroup));
	if (env_len)
		put(pid, "environ", env, env_len);
}

static char *render(const struct mon_model *m, int which)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ASSERT(f);
	if (which == 0)
		ASSERT_EQ(mon_format_table(f, m), 0);
	else if (which == 1)
		ASSERT_EQ(mon_format_json(f, m, 0), 0);
	else
		ASSERT_EQ(mon_format_prom(f, m), 0);
	fclose(f);
	return buf;
}

static void nvml_row(struct mon_model *m, int pid)
{
	m->procs = realloc(m->procs, sizeof(*m->procs) * (size_t)(m->nprocs + 1));
	struct mon_proc *p = &m->procs[m->nprocs++];
	memset(p, 0, sizeof(*p));
	p->valid = MON_P_NVML | MON_P_NVML_USED | MON_P_HOST_PID | MON_P_DEVICE;
	p->host_pid = pid;
	strcpy(p->uuid, U0);
	p->cap = MON_NO_CAP;
	p->nvml_used = 1 * GiB;
}

static const struct mon_proc *row(const struct mon_model *m, int host)
{
	for (int i = 0; i < m->nprocs; i++)
		if ((m->procs[i].valid & MON_P_HOST_PID) && m->procs[i].host_pid == host)
			return &m->procs[i];
	return NULL;
}

/* 1 when text has a line that starts with prefix and ends with suffix. */
static int line_with(const char *text, const char *prefix, const char *suffix)
{
	size_t np = strlen(prefix), ns = strlen(suffix);
	for (const char *l = text; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0)) {
		size_t n = strcspn(l, "\n");
		if (n >= np + ns && !strncmp(l, prefix, np) && !strncmp(l + n - ns, suffix, ns))
			return 1;
	}
	return 0;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(root, sizeof(root), "%s/identproc", tmp ? tmp : "/tmp");
	mkdir(root, 0755);

	/* A pod's container (kubelet's systemd driver, containerd, cgroup v2):
	 * the names come before and after other variables, one of them with
	 * an '=' in its value. */
	static const char pod_env[] = "PATH=/usr/bin\0KUBERNETES_SERVICE_HOST=10.0.0.1\0"
	                              "VRAMCTL_POD_NAME=train-7f9c\0VRAMCTL_LIMIT=4G\0"
	                              "VRAMCTL_POD_NAMESPACE=ml\0X=a=b\0"
	                              "VRAMCTL_CONTAINER_NAME=trainer\0";
	fake_proc(6000, 600,
	          "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
	          "74c13223_5a00_11e9_b385_42010a80018d.slice/cri-containerd-" CID ".scope\n",
	          pod_env, sizeof(pod_env));
	/* A podman container, uncapped, nothing in its environment. */
	fake_proc(5000, 500, "0::/machine.slice/libpod-" PID ".scope/container\n", "HOME=/\0", 7);
	/* A host process. */
	fake_proc(4000, 400, "0::/user.slice/user-1000.slice/session-3.scope\n", "HOME=/\0", 7);
	/* A namespace longer than Kubernetes allows, and an empty pod name:
	 * both unknown, never cut. */
	char longenv[200];
	int n = snprintf(longenv, sizeof(longenv), "VRAMCTL_POD_NAME=%c", '\0');
	n += snprintf(longenv + n, sizeof(longenv) - (size_t)n, "VRAMCTL_POD_NAMESPACE=");
	memset(longenv + n, 'x', 70);
	n += 70;
	longenv[n++] = '\0';
	fake_proc(7000, 700, "0::/docker/" CID "\n", longenv, (size_t)n);

	struct mon_model m = {0};
	m.valid = MON_M_NVML;
	m.devs = calloc(1, sizeof(*m.devs));
	m.ndevs = 1;
	m.devs[0].valid = MON_DEV_INDEX | MON_DEV_MEMORY;
	strcpy(m.devs[0].uuid, U0);
	m.devs[0].total = 16 * GiB;
	nvml_row(&m, 6000);
	nvml_row(&m, 5000);
	nvml_row(&m, 4000);
	nvml_row(&m, 7000);

	struct vramctl_snapshot s = {0};
	struct vramctl_group g;
	struct vramctl_proc procs[2];
	struct vramctl_proc_dev pdev[2];
	memset(&g, 0, sizeof(g));
	memset(procs, 0, sizeof(procs));
	memset(pdev, 0, sizeof(pdev));
	s.groups = &g;
	s.ngroups = 1;
	s.procs = procs;
	s.nprocs = 2;
	strcpy(g.name, "pidns-4026532");
	g.nmembers = 1;
	g.ndev = 1;
	strcpy(g.dev[0].uuid, U0);
	g.dev[0].cap = 4 * GiB;
	for (int i = 0; i < 2; i++) {
		procs[i].dev = &pdev[i];
		procs[i].ndev = 1;
		strcpy(procs[i].group, g.name);
		strcpy(procs[i].user, "root");
		strcpy(procs[i].command, "train");
		strcpy(pdev[i].uuid, U0);
		pdev[i].in_use = pdev[i].peak = 1 * GiB;
	}
	procs[0].pid = procs[0].host_pid = 6000;
	procs[0].start_time = 600;
	/* Dead: its PID 4000 is now the host process's. */
	procs[1].pid = procs[1].host_pid = 4000;
	procs[1].start_time = 1;
	procs[1].state = VRAMCTL_PROC_DEAD;
	ASSERT_EQ(mon_merge_registry(&m, &s, 0, root), 0);

	const struct mon_proc *p = row(&m, 6000);
	ASSERT(p && (p->valid & MON_P_CAPPED) && (p->valid & MON_P_IDENTITY));
	ASSERT_STR_EQ(p->container_id, CID);
	ASSERT_STR_EQ(p->pod_uid, UID);
	ASSERT_STR_EQ(p->pod_name, "train-7f9c");
	ASSERT_STR_EQ(p->pod_namespace, "ml");
	ASSERT_STR_EQ(p->container_name, "trainer");
	p = row(&m, 5000);
	ASSERT(p && !(p->valid & MON_P_CAPPED));
	ASSERT_STR_EQ(p->container_id, PID);
	ASSERT_STR_EQ(p->pod_uid, "");
	ASSERT_STR_EQ(p->pod_name, "");
	p = row(&m, 7000);
	ASSERT(p);
	ASSERT_STR_EQ(p->container_id, CID);
	ASSERT_STR_EQ(p->pod_name, "");
	ASSERT_STR_EQ(p->pod_namespace, "");
	for (int i = 0; i < m.nprocs; i++) {
		p = &m.procs[i];
		if ((p->valid & MON_P_CAPPED) && p->state == MON_PROC_DEAD)
			ASSERT(!(p->valid & MON_P_IDENTITY) && !p->container_id[0]);
		if ((p->valid & MON_P_HOST_PID) && p->host_pid == 4000 &&
		    !(p->valid & MON_P_CAPPED))
			ASSERT((p->valid & MON_P_IDENTITY) && !p->container_id[0]);
	}

	char *j = render(&m, 1);
	ASSERT(strstr(j, "\"container_id\": \"" CID "\",\n"
	                 "      \"pod_uid\": \"" UID "\",\n"
	                 "      \"pod_name\": \"train-7f9c\",\n"
	                 "      \"pod_namespace\": \"ml\",\n"
	                 "      \"container_name\": \"trainer\"\n") != NULL);
	ASSERT(strstr(j, "\"container_id\": \"" PID "\",\n"
	                 "      \"pod_uid\": null,\n"
	                 "      \"pod_name\": null,\n"
	                 "      \"pod_namespace\": null,\n"
	                 "      \"container_name\": null\n") != NULL);
	ASSERT(strstr(j, "\"container_id\": null") != NULL); /* the host process */
	free(j);

	char *t = render(&m, 2);
	ASSERT(
	    strstr(t,
	           "vramctl_process_used_bytes{pid=\"6000\",ns_pid=\"6000\",gpu=\"0\",uuid=\"" U0S
	           "\",group=\"pidns-4026532\",user=\"root\","
	           "container_id=\"" CID "\",pod_uid=\"" UID "\",pod_namespace=\"ml\","
	           "pod_name=\"train-7f9c\",container_name=\"trainer\"} 1073741824\n") != NULL);
	/* Their user labels are the names of their uids where the machine
	 * has them, else the numbers. */
	ASSERT(line_with(t,
	                 "vramctl_process_nvml_used_bytes{pid=\"5000\",ns_pid=\"5000\",gpu=\"0\","
	                 "uuid=\"" U0S "\",user=\"",
	                 "\",container_id=\"" PID "\"} 1073741824"));
	ASSERT(line_with(t,
	                 "vramctl_process_nvml_used_bytes{pid=\"4000\",ns_pid=\"4000\",gpu=\"0\","
	                 "uuid=\"" U0S "\",user=\"",
	                 "\"} 1073741824"));
	free(t);

	char *tab = render(&m, 0);
	ASSERT(strstr(tab, "CONTAINER") != NULL);
	ASSERT(strstr(tab, "9ec39b91f3d7  train") != NULL);
	ASSERT(strstr(tab, "34dc0b5e626f  train") != NULL);
	ASSERT(strstr(tab, CID) == NULL); /* the short ID only */
	free(tab);
	/* No container anywhere: no column. */
	for (int i = 0; i < m.nprocs; i++)
		m.procs[i].container_id[0] = '\0';
	tab = render(&m, 0);
	ASSERT(strstr(tab, "CONTAINER") == NULL);
	free(tab);
	mon_model_clear(&m);
	printf("identity checks passed\n");
	return 0;
}
