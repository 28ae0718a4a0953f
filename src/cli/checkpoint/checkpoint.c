/*
 * checkpoint.c - libexec/vramctl-checkpoint, the controller the injected
 * library starts to park or restore its own process with the driver's
 * checkpoint API (hook/ckpt.c): the API acts on another PID.
 *
 *   vramctl-checkpoint park PID LOCK_MS     lock PID's driver calls (those
 *                                           in flight drain within LOCK_MS),
 *                                           then checkpoint it; unlocked
 *                                           again if the checkpoint fails
 *   vramctl-checkpoint restore PID [0]      restore it, then unlock it
 *   vramctl-checkpoint state PID            its state (0 running, 1 locked,
 *                                           2 checkpointed, 3 failed)
 *
 * One line on stdout: "ok", "state N", or "fail STEP: cuCheckpointProcessX
 * returned NAME (N)"; exit status 0 or 1. It loads the driver the library
 * uses (VRAMCTL_DRIVER, else libcuda.so.1) and carries vramctl's mark, so
 * the library stays out of it (src/cli/self.c).
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_api.h"

__attribute__((visibility("default"), used)) const char vramctl_cli_v1[] = "vramctl";

static vr_pfn_cuGetErrorName name_of;

static void say_fail(const char *step, const char *fn, CUresult rc)
{
	const char *n = NULL;
	if (!name_of || name_of(rc, &n) != CUDA_SUCCESS || !n)
		n = "an unknown error";
	printf("fail %s: %s returned %s (%d)\n", step, fn, n, (int)rc);
}

int main(int argc, char **argv)
{
	/* The library blocks every signal around the start. */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3) {
		printf("fail usage: vramctl-checkpoint park|restore|state PID [LOCK_MS]\n");
		return 1;
	}
	const char *drv = getenv("VRAMCTL_DRIVER");
	void *h = dlopen(drv && *drv ? drv : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("fail driver: cannot load the CUDA driver: %s\n", dlerror());
		return 1;
	}
	vr_pfn_cuInit init;
	vr_pfn_cuCheckpointProcessLock lock;
	vr_pfn_cuCheckpointProcessCheckpoint ckpt;
	vr_pfn_cuCheckpointProcessRestore restore;
	vr_pfn_cuCheckpointProcessUnlock unlock;
	vr_pfn_cuCheckpointProcessGetState state;
	*(void **)&init = dlsym(h, "cuInit");
	*(void **)&name_of = dlsym(h, "cuGetErrorName");
	*(void **)&lock = dlsym(h, "cuCheckpointProcessLock");
	*(void **)&ckpt = dlsym(h, "cuCheckpointProcessCheckpoint");
	*(void **)&restore = dlsym(h, "cuCheckpointProcessRestore");
	*(void **)&unlock = dlsym(h, "cuCheckpointProcessUnlock");
	*(void **)&state = dlsym(h, "cuCheckpointProcessGetState");
	if (!init || !lock || !ckpt || !restore || !unlock || !state) {
		printf(
		    "fail driver: the driver has no checkpoint API (cuCheckpointProcess*: drivers "
		    "of CUDA 12.8 and later, Linux)\n");
		return 1;
	}
	int pid = atoi(argv[2]);
	CUresult rc;
	if (!strcmp(argv[1], "state")) {
		CUprocessState s = 0;
		if ((rc = state(pid, &s)) != CUDA_SUCCESS) {
			say_fail("state", "cuCheckpointProcessGetState", rc);
			return 1;
		}
		printf("state %d\n", (int)s);
		return 0;
	}
	if (!strcmp(argv[1], "park")) {
		CUcheckpointLockArgs la;
		memset(&la, 0, sizeof la);
		la.timeoutMs = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 5000;
		if ((rc = lock(pid, &la)) != CUDA_SUCCESS) {
			say_fail("lock", "cuCheckpointProcessLock", rc);
			return 1;
		}
		if ((rc = ckpt(pid, NULL)) != CUDA_SUCCESS) {
			say_fail("checkpoint", "cuCheckpointProcessCheckpoint", rc);
			unlock(pid, NULL);
			return 1;
		}
		printf("ok\n");
		return 0;
	}
	if (!strcmp(argv[1], "restore")) {
		/* Restore needs the driver ready in its caller (persistence
		 * mode, or cuInit). */
		if ((rc = init(0)) != CUDA_SUCCESS) {
			say_fail("restore", "cuInit", rc);
			return 1;
		}
		if ((rc = restore(pid, NULL)) != CUDA_SUCCESS) {
			say_fail("restore", "cuCheckpointProcessRestore", rc);
			return 1;
		}
		if ((rc = unlock(pid, NULL)) != CUDA_SUCCESS) {
			say_fail("unlock", "cuCheckpointProcessUnlock", rc);
			return 1;
		}
		printf("ok\n");
		return 0;
	}
	printf("fail usage: unknown action %s\n", argv[1]);
	return 1;
}
