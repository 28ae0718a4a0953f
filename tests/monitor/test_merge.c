/*
 * test_merge - the join of NVML's process rows (host PIDs) with the
 * registry's records, on a fake /proc: namespaced PIDs mapped through
 * NSpid and the start time, a recycled PID not taking a record's place, a
 * dead record never merged with a live process that reuses its PID, a live
 * record whose process is gone marked stale, a dead record that NVML still
 * lists (by the outer PID it recorded) marked exiting, per-device sums of
 * caps and overcommit, devices only the registry knows.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../test.h"
#include "monitor/collect.h"
#include "monitor/merge.h"

#define GiB (1024ULL * 1024 * 1024)
static const char *const U0 = "GPU-00000000-0000-0000-0000-000000000001";
static const char *const UX = "GPU-ffffffff-0000-0000-0000-000000000002";
static char root[512];

/* A fake /proc/PID with status (NSpid, Uid), stat (start time) and cmdline. */
static void fake_proc(int pid, const char *nspid, unsigned uid, unsigned long long start,
                      const char *cmd)
{
	char path[700];
	snprintf(path, sizeof(path), "%s/%d", root, pid);
	ASSERT_EQ(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/%d/status", root, pid);
	FILE *f = fopen(path, "w");
	ASSERT(f);
	fprintf(f, "Name:\tx\nUid:\t%u\t%u\t%u\t%u\nNSpid:\t%s\n", uid, uid, uid, uid, nspid);
	fclose(f);
	snprintf(path, sizeof(path), "%s/%d/stat", root, pid);
	f = fopen(path, "w");
	ASSERT(f);
	/* Field 2 holds spaces and a parenthesis, as real command names may. */
	fprintf(f, "%d (a b) c) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0\n", pid, start);
	fclose(f);
	snprintf(path, sizeof(path), "%s/%d/cmdline", root, pid);
	f = fopen(path, "w");
	ASSERT(f);
	fwrite(cmd, 1, strlen(cmd) + 1, f);
	fclose(f);
}

static void nvml_row(struct mon_model *m, int pid, uint64_t used)
{
	m->procs = realloc(m->procs, sizeof(*m->procs) * (size_t)(m->nprocs + 1));
	struct mon_proc *p = &m->procs[m->nprocs++];
	memset(p, 0, sizeof(*p));
	p->valid = MON_P_NVML | MON_P_NVML_USED | MON_P_HOST_PID | MON_P_DEVICE;
	p->host_pid = pid;
	p->device = 0;
	strcpy(p->uuid, U0);
	p->cap = MON_NO_CAP;
	p->nvml_used = used;
}

static struct vramctl_proc *rec(struct vramctl_snapshot *s, int pid, int host, uint64_t start,
                                const char *group, int dead, uint64_t in_use)
{
	static struct vramctl_proc_dev devs[64];
	struct vramctl_proc *r = &s->procs[s->nprocs];
	memset(r, 0, sizeof(*r));
	r->dev = &devs[s->nprocs++];
	memset(r->dev, 0, sizeof(*r->dev));
	r->pid = pid;
	r->host_pid = host;
	r->start_time = start;
	r->uid = 1000;
	strcpy(r->user, "alice");
	strcpy(r->command, "train");
	strcpy(r->group, group);
	r->state = dead ? VRAMCTL_PROC_DEAD : VRAMCTL_PROC_ALIVE;
	r->ndev = 1;
	strcpy(r->dev[0].uuid, U0);
	r->dev[0].in_use = in_use;
	r->dev[0].peak = in_use;
	return r;
}

static const struct mon_proc *find(const struct mon_model *m, int capped, int host, int ns)
{
	for (int i = 0; i < m->nprocs; i++) {
		const struct mon_proc *p = &m->procs[i];
		if (!!(p->valid & MON_P_CAPPED) != capped)
			continue;
		if (host >= 0 && (!(p->valid & MON_P_HOST_PID) || p->host_pid != host))
			continue;
		if (host < 0 && (p->valid & MON_P_HOST_PID))
			continue;
		if (ns >= 0 && (!(p->valid & MON_P_NS_PID) || p->ns_pid != ns))
			continue;
		return p;
	}
	return NULL;
}

/* A model of one 16 GiB GPU NVML reads, nothing else yet. */
static void one_card(struct mon_model *m)
{
	memset(m, 0, sizeof(*m));
	m->valid = MON_M_NVML;
	m->devs = calloc(1, sizeof(*m->devs));
	ASSERT(m->devs);
	m->ndevs = 1;
	m->devs[0].valid = MON_DEV_INDEX | MON_DEV_MEMORY;
	strcpy(m->devs[0].uuid, U0);
	m->devs[0].total = 16 * GiB;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(root, sizeof(root), "%s/fakeproc", tmp ? tmp : "/tmp");
	mkdir(root, 0755);

	fake_proc(5000, "5000", 1001, 100, "render");    /* uncapped, host namespace */
	fake_proc(6000, "6000\t7", 1000, 777, "python"); /* container: PID 7 inside */
	fake_proc(6100, "6100\t8", 1000, 999, "other");  /* PID 8 inside, but a newer process */
	fake_proc(4300, "4300", 1002, 50, "reuser");     /* reuses a dead record's PID */
	fake_proc(4400, "4400", 1000, 444, "train");     /* capped, host namespace */
	fake_proc(4500, "4500", 1000, 450, "train");     /* capped, one of two GPUs used */
	fake_proc(4600, "4600", 1000, 460, "vramctl");   /* a member that used no GPU */
	fake_proc(4700, "4700", 1000, 470, "train");     /* capped, context only */

	struct mon_model m;
	one_card(&m);
	nvml_row(&m, 5000, 1 * GiB);
	nvml_row(&m, 6000, 2 * GiB);
	nvml_row(&m, 6100, 3 * GiB);
	nvml_row(&m, 4300, 4 * GiB);
	nvml_row(&m, 4400, 5 * GiB);
	nvml_row(&m, 4700, 64 << 20);
	nvml_row(&m, 9800, 7 * GiB); /* a dead member, reaped, still torn down */

	struct vramctl_snapshot s = {0};
	struct vramctl_group groups[3];
	struct vramctl_proc procs[10];
	memset(groups, 0, sizeof(groups));
	s.groups = groups;
	s.procs = procs;
	s.ngroups = 3;
	strcpy(groups[0].name, "g1");
	groups[0].nmembers = 3;
	groups[0].ndev = 2;
	strcpy(groups[0].dev[0].uuid, U0);
	groups[0].dev[0].cap = 10 * GiB;
	strcpy(groups[0].dev[1].uuid, UX);
	groups[0].dev[1].cap = 1 * GiB;
	strcpy(groups[1].name, "g2");
	groups[1].nmembers = 1;
	groups[1].ndev = 1;
	strcpy(groups[1].dev[0].uuid, U0);
	groups[1].dev[0].cap = 8 * GiB;
	/* A named group everyone has left: it caps nothing now. */
	strcpy(groups[2].name, "left");
	groups[2].nmembers = 0;
	groups[2].ndev = 1;
	strcpy(groups[2].dev[0].uuid, U0);
	groups[2].dev[0].cap = 12 * GiB;
	/* #24: the books' overhead of the group, and what each member's cap counts. */
	groups[0].dev[0].overhead = 100;
	rec(&s, 7, 0, 777, "g1", 0, 100)->counting = VRAMCTL_COUNTING_ALLOCATIONS; /* container */
	rec(&s, 8, 0, 555, "g1", 0, 200);      /* NSpid matches 6100, start time does not */
	rec(&s, 4242, 4242, 1, "g1", 0, 300);  /* alive by the registry, gone from /proc */
	rec(&s, 4300, 4300, 49, "g2", 1, 400); /* dead; 4300 is someone else now */
	rec(&s, 4400, 4400, 444, "g1", 0, 500)->dev[0].overhead = 100;
	/* A slot has a column for every device of its group: only used ones
	 * (or ones NVML lists the process on) are GPU-process rows. */
	struct vramctl_proc *two = rec(&s, 4500, 4500, 450, "g1", 0, 600);
	two->ndev = 2;
	strcpy(two->dev[1].uuid, UX);
	rec(&s, 4600, 4600, 460, "g1", 0, 0);
	rec(&s, 4700, 4700, 470, "g1", 0, 0);
	/* Dead members of a container (PID 48 and 49 inside, 9800 and 9900
	 * outside), reaped: NVML still lists 9800, not 9900. */
	rec(&s, 48, 0, 480, "g2", 1, 700)->outer_pid = 9800;
	rec(&s, 49, 0, 490, "g2", 1, 800)->outer_pid = 9900;

	ASSERT_EQ(mon_merge_registry(&m, &s, 0, root), 0);
	ASSERT(m.valid & MON_M_REGISTRY);

	/* The registry's unknown device was added, without an NVML index. */
	ASSERT_EQ(m.ndevs, 2);
	ASSERT_STR_EQ(m.devs[1].uuid, UX);
	ASSERT(!(m.devs[1].valid & MON_DEV_INDEX));
	/* Caps on GPU 0: 10 + 8 GiB > 16 GiB; the empty group's 12 GiB not. */
	ASSERT_UEQ(m.devs[0].caps_sum, 18 * GiB);
	ASSERT_EQ(m.devs[0].ncapped, 2);
	ASSERT_EQ(m.devs[0].overcommitted, 1);
	ASSERT_EQ(m.devs[1].overcommitted, 0); /* memory unknown: never claimed */

	/* Container process: host PID 6000 found, NVML usage merged. */
	const struct mon_proc *p = find(&m, 1, 6000, 7);
	ASSERT(p);
	ASSERT_EQ(p->state, MON_PROC_ALIVE);
	ASSERT(p->valid & MON_P_NVML_USED);
	ASSERT_UEQ(p->nvml_used, 2 * GiB);
	ASSERT_UEQ(p->in_use, 100);
	ASSERT_UEQ(p->cap, 10 * GiB);

	/* PID 8's record: 6100 is a different process (start time): not joined. */
	p = find(&m, 1, -1, 8);
	ASSERT(p);
	ASSERT(!(p->valid & MON_P_NVML));
	ASSERT(find(&m, 0, 6100, 8) != NULL); /* 6100 stays an uncapped row */

	/* Gone from /proc while the registry says alive: stale, numbers kept. */
	p = find(&m, 1, 4242, 4242);
	ASSERT(p);
	ASSERT_EQ(p->state, MON_PROC_STALE);
	ASSERT_UEQ(p->in_use, 300);

	/* Dead record: marked dead, not merged with the new owner of PID 4300. */
	p = find(&m, 1, 4300, 4300);
	ASSERT(p);
	ASSERT_EQ(p->state, MON_PROC_DEAD);
	ASSERT(!(p->valid & MON_P_NVML));
	ASSERT_UEQ(p->in_use, 400);
	p = find(&m, 0, 4300, 4300);
	ASSERT(p);
	ASSERT_UEQ(p->nvml_used, 4 * GiB);
	ASSERT_EQ(p->uid, 1002);

	/* Host-namespace capped process: merged. */
	p = find(&m, 1, 4400, 4400);
	ASSERT(p);
	ASSERT_UEQ(p->nvml_used, 5 * GiB);
	ASSERT(find(&m, 0, 4400, -1) == NULL);
	/* Its books: 500 on the card, 100 of it overhead; NVML sees 5 GiB. */
	ASSERT(p->valid & MON_P_ON_CARD);
	ASSERT_EQ(p->counting, VRAMCTL_COUNTING_CARD);
	ASSERT_UEQ(p->allocated, 400);
	ASSERT_UEQ(p->on_card, 5 * GiB);
	ASSERT_UEQ(p->card_overhead, 5 * GiB - 400);
	ASSERT_EQ(find(&m, 1, 6000, 7)->counting, VRAMCTL_COUNTING_ALLOCATIONS);
	/* g1 on GPU 0: its books (0 here) plus what NVML sees beyond the live
	 * members' books: 6000, 4400 and 4700 (a context only). */
	ASSERT_UEQ(m.groups[0].dev[0].overhead, 100);
	ASSERT_UEQ(m.groups[0].dev[0].on_card, (2 * GiB - 100) + (5 * GiB - 500) + (64 << 20));
	ASSERT_UEQ(m.groups[0].dev[0].card_overhead,
	           m.groups[0].dev[0].on_card); /* 100 of books' overhead, capped at on_card */
	ASSERT_UEQ(m.groups[0].dev[0].over_cap, 0);

	/* Uncapped: user and command from /proc. */
	p = find(&m, 0, 5000, 5000);
	ASSERT(p);
	ASSERT_EQ(p->uid, 1001);
	ASSERT(p->valid & MON_P_COMMAND);
	ASSERT_STR_EQ(p->command, "render");

	/* Dead, NVML still lists its outer PID: exiting, with NVML's usage,
	 * and no uncapped row of its own. */
	p = find(&m, 1, 9800, 48);
	ASSERT(p);
	ASSERT_EQ(p->state, MON_PROC_EXITING);
	ASSERT_UEQ(p->in_use, 700);
	ASSERT(p->valid & MON_P_NVML_USED);
	ASSERT_UEQ(p->nvml_used, 7 * GiB);
	ASSERT(find(&m, 0, 9800, -1) == NULL);
	/* Dead, not listed: dead. */
	p = find(&m, 1, -1, 49);
	ASSERT(p);
	ASSERT_EQ(p->state, MON_PROC_DEAD);

	/* Group g2's dead members are counted, one of them exiting; g1 has
	 * the stale one. */
	ASSERT_EQ(m.groups[1].ndead, 3);
	ASSERT_EQ(m.groups[1].nexiting, 1);
	ASSERT_EQ(m.groups[0].ndead, 1);
	ASSERT_EQ(m.groups[0].nexiting, 0);
	/* 5 records + 3 unclaimed NVML rows (5000, 6100, 4300). */
	/* 4500: one row, on the GPU it used. */
	p = find(&m, 1, 4500, 4500);
	ASSERT(p);
	ASSERT_STR_EQ(p->uuid, U0);
	ASSERT_UEQ(p->in_use, 600);
	for (int i = 0; i < m.nprocs; i++)
		ASSERT(!(m.procs[i].host_pid == 4500 && !strcmp(m.procs[i].uuid, UX)));
	/* 4600 used no GPU: not listed (the group counts it as a member). */
	ASSERT(find(&m, 1, 4600, -1) == NULL);
	ASSERT(find(&m, 0, 4600, -1) == NULL);
	/* 4700 holds only what NVML sees (a context): listed capped, never as
	 * an uncapped process. */
	p = find(&m, 1, 4700, 4700);
	ASSERT(p);
	ASSERT(p->valid & MON_P_NVML_USED);
	ASSERT_UEQ(p->nvml_used, 64 << 20);
	ASSERT(find(&m, 0, 4700, -1) == NULL);

	ASSERT_EQ(m.nprocs, 12);

	/* Overcommit needs two groups (#35): one job under --limit 10T is
	 * bounded by the card, and nobody can take from it; a second group's
	 * 1 GiB beside it is an overcommit (each cap bounded by the card). */
	struct mon_model o;
	struct vramctl_group og[2];
	memset(og, 0, sizeof(og));
	struct vramctl_snapshot os = {.groups = og, .ngroups = 1};
	strcpy(og[0].name, "big");
	og[0].nmembers = 1;
	og[0].ndev = 1;
	strcpy(og[0].dev[0].uuid, U0);
	og[0].dev[0].cap = 10240 * GiB;
	one_card(&o);
	ASSERT_EQ(mon_merge_registry(&o, &os, 0, root), 0);
	ASSERT_EQ(o.devs[0].overcommitted, 0);
	mon_model_clear(&o);
	og[1] = og[0];
	strcpy(og[1].name, "small");
	og[1].dev[0].cap = 1 * GiB;
	os.ngroups = 2;
	one_card(&o);
	ASSERT_EQ(mon_merge_registry(&o, &os, 0, root), 0);
	ASSERT_EQ(o.devs[0].overcommitted, 1);
	mon_model_clear(&o);

	/* A registry that cannot be read is a note, not a failure. */
	struct mon_model e = {0};
	ASSERT_EQ(mon_merge_registry(&e, NULL, -EACCES, root), 0);
	ASSERT(!(e.valid & MON_M_REGISTRY));
	ASSERT_EQ(e.nnotes, 1);
	ASSERT(strstr(e.notes[0], "Permission denied") != NULL);
	mon_model_clear(&e);

	/* mon_model_copy is deep. */
	struct mon_model c = {0};
	ASSERT_EQ(mon_model_copy(&c, &m), 0);
	ASSERT(c.procs != m.procs);
	ASSERT_EQ(c.nprocs, m.nprocs);
	ASSERT_EQ(memcmp(c.procs, m.procs, sizeof(*c.procs) * (size_t)c.nprocs), 0);
	mon_model_clear(&c);
	mon_model_clear(&m);
	printf("merge checks passed\n");
	return 0;
}
