/*
 * merge.c - joins the registry's records with NVML's process rows
 * (merge.h): host PIDs, NSpid, start times, dead and stale records, and
 * the per-device sums of caps.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/size.h"
#include "common/text.h"
#include "monitor/card.h"
#include "monitor/cap_changes.h"
#include "monitor/identity.h"
#include "monitor/merge.h"
#include "registry/own.h"
#include "registry/proc.h"

/* ---- /proc (through the registry's one /proc layer) ------------------ */

/* The innermost PID of NSpid (the PID as the process sees itself), and the
 * real and effective uids: bit 1 and bit 2 of the result say which were
 * found. */
static int proc_status(const char *root, pid_t pid, pid_t *nspid, uid_t *uid, uid_t *euid)
{
	struct vr_proc_status ps;
	if (vr_proc_status(root, pid, &ps) < 0)
		return -ENOENT;
	int found = 0;
	if (ps.have & VR_PROC_NSPID) {
		*nspid = ps.nspid_inner;
		found |= 1;
	}
	if (ps.have & VR_PROC_UID) {
		*uid = ps.uid;
		*euid = ps.euid;
		found |= 2;
	}
	return found;
}

static void user_name(uid_t uid, char *out, size_t len)
{
	struct passwd pw, *res = NULL;
	char buf[1024];
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res)
		snprintf(out, len, "%s", res->pw_name);
	else
		snprintf(out, len, "%u", (unsigned)uid);
}

/* ---- merge ------------------------------------------------------------ */

static int find_device(const struct mon_model *m, const char *uuid)
{
	for (int i = 0; i < m->ndevs; i++)
		if (!strcmp(m->devs[i].uuid, uuid))
			return i;
	return -1;
}

/* The device with this UUID, added (known only to the registry) if NVML did not list it. */
static int device_for(struct mon_model *m, const char *uuid)
{
	int i = find_device(m, uuid);
	if (i >= 0)
		return i;
	struct mon_device *d = realloc(m->devs, sizeof(*d) * (size_t)(m->ndevs + 1));
	if (!d)
		return -ENOMEM;
	m->devs = d;
	d = &m->devs[m->ndevs];
	memset(d, 0, sizeof(*d));
	d->index = -1;
	snprintf(d->uuid, sizeof(d->uuid), "%s", uuid);
	return m->ndevs++;
}

struct rows {
	struct mon_proc *v;
	int n, cap;
};

/* Room for n rows in all. Returns 0, or -ENOMEM leaving r as it was. */
static int rows_reserve(struct rows *r, int n)
{
	if (n <= r->cap)
		return 0;
	struct mon_proc *v = realloc(r->v, sizeof(*v) * (size_t)n);
	if (!v)
		return -ENOMEM;
	r->v = v;
	r->cap = n;
	return 0;
}

static struct mon_proc *rows_add(struct rows *r)
{
	if (r->n == r->cap) {
		int ncap = r->cap ? r->cap * 2 : 64;
		struct mon_proc *v = realloc(r->v, sizeof(*v) * (size_t)ncap);
		if (!v)
			return NULL;
		r->v = v;
		r->cap = ncap;
	}
	struct mon_proc *p = &r->v[r->n++];
	memset(p, 0, sizeof(*p));
	p->cap = MON_NO_CAP;
	p->rec = -1;
	return p;
}

static const struct vramctl_group *snap_group(const struct vramctl_snapshot *s, const char *name)
{
	for (int i = 0; i < s->ngroups; i++)
		if (!strcmp(s->groups[i].name, name))
			return &s->groups[i];
	return NULL;
}

static int cmp_rows(const void *a, const void *b)
{
	const struct mon_proc *x = a, *y = b;
	int dx = (x->valid & MON_P_DEVICE) ? x->device : 1 << 30;
	int dy = (y->valid & MON_P_DEVICE) ? y->device : 1 << 30;
	if (dx != dy)
		return dx < dy ? -1 : 1;
	pid_t px = (x->valid & MON_P_HOST_PID) ? x->host_pid : x->ns_pid;
	pid_t py = (y->valid & MON_P_HOST_PID) ? y->host_pid : y->ns_pid;
	if (px != py)
		return px < py ? -1 : 1;
	return strcmp(x->group, y->group);
}

/*
 * NVML's rows by host PID: each record looks up the rows of its own PID
 * instead of scanning them all, which with a thousand records and a
 * thousand NVML rows was a million comparisons. Rows of one PID stay in
 * NVML's order (k breaks ties), so the first match is the one a scan
 * would have found.
 */
struct nv_pid {
	pid_t pid;
	int k; /* the row in m->procs */
};

static int cmp_nv_pid(const void *a, const void *b)
{
	const struct nv_pid *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->k < y->k ? -1 : x->k > y->k;
}

/* The first entry of by_pid[n] with this PID, or n when there is none. */
static int nv_first(const struct nv_pid *by_pid, int n, pid_t pid)
{
	int lo = 0, hi = n;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (by_pid[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && by_pid[lo].pid == pid ? lo : n;
}

/* 1 if NVML lists this host PID on the device with this UUID. */
static int nvml_lists(const struct mon_model *m, const struct nv_pid *by_pid, int nnv, pid_t host,
                      const char *uuid)
{
	for (int i = nv_first(by_pid, nnv, host); i < nnv && by_pid[i].pid == host; i++)
		if (!strcmp(m->procs[by_pid[i].k].uuid, uuid))
			return 1;
	return 0;
}

/* The PID NVML would list for a dead record (the outermost one it recorded,
 * else its own), or 0 when that PID now belongs to another process: its
 * NVML rows are that process's. */
static pid_t dead_pid(const struct vramctl_proc *r, const char *proc_root)
{
	pid_t pid = r->outer_pid > 0 ? r->outer_pid : r->pid;
	uint64_t st;
	if (pid <= 0 || (vr_proc_start_time(proc_root, pid, &st) == 0 && st != r->start_time))
		return 0;
	return pid;
}

/* 1 if a member has used this device: memory now or before, or a denial. */
static int proc_dev_used(const struct vramctl_proc_dev *d)
{
	return d->in_use || d->peak || d->denied_count || d->spilled;
}

/* NVML's rows come with host PIDs; their namespaced PIDs are read once, on demand. */
struct nv_row {
	int looked;
	int ok;
	pid_t nspid;
	uid_t uid, euid;
	int consumed;
};

/* The notes that say what the snapshot was (snap_rc: what taking it returned). */
static void note_snapshot(struct mon_model *m, const struct vramctl_snapshot *s, int snap_rc)
{
	if (snap_rc == 0)
		m->valid |= MON_M_REGISTRY;
	else if (snap_rc == -ENOENT)
		/* A directory the caller named (the default one not made yet is
		 * read as empty, snap_rc 0). */
		mon_model_note(m, "registry %s does not exist: capped processes unknown",
		               m->registry_dir[0] ? m->registry_dir : "(default)");
	else
		mon_model_note(m, "registry %s unreadable (%s): capped processes unknown",
		               m->registry_dir[0] ? m->registry_dir : "(default)",
		               strerror(-snap_rc));
	if (s)
		for (int i = 0; i < s->nerrors; i++)
			mon_model_note(m, "registry: %s", s->errors[i]);
}

/* The snapshot's groups into m->groups (empty). 0 or -ENOMEM. */
static int merge_groups(struct mon_model *m, const struct vramctl_snapshot *s)
{
	int ng = s ? s->ngroups : 0;
	if (ng) {
		m->groups = calloc((size_t)ng, sizeof(*m->groups));
		if (!m->groups)
			return -ENOMEM;
	}
	for (int i = 0; i < ng; i++) {
		const struct vramctl_group *sg = &s->groups[i];
		struct mon_group *g = &m->groups[m->ngroups++];
		snprintf(g->name, sizeof(g->name), "%s", sg->name);
		snprintf(g->limit_spec, sizeof(g->limit_spec), "%s", sg->limit_spec);
		g->growth = sg->growth;
		g->owner = sg->owner;
		g->nmembers = sg->nmembers;
		g->consistent = sg->consistent;
		g->spill_budget = sg->spill_budget;
		g->spilled = sg->spilled;
		g->denials = sg->denials;
		g->park_budget = sg->park_budget;
		g->parked = sg->parked;
		g->nwaiting = sg->waiting;
		g->changes_total = sg->changes_total;
		g->nchanges = sg->nchanges;
		memcpy(g->changes, sg->changes, sizeof(g->changes));
		for (int j = 0; j < sg->ndev && j < MON_MAX_GROUP_DEVS; j++) {
			struct mon_group_dev *gd = &g->dev[g->ndev++];
			snprintf(gd->uuid, sizeof(gd->uuid), "%s", sg->dev[j].uuid);
			gd->device = device_for(m, sg->dev[j].uuid);
			if (gd->device < 0)
				return -ENOMEM;
			gd->cap = sg->dev[j].cap;
			gd->in_use = sg->dev[j].in_use;
			gd->peak = sg->dev[j].peak;
			gd->dead_in_use = sg->dev[j].dead_in_use;
			gd->spilled = sg->dev[j].spilled;
			gd->overhead = sg->dev[j].overhead;
		}
	}
	return 0;
}

/* One merge: the model with its NVML rows, the snapshot, and the rows made. */
struct merge {
	struct mon_model *m;
	const struct vramctl_snapshot *s;
	const char *proc_root;
	int nnv;               /* NVML's rows: m->procs[0..nnv) */
	struct nv_row *nvr;    /* what is known of each NVML row */
	struct nv_pid *by_pid; /* NVML's rows by host PID */
	struct rows out;
	struct vr_own *own; /* scratch: the last process's own books */
	pid_t own_pid;      /* whose (0: none asked yet) */
	int own_found;
};

/* NVML row k's NSpid and uid, read from /proc the first time they are asked. */
static void nv_look(struct merge *g, int k)
{
	struct nv_row *n = &g->nvr[k];
	if (n->looked)
		return;
	n->looked = 1;
	int f = proc_status(g->proc_root, g->m->procs[k].host_pid, &n->nspid, &n->uid, &n->euid);
	n->ok = f > 0 ? f : 0;
}

/* A record's host PID: its own, or (another PID namespace) the NVML
 * process whose innermost NSpid is the record's PID, whose start time
 * matches and which runs as the books' owner (r->uid: PID and start time
 * are anyone's to read, and books may name another user's process);
 * <= 0 when none is. */
static pid_t record_host(struct merge *g, const struct vramctl_proc *r)
{
	pid_t host = r->host_pid;
	for (int k = 0; host <= 0 && k < g->nnv; k++) {
		nv_look(g, k);
		const struct nv_row *n = &g->nvr[k];
		uint64_t st;
		if ((n->ok & 3) == 3 && n->nspid == r->pid &&
		    (n->uid == r->uid || n->euid == r->uid) &&
		    vr_proc_start_time(g->proc_root, g->m->procs[k].host_pid, &st) == 0 &&
		    st == r->start_time)
			host = g->m->procs[k].host_pid;
	}
	return host;
}

/* A record's state; *gone gets a dead record's PID as NVML would list it. */
static enum mon_proc_state record_state(const struct merge *g, const struct vramctl_proc *r,
                                        pid_t host, pid_t *gone)
{
	*gone = 0;
	if (r->state == VRAMCTL_PROC_DEAD) {
		*gone = dead_pid(r, g->proc_root);
		return MON_PROC_DEAD;
	}
	if (host > 0 && !(r->host_pid_seen && host == r->host_pid) &&
	    !vr_proc_exists(g->proc_root, host)) {
		/* A PID the snapshot did not see alive just now (it was
		 * found here through NVML, or the snapshot is someone
		 * else's): does it still exist? Reading /proc/PID/stat for
		 * each of a thousand records would cost more than the rest
		 * of `status`, so only existence is checked; and a PID the
		 * snapshot saw alive is not asked again (a kill(2) per
		 * member was a tenth of `status` at 1,000 members). */
		return MON_PROC_STALE;
	}
	return MON_PROC_ALIVE;
}

/* Row p takes NVML's figures from the first unclaimed NVML row of nv_pid on
 * its device, which is then claimed (not listed again as uncapped). */
static void claim_nvml_row(struct merge *g, struct mon_proc *p, pid_t nv_pid)
{
	for (int e = nv_first(g->by_pid, g->nnv, nv_pid); e < g->nnv && g->by_pid[e].pid == nv_pid;
	     e++) {
		int k = g->by_pid[e].k;
		const struct mon_proc *q = &g->m->procs[k];
		if (g->nvr[k].consumed || q->device != p->device)
			continue;
		g->nvr[k].consumed = 1;
		p->valid |= q->valid & (MON_P_NVML | MON_P_NVML_USED);
		p->nvml_used = q->nvml_used;
		break;
	}
}

/* One capped row: record r on its device j. Sets *exiting when NVML still
 * lists the dead record there. 0 or -ENOMEM. */
static int add_capped_row(struct merge *g, const struct vramctl_proc *r, int j,
                          const struct vramctl_group *sg, pid_t host, enum mon_proc_state state,
                          pid_t gone, int *exiting)
{
	struct mon_model *m = g->m;
	struct mon_proc *p = rows_add(&g->out);
	if (!p)
		return -ENOMEM;
	p->valid = MON_P_CAPPED | MON_P_NS_PID | MON_P_USER | MON_P_COMMAND;
	p->state = state;
	p->rec = (int)(r - g->s->procs);
	p->ns_pid = r->pid;
	if (host > 0) {
		p->host_pid = host;
		p->valid |= MON_P_HOST_PID;
	}
	/* Dead, but NVML still lists it here: the driver is
	 * tearing it down, and its row is this record's. */
	pid_t nv_pid = host;
	if (gone > 0 && nvml_lists(m, g->by_pid, g->nnv, gone, r->dev[j].uuid)) {
		p->state = MON_PROC_EXITING;
		p->host_pid = nv_pid = gone;
		p->valid |= MON_P_HOST_PID;
		*exiting = 1;
	}
	p->uid = r->uid;
	/* vr_text_copy, not snprintf: four strings a row, a thousand
	 * rows, and snprintf's setup cost more than the copies. The
	 * snapshot's strings fit: the model's fields are as large. */
	vr_text_copy(p->user, sizeof(p->user), r->user);
	vr_text_copy(p->command, sizeof(p->command), r->command);
	vr_text_copy(p->group, sizeof(p->group), r->group);
	p->host_pinned = r->host_pinned;
	p->counting = r->counting;
	p->ipc_ns = r->ipc_ns;
	const struct vramctl_proc_dev *rd = &r->dev[j];
	vr_text_copy(p->uuid, sizeof(p->uuid), rd->uuid);
	p->device = device_for(m, rd->uuid);
	if (p->device < 0)
		return -ENOMEM;
	p->valid |= MON_P_DEVICE;
	p->counts = rd->counts;
	/* Waiting and parking: the wait on its own device's row. */
	if (r->wait_dev == j) {
		p->wait_bytes = r->wait_bytes;
		p->wait_claimed = r->wait_claimed;
		p->wait_since = r->wait_since;
	}
	p->parked = r->parked;
	p->parked_bytes = rd->parked;
	p->parked_since = r->parked_since;
	p->parkable = r->parkable;
	p->idle_since = r->idle_since;
	for (int k = 0; sg && k < sg->ndev; k++)
		if (!strcmp(sg->dev[k].uuid, rd->uuid))
			p->cap = sg->dev[k].cap;
	/* A dead record's PID may belong to someone else now. */
	if ((p->state != MON_PROC_ALIVE && p->state != MON_PROC_EXITING) || nv_pid <= 0)
		return 0;
	claim_nvml_row(g, p, nv_pid);
	return 0;
}

/* Capped process r: one row per device it used. 0 or -ENOMEM. */
static int add_record(struct merge *g, const struct vramctl_proc *r)
{
	struct mon_model *m = g->m;
	pid_t host = record_host(g, r), gone;
	enum mon_proc_state state = record_state(g, r, host, &gone);
	const struct vramctl_group *sg = snap_group(g->s, r->group);
	int exiting = 0;
	for (int j = 0; j < r->ndev; j++) {
		/* A member's slot has a column for every device of its group;
		 * only the devices it has used (or NVML sees it on) make it
		 * a GPU process there. Members that used none (a `vramctl run` parent, a
		 * program that has not allocated yet) are counted in the group's members,
		 * not listed. */
		if (!proc_dev_used(&r->dev[j]) &&
		    !(state == MON_PROC_ALIVE && host > 0 &&
		      nvml_lists(m, g->by_pid, g->nnv, host, r->dev[j].uuid)))
			continue;
		if (add_capped_row(g, r, j, sg, host, state, gone, &exiting) < 0)
			return -ENOMEM;
	}
	for (int k = 0; k < m->ngroups; k++)
		if (state != MON_PROC_ALIVE && !strcmp(m->groups[k].name, r->group)) {
			m->groups[k].ndead++;
			m->groups[k].nexiting += exiting;
		}
	return 0;
}

/* The own books of process pid (registry/own.h), read once per merge for
 * all its rows: NULL when it keeps none. */
static const struct vr_own *own_of(struct merge *g, pid_t pid)
{
	if (pid <= 0)
		return NULL;
	if (g->own_pid != pid) {
		g->own_pid = pid;
		g->own_found = g->own && vr_own_find(g->proc_root, pid, g->own);
	}
	return g->own_found ? g->own : NULL;
}

/* Row p (an NVML row no record claimed) capped by the process's own books
 * on its GPU, when it keeps some there: it could not join its group, and
 * its cap holds for it alone. 0 or -ENOMEM. */
static int apply_own(struct merge *g, struct mon_proc *p)
{
	const struct vr_own *o = (p->valid & MON_P_HOST_PID) ? own_of(g, p->host_pid) : NULL;
	for (uint32_t d = 0; o && d < o->ndev; d++) {
		char uuid[VRAMCTL_UUID_TEXT_LEN];
		const struct vr_own_dev *od = &o->dev[d];
		vr_format_uuid(od->uuid, uuid, sizeof(uuid));
		if (strcmp(uuid, p->uuid))
			continue;
		struct mon_model *m = g->m;
		if (!m->nalone || m->alone[m->nalone - 1].pid != p->host_pid) {
			struct mon_alone *a =
			    realloc(m->alone, sizeof(*a) * (size_t)(m->nalone + 1));
			if (!a)
				return -ENOMEM;
			m->alone = a;
			a[m->nalone].pid = p->host_pid;
			vr_text_copy(a[m->nalone].why, sizeof(a[m->nalone].why), o->why);
			m->nalone++;
		}
		p->valid |= MON_P_CAPPED | MON_P_ALONE;
		p->alone = m->nalone;
		p->state = MON_PROC_ALIVE;
		vr_text_copy(p->group, sizeof(p->group), o->group);
		p->cap = od->cap;
		p->in_use = od->in_use;
		p->peak = od->peak;
		p->overhead = od->overhead < od->in_use ? od->overhead : od->in_use;
		p->counting = VRAMCTL_COUNTING_CARD;
		break;
	}
	return 0;
}

/* Uncapped processes: NVML rows no record claimed (capped after all when
 * they keep books of their own). 0 or -ENOMEM. */
static int add_uncapped(struct merge *g)
{
	for (int k = 0; k < g->nnv; k++) {
		if (g->nvr[k].consumed)
			continue;
		struct mon_proc *p = rows_add(&g->out);
		if (!p)
			return -ENOMEM;
		*p = g->m->procs[k];
		p->rec = -1;
		p->alone = 0;
		nv_look(g, k);
		if (g->nvr[k].ok & 1) {
			p->ns_pid = g->nvr[k].nspid;
			p->valid |= MON_P_NS_PID;
		}
		if (g->nvr[k].ok & 2) {
			p->uid = g->nvr[k].uid;
			user_name(p->uid, p->user, sizeof(p->user));
			p->valid |= MON_P_USER;
		}
		vr_proc_cmdline(g->proc_root, p->host_pid, 1, p->command, sizeof(p->command));
		if (p->command[0])
			p->valid |= MON_P_COMMAND;
		if (apply_own(g, p) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Per-device sums of caps and of spilled bytes, and overcommitment: at
 * least two groups whose caps, each bounded by the card (a cap above it is
 * the card's size), add up to more than the card holds (one job
 * under --limit 10T was called OVERCOMMITTED; no other group could take
 * from it). */
static void sum_devices(struct mon_model *m)
{
	for (int i = 0; i < m->ndevs; i++) {
		m->devs[i].caps_sum = 0;
		m->devs[i].ncapped = 0;
		m->devs[i].spilled = 0;
		m->devs[i].overcommitted = 0;
	}
	/* Only groups with live members hold a claim on a device: a named
	 * group that everyone has left caps nothing until someone joins. */
	for (int i = 0; i < m->ngroups; i++)
		for (int j = 0; j < m->groups[i].ndev && m->groups[i].nmembers > 0; j++) {
			const struct mon_group_dev *gd = &m->groups[i].dev[j];
			if (gd->device >= 0)
				m->devs[gd->device].spilled += gd->spilled;
			if (gd->cap == MON_NO_CAP || gd->device < 0)
				continue;
			struct mon_device *d = &m->devs[gd->device];
			d->caps_sum += gd->cap;
			d->ncapped++;
		}
	for (int i = 0; i < m->ndevs; i++) {
		struct mon_device *d = &m->devs[i];
		uint64_t bound = 0;
		for (int g = 0; g < m->ngroups; g++)
			for (int j = 0; j < m->groups[g].ndev && m->groups[g].nmembers > 0; j++) {
				const struct mon_group_dev *gd = &m->groups[g].dev[j];
				if (gd->device == i && gd->cap != MON_NO_CAP)
					bound += gd->cap < d->total ? gd->cap : d->total;
			}
		d->overcommitted =
		    (d->valid & MON_DEV_MEMORY) && d->ncapped >= 2 && bound > d->total;
	}
}

/* NVML's rows by host PID (for nvml_lists and claim_nvml_row), and room for
 * the rows to come. 0 or -ENOMEM. */
static int merge_start(struct merge *g)
{
	int nnv = g->nnv;
	g->nvr = calloc((size_t)nnv + 1, sizeof(*g->nvr));
	g->by_pid = calloc((size_t)nnv + 1, sizeof(*g->by_pid));
	g->own = malloc(sizeof(*g->own));
	if (!g->nvr || !g->by_pid || !g->own)
		return -ENOMEM;
	for (int k = 0; k < nnv; k++)
		g->by_pid[k] = (struct nv_pid){.pid = g->m->procs[k].host_pid, .k = k};
	if (nnv > 1)
		qsort(g->by_pid, (size_t)nnv, sizeof(*g->by_pid), cmp_nv_pid);
	/* A row per record and per NVML row is the usual count (a record has
	 * one for each device it used): room for them at once saves growing
	 * and copying an array of rows of some 400 bytes each, again and again. */
	return rows_reserve(&g->out, nnv + (g->s ? g->s->nprocs : 0)) < 0 ? -ENOMEM : 0;
}

int mon_merge_registry(struct mon_model *m, const struct vramctl_snapshot *s, int snap_rc,
                       const char *proc_root)
{
	struct merge g = {
	    .m = m, .s = s, .proc_root = proc_root ? proc_root : "/proc", .nnv = m->nprocs};
	note_snapshot(m, s, snap_rc);
	if (merge_start(&g) < 0 || merge_groups(m, s) < 0)
		goto oom;
	for (int i = 0; s && i < s->nprocs; i++)
		if (add_record(&g, &s->procs[i]) < 0)
			goto oom;
	if (add_uncapped(&g) < 0)
		goto oom;
	sum_devices(m);

	if (g.out.n > 1)
		qsort(g.out.v, (size_t)g.out.n, sizeof(*g.out.v), cmp_rows);
	free(m->procs);
	m->procs = g.out.v;
	m->nprocs = g.out.n;
	mon_card_figures(m);
	for (int i = 0; i < m->ngroups; i++)
		mon_cap_changes_lowered(&m->groups[i]);
	mon_identity_fill(m, g.proc_root, s);
	free(g.by_pid);
	free(g.nvr);
	free(g.own);
	return 0;
oom:
	free(g.out.v);
	free(g.by_pid);
	free(g.nvr);
	free(g.own);
	return -ENOMEM;
}
