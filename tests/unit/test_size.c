/* Unit tests of the size and cap grammar (src/common/size.c). */
#include "common/size.h"
#include "tests/test.h"

#include <errno.h>

static uint64_t size_ok(const char *text)
{
	uint64_t v = 0;
	char err[160] = "";

	if (vr_parse_size(text, &v, err, sizeof(err)) != 0)
		TEST_FAILF("'%s' rejected: %s", text, err);
	return v;
}

/* A bad size must fail with the given errno and name the bad text. */
static void size_bad(const char *text, int expect, const char *needle)
{
	uint64_t v = 12345;
	char err[160] = "";
	int rc = vr_parse_size(text, &v, err, sizeof(err));

	if (rc != expect)
		TEST_FAILF("'%s': rc %d, expected %d (%s)", text, rc, expect, err);
	ASSERT_UEQ(v, 12345);
	if (needle && !strstr(err, needle))
		TEST_FAILF("'%s': message '%s' lacks '%s'", text, err, needle);
}

static void test_sizes(void)
{
	ASSERT_UEQ(size_ok("1"), 1);
	ASSERT_UEQ(size_ok("512B"), 512);
	ASSERT_UEQ(size_ok("4G"), 4ull << 30);
	ASSERT_UEQ(size_ok("4g"), 4ull << 30);
	ASSERT_UEQ(size_ok("4GB"), 4ull << 30);
	ASSERT_UEQ(size_ok("4GiB"), 4ull << 30);
	ASSERT_UEQ(size_ok("4gib"), 4ull << 30);
	ASSERT_UEQ(size_ok("1.5G"), 3ull << 29);
	/* A fraction of a byte is never kept (#35: "1.5" was 1 B, shown so). */
	size_bad("1.5", -EINVAL, "a size in bytes must be whole (a unit is missing? '1.5G'");
	size_bad("2.25B", -EINVAL, "a size in bytes must be whole");
	ASSERT_UEQ(size_ok("1.5K"), 1536);
	ASSERT_UEQ(size_ok("0.5k"), 512);
	ASSERT_UEQ(size_ok("600MiB"), 600ull << 20);
	ASSERT_UEQ(size_ok("600 MiB"), 600ull << 20);
	ASSERT_UEQ(size_ok("2T"), 2ull << 40);
	ASSERT_UEQ(size_ok("1K"), 1024);
	ASSERT_UEQ(size_ok("1kb"), 1024);
	ASSERT_UEQ(size_ok("16777215T"), 16777215ull << 40);

	size_bad("", -EINVAL, "empty");
	size_bad("0", -EINVAL, "'0'");
	size_bad("0G", -EINVAL, "more than zero");
	size_bad("0.0000000001K", -EINVAL, "at most 9 digits after the point");
	size_bad("0.000000001B", -EINVAL, "more than zero");
	size_bad("-1G", -EINVAL, "negative");
	size_bad("4X", -EINVAL, "unknown unit 'X'");
	size_bad("4 Gibibytes", -EINVAL, "unknown unit");
	size_bad("G", -EINVAL, "not a size");
	size_bad("1e9", -EINVAL, "unknown unit 'e9'");
	size_bad("16777216T", -ERANGE, "too large");
	size_bad("99999999999999999999999", -ERANGE, "too large");
	size_bad("4G4", -EINVAL, "unknown unit");
}

static void test_limits(void)
{
	struct vr_limits l;
	char err[200];
	uint64_t cap;

	ASSERT_EQ(vr_parse_limits("4G", &l, err, sizeof(err)), 0);
	ASSERT_EQ(l.count, 1);
	ASSERT_STR_EQ(l.item[0].dev, "");
	ASSERT_UEQ(l.item[0].bytes, 4ull << 30);

	ASSERT_EQ(vr_parse_limits("0=4G,1=50%", &l, err, sizeof(err)), 0);
	ASSERT_EQ(l.count, 2);
	ASSERT_STR_EQ(l.item[0].dev, "0");
	ASSERT_STR_EQ(l.item[1].dev, "1");
	ASSERT_EQ(l.item[1].is_percent, 1);

	ASSERT_EQ(vr_limits_cap_for(&l, 0, NULL, 100ull << 30, &cap), 1);
	ASSERT_UEQ(cap, 4ull << 30);
	ASSERT_EQ(vr_limits_cap_for(&l, 1, NULL, 100ull << 30, &cap), 1);
	ASSERT_UEQ(cap, 50ull << 30);
	ASSERT_EQ(vr_limits_cap_for(&l, 2, NULL, 100ull << 30, &cap), 0);

	/* A device item wins over the item for every device. */
	ASSERT_EQ(
	    vr_parse_limits("8G,GPU-00112233-4455-6677-8899-aabbccddeeff=1G", &l, err, sizeof(err)),
	    0);
	ASSERT_EQ(
	    vr_limits_cap_for(&l, 3, "GPU-00112233-4455-6677-8899-AABBCCDDEEFF", 1ull << 40, &cap),
	    1);
	ASSERT_UEQ(cap, 1ull << 30);
	ASSERT_EQ(
	    vr_limits_cap_for(&l, 0, "GPU-ffffffff-4455-6677-8899-aabbccddeeff", 1ull << 40, &cap),
	    1);
	ASSERT_UEQ(cap, 8ull << 30);

	ASSERT_EQ(vr_parse_limits("100%", &l, err, sizeof(err)), 0);
	ASSERT_EQ(vr_limits_cap_for(&l, 0, NULL, 12345, &cap), 1);
	ASSERT_UEQ(cap, 12345);
	ASSERT_EQ(vr_parse_limits("12.5%", &l, err, sizeof(err)), 0);
	ASSERT_EQ(vr_limits_cap_for(&l, 0, NULL, 800, &cap), 1);
	ASSERT_UEQ(cap, 100);

	static const struct {
		const char *spec, *needle;
	} bad[] = {
	    {"", "empty"},
	    {"101%", "more than 100%"},
	    {"100.5%", "more than 100%"},
	    {"0%", "more than 0%"},
	    {"-5%", "negative"},
	    {"abc%", "not a percentage"},
	    {"0=4G,0=2G", "more than once"},
	    {"4G,2G", "more than once"},
	    {"4G,", "empty item"},
	    {",4G", "empty item"},
	    {"x=4G", "'x' is not a device"},
	    {"=4G", "is not a device"},
	    {"0=", "empty size"},
	    {"0=4Q", "unknown unit 'Q'"},
	    {"1=0", "'0'"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct vr_limits keep = l;

		err[0] = '\0';
		if (vr_parse_limits(bad[i].spec, &l, err, sizeof(err)) == 0)
			TEST_FAILF("'%s' accepted", bad[i].spec);
		if (!strstr(err, bad[i].needle))
			TEST_FAILF("'%s': message '%s' lacks '%s'", bad[i].spec, err,
			           bad[i].needle);
		ASSERT_EQ(memcmp(&keep, &l, sizeof(l)), 0);
	}
}

/* vr_format_amount is exact: it reads back to the same item. */
static void amount_is(uint64_t bytes, const char *expect)
{
	struct vr_limit l = {.bytes = bytes};
	struct vr_limits back;
	char buf[64];

	ASSERT_STR_EQ(vr_format_amount(&l, buf, sizeof(buf)), expect);
	ASSERT_EQ(vr_parse_limits(buf, &back, NULL, 0), 0);
	ASSERT_UEQ(back.item[0].bytes, bytes);
}

static void test_format(void)
{
	char buf[64];

	amount_is(1, "1");
	amount_is(1000, "1000");
	amount_is(1024, "1K");
	amount_is(1536ull << 20, "1536M");
	amount_is(4ull << 30, "4G");
	amount_is(3ull << 40, "3T");
	amount_is(5ull << 50, "5120T");
	amount_is(UINT64_MAX, "18446744073709551615");
	{
		struct vr_limit p = {.is_percent = 1, .percent_e9 = 12500000000ull};
		ASSERT_STR_EQ(vr_format_amount(&p, buf, sizeof(buf)), "12.5%");
	}
	/* What a launcher writes, the library reads back exactly: one grammar,
	 * one formatter. */
	{
		static const char *const pct[] = {"0.00001%",     "99.999999999%", "100%",
		                                  "0.000000001%", "12.5%",         "50%",
		                                  "33.333333333%"};
		for (size_t i = 0; i < sizeof pct / sizeof pct[0]; i++) {
			struct vr_limits l, back;
			char err[200];
			ASSERT_EQ(vr_parse_limits(pct[i], &l, err, sizeof(err)), 0);
			ASSERT_STR_EQ(vr_format_amount(&l.item[0], buf, sizeof(buf)), pct[i]);
			ASSERT_EQ(vr_parse_limits(buf, &back, err, sizeof(err)), 0);
			ASSERT_UEQ(back.item[0].percent_e9, l.item[0].percent_e9);
		}
		struct vr_limits l;
		char err[200];
		uint64_t cap;
		/* Not rounded: refused with a message. */
		ASSERT_EQ(vr_parse_limits("0.0000000001%", &l, err, sizeof(err)), -EINVAL);
		ASSERT(strstr(err, "at most 9 digits"));
		ASSERT_EQ(vr_parse_limits("1.0000000001G", &l, err, sizeof(err)), -EINVAL);
		/* Exact arithmetic: 0.00001% of 100 GiB is 10737 bytes, 99.999999999%
		 * is not the whole device. */
		ASSERT_EQ(vr_parse_limits("0.00001%", &l, err, sizeof(err)), 0);
		ASSERT_EQ(vr_limits_cap_for(&l, 0, NULL, 100ull << 30, &cap), 1);
		ASSERT_UEQ(cap, 10737);
		ASSERT_EQ(vr_parse_limits("99.999999999%", &l, err, sizeof(err)), 0);
		ASSERT_EQ(vr_limits_cap_for(&l, 0, NULL, 100ull << 30, &cap), 1);
		ASSERT_UEQ(cap, (100ull << 30) - 2);
	}
	unsigned char u[16], back[16];

	ASSERT_STR_EQ(vr_format_size(512, buf, sizeof(buf)), "512 B");
	ASSERT_STR_EQ(vr_format_size(600ull << 20, buf, sizeof(buf)), "600 MiB");
	ASSERT_STR_EQ(vr_format_size(1ull << 30, buf, sizeof(buf)), "1 GiB");
	ASSERT_STR_EQ(vr_format_size(3ull << 29, buf, sizeof(buf)), "1.5 GiB");
	ASSERT_STR_EQ(vr_format_size(UINT64_MAX, buf, sizeof(buf)), "16 EiB");
	/* Rounded to what a reader expects: the nearest tenth, ".0" dropped. */
	ASSERT_STR_EQ(vr_format_size(0, buf, sizeof(buf)), "0 B");
	ASSERT_STR_EQ(vr_format_size(1023, buf, sizeof(buf)), "1023 B");
	ASSERT_STR_EQ(vr_format_size(1024, buf, sizeof(buf)), "1 KiB");
	ASSERT_STR_EQ(vr_format_size(1500ull << 20, buf, sizeof(buf)), "1.5 GiB");
	ASSERT_STR_EQ(vr_format_size(1536ull << 20, buf, sizeof(buf)), "1.5 GiB");
	ASSERT_STR_EQ(vr_format_size(40ull << 30, buf, sizeof(buf)), "40 GiB");
	ASSERT_STR_EQ(vr_format_size(943718400, buf, sizeof(buf)), "900 MiB");
	ASSERT_STR_EQ(vr_format_size(966367641, buf, sizeof(buf)), "921.6 MiB");
	/* More digits where a message needs them (#25), trailing zeros
	 * dropped; past VR_SIZE_DIGITS_MAX the exact bytes. */
	ASSERT_STR_EQ(vr_format_size_digits(1500ull << 20, 2, buf, sizeof(buf)), "1.46 GiB");
	ASSERT_STR_EQ(vr_format_size_digits(1536ull << 20, 3, buf, sizeof(buf)), "1.5 GiB");
	ASSERT_STR_EQ(vr_format_size_digits(1ull << 30, 3, buf, sizeof(buf)), "1 GiB");
	ASSERT_STR_EQ(vr_format_size_digits(32ull << 20, 2, buf, sizeof(buf)), "32 MiB");
	ASSERT_STR_EQ(vr_format_size_digits(512, 3, buf, sizeof(buf)), "512 B");
	ASSERT_STR_EQ(
	    vr_format_size_digits((1ull << 30) + 1, VR_SIZE_DIGITS_MAX + 1, buf, sizeof(buf)),
	    "1073741825 B");
	ASSERT_STR_EQ(vr_format_size_digits((1ull << 30) + (1ull << 20), 4, buf, sizeof(buf)),
	              "1.001 GiB");
	{
		/* --limit 1500M, 1,480 MiB in use, 32 MiB denied: one decimal reads
		 * "cap 1.5 GiB, 1.4 GiB in use", which seems to fit 32 MiB. */
		const uint64_t d1[] = {1480ull << 20, 32ull << 20, 1500ull << 20};
		int dg = vr_size_digits(d1, 3, 1);
		ASSERT_EQ(dg, 2);
		ASSERT_STR_EQ(vr_format_size_digits(d1[0], dg, buf, sizeof(buf)), "1.45 GiB");
		ASSERT_STR_EQ(vr_format_size_digits(d1[2], dg, buf, sizeof(buf)), "1.46 GiB");
		/* Nothing to tell apart: one decimal, as vr_format_size. */
		const uint64_t d2[] = {600ull << 20, 600ull << 20, 1ull << 30};
		ASSERT_EQ(vr_size_digits(d2, 3, 1), 1);
		/* Equal sizes may read the same; different ones never. */
		const uint64_t d3[] = {1ull << 30, 1ull << 30, (1ull << 30) + 4096};
		ASSERT_EQ(vr_size_digits(d3, 3, 0), 6);
		const uint64_t d5[] = {1ull << 30, (1ull << 30) + 1};
		ASSERT_EQ(vr_size_digits(d5, 2, 0), VR_SIZE_DIGITS_MAX + 1);
		const uint64_t d4[] = {(1ull << 30) + (1ull << 20) + 4096, 1,
		                       (1ull << 30) + (1ull << 20) + 4096};
		ASSERT_EQ(vr_size_digits(d4, 3, 1), 1); /* equal: "1 GiB" both */
	}
	ASSERT_STR_EQ(vr_format_size((1ull << 30) - 1, buf, sizeof(buf)), "1 GiB");
	ASSERT_STR_EQ(
	    vr_format_size((1ull << 20) * 1023 + (1ull << 20) * 95 / 100, buf, sizeof(buf)),
	    "1023.9 MiB");
	ASSERT_STR_EQ(
	    vr_format_size((1ull << 20) * 1023 + (1ull << 20) * 96 / 100, buf, sizeof(buf)),
	    "1 GiB");
	/* The one UUID form, truncated to the buffer. */
	static const unsigned char w[16] = {0x11, 0x11, 0x11, 0x11, 0x22, 0x22, 0x33, 0x33,
	                                    0x44, 0x44, 0xab, 0xcd, 0xef, 0x55, 0x55, 0x55};
	ASSERT_STR_EQ(vr_format_uuid(w, buf, sizeof(buf)),
	              "GPU-11111111-2222-3333-4444-abcdef555555");
	ASSERT_STR_EQ(vr_format_uuid(w, buf, 8), "GPU-111");

	for (int i = 0; i < 16; i++)
		u[i] = (unsigned char)(i * 17);
	ASSERT_STR_EQ(vr_format_uuid(u, buf, sizeof(buf)),
	              "GPU-00112233-4455-6677-8899-aabbccddeeff");
	ASSERT_EQ(vr_parse_uuid(buf, back), 0);
	ASSERT_EQ(memcmp(u, back, 16), 0);
	ASSERT_EQ(vr_parse_uuid("GPU-00112233-4455-6677-8899-AABBCCDDEEFF", back), 0);
	ASSERT_EQ(memcmp(u, back, 16), 0);
	ASSERT_EQ(vr_parse_uuid("GPU-0011", back), -EINVAL);
	ASSERT_EQ(vr_parse_uuid("GPU-00112233-4455-6677-8899-aabbccddeeffaa", back), -EINVAL);
	ASSERT_EQ(vr_parse_uuid("GPU-zz112233-4455-6677-8899-aabbccddeeff", back), -EINVAL);
}

/* Specs compared as amounts (a joiner's "5120M" is a group's "5G"). */
static void test_same(void)
{
	ASSERT(vr_limits_same("5G", "5120M"));
	ASSERT(vr_limits_same("5G", "5368709120"));
	ASSERT(vr_limits_same("1G,1=2G", "1=2048M,1024M"));
	ASSERT(vr_limits_same("GPU-11111111-2222-3333-4444-555555555555=1G",
	                      "gpu-11111111222233334444555555555555=1024MiB"));
	ASSERT(vr_limits_same("50%", "50.0%"));
	ASSERT(!vr_limits_same("5G", "5121M"));
	ASSERT(!vr_limits_same("5G", "0=5G"));
	ASSERT(!vr_limits_same("50%", "4G"));
	ASSERT(!vr_limits_same("1G,1=2G", "1G"));
	ASSERT(!vr_limits_same("", "1G"));
	ASSERT(vr_limits_same("", ""));
	/* Not specs: their texts. */
	ASSERT(vr_limits_same("zz", "zz"));
	ASSERT(!vr_limits_same("zz", "1G"));
}

int main(void)
{
	test_same();
	test_sizes();
	test_limits();
	test_format();
	printf("size grammar: ok\n");
	return 0;
}
