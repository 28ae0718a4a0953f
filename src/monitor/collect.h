/*
 * collect.h - builds a model from NVML and the registry's snapshot.
 *
 * NVML processes carry host PIDs; registry records carry the PID a process
 * saw itself (and the host PID when the registry could tell). They are
 * joined on the device UUID and the host PID, mapping namespaced PIDs with
 * NSpid from /proc/PID/status and checking the start time, so a recycled
 * PID never borrows a dead record's numbers.
 */
#ifndef VRAMCTL_MONITOR_COLLECT_H
#define VRAMCTL_MONITOR_COLLECT_H

#include "monitor/model.h"
#include "monitor/nvml.h"
#include "vramctl/registry.h"

struct mon_sources {
	struct mon_nvml *nvml;    /* NULL: NVML is not available */
	const char *nvml_error;   /* why not, for the note ("NVML not found (...)") */
	const char *registry_dir; /* NULL: the default directory */
	const char *proc_root;    /* NULL: "/proc" (tests point it elsewhere) */
};

/*
 * Reads NVML (when there) and the registry into out (which must be empty).
 * Never fails for lack of a source: what it cannot see becomes a note.
 * Returns 0 or -ENOMEM.
 */
int mon_collect(const struct mon_sources *src, struct mon_model *out);

/* The NVML half only (out empty): devices and NVML's process rows, or the note. */
int mon_collect_nvml(const struct mon_sources *src, struct mon_model *out);

/*
 * The registry half, read now: the snapshot of src->registry_dir (NULL: the
 * default) merged into m, which holds the NVML half (mon_merge_registry).
 * m is cleared on failure. Returns 0 or -ENOMEM.
 */
int mon_collect_registry(const struct mon_sources *src, struct mon_model *m);

#endif /* VRAMCTL_MONITOR_COLLECT_H */
