/*
 * ckpt.c - the driver's checkpoint API for this process, asked of the
 * helper libexec/vramctl-checkpoint (ckpt.h).
 *
 * The helper is started with clone(2) sharing nothing but the memory until
 * it execs (as vfork does), with no exit signal: the program never gets a
 * SIGCHLD for it, and a program that reaps every child (waitpid(-1)) never
 * reaps it (only __WALL waits for such a child). All signals are blocked
 * around the clone, so that none of the program's handlers runs on the
 * child's stack; the helper unblocks them. It answers one line on a pipe;
 * a helper that does not answer within the bound is killed (a restore has
 * hung hosts when its target was killed under it: cuda-checkpoint #53).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "hook/ckpt.h"
#include "hook/hook.h"

extern char **environ;

/* How long the helper has for an operation: the driver moves gigabytes
 * between the card and the host (seconds each) and a restore may wait for
 * the card. */
#define VR_CKPT_BOUND_MS 120000

static pthread_once_t found_once = PTHREAD_ONCE_INIT;
static char helper_path[PATH_MAX];
static char helper_why[256];

/* Beside the library: the build tree's libexec/, else the installed
 * libexec/vramctl/ of PREFIX/lib/vramctl or PREFIX/lib/<triplet>/vramctl. */
static void find_helper(void)
{
	static const char *const rel[] = {
	    "libexec/vramctl-checkpoint",
	    "../../libexec/vramctl/vramctl-checkpoint",
	    "../../../libexec/vramctl/vramctl-checkpoint",
	};
	Dl_info di;
	if (!dladdr((void *)find_helper, &di) || !di.dli_fname) {
		snprintf(helper_why, sizeof helper_why, "the library cannot tell where it is");
		return;
	}
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", di.dli_fname);
	char *slash = strrchr(dir, '/');
	if (!slash) {
		snprintf(helper_why, sizeof helper_why,
		         "the library's path %.160s has no directory", di.dli_fname);
		return;
	}
	*slash = '\0';
	for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
		char p[PATH_MAX + 64];
		snprintf(p, sizeof p, "%s/%s", dir, rel[i]);
		if (access(p, X_OK) == 0 && strlen(p) < sizeof helper_path) {
			strcpy(helper_path, p);
			return;
		}
	}
	snprintf(helper_why, sizeof helper_why,
	         "vramctl-checkpoint is not installed beside the library (%.160s)", dir);
}

int vr_ckpt_helper(const char **path, char *why, size_t len)
{
	pthread_once(&found_once, find_helper);
	if (!helper_path[0]) {
		snprintf(why, len, "%s", helper_why);
		return -1;
	}
	*path = helper_path;
	return 0;
}

struct child {
	const char *path;
	char *const *argv;
	int out; /* the pipe's writing end: the helper's stdout */
};

/* In the clone: only system calls until execve (the memory is the
 * program's). */
static int child_main(void *arg)
{
	const struct child *c = arg;
	if (dup2(c->out, 1) < 0)
		_exit(126);
	execve(c->path, c->argv, environ);
	_exit(127);
}

/* Runs the helper with action for this process; its line into out. 0, or
 * -1 with why. */
static int run_helper(const char *action, unsigned lock_ms, char *out, size_t outlen, char *why,
                      size_t len)
{
	const char *path;
	if (vr_ckpt_helper(&path, why, len) != 0)
		return -1;
	char pid[24], ms[24];
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	snprintf(ms, sizeof ms, "%u", lock_ms);
	char *argv[] = {(char *)"vramctl-checkpoint", (char *)action, pid, ms, NULL};
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0) {
		snprintf(why, len, "no pipe for the helper: %s", strerror(errno));
		return -1;
	}
	size_t stack_size = 64 * 1024;
	char *stack =
	    mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (stack == MAP_FAILED) {
		close(p[0]);
		close(p[1]);
		snprintf(why, len, "no memory for the helper");
		return -1;
	}
	struct child c = {path, argv, p[1]};
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* No exit signal (the low byte 0): no SIGCHLD for the program. */
	pid_t kid = clone(child_main, stack + stack_size, CLONE_VM | CLONE_VFORK, &c);
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	munmap(stack, stack_size);
	close(p[1]);
	if (kid < 0) {
		close(p[0]);
		snprintf(why, len, "cannot start %s: %s", path, strerror(e));
		return -1;
	}
	size_t got = 0;
	uint64_t end = vr_mono_ns() / 1000000 + VR_CKPT_BOUND_MS + lock_ms;
	for (;;) {
		uint64_t now = vr_mono_ns() / 1000000;
		struct pollfd pf = {.fd = p[0], .events = POLLIN};
		int left = now < end ? (int)(end - now) : 0;
		int pr = poll(&pf, 1, left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			kill(kid, SIGKILL);
			break;
		}
		ssize_t n = read(p[0], out + got, outlen - 1 - got);
		if (n <= 0 || (got += (size_t)n) >= outlen - 1)
			break;
	}
	out[got] = '\0';
	out[strcspn(out, "\n")] = '\0';
	close(p[0]);
	int st = 0;
	while (waitpid(kid, &st, __WALL) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(st)) {
		snprintf(why, len, "the checkpoint helper did not answer within %d s (killed)",
		         (VR_CKPT_BOUND_MS + (int)lock_ms) / 1000);
		return -1;
	}
	if (WEXITSTATUS(st) == 127 || WEXITSTATUS(st) == 126) {
		snprintf(why, len, "cannot run %s", path);
		return -1;
	}
	if (strncmp(out, "ok", 2) != 0) {
		snprintf(why, len, "%s", out[0] ? out : "the checkpoint helper said nothing");
		return -1;
	}
	return 0;
}

int vr_ckpt_park(unsigned lock_ms, char *why, size_t len)
{
	char out[256];
	return run_helper("park", lock_ms, out, sizeof out, why, len);
}

int vr_ckpt_restore(char *why, size_t len, int *no_room)
{
	char out[256];
	*no_room = 0;
	int rc = run_helper("restore", 0, out, sizeof out, why, len);
	if (rc != 0 && strstr(why, "CUDA_ERROR_OUT_OF_MEMORY"))
		*no_room = 1;
	return rc;
}
