/*
 * books_member - a member of a group's books with an overhead charge, for
 * the monitor's tests of what the card holds (#24), without a driver: joins
 * GROUP in DIR, names device UUID with cap CAP, reserves ALLOC bytes,
 * charges OVERHEAD bytes (never refused at the cap, as the library does for
 * what the card already holds), sets its counting (card, allocations,
 * no_figures), prints "ready 1 PID" and holds until its stdin closes.
 *
 *   books_member DIR GROUP UUID CAP ALLOC OVERHEAD COUNTING
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/hold.h"
#include "registry/layout.h"
#include "registry/registry.h"

/* "GPU-" and 32 hex digits, dashes anywhere. 0 or -1. */
static int parse_uuid(const char *s, unsigned char out[VR_UUID_LEN])
{
	if (strncmp(s, "GPU-", 4))
		return -1;
	int n = 0;
	for (s += 4; *s && n < 2 * VR_UUID_LEN; s++) {
		if (*s == '-')
			continue;
		char c = *s;
		int v = c >= '0' && c <= '9'   ? c - '0'
		        : c >= 'a' && c <= 'f' ? c - 'a' + 10
		        : c >= 'A' && c <= 'F' ? c - 'A' + 10
		                               : -1;
		if (v < 0)
			return -1;
		if (n % 2 == 0)
			out[n / 2] = (unsigned char)(v << 4);
		else
			out[n / 2] |= (unsigned char)v;
		n++;
	}
	return n == 2 * VR_UUID_LEN && !*s ? 0 : -1;
}

int main(int argc, char **argv)
{
	unsigned char uuid[VR_UUID_LEN];
	if (argc != 8 || parse_uuid(argv[3], uuid) < 0) {
		printf("error: usage: books_member DIR GROUP UUID CAP ALLOC OVERHEAD COUNTING\n");
		return 1;
	}
	uint64_t cap = strtoull(argv[4], NULL, 10), alloc = strtoull(argv[5], NULL, 10);
	uint64_t overhead = strtoull(argv[6], NULL, 10);
	unsigned bits = !strcmp(argv[7], "allocations")  ? VR_SLOT_F_ALLOCATIONS
	                : !strcmp(argv[7], "no_figures") ? VR_SLOT_F_NO_FIGURES
	                                                 : 0;
	struct vr_join_opts o = {.dir = argv[1], .group = argv[2], .limit_spec = argv[4]};
	vr_member *m;
	char err[256];
	uint64_t in_force;
	int rc = vr_join(&o, &m, NULL, err, sizeof(err));
	if (rc < 0) {
		printf("error: join: %s\n", err);
		return 1;
	}
	int dev = vr_device(m, uuid, cap, &in_force);
	if (dev < 0 || vr_reserve(m, dev, alloc, NULL) < 0 ||
	    vr_overhead_set(m, dev, overhead, NULL) < 0) {
		printf("error: device, reserve or overhead refused\n");
		return 1;
	}
	if (bits)
		vr_counting_set(m, bits, 1);
	hold_ready(1);
	vr_leave(m);
	return 0;
}
