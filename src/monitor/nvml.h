/*
 * nvml.h - the monitor's view of NVML: devices, their memory and the
 * processes on them. NVML is dlopen()ed at run time (never linked), so
 * vramctl runs where there is no NVIDIA driver and just says so.
 */
#ifndef VRAMCTL_MONITOR_NVML_H
#define VRAMCTL_MONITOR_NVML_H

#include <stddef.h>

#include "monitor/model.h"
#include "registry/registry.h"

struct mon_nvml;

/*
 * Loads NVML from path (NULL: $VRAMCTL_NVML, else "libnvidia-ml.so.1" as the
 * loader finds it) and initialises it. Returns 0, or a negative errno with a
 * one-line reason in err ("NVML not found: ...").
 */
int mon_nvml_open(const char *path, struct mon_nvml **out, char *err, size_t errlen);

/* Shuts NVML down and unloads it. Safe on NULL. */
void mon_nvml_close(struct mon_nvml *nv);

/*
 * Fills m->devs (every device NVML lists) and m->procs (one row per process
 * NVML lists on a device, valid MON_P_NVML | MON_P_HOST_PID | MON_P_DEVICE,
 * plus MON_P_NVML_USED when NVML knew its usage), sets MON_M_NVML and the
 * driver version, and notes what failed. m must be empty. Returns 0 or
 * -ENOMEM (m is then cleared).
 */
int mon_nvml_read(struct mon_nvml *nv, struct mon_model *m);

/* Where NVML was loaded from (the file, links resolved) and its version
 * ("12.550.54.14"); an empty string for what could not be told. */
void mon_nvml_identity(struct mon_nvml *nv, char *path, size_t plen, char *version, size_t vlen);

/* A device's modes, for vramctl doctor. Each value is -1 when NVML could
 * not tell (an old driver, or a GPU without the feature). */
struct mon_nvml_modes {
	int compute_mode; /* NVML_COMPUTEMODE_* */
	int persistence;  /* NVML_FEATURE_* */
	int mig;          /* current MIG mode */
	int mig_pending;  /* MIG mode after the next reset */
};

/*
 * Reads the modes of the device with this UUID. Returns 0, or the NVML
 * error of opening the device by UUID (its text in err).
 */
int mon_nvml_modes(struct mon_nvml *nv, const char *uuid, struct mon_nvml_modes *out, char *err,
                   size_t errlen);

/* An NVML entry point by name (NULL when this NVML lacks it), and the text
 * of an NVML error; for the calls that live in their own files
 * (drvlimit.c). */
void *mon_nvml_sym(struct mon_nvml *nv, const char *name);
const char *mon_nvml_error(struct mon_nvml *nv, int r);

/* The device with this UUID text ("GPU-..."), or with NVML index `index`
 * when uuid is NULL: its UUID text (uuid_out, MON_UUID_MAX bytes, may be
 * NULL), free memory and usable size (total less what the driver keeps,
 * NVML's memory info v2; v1's total) for the device book's admission
 * (#38). 0, or -ENODEV (NVML does not list it, or not its memory), -EIO. */
int mon_nvml_card(struct mon_nvml *nv, const char *uuid, int index, char *uuid_out,
                  uint64_t *free_b, uint64_t *usable);

/* 1 if NVML lists host PID pid on the device with this UUID, 0 if not,
 * -1 when it cannot tell (no such device, an error). */
int mon_nvml_lists(struct mon_nvml *nv, const char *uuid, unsigned pid);

/* For the registry (vr_gpu_probe_set, registry.h): a probe that opens NVML
 * at its first question, keeps it, and answers "cannot tell" without it;
 * its lines go to stderr, prefixed "vramctl: ". */
const struct vr_gpu_probe *mon_nvml_probe(void);

#endif /* VRAMCTL_MONITOR_NVML_H */
