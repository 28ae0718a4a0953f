/* Unit tests of HAMi's contract as vramctl reads it (src/common/hami.c). */
#include "common/hami.h"
#include "tests/test.h"

#include <errno.h>

static uint64_t size_ok(const char *text)
{
	uint64_t v = 0;
	char err[160] = "";

	if (vr_hami_size(text, &v, err, sizeof(err)) != 0)
		TEST_FAILF("'%s' rejected: %s", text, err);
	return v;
}

static void size_bad(const char *text, int expect)
{
	uint64_t v = 12345;
	char err[160] = "";
	int rc = vr_hami_size(text, &v, err, sizeof(err));

	if (rc != expect)
		TEST_FAILF("'%s': rc %d, expected %d (%s)", text, rc, expect, err);
	ASSERT_UEQ(v, 12345);
	if (!strstr(err, text))
		TEST_FAILF("'%s': message '%s' does not name it", text, err);
}

static void test_sizes(void)
{
	/* The forms HAMi's documentation allows, all 1 GiB. */
	ASSERT_UEQ(size_ok("1g"), 1ull << 30);
	ASSERT_UEQ(size_ok("1G"), 1ull << 30);
	ASSERT_UEQ(size_ok("1024m"), 1ull << 30);
	ASSERT_UEQ(size_ok("1024M"), 1ull << 30);
	ASSERT_UEQ(size_ok("1048576k"), 1ull << 30);
	ASSERT_UEQ(size_ok("1073741824"), 1ull << 30);
	ASSERT_UEQ(size_ok("3000m"), 3000ull << 20); /* what the device plugin writes */
	ASSERT_UEQ(size_ok("1"), 1);
	ASSERT_UEQ(size_ok("17179869183g"), 17179869183ull << 30);
	ASSERT_UEQ(size_ok("18446744073709551615"), UINT64_MAX);

	size_bad("", -EINVAL);
	size_bad("0", -EINVAL);
	size_bad("0m", -EINVAL);
	size_bad("-1g", -EINVAL);
	size_bad("+1g", -EINVAL);
	size_bad(" 1g", -EINVAL);
	size_bad("1g ", -EINVAL);
	size_bad("1.5g", -EINVAL);
	size_bad("1gb", -EINVAL);
	size_bad("1GiB", -EINVAL);
	size_bad("1t", -EINVAL);
	size_bad("1b", -EINVAL);
	size_bad("g", -EINVAL);
	size_bad("0x10", -EINVAL);
	size_bad("1e9", -EINVAL);
	size_bad("17179869184g", -ERANGE);
	size_bad("18446744073709551616", -ERANGE);
	size_bad("99999999999999999999999m", -ERANGE);
}

static int read_env(const char *const *env, struct vr_hami *h, char *err, size_t errlen)
{
	char warn[600] = "";
	return vr_hami_read(env, h, err, errlen, warn, sizeof warn);
}

static void read_bad(const char *const *env, const char *needle)
{
	struct vr_hami h;
	char err[300] = "";
	int rc = read_env(env, &h, err, sizeof err);

	if (rc != -EINVAL)
		TEST_FAILF("%s: rc %d, expected -EINVAL", env[0], rc);
	if (!strstr(err, needle))
		TEST_FAILF("%s: message '%s' lacks '%s'", env[0], err, needle);
}

static void test_env(void)
{
	struct vr_hami h;
	char err[300] = "", warn[600] = "";

	/* Exactly what HAMi's device plugin sets for a one-GPU container. */
	const char *plugin[] = {"PATH=/usr/bin",
	                        "CUDA_DEVICE_MEMORY_LIMIT_0=3000m",
	                        "CUDA_DEVICE_SM_LIMIT=0",
	                        "CUDA_DEVICE_MEMORY_SHARED_CACHE=/usr/local/vgpu/"
	                        "0d3b5c1e-2f1a-4b7c-9e8d-123456789abc.cache",
	                        "NVIDIA_VISIBLE_DEVICES=GPU-1",
	                        NULL};
	ASSERT_EQ(read_env(plugin, &h, err, sizeof err), 0);
	ASSERT_EQ(h.present, 1);
	ASSERT_EQ(h.disabled, 0);
	ASSERT_STR_EQ(h.limit, "0=3145728000");
	ASSERT_STR_EQ(h.group, "hami-0d3b5c1e-2f1a-4b7c-9e8d-123456789abc");
	ASSERT_STR_EQ(h.dir, "/usr/local/vgpu/vramctl");
	ASSERT_EQ(h.log_level, -1);

	/* Every device, per-device items after it (they win in vramctl's grammar). */
	const char *both[] = {"CUDA_DEVICE_MEMORY_LIMIT_1=2g", "CUDA_DEVICE_MEMORY_LIMIT=1g",
	                      "CUDA_DEVICE_MEMORY_LIMIT_10=1048576k", "LIBCUDA_LOG_LEVEL=4", NULL};
	ASSERT_EQ(read_env(both, &h, err, sizeof err), 0);
	ASSERT_STR_EQ(h.limit, "1073741824,1=2147483648,10=1073741824");
	ASSERT_STR_EQ(h.group, "");
	ASSERT_STR_EQ(h.dir, "");
	ASSERT_EQ(h.log_level, 4);

	/* Log levels: 0 errors only, 1 and 2 warnings, 3 info, 4+ debug. */
	const char *log0[] = {"LIBCUDA_LOG_LEVEL=0", NULL};
	ASSERT_EQ(read_env(log0, &h, err, sizeof err), 0);
	ASSERT_EQ(h.log_level, 1);
	ASSERT_EQ(h.present, 0);
	const char *log3[] = {"LIBCUDA_LOG_LEVEL=3", NULL};
	ASSERT_EQ(read_env(log3, &h, err, sizeof err), 0);
	ASSERT_EQ(h.log_level, 3);
	const char *logbad[] = {"LIBCUDA_LOG_LEVEL=loud", NULL};
	ASSERT_EQ(vr_hami_read(logbad, &h, err, sizeof err, warn, sizeof warn), 0);
	ASSERT_EQ(h.log_level, -1);
	ASSERT(strstr(warn, "LIBCUDA_LOG_LEVEL=loud") != NULL);

	/* CUDA_DISABLE_CONTROL=true (Go's ParseBool): HAMi's contract is off. */
	const char *off[] = {"CUDA_DEVICE_MEMORY_LIMIT_0=1g", "CUDA_DISABLE_CONTROL=true", NULL};
	ASSERT_EQ(read_env(off, &h, err, sizeof err), 0);
	ASSERT_EQ(h.disabled, 1);
	ASSERT_EQ(h.present, 0);
	ASSERT_STR_EQ(h.limit, "");
	const char *off1[] = {"CUDA_DISABLE_CONTROL=1", "CUDA_DEVICE_MEMORY_LIMIT=bad", NULL};
	ASSERT_EQ(read_env(off1, &h, err, sizeof err), 0);
	ASSERT_EQ(h.disabled, 1);
	const char *on[] = {"CUDA_DISABLE_CONTROL=false", "CUDA_DEVICE_MEMORY_LIMIT=1g", NULL};
	ASSERT_EQ(read_env(on, &h, err, sizeof err), 0);
	ASSERT_EQ(h.disabled, 0);
	ASSERT_STR_EQ(h.limit, "1073741824");
	const char *odd[] = {"CUDA_DISABLE_CONTROL=yes", "CUDA_DEVICE_MEMORY_LIMIT=1g", NULL};
	ASSERT_EQ(read_env(odd, &h, err, sizeof err), 0);
	ASSERT_EQ(h.disabled, 0); /* "yes" is not true for HAMi's plugin either */

	/* Empty values are unset; nothing HAMi-like, nothing present. */
	const char *empty[] = {"CUDA_DEVICE_MEMORY_LIMIT=", "CUDA_DEVICE_MEMORY_LIMITS=1g", NULL};
	ASSERT_EQ(read_env(empty, &h, err, sizeof err), 0);
	ASSERT_EQ(h.present, 0);
	ASSERT_STR_EQ(h.limit, "");
	ASSERT_EQ(read_env(NULL, &h, err, sizeof err), 0);
	ASSERT_EQ(h.present, 0);

	/* A shared cache path that cannot name a group: warned, defaults kept. */
	const char *cache[] = {"CUDA_DEVICE_MEMORY_SHARED_CACHE=relative.cache",
	                       "CUDA_DEVICE_MEMORY_LIMIT=1g", NULL};
	warn[0] = '\0';
	ASSERT_EQ(vr_hami_read(cache, &h, err, sizeof err, warn, sizeof warn), 0);
	ASSERT_STR_EQ(h.group, "");
	ASSERT(strstr(warn, "relative.cache") != NULL);
	const char *cache2[] = {"CUDA_DEVICE_MEMORY_SHARED_CACHE=/x/a b.cache", NULL};
	ASSERT_EQ(read_env(cache2, &h, err, sizeof err), 0);
	ASSERT_STR_EQ(h.group, "");
	const char *cache3[] = {"CUDA_DEVICE_MEMORY_SHARED_CACHE=/x/plain", NULL};
	ASSERT_EQ(read_env(cache3, &h, err, sizeof err), 0);
	ASSERT_STR_EQ(h.group, "hami-plain");
	ASSERT_STR_EQ(h.dir, "/x/vramctl");

	/* Malformed caps: the caller fails closed, with the variable named. */
	const char *b1[] = {"CUDA_DEVICE_MEMORY_LIMIT_0=3000MB", NULL};
	read_bad(b1, "CUDA_DEVICE_MEMORY_LIMIT_0: '3000MB'");
	const char *b2[] = {"CUDA_DEVICE_MEMORY_LIMIT=0", NULL};
	read_bad(b2, "CUDA_DEVICE_MEMORY_LIMIT: '0'");
	const char *b3[] = {"CUDA_DEVICE_MEMORY_LIMIT_X=1g", NULL};
	read_bad(b3, "CUDA_DEVICE_MEMORY_LIMIT_X: not a device index");
	const char *b4[] = {"CUDA_DEVICE_MEMORY_LIMIT_64=1g", NULL};
	read_bad(b4, "CUDA_DEVICE_MEMORY_LIMIT_64");
	const char *b5[] = {"CUDA_DEVICE_MEMORY_LIMIT_01=1g", NULL};
	read_bad(b5, "CUDA_DEVICE_MEMORY_LIMIT_01");
	const char *b6[] = {"CUDA_DEVICE_MEMORY_LIMIT_0=1g", "CUDA_DEVICE_MEMORY_LIMIT_0=2g", NULL};
	read_bad(b6, "set twice");
	const char *b7[] = {"CUDA_DEVICE_MEMORY_LIMIT_=1g", NULL};
	read_bad(b7, "not a device index");
}

int main(void)
{
	test_sizes();
	test_env();
	printf("HAMi contract: ok\n");
	return 0;
}
