/*
 * test_cgcheck - a recorded /proc/PID/cgroup text checked against the
 * kernel's cgroup.procs (monitor/cgcheck.c), on a fake tree: a "self"
 * directory with its mountinfo (a cgroup2 mount, v1 mounts of memory,
 * cpu,cpuacct and name=systemd, one mounted from a subdirectory, one at a
 * path with a space) and cgroup directories with their cgroup.procs.
 * A text holds when every line's cgroup lists the PID; a line naming a
 * cgroup that does not (the process moved, or the text is not true), a
 * hierarchy not mounted, a path outside a mount's root, another cgroup
 * namespace: it does not.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../test.h"
#include "monitor/cgcheck.h"

static char root[512];

static void mkdirs(const char *rel)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(path, 0755);
			*p = '/';
		}
	ASSERT(mkdir(path, 0755) == 0 || errno == EEXIST);
}

static void put(const char *rel, const char *text)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	FILE *f = fopen(path, "w");
	ASSERT(f);
	fputs(text, f);
	fclose(f);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(root, sizeof(root), "%s/cgcheck", tmp ? tmp : "/tmp");
	ASSERT(mkdir(root, 0755) == 0 || errno == EEXIST);
	mkdirs("self/ns");
	put("self/ns/cgroup", "");
	struct stat st;
	char path[1100];
	snprintf(path, sizeof(path), "%s/self/ns/cgroup", root);
	ASSERT_EQ(stat(path, &st), 0);
	uint64_t ns = (uint64_t)st.st_ino;

	char mi[4096];
	snprintf(mi, sizeof(mi),
	         "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
	         "30 22 0:27 / %s/unified rw,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"
	         "31 22 0:28 / %s/memory rw,relatime - cgroup cgroup rw,memory\n"
	         "32 22 0:29 / %s/cpu\\040acct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
	         "33 22 0:30 /box %s/systemd rw - cgroup cgroup rw,xattr,name=systemd\n",
	         root, root, root, root);
	put("self/mountinfo", mi);
	mkdirs("unified/kubepods.slice/pod.slice/cri-containerd-x.scope");
	put("unified/kubepods.slice/pod.slice/cri-containerd-x.scope/cgroup.procs", "700\n42\n");
	put("unified/cgroup.procs", "1\n2\n900\n");
	mkdirs("memory/docker/x");
	put("memory/docker/x/cgroup.procs", "42\n");
	mkdirs("cpu acct");
	put("cpu acct/cgroup.procs", "1\n42\n900\n");
	mkdirs("systemd/inner");
	put("systemd/inner/cgroup.procs", "42\n");
	put("systemd/cgroup.procs", "900\n");

	struct mon_cgcheck *c = mon_cgcheck_new(NULL);
	mon_cgcheck_free(c); /* the real one, unused: frees cleanly */
	snprintf(path, sizeof(path), "%s/self", root);
	c = mon_cgcheck_new(path);
	ASSERT(c != NULL);
	const char *v2 = "0::/kubepods.slice/pod.slice/cri-containerd-x.scope\n";
	ASSERT_EQ(mon_cgcheck_holds(c, ns, v2, 42), 1);
	ASSERT_EQ(mon_cgcheck_holds(c, ns, v2, 700), 1);
	/* Not listed there: moved away, or a text that is not true. */
	ASSERT_EQ(mon_cgcheck_holds(c, ns, v2, 900), 0);
	ASSERT_EQ(mon_cgcheck_holds(c, ns, "0::/\n", 900), 1);
	/* Another cgroup namespace sees other paths: never checked here. */
	ASSERT_EQ(mon_cgcheck_holds(c, ns + 1, v2, 42), 0);
	ASSERT_EQ(mon_cgcheck_holds(c, 0, v2, 42), 0);
	/* Hybrid: every line's hierarchy, by its controllers; the systemd one
	 * is mounted from /box, so "/box/inner" is its "inner". */
	const char *hybrid = "4:memory:/docker/x\n3:cpu,cpuacct:/\n2:name=systemd:/box/inner\n"
	                     "0::/kubepods.slice/pod.slice/cri-containerd-x.scope\n";
	ASSERT_EQ(mon_cgcheck_holds(c, ns, hybrid, 42), 1);
	ASSERT_EQ(mon_cgcheck_holds(c, ns, hybrid, 700), 0); /* not in memory's /docker/x */
	/* A path outside the mount's root, a hierarchy not mounted, a line
	 * that is not one, an empty text. */
	ASSERT_EQ(mon_cgcheck_holds(c, ns, "2:name=systemd:/inner\n", 42), 0);
	ASSERT_EQ(mon_cgcheck_holds(c, ns, "2:name=systemd:/boxer\n", 42), 0);
	ASSERT_EQ(mon_cgcheck_holds(c, ns, "5:pids:/\n", 1), 0);
	ASSERT_EQ(mon_cgcheck_holds(c, ns, "garbage\n", 1), 0);
	ASSERT_EQ(mon_cgcheck_holds(c, ns, "", 1), 0);
	ASSERT_EQ(mon_cgcheck_holds(c, ns, "0::relative\n", 1), 0);
	/* A cgroup that is not there. */
	ASSERT_EQ(mon_cgcheck_holds(c, ns, "0::/gone\n", 1), 0);
	/* Asked again, the lists read before answer (a file changed since is
	 * not read again within one set). */
	put("unified/cgroup.procs", "1\n");
	ASSERT_EQ(mon_cgcheck_holds(c, ns, "0::/\n", 900), 1);
	mon_cgcheck_free(c);
	c = mon_cgcheck_new(path);
	ASSERT_EQ(mon_cgcheck_holds(c, ns, "0::/\n", 900), 0);
	mon_cgcheck_free(c);
	printf("cgroup checks passed\n");
	return 0;
}
