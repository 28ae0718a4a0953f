/*
 * top_sort.c - the process columns of `vramctl top` and the order of its
 * rows (see top_sort.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/top_sort.h"

const struct col_def top_cols[NCOLS] = {
    [C_PID] = {"PID", 'p', 7},       [C_GPU] = {"GPU", 'g', 3},
    [C_USER] = {"USER", 'u', 8},     [C_CTR] = {"CONTAINER", 'i', 12},
    [C_GROUP] = {"GROUP", 'G', 10},  [C_ALLOC] = {"ALLOC", 'a', 8},
    [C_CARD] = {"ON CARD", 'm', 8},  [C_OVER] = {"OVERHEAD", 'o', 9},
    [C_CAP] = {"CAP", 'c', 8},       [C_PEAK] = {"PEAK", 'k', 8},
    [C_SPILL] = {"SPILLED", 'S', 8}, [C_NVML] = {"NVML", 'n', 8},
    [C_DENIED] = {"DENIED", 'd', 7}, [C_CMD] = {"COMMAND", 'C', 0},
};

/* qsort has no context argument: the column and direction of the sort in
 * progress (the UI thread is the only one that sorts). */
static int sort_col_g, sort_rev_g;

/* What the card holds for a row (an uncapped one: NVML's figure), 0 unknown. */
static uint64_t card_of(const struct mon_proc *p)
{
	return (p->valid & MON_P_ON_CARD) ? p->on_card : 0;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int cmp_proc(const void *a, const void *b)
{
	const struct mon_proc *x = *(const struct mon_proc *const *)a;
	const struct mon_proc *y = *(const struct mon_proc *const *)b;
	int r = 0;
	switch (sort_col_g) {
	case C_PID:
		r = cmp_u64((uint64_t)x->host_pid, (uint64_t)y->host_pid);
		if (!r)
			r = cmp_u64((uint64_t)x->ns_pid, (uint64_t)y->ns_pid);
		break;
	case C_GPU:
		r = cmp_u64((uint64_t)(unsigned)x->device, (uint64_t)(unsigned)y->device);
		break;
	case C_USER:
		r = strcmp(x->user, y->user);
		break;
	case C_CTR:
		r = strcmp(x->container_id, y->container_id);
		break;
	case C_GROUP:
		r = strcmp(x->group, y->group);
		break;
	case C_ALLOC:
		r = cmp_u64(x->allocated, y->allocated);
		break;
	case C_CARD:
		r = cmp_u64(card_of(x), card_of(y));
		break;
	case C_OVER:
		r = cmp_u64(x->card_overhead, y->card_overhead);
		break;
	case C_CAP:
		r = cmp_u64((x->valid & MON_P_CAPPED) ? x->cap : 0,
		            (y->valid & MON_P_CAPPED) ? y->cap : 0);
		break;
	case C_PEAK:
		r = cmp_u64(x->peak, y->peak);
		break;
	case C_NVML:
		r = cmp_u64(x->nvml_used, y->nvml_used);
		break;
	case C_SPILL:
		r = cmp_u64(x->spilled, y->spilled);
		break;
	case C_DENIED:
		r = cmp_u64(x->denied_count, y->denied_count);
		break;
	default:
		r = strcmp(x->command, y->command);
		break;
	}
	if (!r)
		r = cmp_u64((uint64_t)x->host_pid, (uint64_t)y->host_pid);
	/* Numbers read best largest first; names alphabetically. */
	int numeric = sort_col_g == C_ALLOC || sort_col_g == C_CARD || sort_col_g == C_OVER ||
	              sort_col_g == C_CAP || sort_col_g == C_PEAK || sort_col_g == C_SPILL ||
	              sort_col_g == C_NVML || sort_col_g == C_DENIED;
	if (numeric)
		r = -r;
	return sort_rev_g ? -r : r;
}

void sort_rows(const struct mon_proc **rows, int n, int col, int reverse)
{
	sort_col_g = col;
	sort_rev_g = reverse;
	if (n > 1)
		qsort(rows, (size_t)n, sizeof(*rows), cmp_proc);
}
