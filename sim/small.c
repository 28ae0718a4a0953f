/*
 * small.c - linear blocks of 1 MiB or less, as a real driver places them:
 * carved from 2 MiB pages of the context's own, which it keeps after the
 * blocks in them are freed (until the context goes). The first small block
 * of a context takes a whole page that the following ones share (driver
 * 580 on an H200: bench/gpu/driver_facts, docs/real-gpu.md); a block that
 * fits in no hole of the pages kept takes a new page, so frees and
 * allocations of other sizes can leave the card holding more pages than
 * the live blocks need (fragmentation).
 *
 * A page is a bitmap of 512-byte granules, first fit in page order: a
 * simple allocator, not NVIDIA's, with the two properties that matter to
 * whoever counts the card (a small block may take a new page; a freed one
 * gives nothing back to the card). Device pointers stay bookkeeping
 * (alloc.c): a block's address does not say where in its page it sits.
 */
#include "driver.h"

#include <stdlib.h>
#include <string.h>

#define GRANULE  512u
#define GRANULES ((unsigned)(SIM_GRANULARITY / GRANULE)) /* 4096 a page */
#define WORDS    (GRANULES / 64)

struct sim_page {
	struct sim_ctx *ctx;
	uint64_t used[WORDS]; /* a bit per granule in use */
	struct sim_page *next;
};

static struct sim_page *g_pages;

static int granule_used(const struct sim_page *p, unsigned g)
{
	return (p->used[g / 64] >> (g % 64)) & 1;
}

static void mark(struct sim_page *p, unsigned first, unsigned n, int on)
{
	for (unsigned g = first; g < first + n; g++) {
		uint64_t bit = 1ull << (g % 64);
		if (on)
			p->used[g / 64] |= bit;
		else
			p->used[g / 64] &= ~bit;
	}
}

/* The first run of n free granules in p, or GRANULES when there is none. */
static unsigned first_fit(const struct sim_page *p, unsigned n)
{
	unsigned run = 0;
	for (unsigned g = 0; g < GRANULES; g++) {
		run = granule_used(p, g) ? 0 : run + 1;
		if (run == n)
			return g + 1 - n;
	}
	return GRANULES;
}

CUresult sim_small_take(struct sim_ctx *c, size_t size, struct sim_page **page, uint32_t *first,
                        uint32_t *granules)
{
	unsigned n = (unsigned)((size + GRANULE - 1) / GRANULE);
	for (struct sim_page *p = g_pages; p; p = p->next) {
		if (p->ctx != c)
			continue;
		unsigned at = first_fit(p, n);
		if (at < GRANULES) {
			mark(p, at, n, 1);
			*page = p, *first = at, *granules = n;
			return CUDA_SUCCESS;
		}
	}
	struct sim_page *p = calloc(1, sizeof(*p));
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult rc = sim_charge(sim_ctx_dev(c), SIM_GRANULARITY);
	if (rc != CUDA_SUCCESS) {
		free(p);
		return rc;
	}
	p->ctx = c;
	p->next = g_pages;
	g_pages = p;
	mark(p, 0, n, 1);
	*page = p, *first = 0, *granules = n;
	return CUDA_SUCCESS;
}

void sim_small_give(struct sim_page *p, uint32_t first, uint32_t granules)
{
	mark(p, first, granules, 0); /* the page stays the context's, on the card */
}

void sim_small_ctx_destroyed(struct sim_ctx *c)
{
	for (struct sim_page **pp = &g_pages; *pp;) {
		struct sim_page *p = *pp;
		if (p->ctx != c) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		sim_uncharge(sim_ctx_dev(c), SIM_GRANULARITY);
		free(p);
	}
}

void sim_small_after_fork(void)
{
	SIM_FREE_LIST(struct sim_page, g_pages);
}
