/*
 * test_ipcns.c - members in IPC namespaces of their own (containers without
 * --ipc host, podman's default) share one group, and a reader outside
 * them reads it (issue 37, item 5).
 *
 *   two members, each in a new IPC namespace, one group: one cap (the
 *     second is refused past it), one group in the snapshot with both.
 *     Up to layout version 8 the books were a System V segment, named by
 *     an id of one IPC namespace: the second member could not reach them
 *     and kept books of its own (600 + 600 under 1,000)
 *   a member in a new IPC namespace: the snapshot shows it alive, with its
 *     numbers, its group's cap, and its namespace
 *   its books overwritten there (a total zeroed, random bytes over the
 *     slots, random bytes over the header): damaged or unreadable, said,
 *     never a crash or a hang (ASan/UBSan watch)
 *   readers: root without CAP_SYS_ADMIN reads it (the socket hands the
 *     books over: no namespace is entered); nobody sees nothing
 *   books made as a System V segment (under a file size limit below their
 *     size, where no memfd can be made) in a member's namespace: read by a
 *     reader with CAP_SYS_ADMIN, which enters that namespace for the attach
 *     (ipcns.c); root without it sees a note
 *
 * Needs root and unshare(CLONE_NEWIPC); skips (77) otherwise.
 */
#include <errno.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry/member.h"
#include "tests/registry/regtest.h"
#include "vramctl/registry.h"

static const unsigned char uuid0[VR_UUID_LEN] = {2, 7, 2, 7, 2, 7, 2, 7, 2, 7, 2, 7, 2, 7, 2, 7};
static const char *dir;

struct child {
	pid_t pid;
	int cmd, ans;
};

/* The member in its own namespace: commands come down `cmd`, answers go up
 * `ans` (one int32 each: 0 done, else a negative errno). It joins under a
 * file size limit below the books' size (a System V segment) when `sysv`,
 * and asks for `want` bytes first when not 0 (which must be refused with
 * the group holding `seen`), then for `get`. */
struct how {
	int sysv;
	uint64_t want, seen, get;
};

static void child_main(const char *group, const struct how *how, int cmd, int ans)
{
	int32_t msg = 0;
	vr_member *m = NULL;
	char err[256];
	uint64_t in_use = 0;
	struct vr_join_opts o = {.dir = dir, .group = group, .limit_spec = "1000"};
	struct rlimit rl = {.rlim_cur = 1 << 20, .rlim_max = RLIM_INFINITY};
	if (unshare(CLONE_NEWIPC) != 0)
		msg = -errno;
	else if ((how->sysv && (getrlimit(RLIMIT_FSIZE, &rl) != 0 ||
	                        (rl.rlim_cur = 1 << 20, setrlimit(RLIMIT_FSIZE, &rl) != 0))) ||
	         vr_join(&o, &m, NULL, err, sizeof(err)) != 0 ||
	         vr_device(m, uuid0, 1000, NULL) != 0)
		msg = -EPROTO;
	else if (how->want &&
	         (vr_reserve(m, 0, how->want, &in_use) != -ENOSPC || in_use != how->seen))
		msg = -EDOM;
	else if (vr_reserve(m, 0, how->get, NULL) != 0)
		msg = -ERANGE;
	if (write(ans, &msg, sizeof(msg)) != (ssize_t)sizeof(msg) || msg != 0)
		_exit(0);
	uint64_t seed = 0x5eed;
	char c;
	while (read(cmd, &c, 1) == 1) {
		if (c == 'z') {
			m->hdr->dev[0].total = 0; /* "nothing is used" */
		} else if (c == 's') {
			uint64_t *p = (uint64_t *)(void *)vr_slot_at(m->hdr, 0);
			for (size_t i = 0; i < 4 * sizeof(struct vr_slot) / 8; i++)
				p[i] = rnd(&seed);
			uint64_t *q = (uint64_t *)(void *)vr_counts_at(m->hdr, 0, 0);
			for (size_t i = 0; i < 64; i++)
				q[i] = rnd(&seed);
		} else if (c == 'h') {
			uint64_t *p = (uint64_t *)(void *)m->hdr;
			for (size_t i = 0; i < VR_HDR_SIZE / 8; i++)
				p[i] = rnd(&seed);
		}
		msg = 0;
		if (write(ans, &msg, sizeof(msg)) != (ssize_t)sizeof(msg))
			_exit(2);
	}
	_exit(0);
}

/* Starts a member of `group` in a new IPC namespace; skips the test when
 * none can be made. */
static struct child start_how(const char *group, const struct how *how)
{
	int down[2], up[2];
	ASSERT_EQ(pipe(down), 0);
	ASSERT_EQ(pipe(up), 0);
	fflush(stdout);
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		close(down[1]);
		close(up[0]);
		child_main(group, how, down[0], up[1]);
	}
	close(down[0]);
	close(up[1]);
	int32_t msg = -1;
	ASSERT_EQ(read(up[0], &msg, sizeof(msg)), (ssize_t)sizeof(msg));
	if (msg != 0) {
		waitpid(pid, NULL, 0);
		if (msg == -EPERM || msg == -EINVAL || msg == -ENOSYS)
			SKIP("cannot make an IPC namespace here: %s", strerror(-msg));
		TEST_FAILF("the member in its own IPC namespace failed: %d (%s)", msg,
		           msg == -EPROTO ? "could not join"
		           : msg == -EDOM ? "was not refused past the group's cap"
		                          : "was refused under the cap");
	}
	return (struct child){.pid = pid, .cmd = down[1], .ans = up[0]};
}

static struct child start(const char *group)
{
	static const struct how plain = {.get = 700};
	return start_how(group, &plain);
}

static void tell(const struct child *c, char what)
{
	int32_t msg = -1;
	ASSERT_EQ(write(c->cmd, &what, 1), 1);
	ASSERT_EQ(read(c->ans, &msg, sizeof(msg)), (ssize_t)sizeof(msg));
	ASSERT_EQ(msg, 0);
}

static void stop(struct child *c)
{
	close(c->cmd);
	close(c->ans);
	ASSERT_EQ(waitpid(c->pid, NULL, 0), c->pid);
}

/* The snapshot's record of pid, NULL if none. */
static const struct vramctl_proc *find(const struct vramctl_snapshot *s, pid_t pid)
{
	for (int i = 0; i < s->nprocs; i++)
		if (s->procs[i].host_pid == pid || s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

/* Snapshot error lines that name group's door and contain word. */
static int says(const struct vramctl_snapshot *s, const char *group, const char *word)
{
	char door[80];
	snprintf(door, sizeof(door), "/%s.vrg:", group);
	int n = 0;
	for (int i = 0; i < s->nerrors; i++) {
		printf("status: %s\n", s->errors[i]);
		n += strstr(s->errors[i], door) && strstr(s->errors[i], word);
	}
	return n;
}

static void read_across(void)
{
	struct child c = start("ipcns");
	char path[64];
	struct stat ns, own;
	snprintf(path, sizeof(path), "/proc/%d/ns/ipc", (int)c.pid);
	ASSERT_EQ(stat(path, &ns), 0);
	ASSERT_EQ(stat("/proc/self/ns/ipc", &own), 0);
	ASSERT(ns.st_ino != own.st_ino);

	struct vramctl_snapshot *s = NULL;
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	ASSERT_EQ(says(s, "ipcns", ""), 0);
	const struct vramctl_proc *p = find(s, c.pid);
	ASSERT(p != NULL);
	ASSERT_EQ(p->state, VRAMCTL_PROC_ALIVE);
	ASSERT_EQ(p->host_pid, c.pid);
	ASSERT_STR_EQ(p->group, "ipcns");
	ASSERT_EQ(p->ndev, 1);
	ASSERT_UEQ(p->dev[0].in_use, 700);
	ASSERT_UEQ(p->dev[0].peak, 700);
	ASSERT_UEQ(p->ipc_ns, (uint64_t)ns.st_ino);
	ASSERT_EQ(s->ngroups, 1);
	ASSERT_STR_EQ(s->groups[0].name, "ipcns");
	ASSERT_UEQ(s->groups[0].dev[0].cap, 1000);
	ASSERT_UEQ(s->groups[0].dev[0].in_use, 700);
	ASSERT_EQ(s->groups[0].nmembers, 1);
	vramctl_snapshot_free(s);
	stop(&c);
	printf("ok: member in IPC namespace %lu read from %lu\n", (unsigned long)ns.st_ino,
	       (unsigned long)own.st_ino);
}

/* What a forked reader sees of pid's group, after drop: 1 when it lists
 * pid, | 2 when it says group's books cannot be read; 0 nothing (the
 * directory is not its to read). */
static int reader_sees(pid_t pid, const char *group, void (*drop)(void))
{
	fflush(stdout);
	pid_t r = fork();
	ASSERT(r >= 0);
	if (r == 0) {
		drop();
		struct vramctl_snapshot *s = NULL;
		int rc = vramctl_snapshot_take(dir, &s);
		printf("reader: snapshot %d\n", rc);
		if (rc < 0)
			_exit(0); /* nothing shown */
		int seen = (find(s, pid) != NULL) | (says(s, group, "cannot be read") == 1) << 1;
		vramctl_snapshot_free(s);
		fflush(stdout);
		_exit(seen);
	}
	int st = 0;
	ASSERT_EQ(waitpid(r, &st, 0), r);
	ASSERT(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* uid 0 without CAP_SYS_ADMIN in its effective set. */
static void drop_sys_admin(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2] = {{0}};
	if (syscall(SYS_capget, &h, d) != 0)
		_exit(10);
	d[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
	if (syscall(SYS_capset, &h, d) != 0)
		_exit(11);
}

/* nobody: no capabilities at all. */
static void become_nobody(void)
{
	if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
		_exit(12);
}

/* The books are handed over through the socket: no namespace is entered,
 * so root needs no CAP_SYS_ADMIN; another user still sees nothing. */
static void unprivileged(void)
{
	struct child c = start("ipcnopriv");
	ASSERT_EQ(reader_sees(c.pid, "ipcnopriv", drop_sys_admin), 1);
	ASSERT_EQ(reader_sees(c.pid, "ipcnopriv", become_nobody), 0);
	stop(&c);
}

/* Two members, each in an IPC namespace of its own: one group, one cap. */
static void two_namespaces(void)
{
	static const struct how second = {.want = 700, .seen = 700, .get = 300};
	struct child a = start("ipctwo");
	struct child b = start_how("ipctwo", &second); /* refused past the cap, in it */
	char path[64];
	struct stat na, nb;
	snprintf(path, sizeof(path), "/proc/%d/ns/ipc", (int)a.pid);
	ASSERT_EQ(stat(path, &na), 0);
	snprintf(path, sizeof(path), "/proc/%d/ns/ipc", (int)b.pid);
	ASSERT_EQ(stat(path, &nb), 0);
	ASSERT(na.st_ino != nb.st_ino);

	struct vramctl_snapshot *s = NULL;
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	ASSERT_EQ(says(s, "ipctwo", ""), 0);
	ASSERT_EQ(s->ngroups, 1);
	ASSERT_EQ(s->groups[0].nmembers, 2);
	ASSERT_UEQ(s->groups[0].dev[0].in_use, 1000);
	const struct vramctl_proc *pa = find(s, a.pid), *pb = find(s, b.pid);
	ASSERT(pa != NULL && pb != NULL);
	ASSERT_UEQ(pa->ipc_ns, (uint64_t)na.st_ino);
	ASSERT_UEQ(pb->ipc_ns, (uint64_t)nb.st_ino);
	ASSERT_UEQ(pb->dev[0].in_use, 300);
	vramctl_snapshot_free(s);
	stop(&b);
	stop(&a);
	printf("ok: two members in IPC namespaces %lu and %lu, one cap\n", (unsigned long)na.st_ino,
	       (unsigned long)nb.st_ino);
}

/* Books that are a System V segment in a member's namespace: read by a
 * reader that may enter it. */
static void sysv(void)
{
	static const struct how seg = {.sysv = 1, .get = 700};
	struct child c = start_how("ipcsysv", &seg);
	char path[64];
	struct stat ns;
	snprintf(path, sizeof(path), "/proc/%d/ns/ipc", (int)c.pid);
	ASSERT_EQ(stat(path, &ns), 0);
	struct vramctl_snapshot *s = NULL;
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	ASSERT_EQ(says(s, "ipcsysv", ""), 0);
	const struct vramctl_proc *p = find(s, c.pid);
	ASSERT(p != NULL);
	ASSERT_UEQ(p->dev[0].in_use, 700);
	ASSERT_UEQ(p->ipc_ns, (uint64_t)ns.st_ino);
	vramctl_snapshot_free(s);
	ASSERT_EQ(reader_sees(c.pid, "ipcsysv", drop_sys_admin), 2);
	stop(&c);
}

static void damaged(void)
{
	struct child c = start("ipcdmg");
	struct vramctl_snapshot *s = NULL;
	tell(&c, 'z');
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	ASSERT_EQ(says(s, "ipcdmg", "damaged"), 1);
	ASSERT(find(s, c.pid) != NULL); /* read, and said to be damaged */
	vramctl_snapshot_free(s);

	tell(&c, 's');
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	ASSERT_GE(says(s, "ipcdmg", ""), 0); /* the reader copes */
	vramctl_snapshot_free(s);

	tell(&c, 'h');
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	ASSERT_EQ(says(s, "ipcdmg", "cannot be read"), 1); /* live member, no readable books */
	ASSERT(find(s, c.pid) == NULL);
	vramctl_snapshot_free(s);
	stop(&c);
}

int main(void)
{
	dir = getenv("VRAMCTL_REGISTRY_DIR");
	if (!dir)
		SKIP("VRAMCTL_REGISTRY_DIR is not set (run under tests/run)");
	if (geteuid() != 0)
		SKIP("needs root (new IPC namespaces, and readers that may enter them)");
	two_namespaces();
	read_across();
	unprivileged();
	damaged();
	sysv();
	printf("ok\n");
	return 0;
}
