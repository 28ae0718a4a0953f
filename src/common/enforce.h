/*
 * enforce.h - vramctl's two enforcers, one word for each front-end's
 * setting (`vramctl run --enforce`, `vramctl cdi generate --enforce`, the
 * Slurm plugin's enforce=): the injected library, the NVIDIA driver's own
 * per-cgroup limits (R615), or both. docs/usage.md, "Two enforcers".
 */
#ifndef VRAMCTL_COMMON_ENFORCE_H
#define VRAMCTL_COMMON_ENFORCE_H

enum vr_enforce {
	VR_ENFORCE_LIBRARY = 1, /* the library only (the default everywhere) */
	VR_ENFORCE_DRIVER = 2,  /* the driver only */
	VR_ENFORCE_BOTH = 3,    /* both: the bits say which */
};

/* "library", "driver" or "both" into *out: 0, or -1 for anything else. */
int vr_enforce_parse(const char *text, enum vr_enforce *out);

/* The word for e ("library", "driver", "both"). */
const char *vr_enforce_name(enum vr_enforce e);

#endif /* VRAMCTL_COMMON_ENFORCE_H */
