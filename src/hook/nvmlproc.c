/*
 * nvmlproc.c - NVML for the injected library's own questions (nvmlproc.h).
 *
 * Those questions may be asked under the library's own locks (a join runs
 * under the devices lock), and loading a library must never happen under
 * them: a constructor in another thread, run under the loader's lock, may
 * be waiting for one of them. So NVML is loaded and initialised once, by a
 * short-lived thread of its own (all signals blocked), and the thread that
 * started it waits for it once, at most LOAD_WAIT_MS. Until it is ready the
 * answer is NV_LOADING; if it cannot be loaded, NV_UNUSABLE.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hook/hook.h"
#include "hook/nvmlproc.h"
#include "registry/proc.h"

#define LOAD_WAIT_MS 500

static atomic_int nvml_up;
static pthread_mutex_t up_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t up_cv = PTHREAD_COND_INITIALIZER;

static void *load_nvml(void *arg)
{
	(void)arg;
	int ok = 0;
	VR_OWN(ok = vr_nvml_init() == 0 && vr_real.nvmlInit_v2 &&
	            vr_real.nvmlDeviceGetHandleByUUID && vr_real.nvmlInit_v2() == NVML_SUCCESS);
	pthread_mutex_lock(&up_mu);
	atomic_store_explicit(&nvml_up, ok ? NV_READY : NV_UNUSABLE, memory_order_release);
	pthread_cond_broadcast(&up_cv);
	pthread_mutex_unlock(&up_mu);
	return NULL;
}

/* Starts the loader thread once, into *t: 0, or -1 (NV_UNUSABLE) when it
 * cannot be started. */
static int start_loader(pthread_t *t)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(t, NULL, load_nvml, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		atomic_store_explicit(&nvml_up, NV_UNUSABLE, memory_order_release);
	return rc == 0 ? 0 : -1;
}

int vr_nvml_ready(void)
{
	int s = atomic_load_explicit(&nvml_up, memory_order_acquire);
	if (s == NV_READY || s == NV_UNUSABLE)
		return s;
	if (s != NV_UNTRIED || !atomic_compare_exchange_strong(&nvml_up, &s, NV_LOADING))
		return atomic_load_explicit(&nvml_up, memory_order_acquire);
	/* The thread that starts the loader waits for it, once, a bounded time,
	 * and joins it when it ended in that time (a thread that ends after its
	 * process would leave what it allocated behind: dlopen's error state);
	 * else it leaves it to end on its own. */
	pthread_t t;
	if (start_loader(&t) != 0)
		return NV_UNUSABLE;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += LOAD_WAIT_MS * 1000000L;
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&up_mu);
	while ((s = atomic_load_explicit(&nvml_up, memory_order_acquire)) == NV_LOADING)
		if (pthread_cond_timedwait(&up_cv, &up_mu, &until) != 0)
			break;
	pthread_mutex_unlock(&up_mu);
	if (s == NV_LOADING)
		pthread_detach(t);
	else
		pthread_join(t, NULL);
	return atomic_load_explicit(&nvml_up, memory_order_acquire);
}

int vr_nvml_list(const char *uuid, struct vr_nvml_proc **list, unsigned *n, nvmlReturn_t *rc)
{
	*list = NULL;
	*n = 0;
	*rc = NVML_ERROR_UNINITIALIZED;
	int up = vr_nvml_ready();
	if (up != NV_READY)
		return up == NV_LOADING ? NV_LOADING : NV_UNUSABLE;
	struct vr_nvml_procs_api a = {
	    .v3 = (vr_nvml_procs_fn)vr_real.nvmlDeviceGetComputeRunningProcesses_v3,
	    .v2 = (vr_nvml_procs_fn)vr_real.nvmlDeviceGetComputeRunningProcesses_v2,
	    .v1 = (vr_nvml_procs_fn)vr_real.nvmlDeviceGetComputeRunningProcesses,
	};
	nvmlDevice_t h;
	nvmlReturn_t r;
	const char *api;
	VR_OWN(r = vr_real.nvmlDeviceGetHandleByUUID(uuid, &h);
	       if (r == NVML_SUCCESS) r = vr_nvml_procs(&a, h, list, n, &api));
	*rc = r;
	return r == NVML_SUCCESS ? NV_READY : NV_UNUSABLE;
}

int vr_nvml_free(const char *uuid, uint64_t *free_b)
{
	int up = vr_nvml_ready();
	if (up != NV_READY)
		return up == NV_LOADING ? NV_LOADING : NV_UNUSABLE;
	nvmlDevice_t h;
	nvmlMemory_t mem;
	nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
	if (vr_real.nvmlDeviceGetMemoryInfo)
		VR_OWN(r = vr_real.nvmlDeviceGetHandleByUUID(uuid, &h);
		       if (r == NVML_SUCCESS) r = vr_real.nvmlDeviceGetMemoryInfo(h, &mem));
	if (r != NVML_SUCCESS)
		return NV_UNUSABLE;
	*free_b = mem.free;
	return NV_READY;
}

/* This process's PID as NVML lists it (0: not read yet), and whether NVML
 * can list it at all (not from a PID namespace of its own whose /proc shows
 * no outer PID: a container without the host's PIDs). */
static pid_t host_pid;
static int host_listable;

pid_t vr_nvml_host_pid(int *listable)
{
	pid_t p = __atomic_load_n(&host_pid, __ATOMIC_ACQUIRE);
	if (!p) {
		struct vr_proc_status ps;
		struct stat ns;
		int own_ns = stat("/proc/self/ns/pid", &ns) == 0 && ns.st_ino != VR_PID_INIT_INO;
		int l = 1;
		p = getpid();
		if (vr_proc_status(NULL, 0, &ps) == 0 && (ps.have & VR_PROC_NSPID) &&
		    ps.nspid_outer > 0) {
			p = ps.nspid_outer;
			l = !own_ns || ps.nspid_outer != ps.nspid_inner;
		}
		__atomic_store_n(&host_listable, l, __ATOMIC_RELAXED);
		__atomic_store_n(&host_pid, p, __ATOMIC_RELEASE);
	}
	if (listable)
		*listable = __atomic_load_n(&host_listable, __ATOMIC_RELAXED);
	return p;
}

static void nvmlproc_atfork_child(void)
{
	__atomic_store_n(&host_pid, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&host_listable, 0, __ATOMIC_RELAXED);
	/* The loader thread of the parent does not exist here. */
	int s = NV_LOADING;
	atomic_compare_exchange_strong(&nvml_up, &s, NV_UNTRIED);
	pthread_mutex_init(&up_mu, NULL);
	pthread_cond_init(&up_cv, NULL);
}
VR_ATFORK_CHILD(nvmlproc_atfork_child);
