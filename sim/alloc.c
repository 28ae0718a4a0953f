/*
 * alloc.c - the table of device pointers: each linear, stream-ordered, IPC
 * and graph allocation by its address, with its size and kind, so that bad
 * and double frees fail as they do on the real driver. Device pointers are
 * bookkeeping only: plausible, aligned, never reused and never
 * dereferenced.
 */
#include "driver.h"

#include <stdlib.h>

#define SIM_ALLOC_BUCKETS 1024
static struct sim_alloc *g_buckets[SIM_ALLOC_BUCKETS];

static unsigned bucket_of(CUdeviceptr p)
{
	return (unsigned)((p >> 9) ^ (p >> 21)) % SIM_ALLOC_BUCKETS;
}

struct sim_alloc *sim_alloc_find(CUdeviceptr p)
{
	for (struct sim_alloc *a = g_buckets[bucket_of(p)]; a; a = a->next)
		if (a->ptr == p)
			return a;
	return NULL;
}

void sim_alloc_insert(struct sim_alloc *a)
{
	unsigned b = bucket_of(a->ptr);
	a->next = g_buckets[b];
	g_buckets[b] = a;
}

void sim_alloc_remove(struct sim_alloc *a)
{
	for (struct sim_alloc **pp = &g_buckets[bucket_of(a->ptr)]; *pp; pp = &(*pp)->next)
		if (*pp == a) {
			*pp = a->next;
			return;
		}
}

struct sim_alloc *sim_alloc_each(int (*fn)(struct sim_alloc *a, void *arg), void *arg)
{
	for (unsigned b = 0; b < SIM_ALLOC_BUCKETS; b++) {
		struct sim_alloc *a = g_buckets[b];
		while (a) {
			struct sim_alloc *next = a->next;
			if (fn(a, arg))
				return a;
			a = next;
		}
	}
	return NULL;
}

void sim_alloc_after_fork(void)
{
	for (unsigned b = 0; b < SIM_ALLOC_BUCKETS; b++)
		SIM_FREE_LIST(struct sim_alloc, g_buckets[b]);
}
