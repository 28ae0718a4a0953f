/*
 * test_format - the monitor's formatters on fixed models, compared byte for
 * byte with tests/monitor/golden/<scenario>.{table,json,prom}.
 *
 * VR_UPDATE_GOLDEN=1 rewrites the golden files instead (then review the diff).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "monitor/cap_changes.h"
#include "monitor/card.h"
#include "monitor/format.h"
#include "monitor/guarantee.h"

#define GiB (1024ULL * 1024 * 1024)
#define MiB (1024ULL * 1024)

static const char *const UUID0 = "GPU-11111111-2222-3333-4444-555555555555";
static const char *const UUID1 = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";

static struct mon_device devs[4];
static struct mon_group groups[4];
static struct mon_proc procs[8];

static void base(struct mon_model *m)
{
	memset(m, 0, sizeof(*m));
	memset(devs, 0, sizeof(devs));
	memset(groups, 0, sizeof(groups));
	memset(procs, 0, sizeof(procs));
	m->time_ms = 1700000000123ULL;
	m->valid = MON_M_NVML | MON_M_REGISTRY | MON_M_DRIVER;
	strcpy(m->driver_version, "550.54.15");
	strcpy(m->registry_dir, "/run/user/1000/vramctl");
	m->devs = devs;
	m->groups = groups;
	m->procs = procs;
}

static void dev(struct mon_model *m, int index, const char *uuid, const char *name, uint64_t total,
                uint64_t used)
{
	struct mon_device *d = &devs[m->ndevs++];
	d->valid = MON_DEV_INDEX | MON_DEV_NAME | MON_DEV_MEMORY | MON_DEV_PROCS;
	d->index = index;
	strcpy(d->uuid, uuid);
	strcpy(d->name, name);
	d->total = total;
	d->used = used;
	d->free = total - used;
	strcpy(d->proc_api, "v3");
}

static struct mon_group *group(struct mon_model *m, const char *name, const char *spec, int members)
{
	struct mon_group *g = &groups[m->ngroups++];
	strcpy(g->name, name);
	strcpy(g->limit_spec, spec);
	g->owner = 1000;
	g->nmembers = members;
	g->consistent = 1;
	return g;
}

static void gdev(struct mon_model *m, struct mon_group *g, int device, uint64_t cap,
                 uint64_t in_use, uint64_t peak)
{
	struct mon_group_dev *gd = &g->dev[g->ndev++];
	strcpy(gd->uuid, m->devs[device].uuid);
	gd->device = device;
	gd->cap = cap;
	gd->in_use = in_use;
	gd->peak = peak;
	if (cap != MON_NO_CAP) {
		m->devs[device].caps_sum += cap;
		m->devs[device].ncapped++;
		m->devs[device].overcommitted = (m->devs[device].valid & MON_DEV_MEMORY) &&
		                                m->devs[device].caps_sum > m->devs[device].total;
	}
}

static struct mon_proc *capped(struct mon_model *m, int device, pid_t host, pid_t ns,
                               const char *grp, uint64_t cap, uint64_t in_use, uint64_t peak)
{
	struct mon_proc *p = &procs[m->nprocs++];
	p->valid = MON_P_CAPPED | MON_P_NS_PID | MON_P_USER | MON_P_COMMAND | MON_P_DEVICE;
	if (host) {
		p->valid |= MON_P_HOST_PID;
		p->host_pid = host;
	}
	p->ns_pid = ns;
	p->device = device;
	strcpy(p->uuid, m->devs[device].uuid);
	p->uid = 1000;
	strcpy(p->user, "alice");
	strcpy(p->command, "python train.py --epochs 3");
	strcpy(p->group, grp);
	p->cap = cap;
	p->in_use = in_use;
	p->peak = peak;
	return p;
}

static struct mon_proc *uncapped(struct mon_model *m, int device, pid_t host, uint64_t used,
                                 int used_known)
{
	struct mon_proc *p = &procs[m->nprocs++];
	p->valid =
	    MON_P_NVML | MON_P_HOST_PID | MON_P_NS_PID | MON_P_DEVICE | MON_P_USER | MON_P_COMMAND;
	if (used_known)
		p->valid |= MON_P_NVML_USED;
	p->host_pid = host;
	p->ns_pid = host;
	p->device = device;
	strcpy(p->uuid, m->devs[device].uuid);
	p->uid = 1001;
	strcpy(p->user, "bob");
	strcpy(p->command, "./render \"scene 1\"");
	p->cap = MON_NO_CAP;
	p->nvml_used = used;
	return p;
}

/* ---- scenarios ---- */

static void s_no_process(struct mon_model *m)
{
	base(m);
	dev(m, 0, UUID0, "NVIDIA A100-SXM4-40GB", 40 * GiB, 420 * MiB);
}

static void s_capped_uncapped(struct mon_model *m)
{
	base(m);
	dev(m, 0, UUID0, "NVIDIA A100-SXM4-40GB", 40 * GiB, 9 * GiB);
	dev(m, 1, UUID1, "NVIDIA A100-SXM4-40GB", 40 * GiB, 30 * GiB);
	struct mon_group *g = group(m, "train", "0=4G,1=30G", 2);
	gdev(m, g, 0, 4 * GiB, 3 * GiB, 3 * GiB + 512 * MiB);
	gdev(m, g, 1, 30 * GiB, 20 * GiB, 20 * GiB);
	struct mon_group *h = group(m, "notebook", "16G", 1);
	gdev(m, h, 1, 16 * GiB, 6 * GiB, 7 * GiB);
	/* The notebook spills past its cap: 256 MiB of a 4 GiB host budget. */
	h->spill_budget = 4 * GiB;
	h->spilled = 256 * MiB;
	h->dev[0].spilled = 256 * MiB;
	devs[1].spilled = 256 * MiB;
	struct mon_proc *p =
	    capped(m, 0, 4242, 4242, "train", 4 * GiB, 2 * GiB, 2 * GiB + 100 * MiB);
	p->valid |= MON_P_NVML | MON_P_NVML_USED;
	p->nvml_used = 2 * GiB + 300 * MiB;
	p->denied_count = 3;
	p->last_denied = 600 * MiB;
	p->host_pinned = 64 * MiB;
	p = capped(m, 0, 4243, 4243, "train", 4 * GiB, 1 * GiB, 1536 * MiB);
	p->valid |= MON_P_NVML | MON_P_NVML_USED;
	p->nvml_used = 1 * GiB + 200 * MiB;
	p = capped(m, 1, 4242, 4242, "train", 30 * GiB, 20 * GiB, 20 * GiB);
	p->valid |= MON_P_NVML | MON_P_NVML_USED;
	p->nvml_used = 20 * GiB + 300 * MiB;
	/* In a container: the process sees itself as PID 7. */
	p = capped(m, 1, 9100, 7, "notebook", 16 * GiB, 6 * GiB, 7 * GiB);
	strcpy(p->command, "jupyter-kernel");
	p->spilled = 256 * MiB;
	uncapped(m, 0, 5000, 5 * GiB, 1);
}

static void s_vanished(struct mon_model *m)
{
	base(m);
	dev(m, 0, UUID0, "NVIDIA L4", 24 * GiB, 2 * GiB);
	struct mon_group *g = group(m, "job-17", "8G", 1);
	g->ndead = 3;
	g->nexiting = 1;
	gdev(m, g, 0, 8 * GiB, 1 * GiB, 7 * GiB);
	g->dev[0].dead_in_use = 6 * GiB + 512 * MiB;
	struct mon_proc *p = capped(m, 0, 3100, 3100, "job-17", 8 * GiB, 1 * GiB, 1 * GiB);
	p->valid |= MON_P_NVML | MON_P_NVML_USED;
	p->nvml_used = 1 * GiB + 250 * MiB;
	p = capped(m, 0, 3101, 3101, "job-17", 8 * GiB, 5 * GiB, 5 * GiB);
	p->state = MON_PROC_DEAD;
	p->denied_count = 1;
	p = capped(m, 0, 3102, 3102, "job-17", 8 * GiB, 512 * MiB, 512 * MiB);
	p->state = MON_PROC_STALE;
	/* Killed and reaped, but the driver still tears it down. */
	p = capped(m, 0, 3103, 3103, "job-17", 8 * GiB, 1 * GiB, 1 * GiB);
	p->state = MON_PROC_EXITING;
	p->valid |= MON_P_NVML | MON_P_NVML_USED;
	p->nvml_used = 1 * GiB + 64 * MiB;
}

static void s_nvml_missing(struct mon_model *m)
{
	base(m);
	m->valid = MON_M_REGISTRY;
	m->driver_version[0] = '\0';
	mon_model_note(m, "NVML not found (libnvidia-ml.so.1): GPU totals and uncapped processes "
	                  "unknown");
	/* A device known only from the registry: no index, no memory. */
	struct mon_device *d = &devs[m->ndevs++];
	d->index = -1;
	strcpy(d->uuid, UUID0);
	struct mon_group *g = group(m, "solo", "2G", 1);
	gdev(m, g, 0, 2 * GiB, 700 * MiB, 900 * MiB);
	capped(m, 0, 0, 812, "solo", 2 * GiB, 700 * MiB, 900 * MiB);
}

static void s_no_v3(struct mon_model *m)
{
	s_capped_uncapped(m);
	strcpy(devs[0].proc_api, "v2");
	strcpy(devs[1].proc_api, "v2");
}

static void s_memory_unknown(struct mon_model *m)
{
	base(m);
	dev(m, 0, UUID0, "NVIDIA GeForce RTX 4090", 24 * GiB, 3 * GiB);
	dev(m, 1, UUID1, "NVIDIA GeForce RTX 4090", 0, 0);
	devs[1].valid &= ~(unsigned)MON_DEV_MEMORY;
	mon_model_note(m, "NVML did not report the memory of GPU 1");
	struct mon_group *g = group(m, "render", "1=12G", 1);
	gdev(m, g, 1, 12 * GiB, 2 * GiB, 2 * GiB);
	/* usedGpuMemory == ULLONG_MAX: NVML lists the process, usage unknown. */
	uncapped(m, 0, 6000, 0, 0);
	struct mon_proc *p = capped(m, 1, 6001, 6001, "render", 12 * GiB, 2 * GiB, 2 * GiB);
	p->valid |= MON_P_NVML;
}

/* #24: members whose books carry overhead (contexts, modules), one whose
 * NVML figure runs ahead of its books, a dead member's bytes, and a group
 * over its cap on the card; beside it, members whose caps count
 * allocations only (asked, and for want of a driver figure). */
static void s_on_card(struct mon_model *m)
{
	base(m);
	dev(m, 0, UUID0, "NVIDIA H200", 140 * GiB, 3 * GiB);
	struct mon_group *g = group(m, "g1", "1G", 2);
	g->ndead = 1;
	gdev(m, g, 0, 1 * GiB, 1314 * MiB, 1314 * MiB);
	g->dev[0].dead_in_use = 100 * MiB;
	g->dev[0].overhead = 600 * MiB;
	struct mon_proc *p = capped(m, 0, 32026, 32026, "g1", 1 * GiB, 922 * MiB, 922 * MiB);
	p->overhead = 300 * MiB;
	p->valid |= MON_P_NVML | MON_P_NVML_USED;
	p->nvml_used = 922 * MiB;
	/* NVML already sees 8 MiB more than the library last read. */
	p = capped(m, 0, 32063, 32063, "g1", 1 * GiB, 392 * MiB, 392 * MiB);
	p->overhead = 300 * MiB;
	p->valid |= MON_P_NVML | MON_P_NVML_USED;
	p->nvml_used = 400 * MiB;
	p = capped(m, 0, 32001, 32001, "g1", 1 * GiB, 100 * MiB, 100 * MiB);
	p->state = MON_PROC_DEAD;
	p->valid &= ~(unsigned)MON_P_HOST_PID;
	struct mon_group *h = group(m, "solo", "4G", 2);
	gdev(m, h, 0, 4 * GiB, 1536 * MiB, 1536 * MiB);
	p = capped(m, 0, 32100, 32100, "solo", 4 * GiB, 1 * GiB, 1 * GiB);
	p->counting = VRAMCTL_COUNTING_ALLOCATIONS;
	p->valid |= MON_P_NVML | MON_P_NVML_USED;
	p->nvml_used = 1 * GiB + 300 * MiB;
	p = capped(m, 0, 32101, 32101, "solo", 4 * GiB, 512 * MiB, 512 * MiB);
	p->counting = VRAMCTL_COUNTING_NO_FIGURES;
	p->valid |= MON_P_NVML;
}

/* A notebook's group whose cap was raised, then lowered below what it
 * holds (`vramctl limit`, #26): over its cap, with why, and the changes. */
static void s_lowered(struct mon_model *m)
{
	base(m);
	dev(m, 0, UUID0, "NVIDIA H200", 140 * GiB, 3 * GiB);
	struct mon_group *g = group(m, "nb", "2G", 1);
	gdev(m, g, 0, 2 * GiB, 3 * GiB, 3 * GiB);
	struct vramctl_cap_change c = {
	    .when = 1796200000, .uid = 1000, .pid = 4242, .old_cap = 4 * GiB, .new_cap = 8 * GiB};
	snprintf(c.uuid, sizeof c.uuid, "%s", UUID0);
	g->changes[0] = c;
	c.when += 3600;
	c.uid = 0;
	c.old_cap = 8 * GiB;
	c.new_cap = 2 * GiB;
	g->changes[1] = c;
	g->nchanges = 2;
	g->changes_total = 2;
	capped(m, 0, 32200, 32200, "nb", 2 * GiB, 3 * GiB, 3 * GiB);
}

/* The driver's per-cgroup limits (R615): a capped process also under a
 * driver limit (both), an uncapped one under one (driver), one under none. */
static void s_driver_limit(struct mon_model *m)
{
	base(m);
	dev(m, 0, UUID0, "NVIDIA H200", 140 * GiB, 10 * GiB);
	struct mon_group *g = group(m, "job7", "8G", 1);
	gdev(m, g, 0, 8 * GiB, 2 * GiB, 2 * GiB);
	g->ndriver = 1;
	struct mon_proc *p = capped(m, 0, 4242, 4242, "job7", 8 * GiB, 2 * GiB, 2 * GiB);
	p->valid |= MON_P_DRVLIMIT;
	snprintf(p->drv.cgroup, sizeof(p->drv.cgroup), "/system.slice/job_7/step_0");
	p->drv.hard = 8 * GiB;
	p->drv.soft = 2 * GiB;
	p->drv.used = 2 * GiB + 64 * MiB;
	p = uncapped(m, 0, 5000, 3 * GiB, 1);
	p->valid |= MON_P_DRVLIMIT;
	snprintf(p->drv.cgroup, sizeof(p->drv.cgroup), "/kubepods/pod1/ctr");
	p->drv.hard = 4 * GiB;
	p->drv.used = 3 * GiB;
	uncapped(m, 0, 5001, 1 * GiB, 1);
}

/* A holder of a device book's guarantee (#26), as guarantee_read.c fills it. */
static void holder(struct mon_device *d, const char *grp, uint32_t uid, uint64_t guarantee,
                   uint64_t held)
{
	struct mon_guarantee *e = &d->guar[d->nguar++];
	d->nguar_all++;
	snprintf(e->group, sizeof e->group, "%s", grp);
	e->uid = uid;
	e->pid = 5000 + d->nguar;
	e->guarantee = guarantee;
	e->held = held;
	d->guaranteed += guarantee;
	d->unused_guarantee += guarantee > held ? guarantee - held : 0;
}

/* Guarantees (#26): ga under its guarantee, gb borrowing 6 GiB past its
 * own, gn with none (all it holds is borrowed), and another user's gc, not
 * in this registry, holding none of its guarantee. */
static void s_guarantee(struct mon_model *m)
{
	base(m);
	dev(m, 0, UUID0, "NVIDIA H200", 140 * GiB, 40 * GiB);
	dev(m, 1, UUID1, "NVIDIA H200", 140 * GiB, 0);
	struct mon_device *d = &devs[0];
	d->valid |= MON_DEV_GUAR;
	holder(d, "ga", 1000, 10 * GiB, 4 * GiB);
	holder(d, "gb", 1000, 20 * GiB, 26 * GiB);
	holder(d, "gc", 1001, 8 * GiB, 0);
	devs[1].valid |= MON_DEV_GUAR; /* a book with nobody in it */
	struct mon_group *g = group(m, "ga", "40G", 1);
	gdev(m, g, 0, 40 * GiB, 4 * GiB, 5 * GiB);
	capped(m, 0, 31001, 31001, "ga", 40 * GiB, 4 * GiB, 5 * GiB);
	g = group(m, "gb", "60G", 1);
	gdev(m, g, 0, 60 * GiB, 26 * GiB, 26 * GiB);
	capped(m, 0, 31002, 31002, "gb", 60 * GiB, 26 * GiB, 26 * GiB);
	g = group(m, "gn", "8G", 1);
	gdev(m, g, 0, 8 * GiB, 2 * GiB, 2 * GiB);
	gdev(m, g, 1, 8 * GiB, 1 * GiB, 1 * GiB);
	capped(m, 0, 31003, 31003, "gn", 8 * GiB, 2 * GiB, 2 * GiB);
	capped(m, 1, 31003, 31003, "gn", 8 * GiB, 1 * GiB, 1 * GiB);
}

static void s_empty(struct mon_model *m)
{
	base(m);
	m->valid = 0;
	mon_model_note(m, "NVML not found (libnvidia-ml.so.1): GPU totals and uncapped processes "
	                  "unknown");
	mon_model_note(m, "registry /nonexistent unreadable (Permission denied): capped processes "
	                  "unknown");
}

static const struct {
	const char *name;
	void (*make)(struct mon_model *);
} scenarios[] = {
    {"no_process", s_no_process}, {"capped_uncapped", s_capped_uncapped},
    {"vanished", s_vanished},     {"nvml_missing", s_nvml_missing},
    {"no_v3", s_no_v3},           {"memory_unknown", s_memory_unknown},
    {"nothing_visible", s_empty}, {"on_card", s_on_card},
    {"lowered", s_lowered},       {"driver_limit", s_driver_limit},
    {"guarantee", s_guarantee},
};

static char *render(const struct mon_model *m, int which, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	ASSERT(f);
	/* As mon_merge_registry does after the join. */
	mon_card_figures((struct mon_model *)m);
	for (int i = 0; i < m->ngroups; i++)
		mon_cap_changes_lowered(&((struct mon_model *)m)->groups[i]);
	mon_guarantee_derive((struct mon_model *)m);
	int rc = which == 0   ? mon_format_table(f, m)
	         : which == 1 ? mon_format_json(f, m, 0)
	                      : mon_format_prom(f, m);
	ASSERT_EQ(rc, 0);
	ASSERT_EQ(fclose(f), 0);
	return buf;
}

static int check(const char *scenario, const char *ext, const char *got, size_t len)
{
	/* An unknown label value is left out, never written as "" (a GPU
	 * index or a name without NVML, a PID in another namespace). */
	if (!strcmp(ext, "prom") && strstr(got, "=\"\"")) {
		fprintf(stderr, "%s.prom has an empty label value:\n%s\n", scenario, got);
		return 1;
	}
	const char *src = getenv("VR_SRC");
	char path[1024];
	snprintf(path, sizeof(path), "%s/tests/monitor/golden/%s.%s", src ? src : ".", scenario,
	         ext);
	if (getenv("VR_UPDATE_GOLDEN")) {
		FILE *f = fopen(path, "w");
		ASSERT(f);
		fwrite(got, 1, len, f);
		fclose(f);
		printf("wrote %s\n", path);
		return 0;
	}
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "missing golden file %s\n", path);
		return 1;
	}
	char *want = NULL;
	size_t cap = 0;
	ssize_t n = getdelim(&want, &cap, '\0', f);
	fclose(f);
	size_t wl = n > 0 ? (size_t)n : 0;
	int bad = wl != len || memcmp(want, got, len) != 0;
	if (bad) {
		fprintf(stderr, "%s.%s differs from golden; got:\n%s\n", scenario, ext, got);
		size_t i = 0;
		while (i < wl && i < len && want[i] == got[i])
			i++;
		fprintf(stderr, "first difference at byte %zu\n", i);
	}
	free(want);
	return bad;
}

/* Label values with quotes, backslashes and newlines are escaped. */
static void test_prom_escape(void)
{
	struct mon_model m;
	base(&m);
	dev(&m, 0, UUID0, "GPU \"x\"\\y\nz", GiB, 0);
	size_t len;
	char *out = render(&m, 2, &len);
	ASSERT(strstr(out, "name=\"GPU \\\"x\\\"\\\\y\\nz\"") != NULL);
	free(out);
	char *j = render(&m, 1, &len);
	ASSERT(strstr(j, "\"name\": \"GPU \\\"x\\\"\\\\y\\nz\"") != NULL);
	free(j);
}

/* The compact form used by --watch is one line. */
static void test_json_compact(void)
{
	struct mon_model m;
	s_capped_uncapped(&m);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ASSERT_EQ(mon_format_json(f, &m, 1), 0);
	fclose(f);
	ASSERT(len > 100);
	ASSERT_EQ(buf[len - 1], '\n');
	ASSERT(memchr(buf, '\n', len - 1) == NULL);
	free(buf);
}

/* The figures of s_on_card, checked one by one (the goldens show them). */
static void test_on_card_figures(void)
{
	struct mon_model m;
	s_on_card(&m);
	mon_card_figures(&m);
	/* Books 922 MiB, 300 of them overhead; NVML agrees. */
	ASSERT_EQ(m.procs[0].allocated, 622 * MiB);
	ASSERT_EQ(m.procs[0].on_card, 922 * MiB);
	ASSERT_EQ(m.procs[0].card_overhead, 300 * MiB);
	/* NVML ahead of the books: on the card is NVML's, the rest overhead. */
	ASSERT_EQ(m.procs[1].allocated, 92 * MiB);
	ASSERT_EQ(m.procs[1].on_card, 400 * MiB);
	ASSERT_EQ(m.procs[1].card_overhead, 308 * MiB);
	ASSERT_EQ(m.procs[1].peak, 400 * MiB); /* never below what it holds now */
	/* Dead: its books. */
	ASSERT_EQ(m.procs[2].on_card, 100 * MiB);
	/* Counting allocations only, as asked: the card still holds NVML's. */
	ASSERT_EQ(m.procs[3].allocated, 1 * GiB);
	ASSERT_EQ(m.procs[3].on_card, 1 * GiB + 300 * MiB);
	ASSERT_EQ(m.procs[3].card_overhead, 300 * MiB);
	/* No driver figure: the books alone. */
	ASSERT_EQ(m.procs[4].on_card, 512 * MiB);
	ASSERT_EQ(m.procs[4].card_overhead, 0);
	/* g1: 1314 live + 100 dead + NVML's 8 ahead; 608 of it overhead. */
	const struct mon_group_dev *g1 = &m.groups[0].dev[0], *solo = &m.groups[1].dev[0];
	ASSERT_EQ(g1->on_card, 1422 * MiB);
	ASSERT_EQ(g1->card_overhead, 608 * MiB);
	ASSERT_EQ(g1->over_cap, 398 * MiB);
	ASSERT_EQ(g1->peak, 1422 * MiB);
	ASSERT_EQ(solo->on_card, 1536 * MiB + 300 * MiB);
	ASSERT_EQ(solo->over_cap, 0);
	/* Twice gives the same (status --watch and top recompute nothing, but
	 * a caller may). */
	mon_card_figures(&m);
	ASSERT_EQ(g1->on_card, 1422 * MiB);
}

/* Guarantees (#26): each group's guarantee found by name and owner, what it
 * borrows, the device's unguaranteed free; another user's group marked. */
static void test_guarantee_figures(void)
{
	struct mon_model m;
	size_t len;
	s_guarantee(&m);
	char *t = render(&m, 0, &len);
	const struct mon_group_dev *ga = &m.groups[0].dev[0], *gb = &m.groups[1].dev[0];
	const struct mon_group_dev *gn = &m.groups[2].dev[0], *gn1 = &m.groups[2].dev[1];
	ASSERT_EQ(ga->guarantee, 10 * GiB);
	ASSERT_EQ(ga->borrowed, 0);
	ASSERT_EQ(gb->guarantee, 20 * GiB);
	ASSERT_EQ(gb->borrowed, 6 * GiB);
	ASSERT_EQ(gn->guarantee, 0);
	ASSERT_EQ(gn->borrowed, 2 * GiB);
	ASSERT_EQ(gn1->borrowed, 1 * GiB);
	/* Free 100 GiB less the unused 6 (ga) + 0 (gb) + 8 (gc). */
	ASSERT_EQ(m.devs[0].unused_guarantee, 14 * GiB);
	ASSERT_EQ(m.devs[0].unguaranteed_free, 86 * GiB);
	ASSERT_EQ(m.devs[1].unguaranteed_free, 140 * GiB);
	ASSERT_EQ(m.devs[0].guar[0].in_registry, 1);
	ASSERT_EQ(m.devs[0].guar[2].in_registry, 0);
	ASSERT(strstr(t,
	              "GPU 0: guarantees 38 GiB (14 GiB unused); unguaranteed free 86 GiB; "
	              "held by: ga (uid 1000) 10 GiB, 4 GiB in use; gb (uid 1000) 20 GiB, "
	              "26 GiB in use; gc (uid 1001, not in this registry) 8 GiB, 0 B in use\n") !=
	       NULL);
	ASSERT(strstr(t, "GPU 1: guarantees") == NULL);
	ASSERT(strstr(t, "GUARANTEE") != NULL);
	free(t);
	/* Another user's guarantee alone shows the columns; the same group
	 * name of another owner is not this group's. */
	s_guarantee(&m);
	strcpy(m.devs[0].guar[0].group, "gx");
	strcpy(m.devs[0].guar[1].group, "gx");
	m.devs[0].guar[2].uid = 1000;
	strcpy(m.devs[0].guar[2].group, "gz");
	t = render(&m, 0, &len);
	ASSERT_EQ(m.groups[0].dev[0].guarantee, 0);
	ASSERT_EQ(m.groups[0].dev[0].borrowed, 4 * GiB);
	ASSERT(strstr(t, "BORROWED") != NULL);
	free(t);
	/* Nobody holds a guarantee: no columns, no line. */
	s_capped_uncapped(&m);
	t = render(&m, 0, &len);
	ASSERT(strstr(t, "GUARANTEE") == NULL);
	ASSERT(strstr(t, "guarantees") == NULL);
	free(t);
}

/* The over-cap flag and the counting labels, in each of the three forms. */
static void test_on_card_flags(void)
{
	struct mon_model m;
	size_t len;
	s_on_card(&m);
	char *t = render(&m, 0, &len);
	ASSERT(strstr(t, "group g1 on GPU 0: over cap on the card by 398 MiB: members' overhead "
	                 "(contexts, modules, driver use) 608 MiB, allocations 814 MiB") != NULL);
	ASSERT(strstr(t, "group solo") == NULL);
	ASSERT(strstr(t, "cap 1 GiB); every allocation is refused until it is back under\n") !=
	       NULL);
	ASSERT(strstr(t, "allocations only (asked)") != NULL);
	ASSERT(strstr(t, "allocations only (no driver figure)") != NULL);
	free(t);
	/* Over its cap by NVML's figures alone (a member counting allocations
	 * only): its books are under the cap, so allocations are still granted,
	 * and the line says so instead of "refused". */
	s_on_card(&m);
	m.groups[1].dev[0].cap = 1600 * MiB;
	t = render(&m, 0, &len);
	ASSERT(strstr(t, "group solo on GPU 0: over cap on the card by 236 MiB") != NULL);
	ASSERT(strstr(t, "(1.8 GiB held, cap 1.6 GiB); its books are still under the cap") != NULL);
	free(t);
	/* Figures that differ never read the same (#35: "1 GiB held, cap 1
	 * GiB" for a group over its cap by 10 MiB). */
	struct mon_group_dev over = {.cap = 1024 * MiB,
	                             .on_card = 1034 * MiB,
	                             .card_overhead = 64 * MiB,
	                             .over_cap = 10 * MiB};
	char why[256];
	mon_over_cap_reason(&over, why, sizeof why);
	ASSERT(strstr(why, "(1.01 GiB held, cap 1 GiB)") != NULL);
	s_on_card(&m);
	char *j = render(&m, 1, &len);
	ASSERT(strstr(j, "\"over_cap\": true") != NULL);
	ASSERT(strstr(j, "\"over_cap\": false") != NULL);
	ASSERT(strstr(j, "\"over_cap_bytes\": 417333248") != NULL);
	ASSERT(strstr(j, "\"counting\": \"allocations\"") != NULL);
	ASSERT(strstr(j, "\"counting\": \"no_figures\"") != NULL);
	ASSERT(strstr(j, "\"overhead_bytes\": 322961408") != NULL); /* 308 MiB */
	free(j);
	s_on_card(&m);
	char *p = render(&m, 2, &len);
	ASSERT(strstr(p, "vramctl_group_over_cap{group=\"g1\",gpu=\"0\",uuid=\"GPU-11111111-2222-"
	                 "3333-4444-555555555555\"} 1\n") != NULL);
	ASSERT(strstr(p, "vramctl_group_over_cap{group=\"solo\",gpu=\"0\",uuid=\"GPU-11111111-"
	                 "2222-3333-4444-555555555555\"} 0\n") != NULL);
	ASSERT(strstr(p, "vramctl_group_card_bytes{group=\"g1\",gpu=\"0\",uuid=\"GPU-11111111-"
	                 "2222-3333-4444-555555555555\"} 1491075072\n") != NULL);
	ASSERT(strstr(p, "vramctl_process_overhead_bytes{pid=\"32063\"") != NULL);
	free(p);
}

/* HAMi's series (export --hami): two processes of one container summed,
 * a container known only by its ID (its short ID is the container label),
 * a second device of a group (vdevice index 1), and rows HAMi would not
 * list: no pod, dead, uncapped. Golden hami.prom (promtool-checked by
 * export_http.sh). */
static void s_hami(struct mon_model *m)
{
	base(m);
	dev(m, 0, UUID0, "NVIDIA A100-SXM4-40GB", 40 * GiB, 12 * GiB);
	dev(m, 1, UUID1, "NVIDIA A100-SXM4-40GB", 40 * GiB, 3 * GiB);
	struct mon_group *g = group(m, "pidns-4026532901", "4G", 2);
	gdev(m, g, 0, 4 * GiB, 3 * GiB, 3 * GiB);
	struct mon_group *h = group(m, "hami-5ec1", "0=2G,1=6G", 1);
	gdev(m, h, 0, 2 * GiB, 0, 0);
	gdev(m, h, 1, 6 * GiB, 1 * GiB, 1 * GiB);
	struct mon_proc *p[6];
	p[0] = capped(m, 0, 4100, 1, g->name, 4 * GiB, 1 * GiB, 1 * GiB);
	p[1] = capped(m, 0, 4101, 7, g->name, 4 * GiB, 2 * GiB, 2 * GiB);
	p[2] = capped(m, 1, 4200, 1, h->name, 6 * GiB, 1 * GiB, 1 * GiB);
	p[3] = capped(m, 0, 4300, 1, g->name, 4 * GiB, 512 * MiB, 512 * MiB); /* no pod */
	p[4] = capped(m, 0, 4400, 1, g->name, 4 * GiB, 256 * MiB, 256 * MiB); /* dead */
	p[4]->state = MON_PROC_DEAD;
	p[5] = uncapped(m, 0, 4500, 1 * GiB, 1);
	static const char cid1[] =
	    "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d";
	static const char cid2[] =
	    "34dc0b5e626f2c5c4c5170e34b10e7654ce36f0fcd532739f4445baabea03376";
	for (int i = 0; i < 6; i++) {
		strcpy(p[i]->container_id, i == 2 ? cid2 : cid1);
		if (i == 3)
			continue;
		strcpy(p[i]->pod_namespace, "ml");
		strcpy(p[i]->pod_name, i == 2 ? "infer-0" : "train-7f9c");
		if (i != 2)
			strcpy(p[i]->container_name, "trainer");
	}
	p[0]->valid |= MON_P_NVML_USED; /* NVML ahead of the books: the card's figure */
	p[0]->nvml_used = 1 * GiB + 300 * MiB;
}

static void test_hami(int *bad)
{
	struct mon_model m;
	s_hami(&m);
	mon_card_figures(&m);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ASSERT(f);
	struct mon_hami_opts o = {.node = "gpu-node-1"};
	ASSERT_EQ(mon_format_hami(f, &m, &o), 0);
	ASSERT_EQ(fclose(f), 0);
	*bad += check("hami", "prom", buf, len);
	/* The container's two processes: one series, their sum. */
	ASSERT(strstr(buf, "hami_vgpu_memory_used_bytes{namespace=\"ml\",pod=\"train-7f9c\","
	                   "container=\"trainer\",vdevice_index=\"0\",device_uuid=\"GPU-11111111-"
	                   "2222-3333-4444-555555555555\",zone=\"vGPU\"} 3535798272\n") != NULL);
	ASSERT(strstr(buf, "vGPU_device_memory_limit_in_bytes{podnamespace=\"ml\",podname=\"infer-"
	                   "0\",ctrname=\"34dc0b5e626f\",vdeviceid=\"1\",deviceuuid=\"GPU-aaaaaaaa-"
	                   "bbbb-cccc-dddd-eeeeeeeeeeee\",zone=\"vGPU\"} 6442450944\n") != NULL);
	ASSERT(strstr(buf, "HostGPUMemoryUsage{nodeid=\"gpu-node-1\",deviceidx=\"1\"") != NULL);
	ASSERT(strstr(buf, "4300") == NULL && strstr(buf, "536870912") == NULL);
	free(buf);
}

int main(void)
{
	static const char *const exts[] = {"table", "json", "prom"};
	int bad = 0;
	test_prom_escape();
	test_json_compact();
	test_on_card_flags();
	test_guarantee_figures();
	test_on_card_figures();
	test_hami(&bad);
	for (size_t s = 0; s < sizeof(scenarios) / sizeof(scenarios[0]); s++) {
		for (int w = 0; w < 3; w++) {
			struct mon_model m;
			scenarios[s].make(&m);
			size_t len;
			char *out = render(&m, w, &len);
			bad += check(scenarios[s].name, exts[w], out, len);
			free(out);
		}
	}
	if (bad) {
		fprintf(stderr, "%d golden file(s) differ\n", bad);
		return 1;
	}
	printf("all golden outputs match\n");
	return 0;
}
