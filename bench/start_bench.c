/*
 * start_bench - what vramctl adds to starting commands (a benchmark: it
 * prints figures and asserts nothing). All in one run, interleaved, so the
 * machine's load weighs on both sides alike:
 *
 *   1. one command started and waited for, ROUNDS times: `true` directly,
 *      `vramctl run --limit 1G -- true`, and `true` under the least a
 *      launcher can be (this program with --launch: vfork, execv, waitpid,
 *      nothing else): the floor of any launcher that stays its command's
 *      parent, as `vramctl run` must (it outlives its command to hold and
 *      then remove the group). The best and the median each.
 *      Target: vramctl run adds at most 1 ms.
 *   2. a job of 256 processes released at once, each a small CUDA program
 *      (bench/start_child.c: cuInit, a context, one allocation and its
 *      free, on the do-nothing driver) that under vramctl joins the job's
 *      group at its first allocation: the same fan-out program started
 *      directly and as `vramctl run --group G --limit 1G -- FANOUT`; time
 *      from the release until the last has exited, measured inside the
 *      fan-out program, so both sides do the same work but for vramctl's.
 *      Target: at most 25 % added. Beside it, the floor: the same job
 *      with bench/floor_member.c preloaded instead, which only joins a
 *      shared group (opens a door, takes one OFD lock, attaches a segment,
 *      writes two of its pages).
 *   3. for reference, 256 x `vramctl run --group G --limit 1G -- true`
 *      released at once beside 256 x `true`: each of those is two process
 *      starts (vramctl's and the command's) and a join, so no launcher can
 *      come near 25 % there; its figure is what one vramctl per process
 *      costs.
 *
 *   start_bench VRAMCTL CHILD [TRUE]     (TRUE defaults to /bin/true)
 *   start_bench --many N COMMAND...      (the fan-out: prints ms taken)
 *   start_bench --launch COMMAND...      (the least launcher)
 *
 * CHILD needs its libcuda.so.1 (the do-nothing driver) in LD_LIBRARY_PATH.
 */
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/timing.h"

#include "registry/layout.h"

extern char **environ;

#define ROUNDS 200
#define MANY   256

static pid_t spawn_out(char *const argv[], int out_fd)
{
	pid_t pid;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	if (out_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0) {
		perror("start_bench: posix_spawn");
		exit(1);
	}
	posix_spawn_file_actions_destroy(&fa);
	return pid;
}

static pid_t spawn(char *const argv[])
{
	return spawn_out(argv, -1);
}

static void reap(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "start_bench: a command failed (status %#x)\n", st);
		exit(1);
	}
}

/* n at once: each child waits on a pipe, then execs argv; the clock runs
 * from the release to the last exit. Returns ns. */
static double many(int n, char *const argv[])
{
	int go[2];
	pid_t *pids = calloc((size_t)n, sizeof(*pids));
	if (!pids || pipe(go) != 0)
		exit(1);
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			char c;
			close(go[1]);
			if (read(go[0], &c, 1) != 0)
				_exit(3);
			execv(argv[0], argv);
			_exit(127);
		}
	}
	close(go[0]);
	usleep(200000); /* all forked and waiting */
	double t0 = bench_now_ns();
	close(go[1]);
	for (int i = 0; i < n; i++)
		reap(pids[i]);
	free(pids);
	return bench_now_ns() - t0;
}

/* Runs argv (a fan-out, maybe under vramctl run) and reads the ms it prints. */
static double fanout(char *const argv[])
{
	int p[2];
	char buf[64] = "";
	if (pipe(p) != 0)
		exit(1);
	pid_t pid = spawn_out(argv, p[1]);
	close(p[1]);
	ssize_t r = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	reap(pid);
	if (r <= 0) {
		fprintf(stderr, "start_bench: the fan-out printed nothing\n");
		exit(1);
	}
	buf[r] = '\0';
	return atof(buf);
}

/* The file system a directory is on, as a name where it is a common one. */
static const char *fs_name(const char *dir)
{
	static char hex[24];
	struct statfs sf;
	if (statfs(dir, &sf) != 0)
		return "unknown file system";
	switch ((unsigned long)sf.f_type) {
	case 0x01021994UL:
		return "tmpfs";
	case 0xEF53UL:
		return "ext2/3/4";
	case 0x58465342UL:
		return "xfs";
	case 0x9123683EUL:
		return "btrfs";
	case 0x794c7630UL:
		return "overlayfs";
	}
	snprintf(hex, sizeof(hex), "file system 0x%lx", (unsigned long)sf.f_type);
	return hex;
}

/* The least launcher: starts argv, waits, exits with its status. */
static int launch(char *const argv[])
{
	pid_t pid = vfork();
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

/* The floor member's group: a door file in dir and a segment of vramctl's
 * size, marked for removal (it goes with its last member). Sets the
 * environment floor_member.c reads. Returns 0, or -1. */
static int floor_group(const char *dir, char *door, size_t len)
{
	snprintf(door, len, "%s/floor.door", dir);
	int fd = open(door, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, VR_DOOR_SIZE) != 0)
		return -1;
	close(fd);
	int id = shmget(IPC_PRIVATE, VR_SEGMENT_SIZE, IPC_CREAT | IPC_EXCL | 0600);
	void *keep = id < 0 ? (void *)-1 : shmat(id, NULL, 0);
	if (id >= 0)
		shmctl(id, IPC_RMID, NULL);
	if (keep == (void *)-1)
		return -1;
	char v[32];
	snprintf(v, sizeof(v), "%d", id);
	setenv("VR_FLOOR_SHM", v, 1);
	snprintf(v, sizeof(v), "%zu", sizeof(struct vr_slot));
	setenv("VR_FLOOR_SLOT", v, 1);
	setenv("VR_FLOOR_DOOR", door, 1);
	return 0;
}

/* The directory part of path (path itself is left as it is). */
static const char *dirname_of(const char *path)
{
	static char d[PATH_MAX];
	snprintf(d, sizeof(d), "%s", path);
	char *slash = strrchr(d, '/');
	if (slash)
		*slash = '\0';
	return d;
}

static const char *met(int ok)
{
	return ok ? "met" : "not met";
}

int main(int argc, char **argv)
{
	if (argc > 3 && !strcmp(argv[1], "--many")) {
		printf("%.3f\n", many(atoi(argv[2]), argv + 3) / 1e6);
		return 0;
	}
	if (argc > 2 && !strcmp(argv[1], "--launch"))
		return launch(argv + 2);
	if (argc < 3) {
		fprintf(stderr, "usage: start_bench VRAMCTL CHILD [TRUE]\n");
		return 2;
	}
	static char bin_true[] = "/bin/true", s_run[] = "run", s_limit[] = "--limit", s_1g[] = "1G",
	            s_dash[] = "--", s_group[] = "--group", s_bench[] = "bench",
	            s_job[] = "bench-job", s_many[] = "--many", s_n[] = "256",
	            s_launch[] = "--launch", s_env[] = "/usr/bin/env";
	static char self[PATH_MAX];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl <= 0)
		return 1;
	self[sl] = '\0';
	char *tru = argc > 3 ? argv[3] : bin_true;
	const char *tmp = getenv("TMPDIR");
	char dirbuf[4096];
	snprintf(dirbuf, sizeof(dirbuf), "%s/vramctl-start-bench-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(dirbuf))
		return 1;
	setenv("VRAMCTL_REGISTRY_DIR", dirbuf, 1);
	/* Each run makes and removes its group's door there: a new inode each
	 * time, which costs more on a disk file system (ext4 looks past the
	 * inodes it freed in the last seconds) than on tmpfs, where
	 * $XDG_RUNTIME_DIR, vramctl's default, usually is. */
	printf("registry directory: %s (%s; TMPDIR chooses it)\n", dirbuf, fs_name(dirbuf));
	fflush(stdout);

	char *direct[] = {tru, NULL};
	char *run[] = {argv[1], s_run, s_limit, s_1g, s_dash, tru, NULL};
	char *least[] = {self, s_launch, tru, NULL};
	double d[ROUNDS], r[ROUNDS], l[ROUNDS];
	for (int i = 0; i < 20; i++) { /* warm the page cache */
		reap(spawn(direct));
		reap(spawn(run));
		reap(spawn(least));
	}
	for (int i = 0; i < ROUNDS; i++) {
		double t0 = bench_now_ns();
		reap(spawn(direct));
		double t1 = bench_now_ns();
		reap(spawn(run));
		double t2 = bench_now_ns();
		reap(spawn(least));
		double t3 = bench_now_ns();
		d[i] = t1 - t0;
		r[i] = t2 - t1;
		l[i] = t3 - t2;
	}
	qsort(d, ROUNDS, sizeof(d[0]), bench_cmp_double);
	qsort(r, ROUNDS, sizeof(r[0]), bench_cmp_double);
	qsort(l, ROUNDS, sizeof(l[0]), bench_cmp_double);
	int mid = ROUNDS / 2;
	double added_best = (r[0] - d[0]) / 1e6, added_med = (r[mid] - d[mid]) / 1e6;
	printf("one command, %d rounds (ms)     best  median\n", ROUNDS);
	printf("  %-28s %6.3f %6.3f\n", "true", d[0] / 1e6, d[mid] / 1e6);
	printf("  %-28s %6.3f %6.3f\n", "vramctl run --limit 1G true", r[0] / 1e6, r[mid] / 1e6);
	printf("  %-28s %6.3f %6.3f\n", "the least launcher, true", l[0] / 1e6, l[mid] / 1e6);
	printf("  added by vramctl run: %.3f ms best, %.3f ms median (target <= 1 ms, best: %s; "
	       "median: %s)\n",
	       added_best, added_med, met(added_best <= 1.0), met(added_med <= 1.0));
	printf("  added by the least launcher (vfork, execv, waitpid): %.3f ms best, %.3f ms "
	       "median; vramctl run beyond it: %.3f, %.3f\n",
	       (l[0] - d[0]) / 1e6, (l[mid] - d[mid]) / 1e6, (r[0] - l[0]) / 1e6,
	       (r[mid] - l[mid]) / 1e6);

	/* 2. A job of 256 processes joining one group at once. */
	char *job_direct[] = {self, s_many, s_n, argv[2], NULL};
	char *job_run[] = {argv[1], s_run, s_group, s_job, s_limit, s_1g,
	                   s_dash,  self,  s_many,  s_n,   argv[2], NULL};
	char door[sizeof(dirbuf) + 32];
	if (floor_group(dirbuf, door, sizeof(door)) != 0) {
		perror("start_bench: the floor member's group");
		return 1;
	}
	char *floor_env[] = {s_env, NULL, self, s_many, s_n, argv[2], NULL};
	char preload[PATH_MAX + 32];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s/libfloor_member.so", dirname_of(self));
	floor_env[1] = preload;
	double jd = 1e30, jr = 1e30, jf = 1e30;
	for (int k = 0; k < 3; k++) {
		double x = fanout(job_direct), y = fanout(job_run), z = fanout(floor_env);
		jd = x < jd ? x : jd;
		jr = y < jr ? y : jr;
		jf = z < jf ? z : jf;
	}
	unlink(door);
	double pct = 100.0 * (jr - jd) / jd;
	printf("a job of %d CUDA processes released at once, best of 3 (ms): direct %.1f, under "
	       "vramctl run, all joining one group %.1f\n",
	       MANY, jd, jr);
	printf("  added: %.1f %% (target <= 25 %%: %s)\n", pct, met(pct <= 25.0));
	printf("  the floor, each process preloading only a join (door, one lock, the segment): "
	       "%.1f ms, %.1f %% added\n",
	       jf, 100.0 * (jf - jd) / jd);

	/* 3. For reference: one vramctl per process. */
	char *group[] = {argv[1], s_run, s_group, s_bench, s_limit, s_1g, s_dash, tru, NULL};
	double md = 1e30, mg = 1e30;
	for (int k = 0; k < 3; k++) {
		double x = many(MANY, direct), y = many(MANY, group);
		md = x < md ? x : md;
		mg = y < mg ? y : mg;
	}
	printf("%d x `vramctl run --group G` released at once, best of 3 (ms): %.1f, beside %d x "
	       "`true` %.1f (each is two process starts and a join; no target)\n",
	       MANY, mg / 1e6, MANY, md / 1e6);
	/* The named groups' doors stay after their last member. */
	const char *doors[] = {"bench.vrg", "bench-job.vrg"};
	for (size_t k = 0; k < sizeof(doors) / sizeof(doors[0]); k++) {
		char path[sizeof(dirbuf) + 32];
		snprintf(path, sizeof(path), "%s/%s", dirbuf, doors[k]);
		unlink(path);
	}
	rmdir(dirbuf);
	return 0;
}
