/*
 * doctor_books.c - doctor's checks of what lives beside the driver: the
 * group's books in the registry (damage, groups that ended), the picture of
 * who holds memory outside any cap, and the Jupyter kernels vramctl
 * installed (doctor_books.h).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/doctor_books.h"
#include "cli/kernel_spec.h"
#include "common/size.h"

/* ---- the books and the picture ---- */

static int is_self(const struct doc *d, const struct mon_proc *p)
{
	pid_t me = getpid();
	return p->host_pid == me || p->host_pid == d->probe_pid ||
	       ((p->valid & MON_P_NS_PID) && (p->ns_pid == me || p->ns_pid == d->probe_pid));
}

/* 1 when the model (the registry's snapshot) lists a group of this name. */
static int group_listed(const struct mon_model *m, const char *name)
{
	for (int i = 0; i < m->ngroups; i++)
		if (!strcmp(m->groups[i].name, name))
			return 1;
	return 0;
}

/*
 * Doors of groups that ended: a group's door (<dir>/<group>.vrg) outlives
 * its last member, by design (the next run of that name reuses it), while
 * its segment goes with the last member; the snapshot shows only groups
 * with live members, so a door it does not list holds nothing. Writes the
 * first 4 names in sorted order into list; returns how many doors there are.
 */
static int ended_groups(const struct mon_model *m, char *list, size_t len)
{
	DIR *dir = opendir(m->registry_dir);
	char names[5][80];
	int n = 0;
	if (!dir)
		return 0;
	for (struct dirent *e; (e = readdir(dir));) {
		size_t l = strlen(e->d_name);
		int k;
		if (e->d_name[0] == '.' || l <= 4 || l - 4 >= sizeof(names[0]) ||
		    strcmp(e->d_name + l - 4, ".vrg") != 0)
			continue;
		snprintf(names[4], sizeof(names[4]), "%.*s", (int)(l - 4), e->d_name);
		if (group_listed(m, names[4]))
			continue;
		/* Insertion into the 4 smallest, so the list does not depend on readdir. */
		for (k = n < 4 ? n : 4; k > 0 && strcmp(names[4], names[k - 1]) < 0; k--)
			;
		if (k < 4) {
			char name[80];
			memcpy(name, names[4], sizeof(name));
			memmove(names[k + 1], names[k], sizeof(names[0]) * (size_t)(3 - k));
			memcpy(names[k], name, sizeof(name));
		}
		n++;
	}
	closedir(dir);
	list[0] = '\0';
	for (int i = 0; i < n && i < 4; i++) {
		size_t used = strlen(list);
		snprintf(list + used, len - used, "%s%s", i ? ", " : "", names[i]);
	}
	return n;
}

/*
 * Damage the registry's reader found in the books ("registry: FILE:
 * damaged: WHY" notes, the same status prints and the members detect):
 * one FAIL naming each file's first fault, and how many groups.
 */
static void check_damage(struct doc *d, const struct mon_model *m)
{
	char fact[1600] = "", files[MON_MAX_NOTES][PATH_MAX];
	int nfiles = 0, nother = 0;

	for (int i = 0; i < m->nnotes; i++) {
		const char *n = m->notes[i], *tag;
		if (strncmp(n, "registry: ", 10) != 0)
			continue;
		n += 10;
		tag = strstr(n, ": damaged: ");
		if (!tag) {
			nother++;
			continue;
		}
		int len = (int)(tag - n), seen = 0;
		for (int j = 0; j < nfiles; j++)
			seen |= (int)strlen(files[j]) == len && !strncmp(files[j], n, (size_t)len);
		size_t used = strlen(fact);
		if (seen) {
			snprintf(fact + used, sizeof(fact) - used, "; %s", tag + 11);
			continue;
		}
		snprintf(files[nfiles++], sizeof(files[0]), "%.*s", len, n);
		snprintf(fact + used, sizeof(fact) - used, "; %.*s: %s", len, n, tag + 11);
	}
	if (nfiles)
		dr_add(&d->rep, "books.damage", -1, DR_FAIL,
		       "something of yours writes into the group's books: find and stop it; once "
		       "none of the group's members runs, remove its .vrg file so the next run "
		       "starts new books (members that see the damage keep their own books under "
		       "the caps they joined with)",
		       "%d group%s books are damaged%s", nfiles, nfiles == 1 ? "'s" : "s'", fact);
	if (nother)
		dr_add(&d->rep, "books.damage", -1, DR_WARN,
		       "see vramctl status for each file and why", "%d group file%s cannot be read",
		       nother, nother == 1 ? "" : "s");
	if (!nfiles && !nother)
		dr_add(&d->rep, "books.damage", -1, DR_OK, NULL,
		       "no damage found in the groups' books");
}

/* More records of members not running than crashes leave between two
 * joins: something wrote them (status lists each as dead; the next join or
 * denial gives back the slots of those the GPU no longer lists). */
#define DEAD_MANY 32

static void check_dead(struct doc *d, const struct mon_model *m)
{
	char list[512] = "";
	size_t used = 0;
	int n = 0;
	for (int i = 0; i < m->ngroups; i++) {
		const struct mon_group *g = &m->groups[i];
		if (g->ndead < DEAD_MANY)
			continue;
		n++;
		int k = snprintf(list + used, sizeof(list) - used, "%s%s (%d)", used ? ", " : "",
		                 g->name, g->ndead);
		if (k > 0 && (size_t)k < sizeof(list) - used)
			used += (size_t)k;
	}
	if (n)
		dr_add(
		    &d->rep, "books.dead", -1, DR_WARN,
		    "vramctl status lists them (dead); the next join or denial of the group gives "
		    "their slots back; if they come back, another process of yours writes into "
		    "the books",
		    "%d group%s with %d or more records of members that are not running (%s): more "
		    "than crashes leave; a full group (1,024 slots) refuses new members",
		    n, n == 1 ? "" : "s", DEAD_MANY, list);
	else
		dr_add(&d->rep, "books.dead", -1, DR_OK, NULL,
		       "no group holds many records of members that are not running");
}

void dr_check_books(struct doc *d, const struct mon_model *m)
{
	char why[PATH_MAX + 200] = "";
	unsigned mode = 0;
	int rc = vr_check_dir(m->registry_dir, &mode, why, sizeof(why));
	dr_check_dir(&d->rep, m->registry_dir, rc, why, mode);

	char list[512] = "", ended[640] = "";
	int nended = rc == 0 ? ended_groups(m, list, sizeof(list)) : 0, ndead = 0;
	for (int i = 0; i < m->ngroups; i++)
		ndead += m->groups[i].ndead;
	if (nended)
		snprintf(ended, sizeof(ended),
		         "%s%d door%s of groups that ended (%s%s): normal, a door with no member "
		         "holds no memory and the next run of that name reuses it",
		         "; ", nended, nended == 1 ? "" : "s", list, nended > 4 ? ", ..." : "");
	if (m->ngroups == 0)
		dr_add(&d->rep, "books.groups", -1, DR_OK, NULL, "no live group in the registry%s",
		       ended);
	else
		dr_add(&d->rep, "books.groups", -1, DR_OK, NULL,
		       "%d group%s with a live member%s%s", m->ngroups, m->ngroups == 1 ? "" : "s",
		       ndead ? " (a dead member's memory is given back at the next join or denial, "
		               "once the GPU no longer lists it)"
		             : "",
		       ended);
	check_dead(d, m);
	check_damage(d, m);
}

void dr_check_picture(struct doc *d, const struct mon_model *m)
{
	char list[600] = "", size[32], over[600] = "";
	int n = 0, nover = 0;
	if (!(m->valid & MON_M_NVML)) {
		dr_add(&d->rep, "gpu.uncapped", -1, DR_SKIP, NULL,
		       "who holds GPU memory needs NVML");
		dr_add(&d->rep, "gpu.overcommit", -1, DR_SKIP, NULL, "the GPUs' sizes need NVML");
		return;
	}
	for (int i = 0; i < m->nprocs; i++) {
		const struct mon_proc *p = &m->procs[i];
		/* A driver's limit caps it too (--enforce driver), or books this
		 * doctor does not read (another registry directory): not
		 * uncapped. */
		if (!(p->valid & MON_P_NVML) ||
		    (p->valid & (MON_P_CAPPED | MON_P_DRVLIMIT | MON_P_ELSEWHERE)) || is_self(d, p))
			continue;
		size_t used = strlen(list);
		if (n < 5)
			snprintf(list + used, sizeof(list) - used, "%spid %d (%s) %s on GPU %d",
			         n ? ", " : "", (int)p->host_pid,
			         (p->valid & MON_P_COMMAND) ? p->command : "?",
			         (p->valid & MON_P_NVML_USED)
			             ? vr_format_size(p->nvml_used, size, sizeof(size))
			             : "unknown",
			         (p->valid & MON_P_DEVICE) ? m->devs[p->device].index : -1);
		n++;
	}
	if (n)
		dr_add(&d->rep, "gpu.uncapped", -1, DR_WARN,
		       "start them under vramctl run --limit ..., or ask their owners to",
		       "%d process%s hold%s GPU memory outside any cap: %s%s", n,
		       n == 1 ? "" : "es", n == 1 ? "s" : "", list, n > 5 ? ", ..." : "");
	else
		dr_add(&d->rep, "gpu.uncapped", -1, DR_OK, NULL,
		       "no process holds GPU memory outside a cap");
	for (int i = 0; i < m->ndevs; i++) {
		const struct mon_device *dv = &m->devs[i];
		char a[32], b[32];
		if (!dv->overcommitted)
			continue;
		size_t used = strlen(over);
		snprintf(over + used, sizeof(over) - used, "%sGPU %d: %d caps add up to %s of %s",
		         nover ? "; " : "", dv->index, dv->ncapped,
		         vr_format_size(dv->caps_sum, a, sizeof(a)),
		         vr_format_size(dv->total, b, sizeof(b)));
		nover++;
	}
	if (nover)
		dr_add(&d->rep, "gpu.overcommit", -1, DR_WARN,
		       "lower the caps so they fit the GPU, or accept that a group can run out of "
		       "memory below its cap",
		       "%s", over);
	else
		dr_add(&d->rep, "gpu.overcommit", -1, DR_OK, NULL,
		       "the caps on each GPU fit in it");
}

/* ---- guarantees ---- */

void dr_check_guarantees(struct doc *d, const struct mon_model *m)
{
	char a[32], b[32], c[32], line[900] = "", pinch[600] = "";
	int n = 0, npinch = 0;
	for (int i = 0; i < m->ndevs; i++) {
		const struct mon_device *dv = &m->devs[i];
		if (!(dv->valid & MON_DEV_GUAR) || !dv->nguar_all)
			continue;
		char gpu[MON_UUID_MAX + 8];
		if (dv->valid & MON_DEV_INDEX)
			snprintf(gpu, sizeof(gpu), "GPU %d", dv->index);
		else /* no NVML: the book's UUID */
			snprintf(gpu, sizeof(gpu), "%s", dv->uuid);
		size_t used = strlen(line);
		int mem = (dv->valid & MON_DEV_MEMORY) != 0;
		int dg = vr_size_digits(
		    (uint64_t[]){dv->guaranteed, dv->unused_guarantee, dv->unguaranteed_free}, 3,
		    0);
		snprintf(line + used, sizeof(line) - used,
		         "%s%s: %s guaranteed to %d group%s (%s of it unused)%s%s", n ? "; " : "",
		         gpu, vr_format_size_digits(dv->guaranteed, dg, a, sizeof(a)),
		         dv->nguar_all, dv->nguar_all == 1 ? "" : "s",
		         vr_format_size_digits(dv->unused_guarantee, dg, b, sizeof(b)),
		         mem ? ", unguaranteed free " : "",
		         mem ? vr_format_size_digits(dv->unguaranteed_free, dg, c, sizeof(c)) : "");
		n++;
		if (mem && !dv->unguaranteed_free) {
			used = strlen(pinch);
			snprintf(pinch + used, sizeof(pinch) - used, "%s%s", npinch ? ", " : "",
			         gpu);
			npinch++;
		}
	}
	if (!n) {
		dr_add(&d->rep, "guarantees", -1, DR_OK, NULL,
		       "no group holds a guarantee: every group allocates up to its cap");
		return;
	}
	/* Borrowing (an allocation past a group's own guarantee, or by a group
	 * without one) is checked against the card's free memory, which only
	 * NVML tells: without it every borrow is refused. */
	if (!(m->valid & MON_M_NVML))
		dr_add(&d->rep, "guarantees", -1, DR_WARN,
		       "install the driver's NVML (libnvidia-ml.so.1) where the programs run",
		       "%s; NVML is not available, so borrowing cannot be checked: an allocation "
		       "past a group's own guarantee, or by a group without one, is refused (caps "
		       "and guarantees hold)",
		       line);
	else if (npinch)
		dr_add(
		    &d->rep, "guarantees", -1, DR_WARN,
		    "lower a guarantee (vramctl limit --guarantee), or wait for its group to end",
		    "%s; on %s the guarantees hold all the free memory: groups without a "
		    "guarantee, and groups past theirs, are refused there until a guaranteed "
		    "group uses or gives back its share (nothing is wrong with the node)",
		    line, pinch);
	else
		dr_add(&d->rep, "guarantees", -1, DR_OK, NULL, "%s; borrowing works", line);
}

/* ---- Jupyter kernels ---- */

struct stale_kernels {
	int n, nours;
	char list[1024], fix[512];
};

static void stale_kernel(const char *name, const char *dir, void *ctx)
{
	struct stale_kernels *k = ctx;
	char limit[96], group[96], from[96], prog[PATH_MAX];
	size_t used;

	if (cli_kspec_meta(dir, limit, group, from, sizeof limit) < 0)
		return;
	k->nours++;
	if (cli_kspec_program(dir, prog, sizeof prog) < 0 || !strchr(prog, '/') ||
	    access(prog, X_OK) == 0)
		return;
	used = strlen(k->list);
	snprintf(k->list + used, sizeof k->list - used, "%s%s (%s runs %s, which is not there)",
	         k->n ? "; " : "", name, dir, prog);
	used = strlen(k->fix);
	snprintf(k->fix + used, sizeof k->fix - used, "%svramctl kernel remove %s",
	         k->n ? "; " : "", name);
	k->n++;
}

/*
 * Kernels `vramctl kernel install` wrote into a user's or an environment's
 * Jupyter directories stay when vramctl is removed (a package removes only
 * its own files): their notebooks then fail to start.
 */
void dr_check_kernels(struct doc *d)
{
	struct stale_kernels k = {0};

	cli_kspec_each(stale_kernel, &k);
	if (k.n)
		dr_add(&d->rep, "kernel.stale", -1, DR_WARN, k.fix,
		       "%d Jupyter kernel%s installed by vramctl cannot start: %s", k.n,
		       k.n == 1 ? "" : "s", k.list);
	else if (k.nours)
		dr_add(&d->rep, "kernel.stale", -1, DR_OK, NULL,
		       "%d Jupyter kernel%s installed by vramctl, each program there", k.nours,
		       k.nours == 1 ? "" : "s");
	else
		dr_add(&d->rep, "kernel.stale", -1, DR_OK, NULL,
		       "no Jupyter kernel installed by vramctl");
}
