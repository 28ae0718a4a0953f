/*
 * checkpoint.c - the driver's checkpoint API (cuda.h "CUDA Checkpointing",
 * drivers of CUDA 12.8 and later), as the real driver behaves: a controller
 * process acts on another process by PID, which goes through the states
 *
 *   RUNNING --Lock--> LOCKED --Checkpoint--> CHECKPOINTED
 *   CHECKPOINTED --Restore--> LOCKED --Unlock--> RUNNING
 *
 * Lock blocks every later driver call of the process until Unlock (the
 * calls in flight finish first; a timeout leaves it RUNNING); Checkpoint
 * moves its device memory to host memory and releases what it held on
 * every card (NVML no longer lists it); Restore takes it back, and fails
 * with CUDA_ERROR_OUT_OF_MEMORY, the process still CHECKPOINTED, when a
 * card has no room; a call in the wrong state is CUDA_ERROR_ILLEGAL_STATE;
 * a process holding managed or IPC memory is not checkpointed
 * (CUDA_ERROR_NOT_SUPPORTED: the real driver does not support them).
 * As on the real driver the work is done inside the target process, by a
 * thread the driver starts there (cuCheckpointProcessGetRestoreThreadId):
 *
 *   the target, at its first cuInit, makes <state dir>/ckpt-<pid> (one
 *   page, mapped), holds an OFD write lock on its byte 0 for its life (the
 *   kernel drops it at death), and starts its checkpoint thread, which
 *   sleeps on the request word (a futex on the shared mapping);
 *   a controller opens the file of the PID it names, checks the lock is
 *   held (else: no such CUDA process), takes byte 1 (one controller at a
 *   time), writes the operation, bumps the request word and waits on the
 *   done word, checking every 100 ms that the target still lives, so that
 *   a target killed mid-operation never hangs its controller.
 *
 * Test controls apply as to every entry point (VRAMSIM_FAULT=
 * cuCheckpointProcessRestore:1:CUDA_ERROR_OUT_OF_MEMORY, in the controller).
 */
#include "driver.h"

#include "common/compiler.h"
#include "common/fsize.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CKPT_MAGIC   0x31544b434d495356ull /* "VSIMCKT1" */
#define CKPT_VERSION 1
/* How long a controller waits for an operation besides Lock's own timeout:
 * a target that lives and never answers is a bug, not a hang. */
#define CKPT_BOUND_MS 60000u

enum { OP_NONE, OP_LOCK, OP_CHECKPOINT, OP_RESTORE, OP_UNLOCK };

struct ckpt_file {
	uint64_t magic;
	uint32_t version, size;
	int32_t pid, tid;
	_Atomic uint32_t state; /* CU_PROCESS_STATE_* */
	_Atomic uint32_t req;   /* bumped by a controller for each operation */
	_Atomic uint32_t done;  /* = req once the operation is answered */
	uint32_t op, timeout_ms;
	_Atomic int32_t result;
};

/* ---- the target's side ---- */

static struct {
	struct ckpt_file *f;
	int fd;
	pthread_t thread;
	int started;
} me = {.fd = -1};

/* Locked: 1 from Lock to Unlock; calls in flight, for Lock to drain. */
_Atomic int sim_ckpt_gate;
_Atomic int sim_ckpt_inflight;

static long futex(_Atomic uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)w, op, val, ts, NULL, 0);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

void sim_ckpt_blocked(void)
{
	/* Not in flight while blocked: Lock waits for the others only. */
	atomic_fetch_sub(&sim_ckpt_inflight, 1);
	for (;;) {
		int g = atomic_load(&sim_ckpt_gate);
		if (!g) {
			atomic_fetch_add(&sim_ckpt_inflight, 1);
			if (!atomic_load(&sim_ckpt_gate))
				return;
			atomic_fetch_sub(&sim_ckpt_inflight, 1);
			continue;
		}
		syscall(SYS_futex, (int *)&sim_ckpt_gate, FUTEX_WAIT_PRIVATE, g, NULL, NULL, 0);
	}
}

static void gate_open(void)
{
	atomic_store(&sim_ckpt_gate, 0);
	syscall(SYS_futex, (int *)&sim_ckpt_gate, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* LOCK: new calls block; those in flight finish within timeout_ms (0:
 * however long they take). */
static CUresult do_lock(unsigned timeout_ms)
{
	if (atomic_load(&me.f->state) != CU_PROCESS_STATE_RUNNING)
		return CUDA_ERROR_ILLEGAL_STATE;
	atomic_store(&sim_ckpt_gate, 1);
	uint64_t t0 = now_ms();
	while (atomic_load(&sim_ckpt_inflight) > 0) {
		if (timeout_ms && now_ms() - t0 >= timeout_ms) {
			gate_open();
			return CUDA_ERROR_NOT_READY;
		}
		sleep_ms(1);
	}
	atomic_store(&me.f->state, CU_PROCESS_STATE_LOCKED);
	return CUDA_SUCCESS;
}

/* Gives back (sign < 0) or takes again (sign > 0) what this process holds
 * on devices [0, n): 0, or -1 when a card has no room (nothing taken). */
static int charge_cards(int sign, int n)
{
	for (int i = 0; i < n; i++) {
		struct sim_dev *d = &g_sim.dev[i];
		if (!d->used)
			continue;
		if (sign < 0) {
			sim_card_charge(&d->card, -(int64_t)d->used, 1);
			sim_card_release_slot(&d->card);
		} else if (sim_card_charge(&d->card, (int64_t)d->used, 0) != 0) {
			charge_cards(-1, i);
			return -1;
		}
	}
	return 0;
}

/* What the real driver's checkpoint does not support (NVIDIA's
 * cuda-checkpoint: UVM and IPC memory). The real one may leave the process
 * broken when it meets them; here it stays LOCKED, as it was. */
static int unsupported(struct sim_alloc *a, void *arg)
{
	(void)arg;
	return a->kind == SIM_ALLOC_IPC ||
	       (a->kind == SIM_ALLOC_LINEAR && (a->managed || a->ipc_exported));
}

static CUresult do_checkpoint(void)
{
	if (atomic_load(&me.f->state) != CU_PROCESS_STATE_LOCKED)
		return CUDA_ERROR_ILLEGAL_STATE;
	pthread_mutex_lock(&g_sim.mu);
	CUresult rc = CUDA_SUCCESS;
	if (sim_alloc_each(unsupported, NULL)) {
		rc = CUDA_ERROR_NOT_SUPPORTED;
	} else if (sim_copy_park_all() != 0) {
		rc = CUDA_ERROR_OUT_OF_MEMORY; /* host memory for the copies */
	} else {
		charge_cards(-1, g_sim.ndev);
		atomic_store(&me.f->state, CU_PROCESS_STATE_CHECKPOINTED);
	}
	pthread_mutex_unlock(&g_sim.mu);
	return rc;
}

static CUresult do_restore(void)
{
	if (atomic_load(&me.f->state) != CU_PROCESS_STATE_CHECKPOINTED)
		return CUDA_ERROR_ILLEGAL_STATE;
	pthread_mutex_lock(&g_sim.mu);
	CUresult rc = CUDA_SUCCESS;
	if (charge_cards(1, g_sim.ndev) != 0) {
		rc = CUDA_ERROR_OUT_OF_MEMORY; /* a card has no room: still checkpointed */
	} else if (sim_copy_unpark_all() != 0) {
		charge_cards(-1, g_sim.ndev);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		atomic_store(&me.f->state, CU_PROCESS_STATE_LOCKED);
	}
	pthread_mutex_unlock(&g_sim.mu);
	return rc;
}

static CUresult do_unlock(void)
{
	if (atomic_load(&me.f->state) != CU_PROCESS_STATE_LOCKED)
		return CUDA_ERROR_ILLEGAL_STATE;
	atomic_store(&me.f->state, CU_PROCESS_STATE_RUNNING);
	gate_open();
	return CUDA_SUCCESS;
}

static void *ckpt_thread(void *arg)
{
	struct ckpt_file *f = arg;
	uint32_t seen = atomic_load(&f->req);
	f->tid = (int32_t)syscall(SYS_gettid);
	for (;;) {
		uint32_t r = atomic_load(&f->req);
		if (r == seen) {
			futex(&f->req, FUTEX_WAIT, seen, NULL);
			continue;
		}
		seen = r;
		CUresult rc = CUDA_ERROR_INVALID_VALUE;
		switch (f->op) {
		case OP_LOCK:
			rc = do_lock(f->timeout_ms);
			break;
		case OP_CHECKPOINT:
			rc = do_checkpoint();
			break;
		case OP_RESTORE:
			rc = do_restore();
			break;
		case OP_UNLOCK:
			rc = do_unlock();
			break;
		}
		atomic_store(&f->result, rc);
		atomic_store(&f->done, r);
		futex(&f->done, FUTEX_WAKE, INT_MAX, NULL);
	}
	return NULL;
}

static int ckpt_path(char *buf, size_t len, int pid)
{
	int n = snprintf(buf, len, "%s/ckpt-%d", sim_config()->state_dir, pid);
	return n > 0 && (size_t)n < len ? 0 : -1;
}

static int ofd(int fd, int cmd, short type, off_t at)
{
	struct flock fl;
	memset(&fl, 0, sizeof fl);
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = at;
	fl.l_len = 1;
	int rc;
	while ((rc = fcntl(fd, cmd, &fl)) != 0 && errno == EINTR)
		;
	return rc != 0 ? -1 : cmd == F_OFD_GETLK ? fl.l_type != F_UNLCK : 0;
}

void sim_ckpt_start(void)
{
	char path[700];
	if (me.started || ckpt_path(path, sizeof path, (int)getpid()) != 0)
		return;
	me.started = 1;
	/* Under a file size limit below its page (ulimit -f) the file cannot
	 * be sized without SIGXFSZ, which would kill the program: a real
	 * driver keeps this state in memory and runs on. The process is then
	 * one no controller finds (as a process without CUDA). */
	if (vr_fsize_below(4096))
		return;
	int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	void *m = MAP_FAILED;
	if (ofd(fd, F_OFD_SETLK, F_WRLCK, 0) != 0 || ftruncate(fd, 4096) != 0 ||
	    (m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		sim_warn("checkpoint: cannot set up %s: %s", path, strerror(errno));
		close(fd);
		return;
	}
	struct ckpt_file *f = m;
	memset(f, 0, sizeof *f);
	f->version = CKPT_VERSION;
	f->size = sizeof *f;
	f->pid = (int32_t)getpid();
	atomic_store(&f->state, CU_PROCESS_STATE_RUNNING);
	f->magic = CKPT_MAGIC;
	me.f = f;
	me.fd = fd;
	/* The driver's own thread: it must never run the program's signal
	 * handlers. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&me.thread, NULL, ckpt_thread, f) == 0)
		pthread_detach(me.thread);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void sim_ckpt_after_fork(void)
{
	/* The parent's file and thread are not the child's; its lock stays
	 * the parent's (the descriptor is shared until exec closes it). */
	if (me.f)
		munmap(me.f, 4096);
	if (me.fd >= 0)
		close(me.fd);
	me.f = NULL;
	me.fd = -1;
	me.started = 0;
	atomic_store(&sim_ckpt_gate, 0);
	atomic_store(&sim_ckpt_inflight, 0);
}

/* ---- the controller's side ---- */

struct target {
	int fd;
	struct ckpt_file *f;
};

/* Opens pid's file: CUDA_SUCCESS, or CUDA_ERROR_INVALID_VALUE when pid is
 * no live CUDA process of this simulator (or not this user's). */
static CUresult target_open(int pid, struct target *t)
{
	char path[700];
	t->fd = -1;
	t->f = NULL;
	if (pid <= 0 || ckpt_path(path, sizeof path, pid) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	t->fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (t->fd < 0)
		return errno == EACCES ? CUDA_ERROR_NOT_PERMITTED : CUDA_ERROR_INVALID_VALUE;
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, 0);
	if (m == MAP_FAILED) {
		close(t->fd);
		return CUDA_ERROR_INVALID_VALUE;
	}
	t->f = m;
	if (t->f->magic != CKPT_MAGIC || t->f->version != CKPT_VERSION || t->f->pid != pid ||
	    ofd(t->fd, F_OFD_GETLK, F_WRLCK, 0) != 1) {
		munmap(m, 4096);
		close(t->fd);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

static void target_close(struct target *t)
{
	if (t->f)
		munmap(t->f, 4096);
	if (t->fd >= 0)
		close(t->fd);
}

/* One operation on pid, answered by its checkpoint thread. */
static CUresult request(int pid, uint32_t op, unsigned timeout_ms)
{
	struct target t;
	CUresult rc = target_open(pid, &t);
	if (rc != CUDA_SUCCESS)
		return rc;
	/* One controller at a time (a second waits, within the bound). */
	uint64_t t0 = now_ms();
	while (ofd(t.fd, F_OFD_SETLK, F_WRLCK, 1) != 0) {
		if (now_ms() - t0 > CKPT_BOUND_MS) {
			target_close(&t);
			return CUDA_ERROR_NOT_READY;
		}
		sleep_ms(1);
	}
	t.f->op = op;
	t.f->timeout_ms = timeout_ms;
	uint32_t r = atomic_fetch_add(&t.f->req, 1) + 1;
	futex(&t.f->req, FUTEX_WAKE, INT_MAX, NULL);
	uint64_t bound = (uint64_t)CKPT_BOUND_MS + timeout_ms;
	rc = CUDA_ERROR_UNKNOWN;
	for (;;) {
		uint32_t d = atomic_load(&t.f->done);
		if (d == r) {
			rc = atomic_load(&t.f->result);
			break;
		}
		if (ofd(t.fd, F_OFD_GETLK, F_WRLCK, 0) != 1) {
			rc = CUDA_ERROR_INVALID_VALUE; /* the target died */
			break;
		}
		if (now_ms() - t0 > bound)
			break;
		struct timespec slice = {0, 100 * 1000000L};
		futex(&t.f->done, FUTEX_WAIT, d, &slice);
	}
	ofd(t.fd, F_OFD_SETLK, F_UNLCK, 1);
	target_close(&t);
	return rc;
}

CUresult simi_cuCheckpointProcessGetState(int pid, CUprocessState *state)
{
	struct target t;
	if (!state)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = target_open(pid, &t);
	if (rc == CUDA_SUCCESS)
		*state = (CUprocessState)atomic_load(&t.f->state);
	target_close(&t);
	return rc;
}

CUresult simi_cuCheckpointProcessGetRestoreThreadId(int pid, int *tid)
{
	struct target t;
	if (!tid)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = target_open(pid, &t);
	if (rc == CUDA_SUCCESS)
		*tid = t.f->tid;
	target_close(&t);
	return rc;
}

CUresult simi_cuCheckpointProcessLock(int pid, CUcheckpointLockArgs *args)
{
	return request(pid, OP_LOCK, args ? args->timeoutMs : 0);
}

CUresult simi_cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs *args)
{
	(void)args;
	return request(pid, OP_CHECKPOINT, 0);
}

/* Restore needs the driver ready in the caller: persistence mode on every
 * card, or cuInit called (cuda.h). */
CUresult simi_cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs *args)
{
	const struct sim_config *cfg = sim_config();
	int persistent = 1;
	for (int i = 0; i < cfg->ndev; i++)
		persistent &= cfg->dev[i].persistence != 0;
	if (!persistent && sim_check_init() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (args && args->gpuPairsCount)
		return CUDA_ERROR_NOT_SUPPORTED; /* remapping GPUs: not simulated */
	return request(pid, OP_RESTORE, 0);
}

CUresult simi_cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs *args)
{
	(void)args;
	return request(pid, OP_UNLOCK, 0);
}
