/*
 * test_duration.c - the time grammar of --wait and --park-idle
 * (common/duration.h): seconds by default, ms/s/m/h, decimals, the bounds,
 * and the messages; the way times are written back.
 */
#include <errno.h>
#include <string.h>

#include "common/duration.h"
#include "tests/test.h"

static uint64_t ok(const char *t)
{
	uint64_t ms = 7;
	char err[128] = "";
	int rc = vr_parse_duration(t, 0, &ms, err, sizeof err);
	if (rc != 0)
		TEST_FAILF("'%s': %d %s", t, rc, err);
	return ms;
}

static void bad(const char *t, int want, const char *says)
{
	uint64_t ms = 7;
	char err[128] = "";
	ASSERT_EQ(vr_parse_duration(t, 0, &ms, err, sizeof err), want);
	ASSERT_UEQ(ms, 7);
	if (!strstr(err, says))
		TEST_FAILF("'%s': message '%s' lacks '%s'", t, err, says);
}

static void shows(uint64_t ms, const char *want)
{
	char b[32];
	vr_format_duration(ms, b, sizeof b);
	if (strcmp(b, want))
		TEST_FAILF("%llu ms shown as '%s', not '%s'", (unsigned long long)ms, b, want);
}

int main(void)
{
	ASSERT_UEQ(ok("30"), 30000);
	ASSERT_UEQ(ok("30s"), 30000);
	ASSERT_UEQ(ok("2m"), 120000);
	ASSERT_UEQ(ok("2min"), 120000);
	ASSERT_UEQ(ok("1.5h"), 5400000);
	ASSERT_UEQ(ok("250ms"), 250);
	ASSERT_UEQ(ok("0.25"), 250);
	ASSERT_UEQ(ok("1.500"), 1500);
	ASSERT_UEQ(ok("168h"), VR_DURATION_MAX_MS);
	bad("", -EINVAL, "empty");
	bad("s", -EINVAL, "bad time 's'");
	bad("10x", -EINVAL, "bad time '10x'");
	bad("-1", -EINVAL, "bad time");
	bad("1.2345", -EINVAL, "3 digits");
	bad("0", -EINVAL, "zero");
	bad("169h", -ERANGE, "week");
	bad("99999999999999999999", -ERANGE, "week");
	uint64_t ms = 7;
	ASSERT_EQ(vr_parse_duration("0", 1, &ms, NULL, 0), 0);
	ASSERT_UEQ(ms, 0);
	shows(250, "250 ms");
	shows(1500, "1.5 s");
	shows(1049, "1 s");
	shows(1050, "1.1 s");
	shows(59990, "60 s");
	shows(30000, "30 s");
	shows(90000, "90 s");
	shows(120000, "2 min");
	shows(5400000, "1 h 30 min");
	shows(7200000, "2 h");
	printf("ok\n");
	return 0;
}
