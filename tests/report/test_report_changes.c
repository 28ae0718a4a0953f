/*
 * test_report_changes - the report's view of caps changed while the run
 * ran (#26, `vramctl limit`), on fixed inputs without a driver or members:
 * rep_cap_history marks the devices (the lowest cap in force), the text
 * lists the changes and says a refusal against the lowered cap, the JSON
 * has status --json's fields; a change on a device no member used is
 * listed by its UUID (gpu_index null); without changes, nothing changes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "report/report_facts.h"
#include "report/report_json.h"
#include "report/report_text.h"
#include "tests/test.h"

#define MIB (1024ull * 1024)

static void expect_text(const char *text, const char *needle)
{
	if (!strstr(text, needle)) {
		fprintf(stderr, "not in the text: '%s'\n---\n%s---\n", needle, text);
		exit(1);
	}
}

static char *text_of(const struct rep_view *v, const struct devsum *ds)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	ASSERT(f);
	rep_text_report(v, f, ds, 0, 0, NULL);
	fclose(f);
	return text;
}

static json_object *key(json_object *o, const char *k)
{
	json_object *v = NULL;
	ASSERT(json_object_object_get_ex(o, k, &v));
	return v;
}

int main(void)
{
	struct devsum ds[VR_REC_DEVS];
	memset(ds, 0, sizeof ds);
	ds[0] = (struct devsum){.used = 1,
	                        .uuid = {1},
	                        .cap = 2048 * MIB,
	                        .peak = 600 * MIB,
	                        .denials = 1,
	                        .denied_max = 1 * MIB,
	                        .denied_need = 601 * MIB};
	const struct vramctl_cap_change ch[] = {
	    {.when = 1796190000,
	     .uid = 1000,
	     .pid = 42,
	     .uuid = "GPU-01000000-0000-0000-0000-000000000000",
	     .old_cap = 1024 * MIB,
	     .new_cap = 512 * MIB},
	    {.when = 1796190001,
	     .uid = 0,
	     .pid = 43,
	     .uuid = "GPU-09000000-0000-0000-0000-000000000000",
	     .old_cap = UINT64_MAX,
	     .new_cap = 4096 * MIB},
	    {.when = 1796190002,
	     .uid = 1000,
	     .pid = 44,
	     .uuid = "GPU-01000000-0000-0000-0000-000000000000",
	     .old_cap = 512 * MIB,
	     .new_cap = 2048 * MIB},
	};
	struct rep_view v = {
	    .command = "prog", .started = 1, .changes_total = 3, .nchanges = 3, .changes = ch};
	rep_cap_history(&v, ds);
	ASSERT_INT_OP(ds[0].cap_changed, ==, 1);
	ASSERT_UINT_OP(ds[0].cap_lowest, ==, 512 * MIB);
	ASSERT_INT_OP(ds[1].cap_changed, ==, 0);
	ASSERT_INT_OP(rep_device_index(ds, "GPU-09000000-0000-0000-0000-000000000000"), ==, -1);

	char *text = text_of(&v, ds);
	expect_text(text, "cap 2 GiB at the end (changed while it ran);");
	expect_text(text, "1 request was refused (the largest 1 MiB); granting it needed 601 MiB, "
	                  "within the cap in force at the end (2 GiB): the cap was as low as "
	                  "512 MiB while the run ran");
	ASSERT(!strstr(text, "the cap must be at least"));
	expect_text(text,
	            "cap changes while it ran (vramctl limit):\n"
	            "  2026-12-02 05:40:00 UTC GPU 0 1 GiB -> 512 MiB by uid 1000 (pid 42)\n"
	            "  2026-12-02 05:40:01 UTC GPU-09000000-0000-0000-0000-000000000000 "
	            "none -> 4 GiB by uid 0 (pid 43)\n"
	            "  2026-12-02 05:40:02 UTC GPU 0 512 MiB -> 2 GiB by uid 1000 (pid 44)\n");
	free(text);

	json_object *root = rep_json_report(&v, ds, 0, 0, NULL);
	ASSERT_UINT_OP((uint64_t)json_object_get_uint64(key(root, "cap_changes_total")), ==, 3);
	json_object *a = key(root, "cap_changes");
	ASSERT_UINT_OP(json_object_array_length(a), ==, 3);
	json_object *c0 = json_object_array_get_idx(a, 0), *c1 = json_object_array_get_idx(a, 1);
	ASSERT_UINT_OP((uint64_t)json_object_get_uint64(key(c0, "time")), ==, 1796190000);
	ASSERT_INT_OP(json_object_get_int(key(c0, "uid")), ==, 1000);
	ASSERT_INT_OP(json_object_get_int(key(c0, "pid")), ==, 42);
	ASSERT_INT_OP(json_object_get_int(key(c0, "gpu_index")), ==, 0);
	ASSERT_UINT_OP((uint64_t)json_object_get_uint64(key(c0, "old_cap_bytes")), ==, 1024 * MIB);
	ASSERT_UINT_OP((uint64_t)json_object_get_uint64(key(c0, "new_cap_bytes")), ==, 512 * MIB);
	ASSERT(key(c1, "gpu_index") == NULL);
	ASSERT(key(c1, "old_cap_bytes") == NULL);
	ASSERT(!strcmp(json_object_get_string(key(c1, "uuid")),
	               "GPU-09000000-0000-0000-0000-000000000000"));
	json_object *d0 = json_object_array_get_idx(key(root, "devices"), 0);
	ASSERT(json_object_get_boolean(key(d0, "cap_changed")));
	ASSERT_UINT_OP((uint64_t)json_object_get_uint64(key(d0, "cap_lowest_bytes")), ==,
	               512 * MIB);
	json_object_put(root);

	/* No change: the report reads as before. */
	struct rep_view none = {.command = "prog", .started = 1};
	ds[0].cap = 512 * MIB;
	rep_cap_history(&none, ds);
	ASSERT_INT_OP(ds[0].cap_changed, ==, 0);
	text = text_of(&none, ds);
	expect_text(text, "cap 512 MiB; the group's peak");
	expect_text(text, "to grant it too, the cap must be at least 601 MiB (--limit 0=601M)\n");
	ASSERT(!strstr(text, "changed") && !strstr(text, "cap changes"));
	free(text);
	root = rep_json_report(&none, ds, 0, 0, NULL);
	ASSERT_UINT_OP(json_object_array_length(key(root, "cap_changes")), ==, 0);
	json_object_put(root);
	printf("ok\n");
	return 0;
}
