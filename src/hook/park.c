/*
 * park.c - parking (park.h; docs/architecture.md, "Parking").
 *
 * The idle clock costs nothing on the driver calls of a busy program: a
 * thread of the library's own (the agent, started at the first driver
 * call of a process with --park-idle) shuts the gate in front of every
 * driver call (gate.h) and notes when; the first call through it opens it
 * again (one slow call) and the agent shuts it once more a little later.
 * A gate that stays shut for the idle time means no driver call came:
 * the process is idle. Then, in order:
 *
 *   1. the gate goes from the probe to parking in one compare-and-swap, so
 *      a call that trips the probe at that moment either keeps the process
 *      running or waits at the gate; every later call waits at the gate;
 *   2. the group's park budget is reserved (park.c of the registry), and
 *      the host's free memory checked;
 *   3. the checkpoint helper (ckpt.h) locks the process's driver calls (any
 *      in flight drain first) and checkpoints it: the card no longer holds
 *      anything for it;
 *   4. its bytes leave the group's books (waiters are woken: the room is
 *      theirs) and it is marked parked.
 *
 * A driver call that then reaches the gate brings the process back before
 * it goes on: its bytes are reserved in the group's books again (waiting
 * for room as --wait does, up to its time or 60 s), the helper restores
 * and unlocks it, and the gate opens. A restore that fails (no room in the
 * group within the time, or on the card) fails that call with
 * CUDA_ERROR_OUT_OF_MEMORY, said; the process stays parked and the next
 * call tries again. A parked process that is killed leaves nothing
 * behind: the driver's host copy is its memory, its slot and its share of
 * the budget are reclaimed as any dead member's.
 *
 * The agent also answers `vramctl park`/`unpark` and other groups'
 * processes owed their guarantee (common/parkwire.h) on its socket. It
 * makes no driver call itself, so nothing it waits for can wait for it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/duration.h"
#include "common/parkwire.h"
#include "common/spill.h"
#include "hook/books.h"
#include "hook/ckpt.h"
#include "hook/devices.h"
#include "hook/dlreal.h"
#include "hook/gate.h"
#include "hook/guarantee_park.h"
#include "hook/nvmlproc.h"
#include "hook/park.h"
#include "hook/record.h"
#include "hook/wait.h"

/* How long the driver's lock waits for the calls in flight to finish. */
#define VR_PARK_LOCK_MS 5000u
/* A restore waits for room this long without --wait (never forever). */
#define VR_RESTORE_WAIT_MS VR_WAIT_DEFAULT_MS

enum { PK_RUNNING, PK_PARKING, PK_PARKED, PK_RESTORING };
/* The gate: open, shut for the idle probe, shut while parked (or being
 * parked or restored). */
enum { GATE_OPEN, GATE_PROBE, GATE_PARK };

static struct {
	_Atomic int state;            /* PK_*: a futex word (this process) */
	_Atomic int gate;             /* GATE_* */
	_Atomic uint64_t armed_ns;    /* CLOCK_MONOTONIC the probe was shut (while GATE_PROBE) */
	_Atomic uint64_t armed_rt;    /* the same moment, CLOCK_REALTIME ns, for monitors */
	pthread_mutex_t mu;           /* one park or restore at a time */
	uint64_t out[VR_MAX_DEVICES]; /* bytes parked, by the group's device index */
	uint64_t host;                /* their sum: held against the park budget */
	uint64_t parked_ns;
	int lfd;          /* the socket */
	atomic_int agent; /* 1 once the agent runs */
	atomic_int armed; /* vr_park_arm ran with parking on */
	pthread_t agent_thread;
	char never[200]; /* why it can never be parked ("" when it can) */
	atomic_int said_never;
} pk = {.mu = PTHREAD_MUTEX_INITIALIZER, .lfd = -1};

static void wake_all(void)
{
	syscall(SYS_futex, (int *)&pk.state, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void set_state(int s)
{
	atomic_store(&pk.state, s);
	wake_all();
}

/* Opens the gate: the process runs as if it had no gate. */
static void open_gate(void)
{
	atomic_store(&pk.gate, GATE_OPEN);
	vr_gate_open();
}

/* ---- can it be parked at all? ------------------------------------------ */

/* Does an object loaded in the process call the driver directly (linked
 * with libcuda.so.1)? Those calls pass no gate: parked, they would wait
 * in the driver for a restore nobody asks for. 1 and its name in *who. */
struct linked {
	const char *who;
	void *self, *driver;
};
static int links_driver(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct linked *l = arg;
	const ElfW(Dyn) *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	if (!dyn)
		return 0;
	uintptr_t strtab = 0;
	for (const ElfW(Dyn) *e = dyn; e->d_tag != DT_NULL; e++)
		if (e->d_tag == DT_STRTAB)
			strtab = e->d_un.d_ptr;
	if (!strtab)
		return 0;
	/* The loader relocates the dynamic section of most objects; where it
	 * did not, the address is the object's own. */
	if (strtab < info->dlpi_addr)
		strtab += info->dlpi_addr;
	for (const ElfW(Dyn) *e = dyn; e->d_tag != DT_NULL; e++) {
		if (e->d_tag != DT_NEEDED)
			continue;
		const char *n = (const char *)(strtab + e->d_un.d_val);
		if (!strcmp(n, "libcuda.so.1") || !strcmp(n, "libcuda.so")) {
			l->who =
			    info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "the program";
			return 1;
		}
	}
	return 0;
}

/* A device this process uses whose bytes are in no group's books (its
 * own books, or no cap there): parked, its host copy would be bounded by
 * no park budget. NULL when there is none. */
static const struct vr_dev *outside_books(void)
{
	static const struct vr_dev none = {.ordinal = -1};
	vr_member *m = vr_books_member_now();
	if (!m || vr_damaged(m))
		return &none;
	int n = atomic_load(&vr__ndev);
	for (int i = 0; i < n; i++)
		if (atomic_load(&vr__devs[i].ready) && vr__devs[i].reg < 0)
			return &vr__devs[i];
	return NULL;
}

/* The first thing the process used that a checkpoint does not support. */
static _Atomic(const char *) unsupported;

void vr_park_unsupported(const char *what)
{
	const char *none = NULL;
	if (!atomic_load_explicit(&unsupported, memory_order_relaxed))
		atomic_compare_exchange_strong(&unsupported, &none, what);
}

/* Why this process cannot be parked now, into why; 0 when it can. */
static int cannot_park(char *why, size_t len)
{
	const char *helper;
	struct linked l = {0};
	const struct vr_dev *o = outside_books();
	const char *u = atomic_load(&unsupported);
	if (u) {
		snprintf(why, len,
		         "it used %s, which the driver's checkpoint does not support (a checkpoint "
		         "that meets it fails and may leave the process broken)",
		         u);
		return 1;
	}
	if (o) {
		if (o->ordinal < 0)
			snprintf(why, len,
			         "it keeps its own books (its group's could not be used), so no "
			         "group's park budget bounds its host copy");
		else
			snprintf(
			    why, len,
			    "its memory on GPU %d is in no group's books (its own books, or no "
			    "cap there), so no park budget bounds its host copy",
			    o->ordinal);
		return 1;
	}
	if (vr_g.driver && !vr_dlsym_real(vr_g.driver, "cuCheckpointProcessCheckpoint")) {
		snprintf(why, len,
		         "the driver has no checkpoint API (cuCheckpointProcess*: drivers for CUDA "
		         "12.8 and later)");
		return 1;
	}
	if (!vr_gate_complete()) {
		snprintf(why, len, "it looked up more driver entry points than its gate holds");
		return 1;
	}
	if (dl_iterate_phdr(links_driver, &l)) {
		snprintf(
		    why, len,
		    "%s is linked with the CUDA driver and calls it directly, past the gate: a "
		    "call made while parked would wait in the driver",
		    l.who);
		return 1;
	}
	return vr_ckpt_helper(&helper, why, len) != 0;
}

/* ---- parking and restoring --------------------------------------------- */

/* The devices this process holds memory on in its group's books. */
static struct vr_dev *dev_of_reg(int reg)
{
	int n = atomic_load(&vr__ndev);
	for (int i = 0; i < n; i++)
		if (atomic_load(&vr__devs[i].ready) && vr__devs[i].reg == reg)
			return &vr__devs[i];
	return NULL;
}

/* Parks this process now, if it has been idle min_ms at least. 0 with
 * *bytes (what it held on the card: on dev_reg's device when >= 0, else
 * all), or -1 with why. Agent thread only. */
static int park_now(uint64_t min_ms, int dev_reg, uint64_t *bytes, char *why, size_t len)
{
	vr_member *m = vr_books_member_now();
	*bytes = 0;
	pthread_mutex_lock(&pk.mu);
	int rc = -1;
	uint64_t now = vr_mono_ns(), armed = atomic_load(&pk.armed_ns);
	if (atomic_load(&pk.state) != PK_RUNNING) {
		snprintf(why, len, "it is parked already");
	} else if (atomic_load(&pk.gate) != GATE_PROBE || now - armed < min_ms * 1000000ull) {
		snprintf(why, len, "it is busy (a driver call within the last %s)",
		         vr_format_duration(min_ms, (char[32]){0}, 32));
	} else if (cannot_park(why, len)) {
		/* why says it */
	} else {
		uint64_t held = vr_park_held(m), parked = 0, budget = 0;
		uint64_t avail = vr_host_available();
		char a[32], b[32];
		int br = held ? vr_park_reserve(m, held, &parked, &budget) : 0;
		if (br == -ENOSPC) {
			snprintf(
			    why, len,
			    "the group's park budget is %s and its parked members hold %s of it "
			    "(%s more needed)",
			    vr_format_size(budget, a, sizeof a),
			    vr_format_size(parked, b, sizeof b),
			    vr_format_size(held, (char[32]){0}, 32));
		} else if (br != 0) {
			snprintf(why, len, "its group's books cannot hold a park (%s)",
			         strerror(-br));
		} else if (avail && held > avail) {
			snprintf(why, len, "the host has %s free, less than the %s it would park",
			         vr_format_size(avail, a, sizeof a),
			         vr_format_size(held, b, sizeof b));
			vr_park_unreserve(m, held);
		} else {
			int probe = GATE_PROBE;
			if (!atomic_compare_exchange_strong(&pk.gate, &probe, GATE_PARK)) {
				snprintf(why, len, "it is busy (a driver call just came)");
				vr_park_unreserve(m, held);
			} else {
				set_state(PK_PARKING);
				uint64_t t0 = vr_mono_ns();
				if (vr_ckpt_park(VR_PARK_LOCK_MS, why, len) != 0) {
					vr_park_unreserve(m, held);
					set_state(PK_RUNNING);
					open_gate();
				} else {
					vr_park_out(m, pk.out);
					pk.host = held;
					pk.parked_ns = vr_mono_ns();
					for (int r = 0; r < VR_MAX_DEVICES; r++) {
						struct vr_dev *d = pk.out[r] ? dev_of_reg(r) : NULL;
						if (d)
							vr_rec_park(d, pk.out[r], pk.parked_ns - t0,
							            1);
						if (dev_reg < 0 || r == dev_reg)
							*bytes += pk.out[r];
					}
					set_state(PK_PARKED);
					rc = 0;
				}
			}
		}
	}
	pthread_mutex_unlock(&pk.mu);
	return rc;
}

/* Gives back what restore_now took again of devices [0, upto). */
static void give_back(uint64_t upto)
{
	for (uint64_t r = 0; r < upto; r++) {
		struct vr_dev *d = pk.out[r] ? dev_of_reg((int)r) : NULL;
		if (d)
			vr__books_release_own(d, pk.out[r]);
	}
}

/* Brings the process back: 0, or -1 with the line said (the process stays
 * parked). Any thread; one at a time. */
static int restore_now(const char *who)
{
	pthread_mutex_lock(&pk.mu);
	if (atomic_load(&pk.state) != PK_PARKED) {
		pthread_mutex_unlock(&pk.mu);
		return 0;
	}
	set_state(PK_RESTORING);
	uint64_t t0 = vr_mono_ns();
	uint64_t budget_ms = vr_g.wait_ms ? vr_g.wait_ms : VR_RESTORE_WAIT_MS;
	uint64_t deadline = t0 + budget_ms * 1000000ull;
	vr_member *m = vr_books_member_now();
	char why[320] = "", a[32], b[32], took[32];
	int r, no_room = 0;
	for (r = 0; r < VR_MAX_DEVICES; r++) {
		struct vr_dev *d = pk.out[r] ? dev_of_reg(r) : NULL;
		struct vr_waited w;
		if (!d || vr_park_in(m, r, pk.out[r]) == 0 ||
		    vr_wait_room_own(d, pk.out[r], deadline, &w) == 0)
			continue;
		snprintf(why, sizeof why,
		         "its group had no room for its %s on GPU %d (waited %s; cap %s)%s",
		         vr_format_size(pk.out[r], a, sizeof a), d->ordinal,
		         vr_format_duration(w.ns / 1000000, took, sizeof took),
		         vr_format_size(atomic_load(&d->cap), b, sizeof b), vr_wait_why(w.end));
		break;
	}
	if (r < VR_MAX_DEVICES) {
		give_back((uint64_t)r);
	} else if (vr_ckpt_restore(why, sizeof why, &no_room) != 0) {
		give_back(VR_MAX_DEVICES);
	} else {
		uint64_t ns = vr_mono_ns() - t0;
		for (r = 0; r < VR_MAX_DEVICES; r++) {
			struct vr_dev *d = pk.out[r] ? dev_of_reg(r) : NULL;
			if (d) {
				vr_park_back(m, r);
				vr_rec_park(d, pk.out[r], ns, 0);
			}
		}
		vr_park_end(m, pk.host);
		vr_log(VR_LOG_INFO, "restored: %s back on the GPU after %s parked (%s)",
		       vr_format_size(pk.host, a, sizeof a),
		       vr_format_duration((t0 - pk.parked_ns) / 1000000, took, sizeof took), who);
		memset(pk.out, 0, sizeof pk.out);
		pk.host = 0;
		set_state(PK_RUNNING);
		open_gate();
		pthread_mutex_unlock(&pk.mu);
		return 0;
	}
	set_state(PK_PARKED);
	pthread_mutex_unlock(&pk.mu);
	vr_log(VR_LOG_WARN,
	       "this process is parked (%s of GPU memory on the host) and could not be brought "
	       "back for %s: %s%s; the call fails with out-of-memory and the next one tries again",
	       vr_format_size(pk.host, a, sizeof a), who, why,
	       no_room ? " (the card has no room for it)" : "");
	return -1;
}

/* ---- the gate: what a driver call does when it is shut ----------------- */

static int gate_pass(void)
{
	if (atomic_load(&pk.agent) && pthread_equal(pthread_self(), pk.agent_thread))
		return 0; /* the agent makes no driver calls: never held */
	for (;;) {
		int g = atomic_load(&pk.gate);
		if (g == GATE_OPEN)
			return 0;
		if (g == GATE_PROBE) {
			/* A driver call: the process is not idle. */
			if (atomic_compare_exchange_strong(&pk.gate, &g, GATE_OPEN))
				vr_gate_open();
			continue;
		}
		int s = atomic_load(&pk.state);
		if (s == PK_PARKED) {
			if (restore_now("a driver call") != 0)
				return CUDA_ERROR_OUT_OF_MEMORY;
			continue;
		}
		if (s == PK_RUNNING) {
			/* Between the gate and the state (a park refused): look
			 * again in a moment. */
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
			continue;
		}
		struct timespec slice = {0, 100000000};
		syscall(SYS_futex, (int *)&pk.state, FUTEX_WAIT_PRIVATE, s, &slice, NULL, 0);
	}
}

/* ---- the agent ---------------------------------------------------------- */

/* The first device of the process with this UUID text, or NULL. */
static struct vr_dev *dev_of_uuid(const char *uuid)
{
	int n = atomic_load(&vr__ndev);
	for (int i = 0; i < n; i++)
		if (atomic_load(&vr__devs[i].ready) && !strcasecmp(vr__devs[i].uuid_text, uuid))
			return &vr__devs[i];
	return NULL;
}

static const char *state_word(int s)
{
	return s == PK_PARKING     ? "parking"
	       : s == PK_PARKED    ? "parked"
	       : s == PK_RESTORING ? "restoring"
	                           : "running";
}

/* One request on the socket (common/parkwire.h): the answer into out. */
static void serve(const char *req, uid_t uid, char *out, size_t len)
{
	char why[300] = "";
	uint64_t bytes = 0;
	int own = uid == getuid() || uid == 0;
	if (!strcmp(req, "state")) {
		long long idle = -1;
		if (atomic_load(&pk.gate) != GATE_OPEN)
			idle = (long long)((vr_mono_ns() - atomic_load(&pk.armed_ns)) / 1000000ull);
		snprintf(out, len, "state %s idle_ms=%lld parked=%llu",
		         state_word(atomic_load(&pk.state)), idle, (unsigned long long)pk.host);
	} else if (!strcmp(req, "park")) {
		if (!own)
			snprintf(out, len, "refused only its own user or root may park it");
		else if (park_now(VR_PARK_IDLE_MIN_MS, -1, &bytes, why, sizeof why) == 0)
			snprintf(out, len, "parked %llu", (unsigned long long)bytes);
		else
			snprintf(out, len, "refused %s", why);
	} else if (!strcmp(req, "unpark")) {
		if (!own)
			snprintf(out, len, "refused only its own user or root may unpark it");
		else if (atomic_load(&pk.state) != PK_PARKED)
			snprintf(out, len, "refused it is not parked");
		else if (restore_now("vramctl unpark") == 0)
			snprintf(out, len, "restored");
		else
			snprintf(out, len, "refused it could not be restored (its line says why)");
	} else if (!strncmp(req, "park-for ", 9)) {
		struct vr_dev *d = dev_of_uuid(req + 9);
		if (!d)
			snprintf(out, len, "refused it holds nothing on %.64s", req + 9);
		else if (!vr_gt_borrowing(d))
			snprintf(out, len, "refused its group holds only its own guarantee there");
		else if (!own && !vr_gt_owed_to_uid(d, (uint32_t)uid))
			snprintf(out, len, "refused no guarantee of uid %u there is owed memory",
			         (unsigned)uid);
		else if (park_now(VR_PARK_IDLE_MIN_MS, d->reg, &bytes, why, sizeof why) == 0)
			snprintf(out, len, "parked %llu", (unsigned long long)bytes);
		else
			snprintf(out, len, "refused %s", why);
		if (!strncmp(out, "parked", 6))
			vr_log(VR_LOG_INFO, "parked for a guarantee of uid %u on %s", (unsigned)uid,
			       req + 9);
	} else {
		snprintf(out, len, "refused unknown request");
	}
}

/* The agent's next look, in ns from now: within rearm (at most 100 ms:
 * a call that opened the gate has it shut again that soon), or when the
 * idle time ends. A look is a few loads: the agent costs nothing to
 * speak of. */
static uint64_t next_look(void)
{
	uint64_t idle = vr_g.park_idle_ms == VR_PARK_MANUAL ? 0 : vr_g.park_idle_ms * 1000000ull;
	/* Shut again soon after a call opened it: how idle the process is
	 * counts from then (one slow call per look on a busy program). */
	uint64_t rearm = idle ? idle / 8 : 100000000ull;
	rearm = rearm < 10000000ull ? 10000000ull : rearm > 100000000ull ? 100000000ull : rearm;
	if (atomic_load(&pk.gate) != GATE_PROBE || !idle)
		return rearm;
	/* Shut: a call may open it any time (then it is shut again within
	 * rearm), or the idle time ends. */
	uint64_t since = vr_mono_ns() - atomic_load(&pk.armed_ns);
	return since >= idle ? 1000000ull : idle - since < rearm ? idle - since : rearm;
}

static void look(void)
{
	vr_member *m = vr_books_member_now();
	int state = atomic_load(&pk.state);
	if (state != PK_RUNNING)
		return;
	int g = atomic_load(&pk.gate);
	if (g == GATE_OPEN) {
		/* A call came since the last look (or none was watched yet). */
		atomic_store(&pk.armed_ns, vr_mono_ns());
		atomic_store(&pk.armed_rt, vr_real_ns());
		atomic_store(&pk.gate, GATE_PROBE);
		vr_gate_shut();
		vr_idle_note(m, 0, 1);
		return;
	}
	vr_idle_note(m, atomic_load(&pk.armed_rt), 1);
	uint64_t idle = vr_g.park_idle_ms;
	if (g != GATE_PROBE || idle == VR_PARK_MANUAL ||
	    vr_mono_ns() - atomic_load(&pk.armed_ns) < idle * 1000000ull)
		return;
	char why[300], a[32], t[32];
	uint64_t bytes = 0;
	if (park_now(idle, -1, &bytes, why, sizeof why) == 0) {
		vr_log(VR_LOG_INFO,
		       "parked after %s without a driver call: %s moved to host memory",
		       vr_format_duration(idle, t, sizeof t), vr_format_size(bytes, a, sizeof a));
	} else if (cannot_park(why, sizeof why)) {
		/* For good: said once, and the agent stops looking. */
		if (!atomic_exchange(&pk.said_never, 1))
			vr_log(VR_LOG_WARN, "--park-idle: this process is never parked: %s", why);
		snprintf(pk.never, sizeof pk.never, "%.190s", why);
	} else {
		/* Refused for now (budget, host memory): said at info, and the
		 * probe goes on (next idle time). */
		vr_log(VR_LOG_INFO, "not parked after %s idle: %s",
		       vr_format_duration(idle, t, sizeof t), why);
		atomic_store(&pk.armed_ns, vr_mono_ns());
	}
}

static void *agent_main(void *arg)
{
	(void)arg;
	for (;;) {
		uint64_t wait = next_look();
		struct pollfd p = {.fd = pk.lfd, .events = POLLIN};
		int ms = (int)(wait / 1000000ull);
		int pr = poll(&p, pk.lfd >= 0 ? 1 : 0, ms ? ms : 1);
		if (pr > 0) {
			char req[VR_PARK_LINE], out[VR_PARK_LINE];
			uid_t uid;
			int cfd;
			while ((cfd = vr_park_take(pk.lfd, req, sizeof req, &uid)) >= 0) {
				serve(req, uid, out, sizeof out);
				vr_park_answer(cfd, out);
			}
		}
		if (!pk.never[0])
			look();
	}
	return NULL;
}

static pthread_once_t agent_once = PTHREAD_ONCE_INIT;

static void start_agent(void)
{
	int listable = 0;
	pid_t host = vr_nvml_host_pid(&listable);
	pk.lfd = vr_park_listen((int)host);
	if (pk.lfd < 0)
		vr_log(VR_LOG_WARN,
		       "--park-idle: no socket for `vramctl park` and guarantees (%s); idle "
		       "parking goes on",
		       strerror(-pk.lfd));
	/* Its own thread, with every signal blocked: the program's handlers
	 * never run on it. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 256 * 1024);
	if (pthread_create(&pk.agent_thread, &at, agent_main, NULL) == 0)
		atomic_store(&pk.agent, 1);
	else
		vr_log(VR_LOG_WARN,
		       "--park-idle: cannot start the thread that parks; never parked");
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* The first call through the shut gate of a process not watched yet. */
static int first_pass(void)
{
	pthread_once(&agent_once, start_agent);
	vr_gate_pass = gate_pass;
	return gate_pass();
}

void vr_park_arm(void)
{
	if (!vr_gate_armed() || atomic_exchange(&pk.armed, 1))
		return;
	/* Shut until the first driver call starts the agent (which opens
	 * it, or keeps it shut as the idle probe). */
	atomic_store(&pk.armed_ns, vr_mono_ns());
	atomic_store(&pk.gate, GATE_PROBE);
	vr_gate_pass = first_pass;
	vr_gate_shut();
}

/* ---- a guaranteed group's side ---------------------------------------- */

int vr_park_for_room(struct vr_dev *d, uint64_t bytes)
{
	if (!d || !vr_gt_owed(d))
		return 0;
	return vr_gt_park_borrowers(d, bytes);
}

/* ---- fork ---------------------------------------------------------------- */

/* The child of a fork has no agent and holds none of the parent's parked
 * memory (the driver's state is the parent's): it starts open, and a
 * driver call of its own arms it again. */
static void park_atfork_child(void)
{
	pthread_mutex_init(&pk.mu, NULL);
	if (pk.lfd >= 0)
		close(pk.lfd);
	pk.lfd = -1;
	atomic_store(&pk.state, PK_RUNNING);
	atomic_store(&pk.agent, 0);
	atomic_store(&pk.armed, 0);
	memset(pk.out, 0, sizeof pk.out);
	pk.host = 0;
	pk.never[0] = '\0';
	agent_once = (pthread_once_t)PTHREAD_ONCE_INIT;
	open_gate();
	vr_gate_pass = NULL;
}
VR_ATFORK_CHILD(park_atfork_child);
