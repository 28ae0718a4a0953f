/*
 * report_text.c - the run's report as text (report_text.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/duration.h"
#include "common/exit.h"
#include "common/size.h"
#include "common/text.h"
#include "report/report_text.h"

#define TEXT_LEAKS  20 /* blocks listed per member and device in the text */
#define TEXT_FRAMES 6

/*
 * v in the one human form, unless that reads the same as other's while the
 * two differ ("the cap must be at least 1.5 GiB" for a cap of 1.5 GiB): then
 * in MiB (two decimals where not whole), and in bytes if even that ties. A
 * message never shows numbers that seem to contradict it.
 */
static char *size_apart(uint64_t v, uint64_t other, char *buf, size_t len)
{
	char o[32];
	const uint64_t mib = 1024 * 1024;

	vr_format_size(v, buf, len);
	if (v == other || strcmp(buf, vr_format_size(other, o, sizeof o)) != 0)
		return buf;
	if (v % mib == 0)
		snprintf(buf, len, "%" PRIu64 " MiB", v / mib);
	else
		snprintf(buf, len, "%.2f MiB", (double)v / (double)mib);
	if (other % mib == 0)
		snprintf(o, sizeof o, "%" PRIu64 " MiB", other / mib);
	else
		snprintf(o, sizeof o, "%.2f MiB", (double)other / (double)mib);
	if (!strcmp(buf, o))
		snprintf(buf, len, "%" PRIu64 " bytes", v);
	return buf;
}

#define UNKNOWN " (the largest member's; the group's is unknown)"

/* A device's use on the card (allocations + overhead: contexts, modules,
 * the driver's own use), or that it was not measured. */
static void card_line(FILE *f, const struct devsum *d, int dg)
{
	char a[32], b[32], c[32];
	if (!d->card_members) {
		fprintf(f, "  on the card: not measured (the cap counted allocations only)\n");
		return;
	}
	fprintf(f,
	        "  on the card (allocations + overhead: contexts, modules, the driver's own use): "
	        "peak %s%s; overhead: peak %s, %s at the end",
	        vr_format_size_digits(d->card_peak, dg, a, sizeof a), d->card_exact ? "" : UNKNOWN,
	        vr_format_size_digits(d->overhead_peak, dg, b, sizeof b),
	        vr_format_size_digits(d->overhead_end, dg, c, sizeof c));
	if (d->card_members > 1)
		fprintf(f, " (summed over %d processes)", d->card_members);
	fputc('\n', f);
}

/* Waits for room and parks, when there were any: how many, how
 * many got their room, the time waited. */
static void waits_line(FILE *f, const char *indent, const struct devsum *x)
{
	char a[32], b[32], c[32];
	if (x->waits)
		fprintf(f,
		        "%s%" PRIu64 " wait%s for room (%" PRIu64
		        " granted), %s waited in all, the longest %s\n",
		        indent, x->waits, x->waits == 1 ? "" : "s", x->waits_granted,
		        vr_format_duration(x->wait_ns / 1000000, a, sizeof a),
		        vr_format_duration(x->wait_ns_max / 1000000, b, sizeof b));
	if (x->parks)
		fprintf(f,
		        "%sparked %" PRIu64 " time%s (its memory moved to the host), at most %s\n",
		        indent, x->parks, x->parks == 1 ? "" : "s",
		        vr_format_size(x->parked_max, c, sizeof c));
}

static const char *cap_text(uint64_t cap, char *buf, size_t len)
{
	return cap == UINT64_MAX ? "none" : vr_format_size(cap, buf, len);
}

/* The decimals with which a device's figures read apart: a peak on the
 * card of 2012 MiB under a cap of 2 GiB never reads "2 GiB" beside it. */
static int device_digits(const struct devsum *d)
{
	int exact;
	uint64_t v[] = {d->cap == UINT64_MAX ? 0 : d->cap,
	                d->peak,
	                d->card_members ? d->card_peak : 0,
	                d->overhead_peak,
	                d->overhead_end,
	                d->spilled_peak,
	                rep_counted_peak(d),
	                rep_needed(d, &exact)};
	return vr_size_digits(v, (int)(sizeof v / sizeof v[0]), 0);
}

/* The decimals with which a member's figures on a device read apart: a
 * peak of allocations of 1.25 GiB never reads "1.3 GiB" beside a peak on
 * the card of 1.31 GiB. */
static int member_digits(const struct vr_rec_dev *x)
{
	uint64_t v[] = {x->peak,          x->card_known ? x->card_peak : 0,
	                x->overhead_peak, x->overhead,
	                x->spilled_peak,  x->spilled};
	return vr_size_digits(v, (int)(sizeof v / sizeof v[0]), 0);
}

/* The denials on a device, said against the cap: where the cap changed
 * while the run ran, a need the cap at the end holds is said to have met a
 * lower cap, never explained against the cap at the end alone. */
static void denials_line(FILE *f, int d, const struct devsum *x)
{
	char a[32], b[32], c[32];
	uint64_t n = x->denials - x->gt_denials;
	if (x->gt_denials)
		fprintf(
		    f,
		    "  %" PRIu64 " request%s refused for other groups' guarantees (the largest "
		    "%s): the card's free memory was guaranteed to them; a larger cap would not "
		    "grant %s (vramctl status shows the guarantees)\n",
		    x->gt_denials, x->gt_denials == 1 ? " was" : "s were",
		    vr_format_size(x->gt_denied_max, a, sizeof a),
		    x->gt_denials == 1 ? "it" : "them");
	if (!n)
		return;
	char ctx[96] = "";
	if (x->ctx_denials)
		snprintf(ctx, sizeof ctx, "; %" PRIu64 " of them a new CUDA context (%s)",
		         x->ctx_denials, vr_format_size(x->ctx_denied_max, b, sizeof b));
	fprintf(f, "  %" PRIu64 " request%s refused (the largest %s%s); ", n,
	        n == 1 ? " was" : "s were", vr_format_size(x->denied_max, a, sizeof a), ctx);
	if (x->cap_changed && x->denied_need <= x->cap) {
		if (x->cap == UINT64_MAX)
			snprintf(c, sizeof c, "none");
		else
			size_apart(x->cap, x->denied_need, c, sizeof c);
		fprintf(f,
		        "granting %s needed %s, within the cap in force at the end (%s): the "
		        "cap was as low as %s while the run ran (vramctl limit: see the cap "
		        "changes below)\n",
		        n == 1 ? "it" : "them",
		        size_apart(x->denied_need, x->cap_lowest, b, sizeof b), c,
		        size_apart(x->cap_lowest, x->denied_need, a, sizeof a));
		return;
	}
	/* A need is said in whole MiB, rounded up: a rounded "1 GiB" for 1028
	 * MiB would name a cap that does not grant it. */
	fprintf(f,
	        "to grant %s too, the cap must be at least %" PRIu64 " MiB (--limit %d=%" PRIu64
	        "M)",
	        n == 1 ? "it" : "them", rep_right_size(x->denied_need) >> 20, d,
	        rep_right_size(x->denied_need) >> 20);
	if (x->cap_changed)
		fprintf(f, "; the cap changed while the run ran (as low as %s, %s at the end)",
		        cap_text(x->cap_lowest, a, sizeof a), cap_text(x->cap, b, sizeof b));
	fputc('\n', f);
}

/* The cap that would have held the run: what it used on the card (or
 * allocated), and what it spilled too, which a cap without spill must hold. */
static void right_size_line(FILE *f, int d, const struct devsum *x, int dg)
{
	char a[32], b[32];
	int exact;
	uint64_t used = rep_counted_peak(x), need = rep_needed(x, &exact);
	const char *where = x->card_members ? " on the card" : "";
	if (need == used) {
		fprintf(f, "  right size: --limit %d=%" PRIu64 "M holds what this run used%s\n", d,
		        rep_right_size(used) >> 20, where);
		return;
	}
	fprintf(f,
	        "  right size: --limit %d=%" PRIu64 "M holds, without spill, what this run used%s "
	        "(%s) and spilled to host memory (%s%s); with --spill, --limit %d=%" PRIu64
	        "M held what it used%s\n",
	        d, rep_right_size(need) >> 20, where, vr_format_size_digits(used, dg, a, sizeof a),
	        vr_format_size_digits(need - used, dg, b, sizeof b),
	        exact ? "" : ", the members' peaks summed: at most", d, rep_right_size(used) >> 20,
	        where);
}

/* "cap changes while it ran": one line per change the group's books kept. */
static void changes_section(FILE *f, const struct rep_view *r, const struct devsum *ds)
{
	char a[32], b[32], when[40], gpu[64];
	if (r->changes_damaged) {
		fprintf(f, "cap changes while it ran (vramctl limit): unknown, the group's record "
		           "of them is damaged (overwritten)\n");
		return;
	}
	if (!r->changes_total)
		return;
	fprintf(f, "cap changes while it ran (vramctl limit):\n");
	if (r->changes_total > (uint64_t)r->nchanges)
		fprintf(f, "  (%" PRIu64 " earlier not kept: the group keeps its last %d)\n",
		        r->changes_total - (uint64_t)r->nchanges, VR_CAP_CHANGES_KEPT);
	for (int k = 0; k < r->nchanges; k++) {
		const struct vramctl_cap_change *c = &r->changes[k];
		int d = rep_device_index(ds, c->uuid);
		if (d >= 0)
			snprintf(gpu, sizeof gpu, "GPU %d", d);
		else
			snprintf(gpu, sizeof gpu, "%s", c->uuid);
		fprintf(f, "  %s %s %s -> %s by uid %u (pid %d)\n",
		        vr_format_utc(c->when, when, sizeof when), gpu,
		        cap_text(c->old_cap, a, sizeof a), cap_text(c->new_cap, b, sizeof b),
		        (unsigned)c->uid, (int)c->pid);
	}
}

/* The run's processes the cap did not hold (the library not loaded in
 * them): charged to the group while the run watched them. */
static void escaped_section(FILE *f, const struct rep_view *r)
{
	char a[32], cmd[4 * sizeof r->escaped[0].command + 1];
	for (int i = 0; i < r->nescaped; i++) {
		const struct rep_escapee *e = &r->escaped[i];
		if (i == 0)
			fprintf(f, "escaped: processes of the run outside the cap, counted against "
			           "the group while they ran\n");
		vr_text_escape(cmd, sizeof cmd, e->command[0] ? e->command : "?");
		fprintf(f, "  process %d %s: peak %s on GPU %d (%s)\n", (int)e->pid, cmd,
		        vr_format_size(e->peak, a, sizeof a), e->gpu, e->why);
	}
}

/* A member's refusals on a device: at the cap (the largest), of them its
 * new contexts, and for other groups' guarantees. */
static void member_denials(FILE *f, const struct vr_rec_dev *x)
{
	char a[32], b[32];
	uint64_t n = x->denials - x->gt_denials;
	if (n) {
		fprintf(f, "; %" PRIu64 " denied (the largest %s", n,
		        vr_format_size(x->denied_max, a, sizeof a));
		if (x->ctx_denials)
			fprintf(f, "; %" PRIu64 " a new CUDA context (%s)", x->ctx_denials,
			        vr_format_size(x->ctx_denied_max, b, sizeof b));
		fputc(')', f);
	}
	if (x->gt_denials)
		fprintf(f, "; %" PRIu64 " denied for other groups' guarantees (the largest %s)",
		        x->gt_denials, vr_format_size(x->gt_denied_max, a, sizeof a));
}

void rep_text_report(const struct rep_view *r, FILE *f, const struct devsum *ds, int child_rc,
                     uint64_t t_end, struct rep_symbols *sy)
{
	char a[32], b[32], c[32], uu[48];
	size_t clen = 4 * strlen(r->command) + 1;
	char *head = malloc(clen);
	fprintf(f, "vramctl report: %s (%s %d) ran %.2f s\n",
	        head ? vr_text_escape(head, clen, r->command) : "?",
	        !r->started                  ? "not started, exit status"
	        : child_rc >= VR_EXIT_SIGNAL ? "died, status"
	                                     : "exit status",
	        child_rc, rep_secs(r, t_end));
	free(head);
	if (r->ms.n == 0)
		fprintf(f, "  no process of the run used a GPU under vramctl\n");
	for (int d = 0; d < VR_REC_DEVS; d++) {
		if (!ds[d].used)
			continue;
		rep_uuid_text(ds[d].uuid, uu, sizeof uu);
		int dg = device_digits(&ds[d]);
		fprintf(f, "GPU %d (%s): cap %s%s; the group's peak of allocations %s%s\n", d, uu,
		        ds[d].cap == UINT64_MAX ? "none"
		                                : vr_format_size_digits(ds[d].cap, dg, a, sizeof a),
		        ds[d].cap_changed ? " at the end (changed while it ran)" : "",
		        vr_format_size_digits(ds[d].peak, dg, b, sizeof b),
		        ds[d].peak_exact ? "" : UNKNOWN);
		card_line(f, &ds[d], dg);
		right_size_line(f, d, &ds[d], dg);
		if (ds[d].denials)
			denials_line(f, d, &ds[d]);
		if (ds[d].spilled_peak)
			fprintf(f, "  spilled to host memory: peak %s\n",
			        vr_format_size(ds[d].spilled_peak, a, sizeof a));
		waits_line(f, "  ", &ds[d]);
	}
	changes_section(f, r, ds);
	escaped_section(f, r);
	for (int i = 0; i < r->ms.n; i++) {
		const struct rep_member *m = &r->ms.v[i];
		const struct vr_rec_hdr *h = m->h;
		struct ending e;
		char fw[64];
		rep_how_ended(m, &e);
		char cmd[4 * sizeof h->command + 1];
		vr_text_escape(cmd, sizeof cmd, h->command); /* the process's own text */
		fprintf(f, "process %d %s: %s\n", h->pid, cmd, e.text);
		uint32_t nl = 0;
		struct vr_rec_leak *lk = rep_sorted_leaks(h, &nl);
		int cache = h->frameworks != 0;
		for (int d = 0; d < VR_REC_DEVS; d++) {
			const struct vr_rec_dev *x = &h->dev[d];
			if (!x->used)
				continue;
			int dg = member_digits(x);
			fprintf(f,
			        "  GPU %d: peak of allocations %s at %.2f s; %" PRIu64
			        " allocation%s, %" PRIu64 " free%s",
			        d, vr_format_size_digits(x->peak, dg, a, sizeof a),
			        rep_secs(r, x->peak_ns), x->allocs, x->allocs == 1 ? "" : "s",
			        x->frees, x->frees == 1 ? "" : "s");
			member_denials(f, x);
			fputc('\n', f);
			struct devsum w = {.waits = x->waits,
			                   .waits_granted = x->waits_granted,
			                   .wait_ns = x->wait_ns,
			                   .wait_ns_max = x->wait_ns_max,
			                   .parks = x->parks,
			                   .parked_max = x->parked_max};
			waits_line(f, "    ", &w);
			if (x->card_known)
				fprintf(f,
				        "    on the card: peak %s at %.2f s; overhead: peak %s, %s "
				        "at %s\n",
				        vr_format_size_digits(x->card_peak, dg, a, sizeof a),
				        rep_secs(r, x->card_peak_ns),
				        vr_format_size_digits(x->overhead_peak, dg, b, sizeof b),
				        vr_format_size_digits(x->overhead, dg, c, sizeof c),
				        h->end == VR_REC_EXITED ? "exit" : "the end");
			if (x->spilled_peak)
				fprintf(f, "    spilled to host memory: peak %s, %s at the end\n",
				        vr_format_size_digits(x->spilled_peak, dg, a, sizeof a),
				        vr_format_size_digits(x->spilled, dg, b, sizeof b));
			if (h->end != VR_REC_EXITED) {
				if (x->in_use)
					fprintf(f,
					        "    held %s when it ended (blocks not listed: its "
					        "exit "
					        "handlers did not run)\n",
					        vr_format_size(x->in_use, a, sizeof a));
				continue;
			}
			uint64_t listed = 0, count = 0;
			for (uint32_t k = 0; k < nl; k++)
				if (lk[k].dev == d && lk[k].kind != VR_KIND_HOST) {
					listed += lk[k].bytes;
					count++;
				}
			if (count)
				fprintf(f,
				        "    still allocated at exit: %" PRIu64 " block%s, %s%s\n",
				        count, count == 1 ? "" : "s",
				        vr_format_size(listed, a, sizeof a),
				        cache ? "" : " (leaks, largest first)");
			if (count && cache)
				fprintf(f,
				        "    (%s loaded: its caching allocator keeps freed blocks "
				        "until exit; a cache, not a leak)\n",
				        rep_framework_names(h->frameworks, fw, sizeof fw));
			uint64_t shown = 0;
			for (uint32_t k = 0; k < nl && shown < TEXT_LEAKS; k++) {
				if (lk[k].dev != d || lk[k].kind == VR_KIND_HOST)
					continue;
				shown++;
				struct rep_frame fr[VR_REC_FRAMES];
				char paths[VR_REC_FRAMES][256], ft[512];
				int nf = rep_site_frames(sy, h, lk[k].site, fr, paths);
				fprintf(f, "      %10s  %-*s",
				        vr_format_size(lk[k].bytes, a, sizeof a), nf ? 12 : 0,
				        rep_kind_name(lk[k].kind));
				for (int j = 0; j < nf && j < TEXT_FRAMES; j++) {
					rep_frame_text(&fr[j], ft, sizeof ft);
					fprintf(f, "%s%s",
					        j ? "\n                                  by "
					          : "  at ",
					        ft);
				}
				fputc('\n', f);
			}
			if (count > shown)
				fprintf(f, "      ... and %" PRIu64 " more block%s\n",
				        count - shown, count - shown == 1 ? "" : "s");
			if (x->in_use > listed)
				fprintf(
				    f,
				    "    held in stream-ordered memory pools at exit: %s (a cache, "
				    "not a leak)\n",
				    vr_format_size(x->in_use - listed, a, sizeof a));
		}
		if (h->leaks_more_count)
			fprintf(f, "  %" PRIu64 " more blocks (%s) not itemised\n",
			        h->leaks_more_count,
			        vr_format_size(h->leaks_more_bytes, a, sizeof a));
		if (h->pinned_peak)
			fprintf(f, "  pinned host memory: peak %s, %s at %s\n",
			        vr_format_size(h->pinned_peak, a, sizeof a),
			        vr_format_size(h->pinned, b, sizeof b),
			        h->end == VR_REC_EXITED ? "exit" : "the end");
		free(lk);
	}
}
