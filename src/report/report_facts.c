/*
 * report_facts.c - what the run's report says, drawn from the members'
 * records (report_facts.h).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "common/size.h"
#include "report/report_facts.h"

void rep_how_ended(const struct rep_member *m, struct ending *e)
{
	if (m->reaped && WIFEXITED(m->wstatus)) {
		e->kind = END_EXIT;
		e->code = WEXITSTATUS(m->wstatus);
		snprintf(e->text, sizeof e->text, "exit status %d", e->code);
	} else if (m->reaped && WIFSIGNALED(m->wstatus)) {
		e->kind = END_SIGNAL;
		e->code = WTERMSIG(m->wstatus);
		snprintf(e->text, sizeof e->text, "killed by signal %d (SIG%s)", e->code,
		         sigabbrev_np(e->code) ? sigabbrev_np(e->code) : "?");
	} else if (m->h->end == VR_REC_EXITED) {
		e->kind = END_EXITED;
		e->code = -1;
		snprintf(e->text, sizeof e->text,
		         "exited (its exit handlers ran; the status went to its parent)");
	} else if (rep_member_alive(m->h)) {
		e->kind = END_RUNNING;
		e->code = -1;
		snprintf(e->text, sizeof e->text, "still running when the command ended");
	} else {
		e->kind = END_VANISHED;
		e->code = -1;
		snprintf(e->text, sizeof e->text,
		         "ended without running exit handlers (a signal, _exit or exec; its "
		         "parent saw the status)");
	}
}

const char *rep_end_key(enum end_kind k)
{
	static const char *const keys[] = {"exit", "signal", "exited", "running", "vanished"};
	return keys[k];
}

/* ---- devices of the run -------------------------------------------------- */

void rep_uuid_text(const unsigned char *u, char *out, size_t len)
{
	vr_format_uuid(u, out, len);
}

/* The smallest cap in whole MiB that holds bytes. */
uint64_t rep_right_size(uint64_t bytes)
{
	const uint64_t mib = 1024 * 1024;
	return (bytes + mib - 1) / mib * mib;
}

void rep_sum_devices(const struct rep_members *ms, struct devsum *ds)
{
	memset(ds, 0, sizeof(struct devsum) * VR_REC_DEVS);
	for (int i = 0; i < ms->n; i++) {
		const struct vr_rec_hdr *h = ms->v[i].h;
		for (int d = 0; d < VR_REC_DEVS; d++) {
			const struct vr_rec_dev *x = &h->dev[d];
			if (!x->used)
				continue;
			if (!ds[d].used) {
				ds[d].used = 1;
				memcpy(ds[d].uuid, x->uuid, 16);
				ds[d].cap = x->cap;
			}
			if (x->peak > ds[d].peak)
				ds[d].peak = x->peak;
			ds[d].peak_members += x->peak > 0;
			ds[d].denials += x->denials;
			ds[d].gt_denials += x->gt_denials;
			ds[d].ctx_denials += x->ctx_denials;
			if (x->gt_denied_max > ds[d].gt_denied_max)
				ds[d].gt_denied_max = x->gt_denied_max;
			if (x->ctx_denied_max > ds[d].ctx_denied_max)
				ds[d].ctx_denied_max = x->ctx_denied_max;
			if (x->need_peak > ds[d].need_peak)
				ds[d].need_peak = x->need_peak;
			if (x->denied_max > ds[d].denied_max)
				ds[d].denied_max = x->denied_max;
			if (x->denied_need > ds[d].denied_need)
				ds[d].denied_need = x->denied_need;
			if (x->spilled_peak > ds[d].spilled_peak)
				ds[d].spilled_peak = x->spilled_peak;
			ds[d].spilled_sum += x->spilled_peak;
			ds[d].spill_members += x->spilled_peak > 0;
			ds[d].waits += x->waits;
			ds[d].waits_granted += x->waits_granted;
			ds[d].wait_ns += x->wait_ns;
			if (x->wait_ns_max > ds[d].wait_ns_max)
				ds[d].wait_ns_max = x->wait_ns_max;
			ds[d].parks += x->parks;
			if (x->parked_max > ds[d].parked_max)
				ds[d].parked_max = x->parked_max;
			/* Never below the member's peak (record.c), whether its
			 * overhead was measured or not. */
			if (x->card_peak > ds[d].card_peak)
				ds[d].card_peak = x->card_peak;
			ds[d].card_holders += x->card_peak > 0;
			if (x->card_known) {
				ds[d].card_members++;
				ds[d].overhead_peak += x->overhead_peak;
				ds[d].overhead_end += x->overhead;
			}
		}
	}
	/* One member that held memory there: its peaks are the group's. */
	for (int d = 0; d < VR_REC_DEVS; d++) {
		if (ds[d].used && ds[d].peak_members <= 1)
			ds[d].peak_exact = 1;
		if (ds[d].used && ds[d].card_holders <= 1)
			ds[d].card_exact = 1;
	}
}

int rep_device_index(const struct devsum *ds, const char *uuid)
{
	char uu[VRAMCTL_UUID_TEXT_LEN];
	for (int d = 0; d < VR_REC_DEVS; d++)
		if (ds[d].used && !strcmp(vr_format_uuid(ds[d].uuid, uu, sizeof uu), uuid))
			return d;
	return -1;
}

void rep_cap_history(const struct rep_view *r, struct devsum *ds)
{
	for (int d = 0; d < VR_REC_DEVS; d++) {
		ds[d].cap_changed = 0;
		ds[d].cap_lowest = ds[d].cap;
	}
	for (int k = 0; k < r->nchanges; k++) {
		const struct vramctl_cap_change *c = &r->changes[k];
		int d = rep_device_index(ds, c->uuid);
		if (d < 0)
			continue;
		/* The cap before the first change kept was in force too. */
		uint64_t lo = c->old_cap < c->new_cap ? c->old_cap : c->new_cap;
		ds[d].cap_changed = 1;
		if (lo < ds[d].cap_lowest)
			ds[d].cap_lowest = lo;
	}
}

uint64_t rep_counted_peak(const struct devsum *d)
{
	return d->card_members && d->card_peak > d->peak ? d->card_peak : d->peak;
}

uint64_t rep_needed(const struct devsum *d, int *exact)
{
	uint64_t counted = rep_counted_peak(d);
	*exact = 1;
	if (!d->spilled_sum)
		return counted;
	/* One member held memory there and spilled: its own figure of both
	 * at once. */
	if (d->peak_members <= 1 && d->spill_members == 1 && d->need_peak >= counted)
		return d->need_peak;
	*exact = 0;
	return counted + d->spilled_sum;
}

/* ---- blocks held at exit ------------------------------------------------ */

const char *rep_kind_name(int k)
{
	static const char *const names[VR_KIND_COUNT] = {
	    "?",           "linear", "vmm",        "array",   "mipmapped-array",
	    "pinned-host", "graph",  "graph-exec", "spilled", "spilled-vmm"};
	return k > 0 && k < VR_KIND_COUNT ? names[k] : "?";
}

static int by_size_desc(const void *a, const void *b)
{
	const struct vr_rec_leak *x = a, *y = b;
	return x->bytes > y->bytes ? -1 : x->bytes < y->bytes;
}

/* The member's held blocks, largest first (malloc'ed copy). */
struct vr_rec_leak *rep_sorted_leaks(const struct vr_rec_hdr *h, uint32_t *n)
{
	const struct vr_rec_leak *l = rep_leaks(h, n);
	struct vr_rec_leak *c = *n ? malloc(*n * sizeof *c) : NULL;
	if (!c) {
		*n = 0;
		return NULL;
	}
	memcpy(c, l, *n * sizeof *c);
	qsort(c, *n, sizeof *c, by_size_desc);
	return c;
}

const char *rep_framework_names(uint32_t fw, char *buf, size_t len)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} t[] = {{VR_FW_TORCH, "PyTorch"},
	         {VR_FW_TF, "TensorFlow"},
	         {VR_FW_JAX, "JAX"},
	         {VR_FW_CUPY, "CuPy"}};
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (fw & t[i].bit) {
			int k =
			    snprintf(buf + used, len - used, "%s%s", used ? ", " : "", t[i].name);
			if (k > 0 && (size_t)k < len - used)
				used += (size_t)k;
		}
	return buf;
}

/* A call site's frames, symbolised. Returns the frame count. */
int rep_site_frames(struct rep_symbols *sy, const struct vr_rec_hdr *h, uint32_t site1,
                    struct rep_frame *out, char paths[][256])
{
	const struct vr_rec_site *s = rep_site(h, site1);
	if (!s)
		return 0;
	int n = s->nframes > VR_REC_FRAMES ? VR_REC_FRAMES : s->nframes;
	for (int i = 0; i < n; i++) {
		const struct vr_rec_module *mod = rep_module(h, s->module[i]);
		if (mod)
			snprintf(paths[i], 256, "%.*s", (int)sizeof mod->path, mod->path);
		else
			paths[i][0] = '\0';
		rep_symbolise(sy, paths[i][0] ? paths[i] : NULL, mod ? mod->base : 0, s->pc[i],
		              &out[i]);
		if (!paths[i][0])
			out[i].offset = s->pc[i];
	}
	return n;
}

void rep_frame_text(const struct rep_frame *f, char *buf, size_t len)
{
	const char *mod = f->module ? strrchr(f->module, '/') : NULL;
	mod = mod ? mod + 1 : (f->module ? f->module : "?");
	if (f->function && f->file)
		snprintf(buf, len, "%s (%s:%d)", f->function, f->file, f->line);
	else if (f->function)
		snprintf(buf, len, "%s (%s)", f->function, mod);
	else
		snprintf(buf, len, "%s+0x%" PRIx64, mod, f->offset);
}

double rep_secs(const struct rep_view *r, uint64_t t)
{
	return t > r->t0 ? (double)(t - r->t0) / 1e9 : 0.0;
}
