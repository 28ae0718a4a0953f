/*
 * test_policy - the Slurm plugin's decisions, without Slurm: its arguments,
 * the submit-side check, which cap a step gets (user, shards, default, none),
 * and group names (one rule with the registry).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/spill.h"
#include "slurm/policy.h"
#include "tests/test.h"

static struct vr_slurm_conf conf_of(const char *a, const char *b, const char *c)
{
	char *argv[3];
	int argc = 0;
	struct vr_slurm_conf conf;
	char err[256];
	static char s[3][256];

	if (a)
		argv[argc] = strcpy(s[argc], a), argc++;
	if (b)
		argv[argc] = strcpy(s[argc], b), argc++;
	if (c)
		argv[argc] = strcpy(s[argc], c), argc++;
	if (vr_slurm_parse_args(argc, argv, &conf, err, sizeof(err))) {
		fprintf(stderr, "unexpected: %s\n", err);
		memset(&conf, 0, sizeof(conf));
	}
	return conf;
}

static void test_args(void)
{
	struct vr_slurm_conf c;
	char err[256];
	char *bad[] = {(char *)"lib=relative.so"};
	char *bad2[] = {(char *)"bytes_per_shard=0"};
	char *bad3[] = {(char *)"colour=blue"};
	char *bad4[] = {(char *)"default=12Q"};
	char *bad5[] = {(char *)"allow_optout=maybe"};
	char *bad6[] = {(char *)"registry_dir=/x/%d"};
	char *bad7[] = {(char *)"lib"};
	/* Relative: a group would split by the working directory of each task. */
	char *bad8[] = {(char *)"registry_dir=reg/%u"};

	/* Defaults with no arguments. */
	ASSERT_EQ(vr_slurm_parse_args(0, NULL, &c, err, sizeof(err)), 0);
	ASSERT_STR_EQ(c.lib, VR_SLURM_DEFAULT_LIB);
	ASSERT_STR_EQ(c.registry_dir, VR_SLURM_DEFAULT_DIR);
	ASSERT_EQ(c.allow_optout, 1);
	ASSERT_UEQ(c.bytes_per_shard, 0);
	ASSERT_STR_EQ(c.default_spec, "");

	c = conf_of("lib=/opt/v/libvramctl.so", "bytes_per_shard=2G", "allow_optout=no");
	ASSERT_STR_EQ(c.lib, "/opt/v/libvramctl.so");
	ASSERT_UEQ(c.bytes_per_shard, 2ull << 30);
	ASSERT_EQ(c.allow_optout, 0);

	ASSERT_EQ(vr_slurm_parse_args(1, bad, &c, err, sizeof(err)), -EINVAL);
	ASSERT(strstr(err, "relative.so"));
	ASSERT_EQ(vr_slurm_parse_args(1, bad2, &c, err, sizeof(err)), -EINVAL);
	ASSERT(strstr(err, "bytes_per_shard=0"));
	ASSERT_EQ(vr_slurm_parse_args(1, bad3, &c, err, sizeof(err)), -EINVAL);
	ASSERT(strstr(err, "colour=blue"));
	ASSERT_EQ(vr_slurm_parse_args(1, bad4, &c, err, sizeof(err)), -EINVAL);
	ASSERT(strstr(err, "12Q"));
	ASSERT_EQ(vr_slurm_parse_args(1, bad5, &c, err, sizeof(err)), -EINVAL);
	ASSERT_EQ(vr_slurm_parse_args(1, bad6, &c, err, sizeof(err)), -EINVAL);
	ASSERT_EQ(vr_slurm_parse_args(1, bad7, &c, err, sizeof(err)), -EINVAL);
	ASSERT_EQ(vr_slurm_parse_args(1, bad8, &c, err, sizeof(err)), -EINVAL);
	ASSERT(strstr(err, "absolute"));
}

static void test_check_value(void)
{
	struct vr_slurm_conf yes = conf_of(NULL, NULL, NULL);
	struct vr_slurm_conf no = conf_of("allow_optout=no", NULL, NULL);
	char err[256];

	ASSERT_EQ(vr_slurm_check_value("1G", &yes, err, sizeof(err)), 0);
	ASSERT_EQ(vr_slurm_check_value("0=4G,1=50%", &yes, err, sizeof(err)), 0);
	ASSERT_EQ(vr_slurm_check_value("none", &yes, err, sizeof(err)), 0);
	ASSERT_EQ(vr_slurm_check_value("none", &no, err, sizeof(err)), -EINVAL);
	ASSERT(strstr(err, "does not allow"));
	ASSERT_EQ(vr_slurm_check_value("bogus", &yes, err, sizeof(err)), -EINVAL);
	ASSERT(strstr(err, "--gpu-mem=bogus"));
	ASSERT_EQ(vr_slurm_check_value("", &yes, err, sizeof(err)), -EINVAL);
	ASSERT_EQ(vr_slurm_check_value("0", &yes, err, sizeof(err)), -EINVAL);
	ASSERT_EQ(vr_slurm_check_value("150%", &yes, err, sizeof(err)), -EINVAL);
}

static void test_spill(void)
{
	struct vr_slurm_conf yes = conf_of(NULL, NULL, NULL);
	struct vr_slurm_conf no = conf_of("allow_spill=no", NULL, NULL);
	uint64_t b = 1;
	char err[256];

	ASSERT_EQ(yes.allow_spill, 1);
	ASSERT_EQ(no.allow_spill, 0);
	ASSERT_EQ(vr_slurm_spill(NULL, &yes, &b, err, sizeof(err)), 0);
	ASSERT_UEQ(b, 0);
	ASSERT_EQ(vr_slurm_spill("16G", &yes, &b, err, sizeof(err)), 0);
	ASSERT_UEQ(b, 16ull << 30);
	ASSERT_EQ(vr_slurm_spill("0", &yes, &b, err, sizeof(err)), 0);
	ASSERT_UEQ(b, 0);
	if (vr_host_available()) {
		ASSERT_EQ(vr_slurm_spill("", &yes, &b, err, sizeof(err)), 0); /* auto */
		ASSERT(b > 0);
	}
	ASSERT_EQ(vr_slurm_spill("lots", &yes, &b, err, sizeof(err)), -EINVAL);
	ASSERT(strstr(err, "--gpu-mem-spill=lots"));
	ASSERT_UEQ(b, 0);
	ASSERT_EQ(vr_slurm_spill("16G", &no, &b, err, sizeof(err)), -EPERM);
	ASSERT(strstr(err, "does not allow"));
	ASSERT_UEQ(b, 0);
	char *bad[] = {(char *)"allow_spill=maybe"};
	struct vr_slurm_conf c;
	ASSERT_EQ(vr_slurm_parse_args(1, bad, &c, err, sizeof(err)), -EINVAL);
	ASSERT(strstr(err, "allow_spill=maybe"));
}

/* --gpu-mem-guarantee (issue #26): the site's rule, the grammar, a cap to
 * be within. */
static void test_guarantee(void)
{
	struct vr_slurm_conf yes = conf_of(NULL, NULL, NULL);
	struct vr_slurm_conf no = conf_of("allow_guarantee=no", NULL, NULL);
	struct vr_slurm_decision d = {.capped = 1, .spec = "4G", .source = "user"};
	struct vr_slurm_decision none = {.source = "none"};
	char out[64] = "x", err[256];

	ASSERT_EQ(yes.allow_guarantee, 1);
	ASSERT_EQ(no.allow_guarantee, 0);
	ASSERT_EQ(vr_slurm_guarantee(NULL, &yes, &d, out, sizeof(out), err, sizeof(err)), 0);
	ASSERT_STR_EQ(out, "");
	ASSERT_EQ(vr_slurm_guarantee("1G", &yes, &d, out, sizeof(out), err, sizeof(err)), 0);
	ASSERT_STR_EQ(out, "1G");
	ASSERT_EQ(vr_slurm_guarantee("0=4G", &yes, &d, out, sizeof(out), err, sizeof(err)), 0);
	/* The submitting side, the cap not known yet: the value alone. */
	ASSERT_EQ(vr_slurm_guarantee("8G", &yes, NULL, out, sizeof(out), err, sizeof(err)), 0);
	ASSERT_EQ(vr_slurm_guarantee("8G", &yes, &d, out, sizeof(out), err, sizeof(err)), -EINVAL);
	ASSERT(strstr(err, "--gpu-mem-guarantee=8G: the guarantee 8G is above the cap there (4G)"));
	ASSERT_STR_EQ(out, "");
	ASSERT_EQ(vr_slurm_guarantee("lots", &yes, NULL, out, sizeof(out), err, sizeof(err)),
	          -EINVAL);
	ASSERT(strstr(err, "--gpu-mem-guarantee=lots"));
	ASSERT_EQ(vr_slurm_guarantee("1G", &yes, &none, out, sizeof(out), err, sizeof(err)),
	          -EINVAL);
	ASSERT(strstr(err, "the step has no cap"));
	ASSERT_EQ(vr_slurm_guarantee("1G", &no, &d, out, sizeof(out), err, sizeof(err)), -EPERM);
	ASSERT(strstr(err, "does not allow GPU memory guarantees"));
	ASSERT_STR_EQ(out, "");
	char *bad[] = {(char *)"allow_guarantee=maybe"};
	struct vr_slurm_conf c;
	ASSERT_EQ(vr_slurm_parse_args(1, bad, &c, err, sizeof(err)), -EINVAL);
	ASSERT(strstr(err, "allow_guarantee=maybe"));
}

static void test_decide(void)
{
	struct vr_slurm_conf plain = conf_of(NULL, NULL, NULL);
	struct vr_slurm_conf site =
	    conf_of("default=4G", "bytes_per_shard=512M", "allow_optout=no");
	struct vr_slurm_decision d;

	/* Nothing asked, nothing configured: untouched, GPU job or not. */
	vr_slurm_decide(&plain, NULL, 1, 0, &d);
	ASSERT_EQ(d.capped, 0);
	ASSERT_EQ(d.optout, 0);
	ASSERT_STR_EQ(d.note, "");

	vr_slurm_decide(&plain, "1G", 0, 0, &d);
	ASSERT_EQ(d.capped, 1);
	ASSERT_STR_EQ(d.spec, "1G");
	ASSERT_STR_EQ(d.source, "user");

	vr_slurm_decide(&plain, "none", 1, 0, &d);
	ASSERT_EQ(d.capped, 0);
	ASSERT_EQ(d.optout, 1);

	/* What the user wrote reaches the library as written, and the library
	 * reads it exactly (the one grammar: tests/unit/test_size.c). A device
	 * the node does not have is the library's to refuse (fail closed). */
	vr_slurm_decide(&plain, "0.00001%", 1, 0, &d);
	ASSERT_STR_EQ(d.spec, "0.00001%");
	vr_slurm_decide(&plain, "1=1G", 1, 0, &d);
	ASSERT_EQ(d.capped, 1);
	ASSERT_STR_EQ(d.spec, "1=1G");

	/* Shards: N x SIZE, which the user may lower but not raise. */
	vr_slurm_decide(&site, NULL, 1, 2, &d);
	ASSERT_EQ(d.capped, 1);
	ASSERT_STR_EQ(d.spec, "1G");
	ASSERT_STR_EQ(d.source, "shards");
	vr_slurm_decide(&site, "700M", 1, 2, &d);
	ASSERT_STR_EQ(d.spec, "700M");
	ASSERT_STR_EQ(d.source, "user");
	vr_slurm_decide(&site, "1G", 1, 2, &d);
	ASSERT_STR_EQ(d.spec, "1G");
	vr_slurm_decide(&site, "4G", 1, 2, &d);
	ASSERT_STR_EQ(d.spec, "1G");
	ASSERT(strstr(d.note, "--gpu-mem=4G"));
	ASSERT(strstr(d.note, "1 GiB"));
	vr_slurm_decide(&site, "50%", 1, 3, &d); /* not comparable: the shards win */
	ASSERT_STR_EQ(d.spec, "1536M");
	ASSERT(d.note[0]);

	/* Opt-out refused on the node too: the site's cap applies, with a note. */
	vr_slurm_decide(&site, "none", 1, 0, &d);
	ASSERT_EQ(d.optout, 0);
	ASSERT_EQ(d.capped, 1);
	ASSERT_STR_EQ(d.spec, "4G");
	ASSERT_STR_EQ(d.source, "default");
	ASSERT(strstr(d.note, "not allowed"));

	/* The default is for GPU jobs only. */
	vr_slurm_decide(&site, NULL, 0, 0, &d);
	ASSERT_EQ(d.capped, 0);
	vr_slurm_decide(&site, NULL, 1, 0, &d);
	ASSERT_STR_EQ(d.spec, "4G");

	/* A value that slipped past the submit side is ignored, with a note. */
	vr_slurm_decide(&plain, "12Q", 1, 0, &d);
	ASSERT_EQ(d.capped, 0);
	ASSERT(strstr(d.note, "12Q"));

	/* Overflow of shards x size saturates rather than wrapping. */
	vr_slurm_decide(&site, NULL, 1, UINT64_MAX / 2, &d);
	ASSERT_STR_EQ(d.spec, "18446744073709551615");
}

static void test_names(void)
{
	char buf[128];

	ASSERT_EQ(vr_slurm_group_name(42, "node01.cluster.example", buf, sizeof(buf)), 0);
	ASSERT_STR_EQ(buf, "slurm-42-node01");
	ASSERT_EQ(vr_slurm_group_name(7, "we ird/host", buf, sizeof(buf)), 0);
	ASSERT_STR_EQ(buf, "slurm-7-we_ird_host");
	ASSERT_EQ(
	    vr_slurm_group_name(4294967295u,
	                        "a-very-long-host-name-that-goes-on-and-on-and-on-forever-and-ever",
	                        buf, sizeof(buf)),
	    0);
	ASSERT_EQ((int)strlen(buf), 64);
	ASSERT_EQ(vr_slurm_group_name(1, "h", buf, 5), -ENAMETOOLONG);

	/* Whatever the host is called, the name is one the registry takes: the
	 * same rule (vr_group_name_check), no second copy of it. */
	for (int c = 1; c < 256; c++) {
		char host[4] = {'h', (char)c, 'x', '\0'};

		ASSERT_EQ(vr_slurm_group_name(9, host, buf, sizeof(buf)), 0);
		ASSERT_EQ(vr_group_name_check(buf, NULL, 0), 0);
		if (c == '.')
			ASSERT_STR_EQ(buf, "slurm-9-h");
		else if (vr_group_name_char(c))
			ASSERT_EQ(buf[9], c);
		else
			ASSERT_EQ(buf[9], '_');
	}
	ASSERT_EQ(vr_slurm_group_name(9, "", buf, sizeof(buf)), 0);
	ASSERT_EQ(vr_group_name_check(buf, NULL, 0), 0);
}

/* enforce=, cgroup_root=, nvml=, device_dir=; the cgroup a step's driver limit goes on. */
static void test_enforce(void)
{
	struct vr_slurm_conf c;
	char err[256], buf[128];
	char *bad[] = {(char *)"enforce=kernel"};
	char *bad2[] = {(char *)"cgroup_root=sys/fs/cgroup"};
	int made;

	ASSERT_EQ(vr_slurm_parse_args(0, NULL, &c, err, sizeof(err)), 0);
	ASSERT_EQ(c.enforce, VR_ENFORCE_LIBRARY);
	ASSERT_STR_EQ(c.cgroup_root, "/sys/fs/cgroup");
	ASSERT_STR_EQ(c.nvml, "");
	c = conf_of("enforce=both", "cgroup_root=/sys/fs/cgroup/unified",
	            "nvml=/opt/libnvidia-ml.so.1");
	ASSERT_EQ(c.enforce, VR_ENFORCE_BOTH);
	ASSERT_STR_EQ(c.cgroup_root, "/sys/fs/cgroup/unified");
	ASSERT_STR_EQ(c.nvml, "/opt/libnvidia-ml.so.1");
	c = conf_of("enforce=driver", NULL, NULL);
	ASSERT_EQ(c.enforce, VR_ENFORCE_DRIVER);
	ASSERT_EQ(vr_slurm_parse_args(1, bad, &c, err, sizeof(err)), -EINVAL);
	ASSERT(strstr(err, "enforce=kernel: use library, driver or both"));
	ASSERT_EQ(vr_slurm_parse_args(1, bad2, &c, err, sizeof(err)), -EINVAL);
	ASSERT(strstr(err, "cgroup_root=sys/fs/cgroup: need an absolute path"));
	/* device_dir= (#38): root's directory of the device books. */
	ASSERT_STR_EQ(conf_of("device_dir=/run/books", NULL, NULL).device_dir, "/run/books");
	char *bad3[] = {(char *)"device_dir=books"};
	ASSERT_EQ(vr_slurm_parse_args(1, bad3, &c, err, sizeof(err)), -EINVAL);
	ASSERT(strstr(err, "device_dir=books: need an absolute path"));

	/* cgroup/v2: Slurm's step cgroup, from a task's and from slurmstepd's. */
	const char *task = "/system.slice/node1_slurmstepd.scope/job_7/step_0/user/task_1";
	ASSERT_EQ(vr_slurm_step_cgroup(task, 7, 0, buf, sizeof(buf), &made), 0);
	ASSERT_STR_EQ(buf, "/system.slice/node1_slurmstepd.scope/job_7/step_0");
	ASSERT_EQ(made, 0);
	const char *stepd = "/system.slice/node1_slurmstepd.scope/job_7/step_batch/slurm";
	ASSERT_EQ(vr_slurm_step_cgroup(stepd, 7, 4294967294u, buf, sizeof(buf), &made), 0);
	ASSERT_STR_EQ(buf, "/system.slice/node1_slurmstepd.scope/job_7/step_batch");
	/* Elsewhere (proctrack/linuxproc): one the plugin makes. */
	ASSERT_EQ(
	    vr_slurm_step_cgroup("/system.slice/slurmd.service", 7, 2, buf, sizeof(buf), &made), 0);
	ASSERT_STR_EQ(buf, "/system.slice/slurmd.service/vramctl_7.2");
	ASSERT_EQ(made, 1);
	ASSERT_EQ(vr_slurm_step_cgroup("/", 8, 0, buf, sizeof(buf), &made), 0);
	ASSERT_STR_EQ(buf, "/vramctl_8.0");
	ASSERT_EQ(vr_slurm_step_cgroup("/", 8, 0, buf, 6, &made), -ENAMETOOLONG);
}

int main(void)
{
	test_enforce();
	test_spill();
	test_guarantee();
	test_args();
	test_check_value();
	test_decide();
	test_names();
	printf("ok\n");
	return 0;
}
