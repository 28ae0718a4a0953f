/*
 * nvmlproc.h - NVML's per-process figures for the injected library
 * (nvmlproc.c): the compute processes a GPU lists, with what the driver
 * holds for each. Used by the card's figure (card.c) and the registry's
 * probe of dead members (teardown.c).
 */
#ifndef VRAMCTL_HOOK_NVMLPROC_H
#define VRAMCTL_HOOK_NVMLPROC_H

#include <stdint.h>
#include <sys/types.h>

#include "common/nvml_procs.h"

/* NVML's state for the library: NV_READY, NV_LOADING (still loading after
 * the one bounded wait) or NV_UNUSABLE (no NVML, or it failed to start). */
enum { NV_UNTRIED, NV_READY, NV_LOADING, NV_UNUSABLE };
int vr_nvml_ready(void);

/*
 * The compute processes NVML lists on the GPU with this UUID text ("GPU-..."),
 * into *list (malloc'ed, NULL when *n is 0). Returns NV_READY with the list,
 * NV_LOADING (nothing yet: NVML is still starting), or NV_UNUSABLE (no NVML,
 * or the GPU or its list cannot be read; *rc gets NVML's error when it
 * answered one, else NVML_ERROR_UNINITIALIZED).
 */
int vr_nvml_list(const char *uuid, struct vr_nvml_proc **list, unsigned *n, nvmlReturn_t *rc);

/* This process's PID as NVML lists it, the first NSpid entry (its own
 * outside any PID namespace of its own); *listable (when not NULL): 0 when
 * NVML cannot list it (a PID namespace whose /proc shows no outer PID). */
pid_t vr_nvml_host_pid(int *listable);

/* The free memory NVML reports on the GPU with this UUID text, every
 * process's use counted (the borrowing rule, guarantee.c): NV_READY with
 * *free_b, NV_LOADING or NV_UNUSABLE as vr_nvml_list says. */
int vr_nvml_free(const char *uuid, uint64_t *free_b);

#endif /* VRAMCTL_HOOK_NVMLPROC_H */
