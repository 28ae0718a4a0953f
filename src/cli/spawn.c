/*
 * spawn.c - starting the command of `vramctl run` and waiting for it.
 *
 * vramctl stays the parent (vfork + execvp, then waitpid) rather than
 * exec'ing the command itself, so that it keeps the group alive for the
 * whole run and removes the group's books afterwards. Because it is in the
 * way, it must be transparent: signals sent to it reach the child, and its
 * exit status is the child's, with 126/127 for exec failures exactly as
 * env(1) reports them. The child reports a failed exec through a
 * close-on-exec pipe, which a successful exec closes with nothing written.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/spawn.h"
#include "common/compiler.h"
#include "common/exit.h"

extern char **environ;

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

static volatile sig_atomic_t child_pid;

/* Orphans of the command's tree reaped while waiting for it. */
#define ADOPTED_MAX 4096
static struct cli_reaped reaped[ADOPTED_MAX];
static int nreaped;

static void adopted(pid_t pid, int status)
{
	if (nreaped < ADOPTED_MAX)
		reaped[nreaped++] = (struct cli_reaped){pid, status};
}

int cli_spawn_reaped(const struct cli_reaped **out)
{
	*out = reaped;
	return nreaped;
}

/* SIGXFSZ as the command gets it, when vramctl changed its own. */
static struct sigaction child_xfsz;
static int child_xfsz_set;

void cli_spawn_child_xfsz(const struct sigaction *sa)
{
	child_xfsz = *sa;
	child_xfsz_set = 1;
}

/*
 * Forwards a signal to the child. A signal the kernel generated for the
 * terminal's foreground process group (Ctrl-C, Ctrl-\, hangup) already reached
 * the child, which is in that group too: forwarding it again would deliver it
 * twice (a second KeyboardInterrupt during Python's cleanup). Those carry
 * si_code SI_KERNEL; signals sent with kill(2) carry SI_USER or another
 * value <= 0, and are forwarded.
 */
static void forward(int sig, siginfo_t *si, void *uctx)
{
	int saved = errno;

	(void)uctx;
	if (child_pid > 0 && (!si || si->si_code <= 0))
		kill((pid_t)child_pid, sig);
	errno = saved;
}

static void block_forwarded(sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < VR_ARRAY_LEN(forwarded); i++)
		sigaddset(&set, forwarded[i]);
	sigprocmask(SIG_BLOCK, &set, old);
}

/* The child: exec, or report errno through the pipe and exit 126/127. */
static void child_exec(const char *const argv[], int report_fd, const sigset_t *old)
    __attribute__((noreturn));
static void child_exec(const char *const argv[], int report_fd, const sigset_t *old)
{
	int err;

	/* Dispositions with handlers reset on exec; the mask does not. */
	sigprocmask(SIG_SETMASK, old, NULL);
	execvp(argv[0], (char *const *)argv);
	err = errno;
	if (write(report_fd, &err, sizeof(err)) < 0) {
		/* Nothing more to do: the exit status still says it failed. */
	}
	_exit(err == ENOENT || err == ENOTDIR ? VR_EXIT_NOTFOUND : VR_EXIT_NOEXEC);
}

int cli_spawn(const char *const argv[])
{
	pid_t pid;
	int status;

	return cli_spawn_wait(argv, &pid, &status);
}

/*
 * vfork + execvp, the exec's errno back through a close-on-exec pipe.
 * The child borrows vramctl's memory until its exec: no copy of the page
 * tables (fork's cost), and only the dispositions vramctl changed are put
 * back (posix_spawnp's child resets all 64, two system calls each, while
 * vramctl waits). execvp runs a file without a #! line with /bin/sh. The
 * child only calls sigaction, sigprocmask, execvp, write and _exit, and
 * never returns here. (Under TSan vfork is a fork; the pipe works alike.)
 * Returns the child's PID, or -1 with *err set (vfork's errno, or the
 * exec's).
 */
static pid_t start_child(const char *const argv[], const struct sigaction *saved,
                         const sigset_t *old, int *err)
{
	int fds[2];
	ssize_t n;

	if (pipe2(fds, O_CLOEXEC) < 0) {
		*err = errno;
		return -1;
	}
	pid_t pid = vfork();
	if (pid == 0) {
		/* Back to the dispositions vramctl was started with; handlers
		 * would be reset by exec anyway, but not before it. */
		for (size_t i = 0; i < VR_ARRAY_LEN(forwarded); i++)
			sigaction(forwarded[i], &saved[i], NULL);
		if (child_xfsz_set)
			sigaction(SIGXFSZ, &child_xfsz, NULL);
		child_exec(argv, fds[1], old);
	}
	*err = pid < 0 ? errno : 0;
	close(fds[1]);
	if (pid > 0) {
		do
			n = read(fds[0], err, sizeof(*err));
		while (n < 0 && errno == EINTR);
		if (n != (ssize_t)sizeof(*err))
			*err = 0;
		else
			waitpid(pid, NULL, 0); /* it exited 126/127 */
	}
	close(fds[0]);
	return *err ? -1 : pid;
}

int cli_spawn_wait(const char *const argv[], pid_t *child, int *wstatus)
{
	struct sigaction sa, saved[VR_ARRAY_LEN(forwarded)];
	sigset_t old;
	int err, status, rc;
	pid_t pid;

	*child = 0;
	*wstatus = 0;
	if (!argv || !argv[0] || !argv[0][0]) {
		fprintf(stderr, "vramctl: no command to run\n");
		return VR_EXIT_ERROR;
	}
	fflush(NULL);

	/* Install the handlers with the signals blocked, so that none arriving
	 * between the start and the handler's install is lost or kills
	 * vramctl. A signal vramctl was started ignoring keeps being ignored,
	 * here and in the command (there is nothing to forward). */
	block_forwarded(&old);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward;
	/* No SA_RESTART: the waits below loop on EINTR themselves, and under
	 * TSan (which runs handlers when an intercepted call returns) a
	 * restarted waitpid would never let the handler run. */
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < VR_ARRAY_LEN(forwarded); i++) {
		sigaction(forwarded[i], NULL, &saved[i]);
		if (saved[i].sa_handler != SIG_IGN)
			sigaction(forwarded[i], &sa, NULL);
	}

	pid = start_child(argv, saved, &old, &err);
	if (err) {
		for (size_t i = 0; i < VR_ARRAY_LEN(forwarded); i++)
			sigaction(forwarded[i], &saved[i], NULL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		fprintf(stderr, "vramctl: cannot run '%s': %s\n", argv[0], strerror(err));
		return err == ENOENT || err == ENOTDIR ? VR_EXIT_NOTFOUND : VR_EXIT_NOEXEC;
	}
	child_pid = pid;
	*child = pid;
	sigprocmask(SIG_SETMASK, &old, NULL);

	/* A subreaper (`vramctl run`: run_job.h) is the parent of its tree's
	 * orphans too: each is reaped as it ends (a zombie left would hold its
	 * PID until vramctl exits), its status kept for the report. */
	int reaper = 0;
	prctl(PR_GET_CHILD_SUBREAPER, &reaper);
	for (;;) {
		rc = waitpid(reaper ? -1 : pid, &status, 0);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0 || rc == pid)
			break;
		adopted(rc, status);
	}
	child_pid = 0;
	for (size_t i = 0; i < VR_ARRAY_LEN(forwarded); i++)
		sigaction(forwarded[i], &saved[i], NULL);

	if (rc < 0) {
		fprintf(stderr, "vramctl: waitpid: %s\n", strerror(errno));
		return VR_EXIT_ERROR;
	}
	*wstatus = status;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return VR_EXIT_SIGNAL + WTERMSIG(status);
	return VR_EXIT_ERROR;
}

int cli_exec(const char *const argv[])
{
	int err;

	if (!argv || !argv[0] || !argv[0][0]) {
		fprintf(stderr, "vramctl: no command to run\n");
		return VR_EXIT_ERROR;
	}
	fflush(NULL);
	execvp(argv[0], (char *const *)argv);
	err = errno;
	fprintf(stderr, "vramctl: cannot run '%s': %s\n", argv[0], strerror(err));
	return err == ENOENT || err == ENOTDIR ? VR_EXIT_NOTFOUND : VR_EXIT_NOEXEC;
}

/* The CLI's way of writing the contract: its own environment, which the
 * child inherits. */
int cli_set_own_env(void *ctx VR_UNUSED, const char *name, const char *value, int overwrite)
{
	return value ? setenv(name, value, overwrite) : unsetenv(name);
}
