/*
 * doctor_hook.c - the interception half of `vramctl doctor`: the injected
 * library, other preloaded libraries that replace dlsym, the self-test (a
 * child under a 64 MiB test cap reaching the driver every way real programs
 * do; its program is doctor_probe/probe.c), and the program to cap.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/doctor_hook.h"
#include "cli/fs.h"
#include "cli/libexec.h"
#include "cli/paths.h"
#include "cli/spawn.h"
#include "common/compiler.h"
#include "common/contract.h"
#include "common/exit.h"
#include "registry/jobs.h"

#define PROBE_NAME       "vramctl-doctor-probe"
#define PROBE_CAP        (64ull << 20)
#define PROBE_TIMEOUT_MS 60000

/* The machine's preload file; the setting that points doctor elsewhere for
 * tests is read with secure_getenv, and the check names the file it read. */
#define PRELOAD_FILE "/etc/ld.so.preload"
#define PRELOAD_ENV  "VRAMCTL_DOCTOR_PRELOAD_FILE"

void dr_loaded_path(void *h, const char *fallback, char *out, size_t len)
{
	struct link_map *lm = NULL;
	char real[PATH_MAX];
	const char *p = fallback;
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0])
		p = lm->l_name;
	snprintf(out, len, "%s", realpath(p, real) ? real : p);
}

/* The file a preloaded entry names, as the loader loaded it into this
 * process (every process gets the same preloads), else the path itself. */
static int preload_path(const char *entry, char *out, size_t len)
{
	void *h = dlopen(entry, RTLD_LAZY | RTLD_NOLOAD);
	if (h) {
		dr_loaded_path(h, entry, out, len);
		dlclose(h);
		return 0;
	}
	dlerror();
	if (!strchr(entry, '/') || access(entry, R_OK) != 0)
		return -1;
	snprintf(out, len, "%s", entry);
	return 0;
}

/* Looks at each entry of a preload list; appends conflicts to out. */
static void scan_preloads(const char *list, const char *where, char *out, size_t len, int *nconf,
                          int *nentries)
{
	char *copy = strdup(list), *save = NULL;
	if (!copy)
		return;
	for (char *tok = strtok_r(copy, " \t\n:", &save); tok;
	     tok = strtok_r(NULL, " \t\n:", &save)) {
		const char *base = strrchr(tok, '/');
		char path[PATH_MAX];
		base = base ? base + 1 : tok;
		(*nentries)++;
		if (!strncmp(base, "libvramctl", 10))
			continue;
		int found = preload_path(tok, path, sizeof(path)) == 0;
		/* A copy of vramctl's own library under another name is not a conflict
		 * (it carries the instance marker; the copies agree on who acts). */
		if (found && dr_elf_defines(path, "vramctl_instance_v1") == 1)
			continue;
		int defines = found ? dr_elf_defines(path, "dlsym") : 0;
		if (defines == 1 || !strcmp(base, "libvgpu.so")) {
			size_t used = strlen(out);
			snprintf(out + used, len - used, "%s%s names %s", *nconf ? "; " : "", where,
			         found ? path : tok);
			(*nconf)++;
		}
	}
	free(copy);
}

/*
 * Does the machine's preload name vramctl's library (`vramctl preload`)?
 * Either way is a working setup: said as a fact, with what follows, never
 * as a fault (a health check must not drain a node over it). And the jobs
 * directory the launchers record jobs in: an unfit one is a fault someone
 * made.
 */
static void check_machine(struct doc *d, const char *file, const char *text)
{
	char err[512];
	const char *base = strrchr(d->lib, '/');
	int on = d->lib[0] && strstr(text, d->lib) != NULL;
	int other = !on && base && strstr(text, base);
	dr_add(&d->rep, "hook.machine", -1, DR_OK, NULL,
	       on      ? "%s names the library: every program that uses the driver loads it; a "
	                 "process of a capped job that clears its environment stays capped"
	       : other ? "%s names another vramctl library than %s: vramctl preload enable "
	                 "replaces it"
	               : "%s does not name the library: a process of a capped job that clears "
	                 "its environment is counted against its job (vramctl run, the Slurm "
	                 "plugin), not capped; vramctl preload enable (root) caps it",
	       file, d->lib);
	int rc = vr_jobs_check(NULL, err, sizeof err);
	if (rc == 0)
		dr_add(&d->rep, "jobs.dir", -1, DR_OK, NULL,
		       "%s: launchers record their jobs there (a process finds its job without its "
		       "environment)",
		       vr_jobs_dir(NULL));
	else if (rc == -ENOENT)
		dr_add(&d->rep, "jobs.dir", -1, DR_OK, NULL,
		       "%s is not there: a root launcher or vramctl preload enable makes it; until "
		       "then a user's run is watched, not recorded",
		       vr_jobs_dir(NULL));
	else
		dr_add(
		    &d->rep, "jobs.dir", -1, DR_WARN,
		    "remove it (root); vramctl preload enable or the next root run makes it anew",
		    "%s", err);
}

void dr_check_preload(struct doc *d)
{
	const char *file = secure_getenv(PRELOAD_ENV);
	const char *env = getenv("LD_PRELOAD");
	char text[4096] = "", conf[1024] = "";
	int nconf = 0, nenv = 0, nfile = 0, have_file = 0;
	if (!file || !*file)
		file = PRELOAD_FILE;
	FILE *f = fopen(file, "re");
	if (f) {
		size_t n = fread(text, 1, sizeof(text) - 1, f);
		text[n] = '\0';
		fclose(f);
		have_file = 1;
	}
	if (env)
		scan_preloads(env, "LD_PRELOAD", conf, sizeof(conf), &nconf, &nenv);
	scan_preloads(text, file, conf, sizeof(conf), &nconf, &nfile);
	if (nconf)
		dr_add(&d->rep, "hook.preload", -1, DR_FAIL,
		       "remove it from LD_PRELOAD or from the preload file (root); for HAMi-core's "
		       "libvgpu.so set CUDA_DISABLE_CONTROL=true",
		       "%s, which also replaces dlsym: whichever comes first decides what programs "
		       "get, and vramctl can be bypassed",
		       conf);
	else
		dr_add(&d->rep, "hook.preload", -1, DR_OK, NULL,
		       "no other preloaded library replaces dlsym (LD_PRELOAD: %d entr%s; %s: %s%d "
		       "entr%s)",
		       nenv, nenv == 1 ? "y" : "ies", file, have_file ? "" : "not there, ", nfile,
		       nfile == 1 ? "y" : "ies");
	check_machine(d, file, text);
}

void dr_check_library(struct doc *d)
{
	char err[PATH_MAX + 200];
	if (cli_find_library(d->lib, sizeof(d->lib), err, sizeof(err)) < 0) {
		d->lib[0] = '\0';
		dr_add(&d->rep, "hook.library", -1, DR_FAIL,
		       "reinstall vramctl (make install), or set VRAMCTL_LIBRARY", "%s", err);
		return;
	}
	dr_add(&d->rep, "hook.library", -1, DR_OK, NULL, "%s", d->lib);
}

/*
 * The contract the test program runs under is set in this process's
 * environment just around the fork and put back right after, so the child
 * only has to exec (the driver's threads may hold locks at the fork).
 */
static const char *const probe_vars[] = {VR_ENV_LIMIT, VR_ENV_REGISTRY_DIR, VR_ENV_GROUP,
                                         VR_ENV_LOG,   VR_ENV_GROWTH,       VR_ENV_COUNT,
                                         "LD_PRELOAD"};
#define NPROBE_VARS (sizeof(probe_vars) / sizeof(probe_vars[0]))

/* Saves the variables (NULL: unset). 0, or -1 when memory ran out. */
static int env_save(char *saved[NPROBE_VARS])
{
	for (size_t i = 0; i < NPROBE_VARS; i++) {
		const char *v = getenv(probe_vars[i]);
		saved[i] = v ? strdup(v) : NULL;
		if (v && !saved[i]) {
			while (i--)
				free(saved[i]);
			return -1;
		}
	}
	return 0;
}

static void env_restore(char *saved[NPROBE_VARS])
{
	for (size_t i = 0; i < NPROBE_VARS; i++) {
		if (saved[i])
			setenv(probe_vars[i], saved[i], 1);
		else
			unsetenv(probe_vars[i]);
		free(saved[i]);
	}
}

/* The contract for device dev, written by the launchers' own code
 * (vr_contract_apply) as `vramctl run --limit DEV=64M` writes it. */
static int env_probe(const char *lib, int dev, const char *dir)
{
	char limit[64], err[256];
	snprintf(limit, sizeof(limit), "%d=%llu", dev, (unsigned long long)PROBE_CAP);
	struct vr_contract c = {.limit = limit,
	                        .group = "doctor-self-test",
	                        .registry_dir = dir,
	                        .lib = lib,
	                        .cur_preload = getenv("LD_PRELOAD")};
	unsetenv(VR_ENV_GROWTH);
	/* The probe's cap is small (a real context is larger): it checks that
	 * allocations are intercepted, so it counts allocations only. */
	if (setenv(VR_ENV_LOG, "error", 1) < 0 || setenv(VR_ENV_COUNT, "allocations", 1) < 0 ||
	    vr_contract_apply(&c, cli_set_own_env, NULL, err, sizeof(err)) < 0)
		return -1;
	return 0;
}

/* In the child: output to the pipe, then the test program. */
static void probe_exec(const char *probe, int dev, int out)
{
	static const char msg[] = "setup cannot run the test program\n";
	char devs[16], cap[32];
	snprintf(devs, sizeof(devs), "%d", dev);
	snprintf(cap, sizeof(cap), "%llu", (unsigned long long)PROBE_CAP);
	dup2(out, STDOUT_FILENO);
	dup2(out, STDERR_FILENO);
	execl(probe, probe, devs, cap, (char *)NULL);
	ssize_t w = write(STDOUT_FILENO, msg, sizeof(msg) - 1);
	(void)w;
	_exit(VR_EXIT_NOTFOUND);
}

/* Reads the probe's output until it closes or the time runs out. */
static int read_all(int fd, char *buf, size_t len, int timeout_ms)
{
	size_t n = 0;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		long left = timeout_ms -
		            ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0)
			return -1;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = poll(&p, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		char tmp[512];
		ssize_t k = read(fd, tmp, sizeof(tmp));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		size_t take = (size_t)k < len - 1 - n ? (size_t)k : len - 1 - n;
		memcpy(buf + n, tmp, take);
		n += take;
	}
	buf[n] = '\0';
	return 0;
}

static const char *const ways[] = {"linked", "dlsym", "procaddr", "procaddr_old", "ptds"};
static const char *const way_text[] = {
    "a direct call (program linked with -lcuda)",
    "dlopen + dlsym of versioned names (TensorFlow, JAX)",
    "cuGetProcAddress_v2 at CUDA 12 (cudart, so PyTorch)",
    "the four-argument cuGetProcAddress (cudart 11.3 to 11.x)",
    "cuGetProcAddress_v2 with the per-thread default stream (cuMemAllocAsync_ptsz)",
};

/* The text after "KEY " on the first line of out that starts with it (the
 * loader's and the library's own lines may come first), or NULL. */
static const char *probe_line(const char *out, const char *key)
{
	size_t n = strlen(key);
	for (const char *l = out; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0))
		if (!strncmp(l, key, n) && l[n] == ' ')
			return l + n + 1;
	return NULL;
}

static void probe_results(struct doc *d, int dev, const char *out, int status)
{
	char id[32], line[600];
	const char *loaded = probe_line(out, "loaded");
	const char *setup = probe_line(out, "setup");
	if (setup || !loaded) {
		const char *why = setup ? setup : out;
		snprintf(line, sizeof(line), "%.*s", (int)strcspn(why, "\n"), why);
		if (WIFSIGNALED(status))
			snprintf(line, sizeof(line), "it died of signal %d", WTERMSIG(status));
		dr_add(&d->rep, "hook.selftest", dev, DR_FAIL,
		       "run the test program by hand to see more: VRAMCTL_LOG=debug vramctl run "
		       "--limit 64M -- " PROBE_NAME " 0 67108864",
		       "the test program did not run on GPU %d: %s", dev,
		       line[0] ? line : "no output");
		return;
	}
	int is_loaded = !strncmp(loaded, "yes", 3);
	for (size_t w = 0; w < VR_ARRAY_LEN(ways); w++) {
		snprintf(id, sizeof(id), "hook.%s", ways[w]);
		const char *l = probe_line(out, ways[w]);
		if (!is_loaded) {
			dr_add(
			    &d->rep, id, dev, DR_FAIL,
			    "check that LD_PRELOAD reaches programs (not set-ID, not static; see "
			    "hook.preload)",
			    "%s: libvramctl.so was not loaded into the test program", way_text[w]);
			continue;
		}
		if (!l) {
			dr_add(
			    &d->rep, id, dev, DR_FAIL,
			    "run the test program by hand: VRAMCTL_LOG=debug vramctl run --limit "
			    "64M -- " PROBE_NAME " 0 67108864",
			    "%s: the test program stopped before this way (%s)", way_text[w],
			    WIFSIGNALED(status) ? "killed by a signal" : "no result");
			continue;
		}
		if (!strncmp(l, "ok", 2) && (l[2] == '\n' || !l[2])) {
			dr_add(
			    &d->rep, id, dev, DR_OK, NULL,
			    "%s: capped (sees the 64 MiB test cap, 72 MiB refused, 1 MiB granted)",
			    way_text[w]);
			continue;
		}
		if (!strncmp(l, "skip ", 5)) {
			dr_add(&d->rep, id, dev, DR_SKIP, NULL, "%s: %.*s", way_text[w],
			       (int)strcspn(l + 5, "\n"), l + 5);
			continue;
		}
		l += strncmp(l, "fail ", 5) ? 0 : 5;
		dr_add(
		    &d->rep, id, dev, DR_FAIL,
		    "another library that replaces dlsym or the driver's entry points gets there "
		    "first (see hook.preload); else report it with VRAMCTL_LOG=debug output",
		    "%s: NOT capped: %.*s", way_text[w], (int)strcspn(l, "\n"), l);
	}
}

void dr_self_test(struct doc *d)
{
	int dev = d->want_dev >= 0 ? d->want_dev : 0;
	char probe[PATH_MAX + 64], dir[PATH_MAX], out[8192];
	const char *tmp = getenv("TMPDIR");
	if (!d->cuda || d->init_rc != CUDA_SUCCESS || d->ndev <= 0) {
		dr_add(&d->rep, "hook.selftest", -1, DR_SKIP, NULL,
		       "not run: the driver has no usable GPU");
		return;
	}
	if (!d->lib[0]) {
		dr_add(&d->rep, "hook.selftest", -1, DR_SKIP, NULL,
		       "not run: libvramctl.so not found");
		return;
	}
	if (d->site_bad) {
		dr_add(&d->rep, "hook.selftest", -1, DR_SKIP, NULL,
		       "not run: the configuration file cannot be used (config.site), so the "
		       "library refuses every allocation");
		return;
	}
	if (cli_find_helper(PROBE_NAME, probe, sizeof(probe)) < 0) {
		dr_add(&d->rep, "hook.selftest", dev, DR_FAIL,
		       "reinstall vramctl (make install puts it in libexec/vramctl)",
		       "the test program " PROBE_NAME " is not installed beside vramctl");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/vramctl-doctor.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	int fds[2];
	if (!mkdtemp(dir) || pipe2(fds, O_CLOEXEC) < 0) {
		dr_add(&d->rep, "hook.selftest", dev, DR_FAIL, "set TMPDIR to a writable directory",
		       "cannot prepare the test: %s", strerror(errno));
		if (dir[strlen(dir) - 1] != 'X')
			rmdir(dir);
		return;
	}
	char *saved[NPROBE_VARS];
	if (env_save(saved) < 0) {
		close(fds[0]);
		close(fds[1]);
		cli_remove_tree(dir);
		d->rep.oom = 1;
		return;
	}
	fflush(NULL);
	pid_t pid = env_probe(d->lib, dev, dir) == 0 ? fork() : (errno = ENOMEM, -1);
	if (pid == 0) {
		close(fds[0]);
		probe_exec(probe, dev, fds[1]);
	}
	int fork_errno = errno;
	env_restore(saved);
	close(fds[1]);
	int status = 0;
	if (pid < 0) {
		errno = fork_errno;
		close(fds[0]);
		cli_remove_tree(dir);
		dr_add(&d->rep, "hook.selftest", dev, DR_FAIL, "try again",
		       "cannot start the test program: %s", strerror(errno));
		return;
	}
	d->probe_pid = pid;
	int timed_out = read_all(fds[0], out, sizeof(out), PROBE_TIMEOUT_MS) < 0;
	if (timed_out)
		kill(pid, SIGKILL);
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	cli_remove_tree(dir);
	if (timed_out) {
		dr_add(&d->rep, "hook.selftest", dev, DR_FAIL,
		       "run the test program by hand: VRAMCTL_LOG=debug vramctl run --limit 64M "
		       "-- " PROBE_NAME " 0 67108864",
		       "the test program on GPU %d did not finish in %d s", dev,
		       PROBE_TIMEOUT_MS / 1000);
		return;
	}
	probe_results(d, dev, out, status);
}

/* The program the user means to cap, found as execvp would find it. */
void dr_check_program_arg(struct doc *d)
{
	char path[PATH_MAX];
	struct dr_program p;
	if (!d->program) {
		dr_add(&d->rep, "hook.program", -1, DR_SKIP, NULL,
		       "no --program given (name the program you will cap to check it)");
		return;
	}
	snprintf(path, sizeof(path), "%s", d->program);
	if (!strchr(d->program, '/')) {
		const char *pathvar = getenv("PATH");
		char *copy = strdup(pathvar ? pathvar : "/usr/bin:/bin"), *save = NULL;
		path[0] = '\0';
		for (char *dirp = copy ? strtok_r(copy, ":", &save) : NULL; dirp;
		     dirp = strtok_r(NULL, ":", &save)) {
			char cand[PATH_MAX];
			if (snprintf(cand, sizeof(cand), "%s/%s", dirp, d->program) <
			        (int)sizeof(cand) &&
			    access(cand, X_OK) == 0) {
				snprintf(path, sizeof(path), "%s", cand);
				break;
			}
		}
		free(copy);
	}
	int rc = path[0] ? dr_inspect_program(path, &p) : -ENOENT;
	if (rc < 0) {
		dr_add(&d->rep, "hook.program", -1, DR_FAIL, "give the program's path", "%s: %s",
		       d->program, strerror(-rc));
		return;
	}
	int cudart = p.elf && p.dynamic ? dr_elf_needed_major(path, "libcudart.so.") : 0;
	dr_check_program(&d->rep, path, &p, cudart > 0 ? cudart : 0, d->cuda_version);
}
