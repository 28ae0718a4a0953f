/*
 * test_record - the overhead and the peak on the card (#24), from the
 * library's record to the report, without a driver: the record's hooks
 * (src/hook/record.c, linked in with stubs for the rest of the library)
 * make a record and hand it over a socket as in a run, the CLI's reader
 * (src/report/members.c) maps it, and the report's sums, JSON and text are
 * read back.
 *
 * Device 0 has its overhead measured (vr__rec_overhead, as card.c calls it):
 * the peak on the card rises with it and with blocks charged on top of it,
 * and stays apart from the peak of allocations. Device 1 never has it
 * measured (the cap counted allocations only): no figure on the card.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <json-c/json.h>

#include "hook/config.h"
#include "hook/log.h"
#include "hook/ptrmap.h"
#include "hook/record.h"
#include "report/members.h"
#include "report/report_facts.h"
#include "report/report_json.h"
#include "report/report_text.h"
#include "tests/test.h"

#define MIB (1024ull * 1024)

/* What record.c needs from the rest of the library. */
struct vr_state vr_g;
int vr_log_verbosity = VR_LOG_WARN;
void vr__log(int level, const char *fmt, ...)
{
	va_list ap;
	(void)level;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
void vr_map_walk(vr_map_walk_fn fn, void *arg)
{
	(void)fn;
	(void)arg;
}

static uint64_t jget(json_object *o, const char *key, int *is_null)
{
	json_object *v;
	if (!json_object_object_get_ex(o, key, &v))
		TEST_FAILF("no key %s in %s", key, json_object_to_json_string(o));
	*is_null = v == NULL;
	return v ? json_object_get_uint64(v) : 0;
}

static uint64_t jnum(json_object *o, const char *key)
{
	int null;
	uint64_t v = jget(o, key, &null);
	if (null)
		TEST_FAILF("%s is null in %s", key, json_object_to_json_string(o));
	return v;
}

static void jnull(json_object *o, const char *key)
{
	int null;
	jget(o, key, &null);
	if (!null)
		TEST_FAILF("%s is not null in %s", key, json_object_to_json_string(o));
}

static json_object *jidx(json_object *o, const char *key, size_t i)
{
	json_object *a;
	ASSERT(json_object_object_get_ex(o, key, &a));
	ASSERT(a && json_object_is_type(a, json_type_array));
	ASSERT_UINT_OP(json_object_array_length(a), >, i);
	return json_object_array_get_idx(a, i);
}

static void expect_text(const char *text, const char *needle)
{
	if (!strstr(text, needle))
		TEST_FAILF("the report lacks '%s':\n%s", needle, text);
}

int main(void)
{
	/* The run's side: a private directory with the records' socket. */
	char dir[] = "/tmp/vramctl-test-record-XXXXXX";
	ASSERT(mkdtemp(dir));
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof a.sun_path, "%s/%s", dir, VR_REC_SOCKET);
	int sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ASSERT(sock >= 0);
	ASSERT_INT_OP(bind(sock, (struct sockaddr *)&a, sizeof a), ==, 0);

	/* The member's side: its record, two devices. */
	snprintf(vr_g.record_dir, sizeof vr_g.record_dir, "%s", dir);
	snprintf(vr_g.record_flags, sizeof vr_g.record_flags, "report");
	vr_rec_open();
	ASSERT(vr_rec != NULL);
	struct rep_members ms = {0};
	ASSERT_INT_OP(rep_members_scan(&ms, sock), ==, 1);
	const struct vr_rec_dev *x = &ms.v[0].h->dev[0], *y = &ms.v[0].h->dev[1];
	struct vr_dev d0 = {.ordinal = 0, .cap = 1024 * MIB, .uuid = {1}};
	struct vr_dev d1 = {.ordinal = 1, .cap = 1024 * MIB, .uuid = {2}};
	vr_rec_device(&d0);
	vr_rec_device(&d1);

	/* Blocks before the overhead is known: the card's peak follows them. */
	vr_rec_charge(&d0, (int64_t)(100 * MIB));
	vr_rec_charge(&d0, -(int64_t)(100 * MIB));
	ASSERT_UINT_OP(x->card_known, ==, 0);
	ASSERT_UINT_OP(x->card_peak, ==, 100 * MIB);
	/* The context is measured: 300 MiB on the card, no blocks held. */
	vr_rec_overhead(&d0, 300 * MIB, 300 * MIB);
	ASSERT_UINT_OP(x->card_known, ==, 1);
	ASSERT_UINT_OP(x->overhead, ==, 300 * MIB);
	ASSERT_UINT_OP(x->overhead_peak, ==, 300 * MIB);
	ASSERT_UINT_OP(x->card_peak, ==, 300 * MIB);
	/* Blocks charged on top of it raise the peak on the card, not only
	 * the peak of allocations. */
	vr_rec_charge(&d0, (int64_t)(200 * MIB));
	ASSERT_UINT_OP(x->peak, ==, 200 * MIB);
	ASSERT_UINT_OP(x->card_peak, ==, 500 * MIB);
	ASSERT(x->card_peak_ns >= x->peak_ns && x->card_peak_ns > 0);
	/* The context grows (cuCtxSetLimit), then shrinks. */
	vr_rec_overhead(&d0, 350 * MIB, 550 * MIB);
	vr_rec_overhead(&d0, 250 * MIB, 450 * MIB);
	ASSERT_UINT_OP(x->overhead, ==, 250 * MIB);
	ASSERT_UINT_OP(x->overhead_peak, ==, 350 * MIB);
	ASSERT_UINT_OP(x->card_peak, ==, 550 * MIB);
	/* 250 MiB of blocks + 250 MiB overhead: below the card's peak. */
	vr_rec_charge(&d0, (int64_t)(50 * MIB));
	ASSERT_UINT_OP(x->card_peak, ==, 550 * MIB);
	/* 370 + 250: a new peak on the card with the current overhead. */
	vr_rec_charge(&d0, (int64_t)(120 * MIB));
	ASSERT_UINT_OP(x->peak, ==, 370 * MIB);
	ASSERT_UINT_OP(x->card_peak, ==, 620 * MIB);
	/* Device 1: blocks only, never measured. */
	vr_rec_charge(&d1, (int64_t)(64 * MIB));
	ASSERT_UINT_OP(y->card_known, ==, 0);
	ASSERT_UINT_OP(y->peak, ==, 64 * MIB);

	/* The report's sums. */
	struct devsum ds[VR_REC_DEVS];
	rep_sum_devices(&ms, ds);
	ASSERT_UINT_OP(ds[0].peak, ==, 370 * MIB);
	ASSERT_UINT_OP(ds[0].card_peak, ==, 620 * MIB);
	ASSERT_INT_OP(ds[0].card_members, ==, 1);
	ASSERT_UINT_OP(ds[0].overhead_peak, ==, 350 * MIB);
	ASSERT_UINT_OP(ds[0].overhead_end, ==, 250 * MIB);
	ASSERT_UINT_OP(rep_counted_peak(&ds[0]), ==, 620 * MIB);
	ASSERT_INT_OP(ds[1].card_members, ==, 0);
	ASSERT_UINT_OP(rep_counted_peak(&ds[1]), ==, 64 * MIB);

	/* JSON: the peak of allocations stays peak_bytes; the card's apart. */
	struct rep_view v = {.command = "prog", .t0 = 0, .ms = ms, .started = 1};
	json_object *root = rep_json_report(&v, ds, 0, 0, NULL);
	json_object *g0 = jidx(root, "devices", 0), *g1 = jidx(root, "devices", 1);
	ASSERT_UINT_OP(jnum(g0, "peak_bytes"), ==, 370 * MIB);
	ASSERT_UINT_OP(jnum(g0, "card_peak_bytes"), ==, 620 * MIB);
	ASSERT_UINT_OP(jnum(g0, "overhead_peak_bytes"), ==, 350 * MIB);
	ASSERT_UINT_OP(jnum(g0, "overhead_at_end_bytes"), ==, 250 * MIB);
	ASSERT_UINT_OP(jnum(g0, "right_size_bytes"), ==, 620 * MIB);
	ASSERT_UINT_OP(jnum(g1, "peak_bytes"), ==, 64 * MIB);
	jnull(g1, "card_peak_bytes");
	jnull(g1, "overhead_peak_bytes");
	jnull(g1, "overhead_at_end_bytes");
	ASSERT_UINT_OP(jnum(g1, "right_size_bytes"), ==, 64 * MIB);
	json_object *p = jidx(root, "processes", 0);
	json_object *p0 = jidx(p, "devices", 0), *p1 = jidx(p, "devices", 1);
	ASSERT_UINT_OP(jnum(p0, "peak_bytes"), ==, 370 * MIB);
	ASSERT_UINT_OP(jnum(p0, "card_peak_bytes"), ==, 620 * MIB);
	ASSERT_UINT_OP(jnum(p0, "overhead_peak_bytes"), ==, 350 * MIB);
	ASSERT_UINT_OP(jnum(p0, "overhead_at_end_bytes"), ==, 250 * MIB);
	jnull(p1, "card_peak_bytes");
	jnull(p1, "card_peak_s");
	json_object_put(root);

	/* Text: each figure says which peak it is. */
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	ASSERT(f);
	rep_text_report(&v, f, ds, 0, 0, NULL);
	fclose(f);
	/* One member: its peaks are the group's, said without "unknown" (#35). */
	expect_text(text, "cap 1 GiB; the group's peak of allocations 370 MiB\n");
	expect_text(text, "on the card (allocations + overhead: contexts, modules, the "
	                  "driver's own use): peak 620 MiB;");
	expect_text(text, "; overhead: peak 350 MiB, 250 MiB at the end\n");
	expect_text(text, "right size: --limit 0=620M holds what this run used on the card\n");
	expect_text(text, "on the card: not measured (the cap counted allocations only)\n");
	expect_text(text, "right size: --limit 1=64M holds what this run used\n");
	expect_text(text, "GPU 0: peak of allocations 370 MiB at ");
	expect_text(text, "    on the card: peak 620 MiB at ");
	expect_text(text, "; overhead: peak 350 MiB, 250 MiB at the end\n");
	free(text);

	/* Refusals by cause (#35): the cap's count toward what a larger cap
	 * needs; a refused context is one of them and holds nothing; other
	 * groups' guarantees are apart and ask no larger cap. */
	struct vr_dev d2 = {.ordinal = 2, .cap = 1000 * MIB, .uuid = {3}};
	const struct vr_rec_dev *z = &ms.v[0].h->dev[2];
	vr_rec_device(&d2);
	vr_rec_charge(&d2, (int64_t)(900 * MIB));
	vr_rec_context_refused(&d2, 64 * MIB, 1028 * MIB);
	vr_rec_denied(&d2, 3000 * MIB, 900 * MIB, VR_DENY_GUARANTEE);
	ASSERT_UINT_OP(z->denials, ==, 2);
	ASSERT_UINT_OP(z->ctx_denials, ==, 1);
	ASSERT_UINT_OP(z->gt_denials, ==, 1);
	ASSERT_UINT_OP(z->denied_max, ==, 64 * MIB);
	ASSERT_UINT_OP(z->denied_need, ==, 1028 * MIB);
	ASSERT_UINT_OP(z->peak, ==, 900 * MIB);
	/* Spilled past the cap: what was needed at once counts it. */
	vr_rec_spilled(&d2, (int64_t)(200 * MIB));
	ASSERT_UINT_OP(z->need_peak, ==, 1100 * MIB);
	rep_sum_devices(&ms, ds);
	int exact;
	ASSERT_UINT_OP(rep_needed(&ds[2], &exact), ==, 1100 * MIB);
	ASSERT_INT_OP(exact, ==, 1);
	f = open_memstream(&text, &len);
	ASSERT(f);
	rep_text_report(&v, f, ds, 0, 0, NULL);
	fclose(f);
	expect_text(text,
	            "1 request was refused for other groups' guarantees (the largest 2.9 GiB)");
	expect_text(
	    text,
	    "1 request was refused (the largest 64 MiB; 1 of them a new CUDA context "
	    "(64 MiB)); to grant it too, the cap must be at least 1028 MiB (--limit 2=1028M)");
	expect_text(text, "right size: --limit 2=1100M holds, without spill, what this run used "
	                  "(900 MiB) and spilled to host memory (200 MiB)");
	free(text);

	rep_members_free(&ms);
	close(sock);
	unlink(a.sun_path);
	rmdir(dir);
	printf("ok\n");
	return 0;
}
