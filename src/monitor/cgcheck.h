/*
 * cgcheck.h - a process's cgroups as something else says they are (the
 * text of /proc/self/cgroup a member recorded at its join: registry/ident.h)
 * checked against the kernel's word now: each line's cgroup, found through
 * this process's cgroup mounts (/proc/self/mountinfo), lists the process in
 * its cgroup.procs. A cgroup's list is read once per check set, however many
 * processes are checked in it: a thousand members in ten cgroups cost ten
 * reads, where reading each one's /proc/PID/cgroup costs a thousand.
 */
#ifndef VRAMCTL_MONITOR_CGCHECK_H
#define VRAMCTL_MONITOR_CGCHECK_H

#include <stdint.h>
#include <sys/types.h>

struct mon_cgcheck;

/*
 * A check set for this process's view. self is the directory of this
 * process's own /proc entry (NULL: "/proc/self"; tests give a directory
 * with "mountinfo" and "ns/cgroup" of their own, whose mount points are
 * theirs too). NULL when it cannot be allocated: then nothing is checked.
 */
struct mon_cgcheck *mon_cgcheck_new(const char *self);
void mon_cgcheck_free(struct mon_cgcheck *c);

/*
 * 1 when text (a /proc/PID/cgroup text, as seen from the cgroup namespace
 * with inode cgns) says where host PID pid is, per the kernel now: the
 * namespace is this process's own (paths mean the same to both), and for
 * every line the cgroup it names, under this process's mount of its
 * hierarchy, lists pid in cgroup.procs. 0 otherwise: a line of a hierarchy
 * not mounted here, a path outside the mount's root, a cgroup that does not
 * hold pid (it moved, or the text is not true), a namespace of its own.
 */
int mon_cgcheck_holds(struct mon_cgcheck *c, uint64_t cgns, const char *text, pid_t pid);

#endif /* VRAMCTL_MONITOR_CGCHECK_H */
