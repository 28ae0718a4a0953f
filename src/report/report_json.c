/*
 * report_json.c - the run's report as JSON (report_json.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/cap_change.h"
#include "common/size.h"
#include "common/text.h"
#include "report/report_json.h"

static json_object *ju(uint64_t v)
{
	return json_object_new_uint64(v);
}

/* Waits for room and parks of a device or a member on it. */
static void waits_json(json_object *o, uint64_t waits, uint64_t granted, uint64_t ns,
                       uint64_t ns_max, uint64_t parks, uint64_t parked_max)
{
	json_object_object_add(o, "waits", ju(waits));
	json_object_object_add(o, "waits_granted", ju(granted));
	json_object_object_add(o, "waited_s", json_object_new_double((double)ns / 1e9));
	json_object_object_add(o, "longest_wait_s", json_object_new_double((double)ns_max / 1e9));
	json_object_object_add(o, "parks", ju(parks));
	json_object_object_add(o, "parked_max_bytes", ju(parked_max));
}

static json_object *jcap(uint64_t cap)
{
	return cap == UINT64_MAX ? NULL : ju(cap);
}

/* The run's "cap_changes": status --json's objects (common/cap_change.c
 * writes both), the gpu_index the report's own. */
static json_object *changes_json(const struct rep_view *r, const struct devsum *ds)
{
	int idx[VRAMCTL_CAP_CHANGES];
	int n = r->nchanges < VRAMCTL_CAP_CHANGES ? r->nchanges : VRAMCTL_CAP_CHANGES;
	for (int k = 0; k < n; k++)
		idx[k] = rep_device_index(ds, r->changes[k].uuid);
	char *text = vr_cap_changes_text(r->changes, idx, n);
	json_object *a = text ? json_tokener_parse(text) : NULL;
	free(text);
	return a ? a : json_object_new_array();
}

json_object *rep_json_report(const struct rep_view *r, const struct devsum *ds, int child_rc,
                             uint64_t t_end, struct rep_symbols *sy)
{
	char uu[48], fw[64];
	json_object *root = json_object_new_object();
	json_object_object_add(root, "schema_version", json_object_new_int(1));
	json_object_object_add(root, "command", json_object_new_string(r->command));
	json_object_object_add(root, "exit_status", json_object_new_int(child_rc));
	json_object_object_add(root, "started", json_object_new_boolean(r->started));
	json_object_object_add(root, "duration_s", json_object_new_double(rep_secs(r, t_end)));
	json_object *devs = json_object_new_array();
	for (int d = 0; d < VR_REC_DEVS; d++) {
		if (!ds[d].used)
			continue;
		json_object *o = json_object_new_object();
		rep_uuid_text(ds[d].uuid, uu, sizeof uu);
		json_object_object_add(o, "index", json_object_new_int(d));
		json_object_object_add(o, "uuid", json_object_new_string(uu));
		/* The cap in force at the end; where it changed while the run
		 * ran, the lowest it was (the denials met the cap of their time). */
		json_object_object_add(o, "cap_bytes", jcap(ds[d].cap));
		json_object_object_add(o, "cap_changed",
		                       json_object_new_boolean(ds[d].cap_changed));
		json_object_object_add(o, "cap_lowest_bytes", jcap(ds[d].cap_lowest));
		json_object_object_add(o, "peak_bytes", ju(ds[d].peak));
		json_object_object_add(o, "peak_is_group",
		                       json_object_new_boolean(ds[d].peak_exact));
		/* On the card (allocations + overhead): null where no member
		 * measured its overhead (the cap counted allocations only). */
		int card = ds[d].card_members > 0;
		json_object_object_add(o, "card_peak_bytes", card ? ju(ds[d].card_peak) : NULL);
		json_object_object_add(o, "card_peak_is_group",
		                       json_object_new_boolean(card && ds[d].card_exact));
		json_object_object_add(o, "overhead_peak_bytes",
		                       card ? ju(ds[d].overhead_peak) : NULL);
		json_object_object_add(o, "overhead_at_end_bytes",
		                       card ? ju(ds[d].overhead_end) : NULL);
		/* Without spill: what it used and spilled (exact, or at most);
		 * with spill, the cap that held what it used. */
		int exact;
		uint64_t need = rep_needed(&ds[d], &exact);
		json_object_object_add(o, "right_size_bytes", ju(rep_right_size(need)));
		json_object_object_add(o, "right_size_is_exact", json_object_new_boolean(exact));
		json_object_object_add(o, "right_size_with_spill_bytes",
		                       ju(rep_right_size(rep_counted_peak(&ds[d]))));
		json_object_object_add(o, "denials", ju(ds[d].denials));
		json_object_object_add(o, "largest_denied_bytes", ju(ds[d].denied_max));
		json_object_object_add(o, "denied_need_bytes", ju(ds[d].denied_need));
		json_object_object_add(o, "context_denials", ju(ds[d].ctx_denials));
		json_object_object_add(o, "guarantee_denials", ju(ds[d].gt_denials));
		json_object_object_add(o, "largest_guarantee_denied_bytes",
		                       ju(ds[d].gt_denied_max));
		json_object_object_add(o, "spilled_peak_bytes", ju(ds[d].spilled_peak));
		waits_json(o, ds[d].waits, ds[d].waits_granted, ds[d].wait_ns, ds[d].wait_ns_max,
		           ds[d].parks, ds[d].parked_max);
		json_object_array_add(devs, o);
	}
	json_object_object_add(root, "devices", devs);
	json_object_object_add(root, "cap_changes_total",
	                       r->changes_damaged ? NULL : ju(r->changes_total));
	json_object_object_add(root, "cap_changes", changes_json(r, ds));
	json_object *esc = json_object_new_array();
	for (int i = 0; i < r->nescaped; i++) {
		const struct rep_escapee *e = &r->escaped[i];
		json_object *o = json_object_new_object();
		json_object_object_add(o, "pid", json_object_new_int(e->pid));
		json_object_object_add(o, "command", json_object_new_string(e->command));
		json_object_object_add(o, "state", json_object_new_string("escaped"));
		json_object_object_add(o, "gpu", json_object_new_int(e->gpu));
		json_object_object_add(o, "uuid", json_object_new_string(e->uuid));
		json_object_object_add(o, "peak_bytes", ju(e->peak));
		json_object_object_add(o, "why", json_object_new_string(e->why));
		json_object_array_add(esc, o);
	}
	json_object_object_add(root, "escaped", esc);
	json_object *procs = json_object_new_array();
	for (int i = 0; i < r->ms.n; i++) {
		const struct rep_member *m = &r->ms.v[i];
		const struct vr_rec_hdr *h = m->h;
		struct ending e;
		rep_how_ended(m, &e);
		json_object *p = json_object_new_object();
		json_object_object_add(p, "pid", json_object_new_int(h->pid));
		json_object_object_add(p, "command", json_object_new_string(h->command));
		json_object_object_add(p, "ended", json_object_new_string(rep_end_key(e.kind)));
		json_object_object_add(p, "exit_status",
		                       e.kind == END_EXIT ? json_object_new_int(e.code) : NULL);
		json_object_object_add(p, "signal",
		                       e.kind == END_SIGNAL ? json_object_new_int(e.code) : NULL);
		json_object_object_add(p, "ended_text", json_object_new_string(e.text));
		json_object_object_add(p, "start_s",
		                       json_object_new_double(rep_secs(r, h->start_mono_ns)));
		json_object_object_add(p, "exit_handlers_ran",
		                       json_object_new_boolean(h->end == VR_REC_EXITED));
		json_object_object_add(
		    p, "frameworks",
		    json_object_new_string(rep_framework_names(h->frameworks, fw, sizeof fw)));
		json_object_object_add(p, "pinned_peak_bytes", ju(h->pinned_peak));
		json_object_object_add(p, "pinned_at_end_bytes", ju(h->pinned));
		uint32_t nl = 0;
		struct vr_rec_leak *lk = rep_sorted_leaks(h, &nl);
		json_object *pd = json_object_new_array();
		for (int d = 0; d < VR_REC_DEVS; d++) {
			const struct vr_rec_dev *x = &h->dev[d];
			if (!x->used)
				continue;
			uint64_t listed = 0;
			for (uint32_t k = 0; k < nl; k++)
				if (lk[k].dev == d && lk[k].kind != VR_KIND_HOST)
					listed += lk[k].bytes;
			json_object *o = json_object_new_object();
			json_object_object_add(o, "index", json_object_new_int(d));
			json_object_object_add(o, "peak_bytes", ju(x->peak));
			json_object_object_add(o, "peak_s",
			                       json_object_new_double(rep_secs(r, x->peak_ns)));
			json_object_object_add(o, "card_peak_bytes",
			                       x->card_known ? ju(x->card_peak) : NULL);
			json_object_object_add(
			    o, "card_peak_s",
			    x->card_known ? json_object_new_double(rep_secs(r, x->card_peak_ns))
			                  : NULL);
			json_object_object_add(o, "overhead_peak_bytes",
			                       x->card_known ? ju(x->overhead_peak) : NULL);
			json_object_object_add(o, "overhead_at_end_bytes",
			                       x->card_known ? ju(x->overhead) : NULL);
			json_object_object_add(o, "allocations", ju(x->allocs));
			json_object_object_add(o, "frees", ju(x->frees));
			json_object_object_add(o, "denials", ju(x->denials));
			json_object_object_add(o, "largest_denied_bytes", ju(x->denied_max));
			json_object_object_add(o, "context_denials", ju(x->ctx_denials));
			json_object_object_add(o, "guarantee_denials", ju(x->gt_denials));
			json_object_object_add(o, "needed_peak_bytes", ju(x->need_peak));
			json_object_object_add(o, "in_use_at_end_bytes", ju(x->in_use));
			json_object_object_add(o, "held_in_blocks_bytes", ju(listed));
			json_object_object_add(o, "held_in_pools_bytes",
			                       ju(h->end == VR_REC_EXITED && x->in_use > listed
			                              ? x->in_use - listed
			                              : 0));
			json_object_object_add(o, "spilled_peak_bytes", ju(x->spilled_peak));
			json_object_object_add(o, "spilled_at_end_bytes", ju(x->spilled));
			waits_json(o, x->waits, x->waits_granted, x->wait_ns, x->wait_ns_max,
			           x->parks, x->parked_max);
			json_object_array_add(pd, o);
		}
		json_object_object_add(p, "devices", pd);
		json_object *blocks = json_object_new_array();
		for (uint32_t k = 0; k < nl; k++) {
			json_object *o = json_object_new_object();
			json_object_object_add(
			    o, "device", lk[k].dev < 0 ? NULL : json_object_new_int(lk[k].dev));
			json_object_object_add(o, "bytes", ju(lk[k].bytes));
			json_object_object_add(o, "kind",
			                       json_object_new_string(rep_kind_name(lk[k].kind)));
			json_object_object_add(o, "cause",
			                       json_object_new_string(lk[k].kind == VR_KIND_HOST
			                                                  ? "pinned"
			                                              : h->frameworks ? "cache"
			                                                              : "leak"));
			struct rep_frame fr[VR_REC_FRAMES];
			char paths[VR_REC_FRAMES][256], addr[32];
			int nf = rep_site_frames(sy, h, lk[k].site, fr, paths);
			json_object *st = json_object_new_array();
			for (int j = 0; j < nf; j++) {
				json_object *fo = json_object_new_object();
				json_object_object_add(
				    fo, "module",
				    fr[j].module ? json_object_new_string(fr[j].module) : NULL);
				snprintf(addr, sizeof addr, "0x%" PRIx64, fr[j].offset);
				json_object_object_add(fo, "offset", json_object_new_string(addr));
				json_object_object_add(
				    fo, "function",
				    fr[j].function ? json_object_new_string(fr[j].function) : NULL);
				json_object_object_add(
				    fo, "file",
				    fr[j].file ? json_object_new_string(fr[j].file) : NULL);
				json_object_object_add(fo, "line",
				                       fr[j].file ? json_object_new_int(fr[j].line)
				                                  : NULL);
				json_object_array_add(st, fo);
			}
			json_object_object_add(o, "stack", st);
			json_object_array_add(blocks, o);
		}
		json_object_object_add(p, "held_at_exit", blocks);
		json_object_object_add(p, "held_not_itemised_count", ju(h->leaks_more_count));
		json_object_object_add(p, "held_not_itemised_bytes", ju(h->leaks_more_bytes));
		free(lk);
		json_object_array_add(procs, p);
	}
	json_object_object_add(root, "processes", procs);
	return root;
}
