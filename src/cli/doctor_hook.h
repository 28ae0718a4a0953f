/*
 * doctor_hook.h - the interception half of `vramctl doctor` (doctor_hook.c:
 * the injected library, preloads, the self-test, the program to cap), and
 * the state of a doctor run that doctor.c (driver, devices, books, picture,
 * the command) fills and hands it. The pure half is doctor_report.h.
 */
#ifndef VRAMCTL_CLI_DOCTOR_HOOK_H
#define VRAMCTL_CLI_DOCTOR_HOOK_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "cli/devices.h"
#include "cli/doctor_report.h"
#include "common/cuda_api.h"
#include "monitor/nvml.h"

struct doc {
	struct dr_report rep;
	int want_dev; /* --device, -1 when not given */
	const char *program;
	const char *registry;

	void *cuda; /* the driver, NULL when it could not be loaded */
	char cuda_path[PATH_MAX];
	int cuda_version;
	CUresult init_rc; /* cuInit's result; -1 when not called */
	int ndev;         /* visible devices; -1 unknown */
	struct vr_launch_dev devs[VR_MAX_DEVICES];

	struct mon_nvml *nv;
	char nverr[256];
	char nvml_release[80]; /* nvmlSystemGetDriverVersion */

	char lib[PATH_MAX]; /* libvramctl.so; "" when not found */
	pid_t probe_pid;
	int site_bad; /* the configuration file is unusable (config.site) */
};

/* The file a loaded object came from (links resolved), else fallback. */
void dr_loaded_path(void *h, const char *fallback, char *out, size_t len);

/* The checks hook.library, hook.preload, the self-test, hook.program. */
void dr_check_library(struct doc *d);
void dr_check_preload(struct doc *d);
void dr_self_test(struct doc *d);
void dr_check_program_arg(struct doc *d);

#endif /* VRAMCTL_CLI_DOCTOR_HOOK_H */
