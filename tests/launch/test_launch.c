/*
 * test_launch - the launchers' module (src/launch): LD_PRELOAD edits, the
 * contract as a launcher writes it, registry directory patterns, the spec
 * normalised against devices, the one group-name rule (the registry's words
 * are the launchers' words), and joining a group that already has other caps.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/contract.h"
#include "common/size.h"
#include "launch/launch.h"
#include "registry/registry.h"
#include "tests/test.h"

static void test_preload(void)
{
	char buf[256];

	ASSERT_EQ(vr_preload_add(NULL, "/l/v.so", buf, sizeof(buf)), 0);
	ASSERT_STR_EQ(buf, "/l/v.so");
	ASSERT_EQ(vr_preload_add("", "/l/v.so", buf, sizeof(buf)), 0);
	ASSERT_STR_EQ(buf, "/l/v.so");
	ASSERT_EQ(vr_preload_add("/a.so /b.so", "/l/v.so", buf, sizeof(buf)), 0);
	ASSERT_STR_EQ(buf, "/a.so /b.so:/l/v.so");
	ASSERT_EQ(vr_preload_add("/a.so:/l/v.so", "/l/v.so", buf, sizeof(buf)), 0);
	ASSERT_STR_EQ(buf, "/a.so:/l/v.so");
	ASSERT_EQ(vr_preload_add("/l/v.so.1", "/l/v.so", buf, sizeof(buf)), 0);
	ASSERT_STR_EQ(buf, "/l/v.so.1:/l/v.so");
	ASSERT_EQ(vr_preload_add("/a.so", "/l/v.so", buf, 8), -ENAMETOOLONG);
	ASSERT_EQ(vr_preload_add(NULL, "/my lib/v.so", buf, sizeof(buf)), -EINVAL);
	ASSERT_EQ(vr_preload_add(NULL, "/l:/v.so", buf, sizeof(buf)), -EINVAL);

	ASSERT_EQ(vr_preload_remove("/a.so:/l/v.so /b.so", "/l/v.so", buf, sizeof(buf)), 0);
	ASSERT_STR_EQ(buf, "/a.so:/b.so");
	ASSERT_EQ(vr_preload_remove("/l/v.so", "/l/v.so", buf, sizeof(buf)), 0);
	ASSERT_STR_EQ(buf, "");
	ASSERT_EQ(vr_preload_remove(NULL, "/l/v.so", buf, sizeof(buf)), 0);
	ASSERT_STR_EQ(buf, "");
	ASSERT_EQ(vr_preload_remove("/l/v.so.1", "/l/v.so", buf, sizeof(buf)), 0);
	ASSERT_STR_EQ(buf, "/l/v.so.1");
}

/* A launcher's environment, recorded: name=value lines, "-name" for unset. */
struct rec {
	char text[2048];
	const char *have; /* a variable the user set already ("NAME=value") */
};

static int record(void *ctx, const char *name, const char *value, int overwrite)
{
	struct rec *r = ctx;
	size_t n = strlen(r->text);

	if (!overwrite && r->have && !strncmp(r->have, name, strlen(name)) &&
	    r->have[strlen(name)] == '=')
		return 0;
	if (value)
		snprintf(r->text + n, sizeof(r->text) - n, "%s=%s\n", name, value);
	else
		snprintf(r->text + n, sizeof(r->text) - n, "-%s\n", name);
	return 0;
}

static void test_contract(void)
{
	struct vr_contract c = {.limit = "GPU-00000000-0000-0000-0000-000000000001=4G",
	                        .group = "job.1",
	                        .registry_dir = "/r/1000",
	                        .growth = 1,
	                        .lib = "/l/libvramctl.so",
	                        .cur_preload = "/a.so"};
	struct rec r = {.text = "", .have = "XLA_PYTHON_CLIENT_PREALLOCATE=true"};
	char err[256];

	ASSERT_EQ(vr_contract_apply(&c, record, &r, err, sizeof(err)), 0);
	/* With a limit and no spill budget, an inherited VRAMCTL_SPILL goes. */
	ASSERT_STR_EQ(r.text, "VRAMCTL_LIMIT=GPU-00000000-0000-0000-0000-000000000001=4G\n"
	                      "-VRAMCTL_SPILL\n"
	                      "-VRAMCTL_GUARANTEE\n"
	                      "-VRAMCTL_GUARANTEE_TOKEN\n"
	                      "-VRAMCTL_WAIT\n"
	                      "-VRAMCTL_PARK_IDLE\n"
	                      "-VRAMCTL_PARK_BUDGET\n"
	                      "VRAMCTL_GROUP=job.1\n"
	                      "VRAMCTL_REGISTRY_DIR=/r/1000\n"
	                      "VRAMCTL_GROWTH=1\n"
	                      "TF_FORCE_GPU_ALLOW_GROWTH=true\n"
	                      "LD_PRELOAD=/a.so:/l/libvramctl.so\n");

	/* Spill: the budget in bytes. */
	c.spill = 16ull << 30;
	c.growth = 0;
	r.text[0] = '\0';
	ASSERT_EQ(vr_contract_apply(&c, record, &r, err, sizeof(err)), 0);
	ASSERT(strstr(r.text, "VRAMCTL_SPILL=17179869184\n"));
	/* With a limit and no guarantee, an inherited VRAMCTL_GUARANTEE goes;
	 * with one, it is written. */
	ASSERT(strstr(r.text, "-VRAMCTL_GUARANTEE\n"));
	c.guarantee = "2G";
	r.text[0] = '\0';
	ASSERT_EQ(vr_contract_apply(&c, record, &r, err, sizeof(err)), 0);
	ASSERT(strstr(r.text, "VRAMCTL_GUARANTEE=2G\n"));
	/* A root launcher's token naming it in the device book (#38). */
	ASSERT(strstr(r.text, "-VRAMCTL_GUARANTEE_TOKEN\n"));
	c.token = "00000000000000aa";
	r.text[0] = '\0';
	ASSERT_EQ(vr_contract_apply(&c, record, &r, err, sizeof(err)), 0);
	ASSERT(strstr(r.text, "VRAMCTL_GUARANTEE_TOKEN=00000000000000aa\n"));
	c.guarantee = c.token = NULL;

	/* Only what was asked for (no limit: an inherited budget stays too). */
	struct vr_contract bare = {.lib = "/l/libvramctl.so"};
	r.text[0] = '\0';
	ASSERT_EQ(vr_contract_apply(&bare, record, &r, err, sizeof(err)), 0);
	ASSERT_STR_EQ(r.text, "LD_PRELOAD=/l/libvramctl.so\n");

	/* A library path ld.so cannot take: refused before anything is written. */
	bare.lib = "/my lib/libvramctl.so";
	r.text[0] = '\0';
	ASSERT_EQ(vr_contract_apply(&bare, record, &r, err, sizeof(err)), -1);
	ASSERT(strstr(err, "'/my lib/libvramctl.so'"));
	ASSERT_STR_EQ(r.text, "");

	/* Opting out: the contract and the library go, other preloads stay. */
	r.text[0] = '\0';
	ASSERT_EQ(vr_contract_undo("/l/libvramctl.so", "/a.so:/l/libvramctl.so", record, &r), 0);
	ASSERT_STR_EQ(
	    r.text, "-VRAMCTL_LIMIT\n-VRAMCTL_GROUP\n-VRAMCTL_GROWTH\n-VRAMCTL_SPILL\n"
	            "-VRAMCTL_GUARANTEE\n-VRAMCTL_GUARANTEE_TOKEN\n"
	            "-VRAMCTL_WAIT\n-VRAMCTL_PARK_IDLE\n-VRAMCTL_PARK_BUDGET\nLD_PRELOAD=/a.so\n");
	r.text[0] = '\0';
	ASSERT_EQ(vr_contract_undo("/l/libvramctl.so", "/l/libvramctl.so", record, &r), 0);
	ASSERT_STR_EQ(r.text,
	              "-VRAMCTL_LIMIT\n-VRAMCTL_GROUP\n-VRAMCTL_GROWTH\n-VRAMCTL_SPILL\n"
	              "-VRAMCTL_GUARANTEE\n-VRAMCTL_GUARANTEE_TOKEN\n"
	              "-VRAMCTL_WAIT\n-VRAMCTL_PARK_IDLE\n-VRAMCTL_PARK_BUDGET\n-LD_PRELOAD\n");
}

static void test_dir_pattern(void)
{
	char buf[128];

	ASSERT_EQ(vr_dir_pattern(VR_DEFAULT_DIR_PREFIX "%u", 1000, buf, sizeof(buf)), 0);
	ASSERT_STR_EQ(buf, "/tmp/vramctl-1000");
	ASSERT_EQ(vr_dir_pattern("/r/%u/%%/%u", 0, buf, sizeof(buf)), 0);
	ASSERT_STR_EQ(buf, "/r/0/%/0");
	ASSERT_EQ(vr_dir_pattern("/r/%x", 0, buf, sizeof(buf)), -EINVAL);
	ASSERT_EQ(vr_dir_pattern("/tmp/vramctl-%u", 1000, buf, 10), -ENAMETOOLONG);
}

static const struct vr_launch_dev devs[3] = {
    {.index = 0,
     .raw = {0x11, 0x11, 0x11, 0x11, 0x22, 0x22, 0x33, 0x33, 0x44, 0x44, 0x55, 0x55, 0x55, 0x55,
             0x55, 0x55},
     .uuid = "GPU-11111111-2222-3333-4444-555555555555",
     .total = 16ull << 30},
    {.index = 1,
     .raw = {0x66, 0x66, 0x66, 0x66, 0x77, 0x77, 0x88, 0x88, 0x99, 0x99, 0xaa, 0xaa, 0xaa, 0xaa,
             0xaa, 0xaa},
     .uuid = "GPU-66666666-7777-8888-9999-aaaaaaaaaaaa",
     .total = 8ull << 30},
    {.index = 2,
     .raw = {0xbb, 0xbb, 0xbb, 0xbb, 0xcc, 0xcc, 0xdd, 0xdd, 0xee, 0xee, 0xff, 0xff, 0xff, 0xff,
             0xff, 0xff},
     .uuid = "GPU-bbbbbbbb-cccc-dddd-eeee-ffffffffffff",
     .total = 8ull << 30},
};

static void parse(const char *spec, struct vr_limits *l)
{
	char err[256];

	if (vr_parse_limits(spec, l, err, sizeof(err)) < 0)
		TEST_FAILF("parse '%s': %s", spec, err);
}

static void test_normalise(void)
{
	struct vr_limits l;
	char out[512], err[512];

	parse("1536M,1=50%", &l);
	ASSERT_EQ(vr_launch_normalise(&l, devs, 2, "", out, sizeof(out), err, sizeof(err)), 0);
	ASSERT_STR_EQ(out, "1536M,GPU-66666666-7777-8888-9999-aaaaaaaaaaaa=50%");
	parse("MIG-11111111-2222-3333-4444-555555555555=2G", &l);
	ASSERT_EQ(vr_launch_normalise(&l, devs, 2, "", out, sizeof(out), err, sizeof(err)), 0);
	ASSERT_STR_EQ(out, "GPU-11111111-2222-3333-4444-555555555555=2G");

	parse("2=1G", &l);
	ASSERT_EQ(vr_launch_normalise(&l, devs, 2, "", out, sizeof(out), err, sizeof(err)), -1);
	ASSERT(strstr(err, "unknown device '2' (devices: 0..1;"));
	parse("0=1G,GPU-11111111-2222-3333-4444-555555555555=2G", &l);
	ASSERT_EQ(vr_launch_normalise(&l, devs, 2, "", out, sizeof(out), err, sizeof(err)), -1);
	ASSERT(strstr(err, "device 0 named twice"));
	ASSERT_EQ(vr_launch_normalise(&l, devs, 0, "", out, sizeof(out), err, sizeof(err)), -1);
	ASSERT(strstr(err, "the driver reports no device"));
	/* No driver: a cap for every device goes through, a device cannot. */
	ASSERT_EQ(
	    vr_launch_normalise(&l, NULL, -1, "no libcuda", out, sizeof(out), err, sizeof(err)),
	    -1);
	ASSERT(strstr(err, "cannot check device '0': no libcuda\nvramctl: give a cap"));
	parse("4G", &l);
	ASSERT_EQ(vr_launch_normalise(&l, NULL, -1, "x", out, sizeof(out), err, sizeof(err)), 0);
	ASSERT_STR_EQ(out, "4G");
}

/* A guarantee within the cap (issue #26): per device when the devices are
 * known (percentages of each one's total), item by item when not. */
static void test_guarantee_check(void)
{
	struct vr_limits l, g;
	char err[512];

	parse("4G", &l);
	parse("4G", &g);
	ASSERT_EQ(vr_launch_guarantee_check(&l, &g, devs, 2, err, sizeof(err)), 0);
	parse("4097M", &g);
	ASSERT_EQ(vr_launch_guarantee_check(&l, &g, devs, 2, err, sizeof(err)), -1);
	ASSERT(strstr(err, "the guarantee on GPU 0 (4.001 GiB) is above its cap (4 GiB)"));
	/* 25% of 16G is the cap exactly; of device 1 (8G) 60% is not. */
	parse("25%", &g);
	ASSERT_EQ(vr_launch_guarantee_check(&l, &g, devs, 2, err, sizeof(err)), 0);
	parse("1=60%", &g);
	ASSERT_EQ(vr_launch_guarantee_check(&l, &g, devs, 2, err, sizeof(err)), -1);
	ASSERT(strstr(err, "GPU 1 (4.8 GiB) is above its cap (4 GiB)"));
	/* A device with a guarantee and no cap. */
	parse("0=4G", &l);
	parse("1G", &g);
	ASSERT_EQ(vr_launch_guarantee_check(&l, &g, devs, 2, err, sizeof(err)), -1);
	ASSERT(strstr(err, "GPU 1 has a guarantee (1 GiB) and no cap"));
	parse("GPU-11111111-2222-3333-4444-555555555555=1G", &g);
	ASSERT_EQ(vr_launch_guarantee_check(&l, &g, devs, 2, err, sizeof(err)), 0);

	/* No device seen: item by item. */
	parse("4G", &l);
	parse("0=2G,3G", &g);
	ASSERT_EQ(vr_launch_guarantee_check(&l, &g, NULL, -1, err, sizeof(err)), 0);
	parse("5G", &g);
	ASSERT_EQ(vr_launch_guarantee_check(&l, &g, NULL, -1, err, sizeof(err)), -1);
	ASSERT_STR_EQ(err, "the guarantee 5G is above the cap there (4G)");
	parse("0=4G,1=50%", &l);
	parse("1=60%", &g);
	ASSERT_EQ(vr_launch_guarantee_check(&l, &g, NULL, -1, err, sizeof(err)), -1);
	ASSERT_STR_EQ(err, "the guarantee 1=60% is above the cap there (50%)");
	parse("1G", &g);
	ASSERT_EQ(vr_launch_guarantee_check(&l, &g, NULL, 0, err, sizeof(err)), -1);
	ASSERT_STR_EQ(err, "the guarantee 1G has no cap on every device: give it a cap too");
	/* A size beside a percentage cannot be compared without the device:
	 * the library lowers the guarantee to the cap. */
	parse("1=1G", &g);
	ASSERT_EQ(vr_launch_guarantee_check(&l, &g, NULL, -1, err, sizeof(err)), 0);
}

/* One rule, one message: what a launcher says is what the registry says. */
static void test_group_names(const char *dir)
{
	static const char *const bad[] = {
	    ".x",
	    "",
	    "a/b",
	    "../evil",
	    "sp ace",
	    "é",
	    "a123456789b123456789c123456789d123456789e123456789f123456789g1234"};
	char mine[256], theirs[256];

	ASSERT_EQ(vr_group_name_check("run-1067-5df5a3a6", mine, sizeof(mine)), 0);
	ASSERT_EQ(vr_group_name_check("a.b_c-D9", NULL, 0), 0);
	ASSERT_EQ(vr_group_name_check(
	              "a123456789b123456789c123456789d123456789e123456789f123456789g123", NULL, 0),
	          0); /* 64 characters */
	ASSERT_EQ(vr_group_name_check(NULL, mine, sizeof(mine)), -EINVAL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct vr_join_opts o = {.dir = dir, .group = bad[i], .limit_spec = "1G"};
		vr_member *m = NULL;

		ASSERT_EQ(vr_group_name_check(bad[i], mine, sizeof(mine)), -EINVAL);
		ASSERT(strstr(mine, "bad group name"));
		ASSERT_EQ(vr_join(&o, &m, NULL, theirs, sizeof(theirs)), -EINVAL);
		ASSERT_STR_EQ(theirs, mine);
		ASSERT_EQ(vr_group_remove(dir, bad[i]), -EINVAL);
	}
	for (int c = 1; c < 256; c++) {
		char name[3] = {'g', (char)c, '\0'};

		ASSERT_EQ(vr_group_name_check(name, NULL, 0) == 0, vr_group_name_char(c));
	}
}

static void test_join(const char *dir)
{
	struct vr_limits first, second;
	struct vr_launch_group a, b;
	char err[256];

	parse("GPU-11111111-2222-3333-4444-555555555555=1G", &first);
	struct vr_launch_join j = {.dir = dir,
	                           .group = "shared",
	                           .spec = "GPU-11111111-2222-3333-4444-555555555555=1G",
	                           .limits = &first,
	                           .devs = devs,
	                           .ndev = 2};
	ASSERT_EQ(vr_launch_join(&j, &a, err, sizeof(err)), 0);
	ASSERT_EQ(a.differs, 0);
	ASSERT_STR_EQ(a.notes, "");
	ASSERT_STR_EQ(a.spec, j.spec);
	ASSERT_UEQ(a.cap[0], 1ull << 30);
	ASSERT_UEQ(a.cap[1], UINT64_MAX);

	/* A cap asked for is never lost (issue 29): a second member asking for
	 * a cap on device 1, which the first member left uncapped, is refused. */
	struct vr_limits every;
	parse("2G", &every);
	j.spec = "2G";
	j.limits = &every;
	ASSERT_EQ(vr_launch_join(&j, &b, err, sizeof(err)), -1);
	ASSERT(strstr(err, "leaves GPU 1 uncapped and this run asks for a cap of 2 GiB there"));
	ASSERT(b.member == NULL);

	/* A second member asking for another cap gets the group's, and says so
	 * once per device that differs. */
	parse("0=2G", &second);
	j.spec = "0=2G";
	j.limits = &second;
	ASSERT_EQ(vr_launch_join(&j, &b, err, sizeof(err)), 0);
	ASSERT_EQ(b.differs, 1);
	ASSERT_STR_EQ(b.spec, "GPU-11111111-2222-3333-4444-555555555555=1G");
	ASSERT_UEQ(b.asked[0], 2ull << 30);
	ASSERT_UEQ(b.cap[0], 1ull << 30);
	ASSERT_UEQ(b.cap[1], UINT64_MAX); /* uncapped by both */
	ASSERT_STR_EQ(b.notes, "vramctl: group 'shared' already has a different cap on GPU 0: 1 "
	                       "GiB, not 2 GiB; the group's cap applies\n");
	vr_leave(b.member);
	/* Run with CUDA_VISIBLE_DEVICES, its GPU 0 is not the GPU 0 that status
	 * and nvidia-smi show (physical GPU 1, say): the line names its UUID. */
	setenv("CUDA_VISIBLE_DEVICES", "1", 1);
	ASSERT_EQ(vr_launch_join(&j, &b, err, sizeof(err)), 0);
	unsetenv("CUDA_VISIBLE_DEVICES");
	ASSERT_STR_EQ(b.notes, "vramctl: group 'shared' already has a different cap on GPU 0 "
	                       "(GPU-11111111-2222-3333-4444-555555555555): 1 GiB, not 2 GiB; the "
	                       "group's cap applies\n");
	vr_leave(b.member);

	/* The spill budget is the group's too: a member asking another is told. */
	j.spill = 8ull << 30;
	ASSERT_EQ(vr_launch_join(&j, &b, err, sizeof(err)), 0);
	ASSERT_UEQ(a.spill, 0);
	ASSERT_UEQ(b.spill, 0);
	ASSERT(strstr(b.notes, "vramctl: group 'shared' already has a different spill budget: "
	                       "none, not 8 GiB; the group's applies\n"));
	vr_leave(b.member);
	j.spill = 0;

	/* Without devices, the group's spec is named. */
	j.ndev = 0;
	ASSERT_EQ(vr_launch_join(&j, &b, err, sizeof(err)), 0);
	ASSERT_EQ(b.differs, 1);
	ASSERT_STR_EQ(b.notes, "vramctl: group 'shared' was created with the cap "
	                       "'GPU-11111111-2222-3333-4444-555555555555=1G', not '0=2G'; the "
	                       "group's cap applies\n");
	vr_leave(b.member);

	/* A group whose spec is longer than its region keeps (three UUID items
	 * are): the children get the caps in force, never a cut text (which
	 * the library would refuse as malformed, failing closed). */
	struct vr_limits three, other;
	const char *long_spec = "GPU-11111111-2222-3333-4444-555555555555=1G,"
	                        "GPU-66666666-7777-8888-9999-aaaaaaaaaaaa=1536M,"
	                        "GPU-bbbbbbbb-cccc-dddd-eeee-ffffffffffff=512M";
	struct vr_launch_group c, d;
	parse(long_spec, &three);
	parse("2G", &other);
	struct vr_launch_join k = {.dir = dir,
	                           .group = "long",
	                           .spec = long_spec,
	                           .limits = &three,
	                           .devs = devs,
	                           .ndev = 3};
	k.spill = 1ull << 30; /* a fresh group takes the budget asked */
	ASSERT_EQ(vr_launch_join(&k, &c, err, sizeof(err)), 0);
	ASSERT_UEQ(c.spill, 1ull << 30);
	ASSERT_EQ(c.differs, 0);
	ASSERT_STR_EQ(c.spec, long_spec);
	k.spec = "2G";
	k.limits = &other;
	ASSERT_EQ(vr_launch_join(&k, &d, err, sizeof(err)), 0);
	ASSERT_EQ(d.differs, 1);
	ASSERT_STR_EQ(d.spec, long_spec);
	struct vr_limits back;
	ASSERT_EQ(vr_parse_limits(d.spec, &back, err, sizeof(err)), 0);
	vr_leave(d.member);
	vr_leave(c.member);

	/* A fresh run's group that is in use: refused, no membership. */
	j.fresh = 1;
	ASSERT_EQ(vr_launch_join(&j, &b, err, sizeof(err)), -1);
	ASSERT(strstr(err, "cannot join group 'shared': group shared is in use"));
	ASSERT(b.member == NULL);
	vr_leave(a.member);
}

/* A relative VRAMCTL_REGISTRY_DIR is refused (issue #25), by the check and
 * by a join with the default directory; absolute, unset or empty pass. */
static void test_registry_env(void)
{
	struct vr_limits l;
	struct vr_launch_group g;
	char err[256];
	const char *saved = getenv(VR_ENV_REGISTRY_DIR);
	char keep[512] = "";

	if (saved)
		snprintf(keep, sizeof keep, "%s", saved);
	setenv(VR_ENV_REGISTRY_DIR, "rel", 1);
	ASSERT_EQ(vr_launch_registry_env(err, sizeof err), -1);
	if (!strstr(err, "VRAMCTL_REGISTRY_DIR=rel is not an absolute path"))
		TEST_FAILF("message: %s", err);
	parse("1G", &l);
	struct vr_launch_join j = {.group = "rel", .spec = "1G", .limits = &l, .devs = devs};
	ASSERT_EQ(vr_launch_join(&j, &g, err, sizeof err), -1);
	if (!strstr(err, "not an absolute path"))
		TEST_FAILF("join's message: %s", err);
	setenv(VR_ENV_REGISTRY_DIR, "/abs", 1);
	ASSERT_EQ(vr_launch_registry_env(err, sizeof err), 0);
	setenv(VR_ENV_REGISTRY_DIR, "", 1);
	ASSERT_EQ(vr_launch_registry_env(err, sizeof err), 0);
	unsetenv(VR_ENV_REGISTRY_DIR);
	ASSERT_EQ(vr_launch_registry_env(err, sizeof err), 0);
	if (saved)
		setenv(VR_ENV_REGISTRY_DIR, keep, 1);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	char path[512];

	snprintf(path, sizeof(path), "%s/registry-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(path))
		TEST_FAILF("mkdtemp %s: %s", path, strerror(errno));
	test_preload();
	test_contract();
	test_dir_pattern();
	test_normalise();
	test_guarantee_check();
	test_group_names(path);
	test_join(path);
	test_registry_env();
	printf("ok\n");
	return 0;
}
