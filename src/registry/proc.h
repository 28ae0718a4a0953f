/*
 * proc.h - the one /proc layer of vramctl: the registry (a member's own
 * identity, a reader's PID mapping) and the monitor (NVML's processes) read
 * /proc only through these. libc only.
 *
 * root is the /proc mount to read (NULL: "/proc"; tests point it at a fake
 * tree); pid 0 means "self".
 */
#ifndef VRAMCTL_REGISTRY_PROC_H
#define VRAMCTL_REGISTRY_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads up to len-1 bytes of root/pid/name and terminates them. Returns the
 * bytes read or a negative errno. */
ssize_t vr_proc_read(const char *root, pid_t pid, const char *name, char *buf, size_t len);

/* Field 22 (starttime, clock ticks since boot) of root/pid/stat. Returns 0,
 * -ENOENT (no such process) or -EINVAL (unparsable). */
int vr_proc_start_time(const char *root, pid_t pid, uint64_t *out);

/* Fields 4 (the parent's PID) and 22 (starttime) of root/pid/stat: who
 * started the process, and when it started. Returns 0, -ENOENT or -EINVAL. */
int vr_proc_parent(const char *root, pid_t pid, pid_t *ppid, uint64_t *start);

/* 1 when a thread of root/pid is stopped (state T: SIGSTOP, a job-control
 * stop) or traced (t: a debugger holds it), 0 when none of the first
 * VR_PROC_TASKS_MAX is, or a negative errno (-ENOENT: no such process). */
#define VR_PROC_TASKS_MAX 4096
int vr_proc_stopped(const char *root, pid_t pid);

/* The initial PID namespace's inode number (the kernel's PROC_PID_INIT_INO,
 * fixed since Linux 3.8): a process in it is its own outermost PID. */
#define VR_PID_INIT_INO 0xEFFFFFFCu

/* The initial user namespace's inode number (PROC_USER_INIT_INO). */
#define VR_USER_INIT_INO 0xEFFFFFFDu

/*
 * This process's real uid as the parent user namespace sees it: getuid()
 * in the initial one; in a user namespace of its own (`unshare -Ur`, a
 * rootless container) the uid its uid_map maps getuid() to, which is the
 * host's for a namespace made from the host's (one level: a nested
 * namespace's parent is not the host). getuid() when the map cannot be read.
 */
uid_t vr_proc_outer_uid(void);

/* What root/pid/status says; `have` tells which fields were found. */
enum { VR_PROC_NSPID = 1, VR_PROC_UID = 2 };
struct vr_proc_status {
	unsigned have;
	pid_t nspid_outer; /* first NSpid entry: the PID in the outermost namespace */
	pid_t nspid_inner; /* last NSpid entry: the PID as the process sees itself */
	uid_t uid;         /* real uid */
	uid_t euid;        /* effective uid (with VR_PROC_UID) */
};
int vr_proc_status(const char *root, pid_t pid, struct vr_proc_status *out);

/* The command line, NULs shown as spaces, trailing spaces trimmed, cut to
 * len-1 bytes; with comm, a process without one (a kernel thread, a zombie)
 * shows as "[comm]". out is "" when nothing could be read. The text is the
 * process's own: views escape it (vr_text_escape) before printing. */
void vr_proc_cmdline(const char *root, pid_t pid, int comm, char *out, size_t len);

/* 1 if the process exists (kill(pid, 0) under /proc; a stat under a fake root). */
int vr_proc_exists(const char *root, pid_t pid);

/*
 * Held locks, from one read of /proc/locks: asking the kernel slot by slot
 * (F_GETLK) walks the file's whole lock list each time, so 1,000 members
 * cost a million steps; the table costs one pass. OFD entries say who is
 * alive, POSIX entries give the PID in our namespace (owners we cannot see
 * are left out by the kernel; their OFD entry still shows).
 */
struct vr_proc_lock {
	unsigned maj, min;
	unsigned long long ino;
	long long start;
	int ofd;
	int pid;
};

struct vr_proc_locks {
	struct vr_proc_lock *e;
	int n;
	int ok;   /* 0: /proc/locks unreadable, ask fcntl per slot */
	int read; /* read once, when a group first needs it */
};
/* Reads root/locks once into t (t->ok: it could be read; t->read: it was
 * tried). Free t->e afterwards. */
void vr_proc_locks_read(const char *root, struct vr_proc_locks *t);

#endif /* VRAMCTL_REGISTRY_PROC_H */
