/*
 * format_json.c - the model as JSON (schema in man/vramctl-status.1). Pure,
 * as format.c: nothing here reads a clock, a file or the environment.
 */
#include <stdio.h>

#include "common/json.h"
#include "monitor/card.h"
#include "monitor/cap_changes.h"
#include "monitor/format.h"
#include "monitor/guarantee.h"

int mon_format_json(FILE *f, const struct mon_model *m, int compact)
{
	struct jw w = {.f = f, .compact = compact};
	jw_open(&w, NULL, '{');
	jw_int(&w, "schema_version", MON_SCHEMA_VERSION, 1);
	jw_u64(&w, "time_ms", m->time_ms, 1);
	jw_open(&w, "nvml", '{');
	jw_bool(&w, "available", !!(m->valid & MON_M_NVML));
	jw_str(&w, "driver_version", (m->valid & MON_M_DRIVER) ? m->driver_version : NULL);
	jw_close(&w, '}');
	jw_open(&w, "registry", '{');
	jw_bool(&w, "available", !!(m->valid & MON_M_REGISTRY));
	jw_str(&w, "dir", m->registry_dir[0] ? m->registry_dir : NULL);
	jw_close(&w, '}');
	jw_open(&w, "notes", '[');
	for (int i = 0; i < m->nnotes; i++)
		jw_item_str(&w, m->notes[i]);
	jw_close(&w, ']');

	jw_open(&w, "devices", '[');
	for (int i = 0; i < m->ndevs; i++) {
		const struct mon_device *d = &m->devs[i];
		int mem = !!(d->valid & MON_DEV_MEMORY);
		jw_open(&w, NULL, '{');
		jw_int(&w, "index", d->index, !!(d->valid & MON_DEV_INDEX));
		jw_str(&w, "uuid", d->uuid[0] ? d->uuid : NULL);
		jw_str(&w, "name", (d->valid & MON_DEV_NAME) ? d->name : NULL);
		jw_u64(&w, "total_bytes", d->total, mem);
		jw_u64(&w, "used_bytes", d->used, mem);
		jw_u64(&w, "free_bytes", d->free, mem);
		jw_u64(&w, "reserved_bytes", d->reserved, mem);
		jw_u64(&w, "caps_sum_bytes", d->caps_sum, 1);
		jw_int(&w, "capped_groups", d->ncapped, 1);
		jw_u64(&w, "spilled_bytes", d->spilled, 1);
		jw_key(&w, "overcommitted");
		jb_puts(&w, !mem ? "null" : d->overcommitted ? "true" : "false");
		jw_str(&w, "process_api", d->proc_api[0] ? d->proc_api : NULL);
		mon_guarantee_json_dev(&w, d);
		jw_close(&w, '}');
	}
	jw_close(&w, ']');

	jw_open(&w, "groups", '[');
	for (int i = 0; i < m->ngroups; i++) {
		const struct mon_group *g = &m->groups[i];
		jw_open(&w, NULL, '{');
		jw_str(&w, "name", g->name);
		jw_str(&w, "limit_spec", g->limit_spec);
		jw_bool(&w, "growth", g->growth);
		jw_int(&w, "owner_uid", (long long)g->owner, 1);
		jw_int(&w, "members", g->nmembers, 1);
		jw_int(&w, "dead_members", g->ndead, 1);
		jw_int(&w, "exiting_members", g->nexiting, 1);
		jw_bool(&w, "consistent", g->consistent);
		jw_u64(&w, "spill_budget_bytes", g->spill_budget, 1);
		jw_u64(&w, "denied_count", g->denials, 1);
		jw_u64(&w, "spilled_bytes", g->spilled, 1);
		jw_u64(&w, "park_budget_bytes", g->park_budget, 1);
		jw_u64(&w, "parked_bytes", g->parked, 1);
		jw_int(&w, "waiting", g->nwaiting, 1);
		jw_str(&w, "enforcer", g->ndriver ? "both" : "library");
		mon_cap_changes_json(&w, m, g);
		jw_open(&w, "devices", '[');
		for (int j = 0; j < g->ndev; j++) {
			const struct mon_group_dev *gd = &g->dev[j];
			int idx = mon_model_gpu_index(m, gd->device, 1);
			jw_open(&w, NULL, '{');
			jw_str(&w, "uuid", gd->uuid);
			jw_int(&w, "gpu_index", idx, idx >= 0);
			jw_u64(&w, "cap_bytes", gd->cap, gd->cap != MON_NO_CAP);
			mon_guarantee_json_group(&w, m, gd);
			jw_u64(&w, "in_use_bytes", gd->in_use, 1);
			jw_u64(&w, "peak_bytes", gd->peak, 1);
			jw_u64(&w, "dead_in_use_bytes", gd->dead_in_use, 1);
			jw_u64(&w, "spilled_bytes", gd->spilled, 1);
			jw_u64(&w, "allocated_bytes", gd->on_card - gd->card_overhead, 1);
			jw_u64(&w, "on_card_bytes", gd->on_card, 1);
			jw_u64(&w, "overhead_bytes", gd->card_overhead, 1);
			char why[256];
			jw_bool(&w, "over_cap", gd->over_cap > 0);
			jw_u64(&w, "over_cap_bytes", gd->over_cap, 1);
			jw_str(&w, "over_cap_reason",
			       gd->over_cap ? mon_over_cap_reason(gd, why, sizeof(why)) : NULL);
			jw_close(&w, '}');
		}
		jw_close(&w, ']');
		jw_close(&w, '}');
	}
	jw_close(&w, ']');

	jw_open(&w, "processes", '[');
	for (int i = 0; i < m->nprocs; i++) {
		const struct mon_proc *p = &m->procs[i];
		int capped = !!(p->valid & MON_P_CAPPED);
		int idx = mon_model_gpu_index(m, p->device, !!(p->valid & MON_P_DEVICE));
		jw_open(&w, NULL, '{');
		jw_int(&w, "host_pid", p->host_pid, !!(p->valid & MON_P_HOST_PID));
		jw_int(&w, "ns_pid", p->ns_pid, !!(p->valid & MON_P_NS_PID));
		jw_int(&w, "gpu_index", idx, idx >= 0);
		jw_str(&w, "gpu_uuid", p->uuid[0] ? p->uuid : NULL);
		jw_bool(&w, "capped", capped);
		/* A capped job's process outside its cap: its job's group. */
		int escaped = !!(p->valid & MON_P_ESCAPED);
		/* A live member waiting for room or parked says so. */
		int busy = capped && p->state == MON_PROC_ALIVE && (p->parked || p->wait_bytes);
		jw_str(&w, "state",
		       busy                           ? mon_proc_state_text(p)
		       : capped                       ? mon_state_name(p->state)
		       : escaped                      ? "escaped"
		       : (p->valid & MON_P_DRVLIMIT)  ? "driver"
		       : (p->valid & MON_P_ELSEWHERE) ? "capped_elsewhere"
		                                      : "uncapped");
		jw_str(&w, "books_dir",
		       (p->valid & MON_P_ELSEWHERE) && p->books_dir[0] ? p->books_dir : NULL);
		jw_str(&w, "group", capped || escaped ? p->group : NULL);
		jw_u64(&w, "cap_bytes", p->cap, (capped || escaped) && p->cap != MON_NO_CAP);
		jw_u64(&w, "in_use_bytes", p->in_use, capped);
		jw_u64(&w, "peak_bytes", p->peak, capped);
		jw_u64(&w, "denied_count", p->denied_count, capped);
		jw_u64(&w, "last_denied_bytes", p->last_denied, capped);
		jw_u64(&w, "spilled_bytes", p->spilled, capped);
		jw_u64(&w, "host_pinned_bytes", p->host_pinned, capped);
		jw_u64(&w, "allocated_bytes", p->allocated, capped && (p->valid & MON_P_ON_CARD));
		jw_u64(&w, "on_card_bytes", p->on_card, !!(p->valid & MON_P_ON_CARD));
		jw_u64(&w, "overhead_bytes", p->card_overhead,
		       capped && (p->valid & MON_P_ON_CARD));
		jw_str(&w, "counting", capped ? mon_counting_name(p->counting) : NULL);
		/* Waiting for room and parked: sizes and times (ms since
		 * the epoch), null when not. */
		int waits = capped && p->wait_bytes, parked = capped && p->parked;
		jw_u64(&w, "waiting_bytes", p->wait_bytes, waits);
		jw_u64(&w, "waiting_set_aside_bytes", p->wait_claimed, waits);
		jw_u64(&w, "waiting_since_ms", p->wait_since / 1000000ull, waits);
		jw_bool(&w, "parked", parked);
		jw_u64(&w, "parked_bytes", p->parked_bytes, parked);
		jw_u64(&w, "parked_since_ms", p->parked_since / 1000000ull, parked);
		jw_bool(&w, "parkable", capped && p->parkable);
		jw_u64(&w, "idle_since_ms", p->idle_since / 1000000ull,
		       capped && p->parkable && p->idle_since && !parked);
		jw_u64(&w, "ipc_ns", p->ipc_ns, capped && p->ipc_ns);
		/* Capped by books of its own: its cap holds for it alone. */
		jw_bool(&w, "own_books", !!(p->valid & MON_P_ALONE));
		jw_str(&w, "own_books_reason", mon_alone_why(m, p));
		jw_bool(&w, "nvml_listed", !!(p->valid & MON_P_NVML));
		jw_u64(&w, "nvml_used_bytes", p->nvml_used, !!(p->valid & MON_P_NVML_USED));
		jw_int(&w, "uid", (long long)p->uid, !!(p->valid & MON_P_USER));
		jw_str(&w, "user", (p->valid & MON_P_USER) ? p->user : NULL);
		jw_str(&w, "command", (p->valid & MON_P_COMMAND) ? p->command : NULL);
		/* The enforcers (docs/usage.md): the library's cap, the driver's limit. */
		jw_str(&w, "enforcer", mon_enforcer_name(p));
		if (p->valid & MON_P_DRVLIMIT) {
			jw_open(&w, "driver_limit", '{');
			jw_str(&w, "cgroup", p->drv.cgroup);
			jw_u64(&w, "hard_bytes", p->drv.hard, 1);
			jw_u64(&w, "soft_bytes", p->drv.soft, 1);
			jw_u64(&w, "used_bytes", p->drv.used, 1);
			jw_close(&w, '}');
		} else {
			jw_key(&w, "driver_limit");
			jb_puts(&w, "null");
		}
		/* Identity: "" is unknown, written null. */
		jw_str(&w, "container_id", p->container_id[0] ? p->container_id : NULL);
		jw_str(&w, "pod_uid", p->pod_uid[0] ? p->pod_uid : NULL);
		jw_str(&w, "pod_name", p->pod_name[0] ? p->pod_name : NULL);
		jw_str(&w, "pod_namespace", p->pod_namespace[0] ? p->pod_namespace : NULL);
		jw_str(&w, "container_name", p->container_name[0] ? p->container_name : NULL);
		jw_close(&w, '}');
	}
	jw_close(&w, ']');
	jw_close(&w, '}');
	return jw_finish(&w);
}
