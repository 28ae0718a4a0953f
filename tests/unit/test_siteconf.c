/* Unit tests of the admin configuration file's parser and the maximum
 * (src/common/siteconf.c): the format is strict, every file's enforced
 * maximum applies, and a second file only ever tightens. */
#include "common/siteconf.h"
#include "tests/test.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define GIB (1ull << 30)

static void parse_ok(const char *text, struct vr_siteconf *c)
{
	char err[512] = "";

	if (vr_siteconf_parse(text, strlen(text), c, err, sizeof err) != 0)
		TEST_FAILF("'%s' rejected: %s", text, err);
}

static void parse_bad(const char *text, const char *needle)
{
	struct vr_siteconf c;
	char err[512] = "";

	if (vr_siteconf_parse(text, strlen(text), &c, err, sizeof err) != -EINVAL)
		TEST_FAILF("'%s' accepted", text);
	if (!strstr(err, needle))
		TEST_FAILF("'%s': message '%s' lacks '%s'", text, err, needle);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ASSERT(f);
	fputs(text, f);
	fclose(f);
}

int main(void)
{
	struct vr_siteconf c;
	struct vr_site site;
	uint64_t max = 0;
	char path[512];

	/* Comments, blanks, spaces around '=' and at the ends. */
	parse_ok("# site\n\n  default_limit = 8G  \nmax_limit=40G\r\nallow_above_max = no\n"
	         "registry_dir = /run/vramctl/%u\nexport_listen = 0.0.0.0:9401",
	         &c);
	ASSERT_STR_EQ(c.default_limit, "8G");
	ASSERT_STR_EQ(c.max_limit, "40G");
	ASSERT_EQ(c.max.count, 1);
	ASSERT_EQ(c.allow_above_max, 0);
	ASSERT_STR_EQ(c.registry_dir, "/run/vramctl/%u");
	ASSERT_STR_EQ(c.export_listen, "0.0.0.0:9401");
	parse_ok("", &c);
	ASSERT_EQ(c.allow_above_max, -1);
	ASSERT_EQ(c.max.count, 0);
	parse_ok("max_limit = GPU-fd315375-11e4-4c80-8d70-78d01a0b326e=4G,50%\n", &c);
	ASSERT_EQ(c.max.count, 2);

	/* Strict: each mistake names its line. */
	parse_bad("colour = blue\n", "1: unknown key 'colour'");
	parse_bad("# ok\nmax_limit\n", "2: expected 'key = value'");
	parse_bad("max_limit =\n", "1: max_limit has no value");
	parse_bad("max_limit = 4G\nmax_limit = 8G\n", "2: max_limit is given twice");
	parse_bad("allow_above_max = yes\nallow_above_max = no\n", "given twice");
	parse_bad("max_limit = lots\n", "1: max_limit:");
	parse_bad("default_limit = 0\n", "1: default_limit:");
	parse_bad("max_limit = 0=4G\n", "name devices by UUID");
	parse_bad("allow_above_max = maybe\n", "expected yes or no");
	parse_bad("registry_dir = relative/%u\n", "absolute path");
	parse_bad("registry_dir = /x/%d\n", "absolute path");
	parse_bad("export_listen = 9401\n", "ADDR:PORT");
	parse_bad("max_limit = 4G # a comment\n", "max_limit:");
	{
		char nul[] = "max_limit = 4G\0x\n";

		if (vr_siteconf_parse(nul, sizeof nul - 1, &c, path, sizeof path) != -EINVAL ||
		    !strstr(path, "NUL"))
			TEST_FAILF("a NUL byte accepted: %s", path);
	}

	/* The maximum: the smallest enforced one of every file. */
	memset(&site, 0, sizeof site);
	site.nfiles = 2;
	parse_ok("max_limit = 8G\n", &site.file[0]);
	parse_ok("max_limit = 4G,GPU-fd315375-11e4-4c80-8d70-78d01a0b326e=16G\n", &site.file[1]);
	ASSERT(vr_site_has_max(&site));
	ASSERT_EQ(
	    vr_site_max_for(&site, 0, "GPU-00000000-0000-0000-0000-000000000000", 80 * GIB, &max),
	    1);
	ASSERT_UEQ(max, 4 * GIB);
	/* The second file's 16G for this GPU cannot loosen the first file's 8G. */
	ASSERT_EQ(
	    vr_site_max_for(&site, 1, "GPU-fd315375-11e4-4c80-8d70-78d01a0b326e", 80 * GIB, &max),
	    1);
	ASSERT_UEQ(max, 8 * GIB);
	/* allow_above_max = yes makes a file's maximum advisory. */
	parse_ok("max_limit = 50%\nallow_above_max = yes\n", &site.file[0]);
	parse_ok("", &site.file[1]);
	ASSERT(!vr_site_has_max(&site));
	ASSERT_EQ(vr_site_max_for(&site, 0, NULL, 80 * GIB, &max), 0);
	parse_ok("max_limit = 50%\n", &site.file[0]);
	ASSERT_EQ(vr_site_max_for(&site, 0, NULL, 80 * GIB, &max), 1);
	ASSERT_UEQ(max, 40 * GIB);
	/* Text keys: the first file that sets one. */
	parse_ok("registry_dir = /a/%u\n", &site.file[0]);
	parse_ok("registry_dir = /b/%u\ndefault_limit = 2G\n", &site.file[1]);
	ASSERT_STR_EQ(VR_SITE_TEXT_OF(&site, registry_dir), "/a/%u");
	ASSERT_STR_EQ(VR_SITE_TEXT_OF(&site, default_limit), "2G");
	ASSERT(VR_SITE_TEXT_OF(&site, export_listen) == NULL);

	/* Loading: VRAMCTL_CONFIG names a second file; a bad one says where. */
	snprintf(path, sizeof path, "%s/extra.conf", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	write_file(path, "max_limit = 2G\n");
	setenv(VR_ENV_CONFIG, path, 1);
	ASSERT_EQ(vr_site_load(&site), 0);
	ASSERT(vr_site_has_max(&site));
	write_file(path, "max_limit = 2G\nbogus = 1\n");
	ASSERT_EQ(vr_site_load(&site), -1);
	ASSERT(site.bad);
	if (!strstr(site.err, path) || !strstr(site.err, ":2: unknown key 'bogus'"))
		TEST_FAILF("message: %s", site.err);
	write_file(path, "");
	ASSERT_EQ(vr_site_load(&site), 0);
	unlink(path);
	/* A missing file that VRAMCTL_CONFIG names is an error (it was asked
	 * for, and may have held a maximum: fail closed); an empty name reads
	 * none, and a missing admin file is no error. */
	ASSERT_EQ(vr_site_load(&site), -1);
	ASSERT(site.bad);
	if (!strstr(site.err, path) || !strstr(site.err, "No such file or directory") ||
	    !strstr(site.err, "named in VRAMCTL_CONFIG"))
		TEST_FAILF("message: %s", site.err);
	setenv(VR_ENV_CONFIG, "", 1);
	ASSERT_EQ(vr_site_load(&site), 0);
	ASSERT_EQ(vr_site_load_from(&site, "/nonexistent/vramctl.conf", NULL), 0);
	/* A FIFO is refused at once, never waited on. */
	snprintf(path, sizeof path, "%s/fifo.conf", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	ASSERT_EQ(mkfifo(path, 0600), 0);
	setenv(VR_ENV_CONFIG, path, 1);
	ASSERT_EQ(vr_site_load(&site), -1);
	if (!strstr(site.err, "not a regular file"))
		TEST_FAILF("message: %s", site.err);
	unlink(path);
	setenv(VR_ENV_CONFIG, "/", 1);
	ASSERT_EQ(vr_site_load(&site), -1);
	if (!strstr(site.err, "not a regular file"))
		TEST_FAILF("message: %s", site.err);
	/* The admin file: root's, not writable by group or others. */
	write_file(path, "max_limit = 2G\n");
	chmod(path, 0644);
	if (geteuid() == 0) {
		ASSERT_EQ(vr_site_load_from(&site, path, NULL), 0);
		ASSERT(vr_site_has_max(&site));
		chmod(path, 0664);
		ASSERT_EQ(vr_site_load_from(&site, path, NULL), -1);
		if (!strstr(site.err, "must be owned by root"))
			TEST_FAILF("message: %s", site.err);
		chmod(path, 0644);
		ASSERT_EQ(chown(path, 65534, 65534), 0);
		ASSERT_EQ(vr_site_load_from(&site, path, NULL), -1);
		/* As a second file, anyone's own file is read: it can only tighten. */
		ASSERT_EQ(vr_site_load_from(&site, "/nonexistent/vramctl.conf", path), 0);
		ASSERT(vr_site_has_max(&site));
	} else {
		/* Not root: a file of ours is never an admin file. */
		ASSERT_EQ(vr_site_load_from(&site, path, NULL), -1);
		if (!strstr(site.err, "must be owned by root"))
			TEST_FAILF("message: %s", site.err);
	}
	unlink(path);
	printf("ok\n");
	return 0;
}
