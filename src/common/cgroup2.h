/*
 * cgroup2.h - the cgroup v2 facts the driver's memory limits need (R615's
 * nvmlDevice{Set,Get}MemoryLimits_v1 take a cgroup v2 directory): a
 * process's cgroup v2 path, the directory NVML names it by, and whether
 * the cgroup root is a v2 hierarchy. libc only, for the injected library
 * too.
 *
 * VRAMCTL_CGROUP_ROOT (tests) puts the cgroup root elsewhere than
 * /sys/fs/cgroup for what vramctl reads and writes itself; NVML is always
 * given "/sys/fs/cgroup/<path>", as NVIDIA's container toolkit gives it.
 */
#ifndef VRAMCTL_COMMON_CGROUP2_H
#define VRAMCTL_COMMON_CGROUP2_H

#include <stddef.h>
#include <sys/types.h>

#define VR_ENV_CGROUP_ROOT "VRAMCTL_CGROUP_ROOT"
#define VR_CGROUP2_MOUNT   "/sys/fs/cgroup"
#define VR_CGROUP2_LEN     256 /* room for a path, as the simulator keeps it */

/* The cgroup root vramctl reads and writes: $VRAMCTL_CGROUP_ROOT, else
 * /sys/fs/cgroup. */
const char *vr_cgroup2_root(void);

/* Where the cgroup v2 hierarchy is mounted, found: $VRAMCTL_CGROUP_ROOT,
 * else /sys/fs/cgroup when it is one, else a hybrid layout's
 * /sys/fs/cgroup/unified when it is one; NULL when there is none. */
const char *vr_cgroup2_hierarchy(void);

/*
 * The cgroup v2 path ("/a/b") in text, the whole of /proc/PID/cgroup
 * (NUL-terminated): its "0::" line. Returns 0, or -1 (out "") when there is
 * none (cgroup v1 only) or it does not fit in n.
 */
int vr_cgroup2_parse(const char *text, char *out, size_t n);

/* The same, read from /proc/<pid>/cgroup (pid 0: this process; proc_root
 * NULL: /proc, tests point it elsewhere). Returns 0 or -1 (out ""). */
int vr_cgroup2_read(const char *proc_root, pid_t pid, char *out, size_t n);
#define vr_cgroup2_of(pid, out, n) vr_cgroup2_read(NULL, (pid), (out), (n))

/* NVML's name of cgroup path ("/a/b"): "/sys/fs/cgroup/a/b" ("/sys/fs/cgroup"
 * for "/"). Returns 0, or -1 when it does not fit. */
int vr_cgroup2_ns(const char *path, char *out, size_t n);

/* 1 when the cgroup root (vr_cgroup2_root) is a cgroup v2 hierarchy (it has
 * cgroup.controllers), 0 when not. */
int vr_cgroup2_mounted(void);

/*
 * Calls visit(ns, ctx) with NVML's name of cgroup path ("/a/b") and then of
 * each ancestor up to the root ("/sys/fs/cgroup/a/b", ".../a",
 * "/sys/fs/cgroup"): a driver limit on an ancestor holds the cgroups below
 * it. Stops early when visit returns non-zero, and returns that (else 0).
 */
int vr_cgroup2_walk(const char *path, int (*visit)(const char *ns, void *ctx), void *ctx);

/* Moves process pid (0: the caller) into the cgroup directory dir (writes
 * its cgroup.procs). Returns 0 or -errno. */
int vr_cgroup2_move(const char *dir, pid_t pid);

/* 1 when the cgroup directory dir holds a process, 0 when not (or it
 * cannot be read). */
int vr_cgroup2_populated(const char *dir);

#endif /* VRAMCTL_COMMON_CGROUP2_H */
