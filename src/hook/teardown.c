/*
 * teardown.c - the registry's probe (registry/held.c): does NVML still list
 * a dead member's process on a GPU, while the driver tears its contexts
 * down? Asked only on the reclaim path (a denial, a join) when a member
 * that has been reaped still holds bytes, so programs that never meet one
 * never load NVML for it.
 *
 * That path may run under the library's own locks (a join runs under the
 * devices lock), and loading a library must never happen under them: a
 * constructor in another thread, run under the loader's lock, may be
 * waiting for one of them. So NVML is loaded and initialised once, by a
 * short-lived thread of its own (all signals blocked), and the thread
 * that started it waits for it once, at most LOAD_WAIT_MS. Until it is ready the answer is
 * "listed" (the member's share stays held: the registry's bound still
 * applies); if it cannot be loaded, "cannot tell" (reaped = gone).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "common/nvml_procs.h"
#include "common/size.h"
#include "hook/hook.h"
#include "hook/teardown.h"

#define LOAD_WAIT_MS 500

enum { NV_UNTRIED, NV_READY, NV_LOADING, NV_UNUSABLE };
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

/* Starts the loader thread once; NV_UNUSABLE if it cannot be started. */
static void start_loader(void)
{
	pthread_attr_t a;
	pthread_t t;
	sigset_t all, old;
	int rc = pthread_attr_init(&a);
	if (rc == 0) {
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		rc = pthread_create(&t, &a, load_nvml, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&a);
	}
	if (rc != 0)
		atomic_store_explicit(&nvml_up, NV_UNUSABLE, memory_order_release);
}

/* NV_READY, NV_LOADING (still loading after the wait) or NV_UNUSABLE. */
static int nvml_ready(void)
{
	int s = atomic_load_explicit(&nvml_up, memory_order_acquire);
	if (s == NV_READY || s == NV_UNUSABLE)
		return s;
	if (s != NV_UNTRIED || !atomic_compare_exchange_strong(&nvml_up, &s, NV_LOADING))
		return atomic_load_explicit(&nvml_up, memory_order_acquire);
	/* The thread that starts the loader waits for it, once, a bounded time. */
	start_loader();
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
	return atomic_load_explicit(&nvml_up, memory_order_acquire);
}

static int listed(int32_t pid, const unsigned char uuid[VR_UUID_LEN])
{
	int up = nvml_ready();
	if (up == NV_LOADING)
		return 1; /* not known yet: held for now */
	if (up != NV_READY)
		return -1;
	char text[48];
	vr_format_uuid(uuid, text, sizeof text);
	struct vr_nvml_procs_api a = {
	    .v3 = (vr_nvml_procs_fn)vr_real.nvmlDeviceGetComputeRunningProcesses_v3,
	    .v2 = (vr_nvml_procs_fn)vr_real.nvmlDeviceGetComputeRunningProcesses_v2,
	    .v1 = (vr_nvml_procs_fn)vr_real.nvmlDeviceGetComputeRunningProcesses,
	};
	nvmlDevice_t h;
	nvmlReturn_t r;
	struct vr_nvml_proc *list = NULL;
	unsigned n = 0;
	const char *api;
	VR_OWN(r = vr_real.nvmlDeviceGetHandleByUUID(text, &h);
	       if (r == NVML_SUCCESS) r = vr_nvml_procs(&a, h, &list, &n, &api));
	if (r != NVML_SUCCESS)
		return -1;
	int found = 0;
	for (unsigned i = 0; i < n && !found; i++)
		found = list[i].pid == (unsigned)pid;
	free(list);
	return found;
}

static void say(const char *line)
{
	vr_log(VR_LOG_WARN, "%s", line);
}

static const struct vr_gpu_probe probe = {.listed = listed, .say = say};

void vr_teardown_setup(void)
{
	vr_gpu_probe_set(&probe);
}

static void teardown_atfork_child(void)
{
	/* The loader thread of the parent does not exist here. */
	int s = NV_LOADING;
	atomic_compare_exchange_strong(&nvml_up, &s, NV_UNTRIED);
	pthread_mutex_init(&up_mu, NULL);
	pthread_cond_init(&up_cv, NULL);
}
VR_ATFORK_CHILD(teardown_atfork_child);
