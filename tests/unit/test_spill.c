/* Unit tests of the --spill grammar (src/common/spill.c). */
#include "common/spill.h"
#include "tests/test.h"

#include <errno.h>

static void bad(const char *text, int expect, const char *needle)
{
	uint64_t v = 12345;
	char err[200] = "";
	int rc = vr_parse_spill(text, &v, err, sizeof(err));
	if (rc != expect)
		TEST_FAILF("'%s': rc %d, expected %d (%s)", text ? text : "(null)", rc, expect,
		           err);
	ASSERT_UEQ(v, 12345);
	if (!strstr(err, needle))
		TEST_FAILF("'%s': message '%s' lacks '%s'", text ? text : "(null)", err, needle);
}

int main(void)
{
	uint64_t v = 1;
	char err[200];
	ASSERT_EQ(vr_parse_spill("16G", &v, err, sizeof err), 0);
	ASSERT_UEQ(v, 16ull << 30);
	ASSERT_EQ(vr_parse_spill("1.5GiB", &v, err, sizeof err), 0);
	ASSERT_UEQ(v, 3ull << 29);
	ASSERT_EQ(vr_parse_spill("0", &v, err, sizeof err), 0);
	ASSERT_UEQ(v, 0);
	v = 1;
	ASSERT_EQ(vr_parse_spill("off", &v, err, sizeof err), 0);
	ASSERT_UEQ(v, 0);
	uint64_t avail = vr_host_available();
	if (avail) {
		ASSERT_EQ(vr_parse_spill("auto", &v, err, sizeof err), 0);
		ASSERT(v > 0 && v <= avail / VR_SPILL_AUTO_SHARE + (1ull << 30));
	}
	bad("", -EINVAL, "empty");
	bad(NULL, -EINVAL, "empty");
	bad("lots", -EINVAL, "lots");
	bad("-4G", -EINVAL, "-4G");
	bad("4Q", -EINVAL, "4Q");
	bad("50%", -EINVAL, "50%");
	bad("99999999999T", -ERANGE, "99999999999T");
	printf("ok\n");
	return 0;
}
