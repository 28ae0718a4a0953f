/*
 * alloc_bench - what vramctl adds to a cuMemAlloc_v2 + cuMemFree_v2 pair,
 * single-threaded and with 4 threads, against the same driver called
 * directly, all in one run:
 *
 *   direct     the driver alone (no preload)
 *   invisible  libvramctl.so preloaded, no cap (one branch per call)
 *   capped     libvramctl.so preloaded with a cap (books, map, device)
 *   spill on   the same with VRAMCTL_SPILL set but never needed (the cap is
 *              far away): what enabling spill adds to the ordinary path
 *   spilled    a cap of one byte: every allocation is served from pinned
 *              host memory (cuMemHostAlloc, cuMemFreeHost): a spilled
 *              allocation against a device one (the capped row)
 *   trace      capped, with --trace's recording on (VRAMCTL_RECORD=trace)
 *   report     capped, with --report's recording on
 *   stacks     capped, with --report --stacks (a call site per allocation)
 *   near cap   a cap of 200 MiB, so every pair is inside the card check's
 *              margin (src/hook/card.h: the books' total is checked against
 *              NVML's figures, taken at most every 20 ms): what counting the
 *              card costs near the cap (lanes are off under 256 MiB, so every
 *              pair reaches the books)
 *   near alloc the same cap with VRAMCTL_COUNT=allocations: the pair without
 *              the card check, to compare with
 *   in guar.   capped, with a guarantee (#26) it never passes: each block is
 *              counted in the device book's line once placed, and before it
 *              is freed (the capped row is a group without one: while nobody
 *              holds a guarantee on the card, one word of the book is read)
 *   borrowing  capped, no guarantee, while another group holds an unused
 *              guarantee on the card: every allocation is a borrow, decided
 *              under the device book's lock against NVML's free memory
 *              (rows printed where NVML answers)
 * and, apart, what one look at NVML's process list costs on this driver
 * (a card refresh's main cost; none on a driver without NVML).
 *
 * Each mode runs in its own process (this program re-executes itself), so
 * "direct" really is the driver alone. Also shows that calls vramctl does
 * not hook cost nothing: cuGetProcAddress hands out the driver's own
 * pointer for cuLaunchKernel. Figures are printed, never asserted.
 *
 *   LD_LIBRARY_PATH=build/gcc-release/sim build/gcc-release/bench/alloc_bench [LIB]
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/alloc_common.h"
#include "common/record.h"

/* Pairs per thread and run: PAIRS, or $ALLOC_BENCH_PAIRS (a real driver's
 * pair takes microseconds, not nanoseconds). */
static int pairs = PAIRS;

static void *loop(void *arg)
{
	double *ns = arg;
	thread_start();
	double t0 = now();
	for (int i = 0; i < pairs; i++)
		pair();
	*ns = (now() - t0) / pairs;
	return NULL;
}

/* ns per pair per thread, with n threads at once. */
static double run(int n)
{
	return run_threads(n, loop);
}

static int measure(void)
{
	CUdevice dev;
	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
	    cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS)
		return 1;
	cuCtxSetCurrent(ctx);
	/* The best of three rounds: the build machines are shared, and the
	 * slowest rounds measure the neighbours. */
	double one = run(1), four = run(4);
	for (int r = 0; r < 2; r++) {
		double o = run(1), f = run(4);
		one = o < one ? o : one;
		four = f < four ? f : four;
	}
	printf("%.1f %.1f %d\n", one, four, unhooked_is_drivers());
	return 0;
}

static char record_dir[4096]; /* the members' record files (--report, --trace) */

/* Runs `self measure` with LD_PRELOAD (or none), a cap (or none), a spill
 * budget (or none) and what is recorded for --report/--trace (or none). */
static int spawn_counting(const char *preload, const char *limit, const char *spill,
                          const char *record, const char *count, double *one, double *four,
                          int *same)
{
	int fd[2];
	if (pipe(fd) != 0)
		return -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		env_set("LD_PRELOAD", preload);
		env_set("VRAMCTL_LIMIT", limit);
		env_set("VRAMCTL_SPILL", spill);
		env_set("VRAMCTL_RECORD_DIR", record ? record_dir : NULL);
		env_set("VRAMCTL_RECORD", record);
		env_set("VRAMCTL_COUNT", count);
		setenv("VRAMCTL_LOG", "error", 1);
		execl("/proc/self/exe", "alloc_bench", "measure", (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	char buf[256] = "";
	FILE *f = fdopen(fd[0], "r");
	int ok = f && fgets(buf, sizeof buf, f) && sscanf(buf, "%lf %lf %d", one, four, same) == 3;
	if (f)
		fclose(f);
	int st;
	waitpid(pid, &st, 0);
	return ok && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int spawn(const char *preload, const char *limit, const char *spill, const char *record,
                 double *one, double *four, int *same)
{
	return spawn_counting(preload, limit, spill, record, NULL, one, four, same);
}

/* A measuring run whose group has a guarantee of `guarantee`. */
static int spawn_guaranteed(const char *preload, const char *guarantee, double *one, double *four)
{
	int same;
	env_set("VRAMCTL_GUARANTEE", guarantee);
	int rc = spawn(preload, "1T", NULL, NULL, one, four, &same);
	unsetenv("VRAMCTL_GUARANTEE");
	return rc;
}

/* `self hold`: one block on GPU 0 (the device's setup admits the group's
 * guarantee), "ready", then holds it until stdin closes. */
static int hold(void)
{
	CUdevice dev;
	CUdeviceptr p;
	char c;
	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
	    cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS)
		return 1;
	cuCtxSetCurrent(ctx);
	if (cuMemAlloc_v2(&p, SIZE) != CUDA_SUCCESS)
		return 1;
	printf("ready\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}

/* Another group holding an unused guarantee of 1 GiB on GPU 0: its pid,
 * *in the end of its stdin to close, or -1. */
static pid_t start_holder(const char *lib, int *in)
{
	int to[2], from[2];
	if (pipe(to) != 0 || pipe(from) != 0)
		return -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[1]);
		close(from[0]);
		env_set("LD_PRELOAD", lib);
		env_set("VRAMCTL_LIMIT", "2G");
		env_set("VRAMCTL_GUARANTEE", "1G");
		env_set("VRAMCTL_GROUP", "bench-guarantee");
		setenv("VRAMCTL_LOG", "error", 1);
		execl("/proc/self/exe", "alloc_bench", "hold", (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	char buf[16] = "";
	ssize_t n = read(from[0], buf, sizeof buf - 1);
	close(from[0]);
	*in = to[1];
	return n > 0 && !strncmp(buf, "ready", 5) ? pid : -1;
}

/* ns per look at NVML's process list of GPU 0 (the newest call the
 * library uses), or a negative number without NVML. */
static double nvml_list_ns(void)
{
	typedef int (*init_fn)(void);
	typedef int (*handle_fn)(unsigned, void **);
	typedef int (*list_fn)(void *, unsigned *, void *);
	void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	init_fn init;
	handle_fn handle;
	list_fn list;
	void *dev;
	if (!h)
		return -1;
	*(void **)&init = dlsym(h, "nvmlInit_v2");
	*(void **)&handle = dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
	*(void **)&list = dlsym(h, "nvmlDeviceGetComputeRunningProcesses_v3");
	if (!init || !handle || !list || init() != 0 || handle(0, &dev) != 0)
		return -1;
	static unsigned char buf[64][32];
	int n = 2000;
	double t0 = now();
	for (int i = 0; i < n; i++) {
		unsigned c = 64;
		list(dev, &c, buf);
	}
	return (now() - t0) / n;
}

int main(int argc, char **argv)
{
	const char *n = getenv("ALLOC_BENCH_PAIRS");
	if (n && atoi(n) > 0)
		pairs = atoi(n);
	if (warmup > pairs)
		warmup = pairs;
	if (argc > 1 && !strcmp(argv[1], "measure"))
		return measure();
	if (argc > 1 && !strcmp(argv[1], "hold"))
		return hold();
	char lib[8192];
	library_path(argc, argv, lib, sizeof lib);
	const char *tmp = getenv("TMPDIR");
	snprintf(record_dir, sizeof record_dir, "%s/alloc_bench.XXXXXX",
	         tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(record_dir)) {
		perror("alloc_bench: mkdtemp");
		return 1;
	}
	/* Where members hand over their records, as vramctl run binds it
	 * (src/common/record.h): without it they leave themselves out and the
	 * recording rows would measure nothing. The records are never read. */
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int rs = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (rs < 0 ||
	    snprintf(sa.sun_path, sizeof sa.sun_path, "%s/%s", record_dir, VR_REC_SOCKET) >=
	        (int)sizeof sa.sun_path ||
	    bind(rs, (struct sockaddr *)&sa, sizeof sa) != 0) {
		perror("alloc_bench: the records' socket");
		return 1;
	}
	/* The device books of these runs alone (not /dev/shm's). */
	char books[4200];
	snprintf(books, sizeof books, "%s/devices", record_dir);
	if (mkdir(books, 0700) == 0)
		setenv("VRAMCTL_DEVICE_DIR", books, 1);
	double d1, d4, i1, i4, c1, c4, s1, s4, h1, h4, t1, t4, r1, r4, k1, k4, n1, n4, a1, a4;
	double g1 = -1, g4 = -1, b1 = -1, b4 = -1;
	int same_d, same_i, same_c, same_s, same_h, same_x;
	if (spawn(NULL, NULL, NULL, NULL, &d1, &d4, &same_d) ||
	    spawn(lib, NULL, NULL, NULL, &i1, &i4, &same_i) ||
	    spawn(lib, "1T", NULL, NULL, &c1, &c4, &same_c) ||
	    spawn(lib, "1T", "1T", NULL, &s1, &s4, &same_s) ||
	    spawn(lib, "1", "1T", NULL, &h1, &h4, &same_h) ||
	    spawn(lib, "1T", NULL, "trace", &t1, &t4, &same_x) ||
	    spawn(lib, "1T", NULL, "report", &r1, &r4, &same_x) ||
	    spawn(lib, "1T", NULL, "report,stacks", &k1, &k4, &same_x) ||
	    spawn_counting(lib, "200M", NULL, NULL, "card", &n1, &n4, &same_x) ||
	    spawn_counting(lib, "200M", NULL, NULL, "allocations", &a1, &a4, &same_x)) {
		fprintf(stderr, "alloc_bench: a measuring run failed (driver found? %s)\n", lib);
		return 1;
	}
	/* Guarantees: with NVML only (a borrow asks it the card's free memory). */
	int in = -1;
	pid_t holder;
	if (nvml_list_ns() >= 0 &&
	    (spawn_guaranteed(lib, "1G", &g1, &g4) != 0 || (holder = start_holder(lib, &in)) < 0 ||
	     spawn(lib, "1T", NULL, NULL, &b1, &b4, &same_x) != 0)) {
		fprintf(stderr, "alloc_bench: a guarantee's run failed\n");
		return 1;
	}
	if (in >= 0) {
		close(in);
		waitpid(holder, NULL, 0);
	}
	close(rs);
	/* The guarantees' semaphores outlive the books' files: root (who made
	 * them, the runs being root's) ends them with the vramctl beside the
	 * library. */
	char cmd[16800];
	const char *slash = strrchr(lib, '/');
	if (geteuid() == 0 && slash) {
		snprintf(cmd, sizeof cmd, "'%.*s/vramctl' guard --reclaim --device-dir '%s'",
		         (int)(slash - lib), lib, books);
		if (system(cmd) != 0)
			fprintf(stderr, "alloc_bench: %s failed\n", cmd);
	}
	/* The records' socket. */
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", record_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "alloc_bench: could not remove %s\n", record_dir);
	printf("cuMemAlloc_v2 + cuMemFree_v2 of %d bytes, %d pairs per thread, ns per pair\n", SIZE,
	       pairs);
	printf("%-10s %10s %10s %10s %10s\n", "", "1 thread", "added", "4 threads", "added");
	printf("%-10s %10.1f %10s %10.1f %10s\n", "direct", d1, "-", d4, "-");
	printf("%-10s %10.1f %+10.1f %10.1f %+10.1f  (x%.2f, x%.2f)\n", "invisible", i1, i1 - d1,
	       i4, i4 - d4, i1 / d1, i4 / d4);
	printf("%-10s %10.1f %+10.1f %10.1f %+10.1f  (x%.2f, x%.2f)\n", "capped", c1, c1 - d1, c4,
	       c4 - d4, c1 / d1, c4 / d4);
	printf("%-10s %10.1f %+10.1f %10.1f %+10.1f  (x%.2f, x%.2f; x%.2f, x%.2f of capped)\n",
	       "spill on", s1, s1 - d1, s4, s4 - d4, s1 / d1, s4 / d4, s1 / c1, s4 / c4);
	printf("%-10s %10.1f %+10.1f %10.1f %+10.1f  (x%.2f, x%.2f of a device pair, capped)\n",
	       "spilled", h1, h1 - d1, h4, h4 - d4, h1 / c1, h4 / c4);
	printf("%-10s %10.1f %+10.1f %10.1f %+10.1f  (x%.2f, x%.2f of capped)\n", "trace", t1,
	       t1 - d1, t4, t4 - d4, t1 / c1, t4 / c4);
	printf("%-10s %10.1f %+10.1f %10.1f %+10.1f  (x%.2f, x%.2f of capped)\n", "report", r1,
	       r1 - d1, r4, r4 - d4, r1 / c1, r4 / c4);
	printf("%-10s %10.1f %+10.1f %10.1f %+10.1f  (x%.2f, x%.2f of capped)\n", "stacks", k1,
	       k1 - d1, k4, k4 - d4, k1 / c1, k4 / c4);
	printf("%-10s %10.1f %+10.1f %10.1f %+10.1f  (x%.2f, x%.2f of capped)\n", "near cap", n1,
	       n1 - d1, n4, n4 - d4, n1 / c1, n4 / c4);
	printf("%-10s %10.1f %+10.1f %10.1f %+10.1f  (x%.2f, x%.2f of near cap counting "
	       "allocations)\n",
	       "near alloc", a1, a1 - d1, a4, a4 - d4, n1 / a1, n4 / a4);
	if (g1 >= 0) {
		printf("%-10s %10.1f %+10.1f %10.1f %+10.1f  (x%.2f, x%.2f of capped)\n",
		       "in guar.", g1, g1 - d1, g4, g4 - d4, g1 / c1, g4 / c4);
		printf("%-10s %10.1f %+10.1f %10.1f %+10.1f  (x%.2f, x%.2f of capped)\n",
		       "borrowing", b1, b1 - d1, b4, b4 - d4, b1 / c1, b4 / c4);
	}
	double list = nvml_list_ns();
	if (list >= 0)
		printf("one look at NVML's process list: %.0f ns (a card refresh; near the cap at "
		       "most every 20 ms, far from it when the books grow by half the margin)\n",
		       list);
	else
		printf(
		    "no NVML here: the card is not counted (the near cap row is the allocations' "
		    "path)\n");
	printf("unhooked calls (cuLaunchKernel via cuGetProcAddress) are the driver's own "
	       "pointer under the library: %s\n",
	       same_i && same_c ? "yes (zero added cost)" : "NO");
	return 0;
}
