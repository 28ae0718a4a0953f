/*
 * doctor_report.h - `vramctl doctor`: the report (a list of checks) and the pure
 * pieces that decide and print it, apart from the code that looks at the
 * machine (doctor.c), so they are tested on fixed inputs.
 *
 * A check has a stable id ("driver.kernel"), a status, the fact it found
 * and, when not OK, one line on how to fix it. docs/doctor.md lists every id.
 */
#ifndef VRAMCTL_CLI_DOCTOR_REPORT_H
#define VRAMCTL_CLI_DOCTOR_REPORT_H

#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

#include "common/compiler.h"

#define DR_SCHEMA_VERSION 1

enum dr_status { DR_OK, DR_WARN, DR_FAIL, DR_SKIP };

struct dr_check {
	char id[32];
	int device; /* the program's device index it is about, or -1 */
	enum dr_status status;
	char fact[640];
	char fix[320]; /* "" for OK and SKIP */
};

struct dr_report {
	int n, cap;
	struct dr_check *checks;
	int oom; /* a check could not be added: doctor could not run */
};

/*
 * Appends a check (fact printf-style; fix may be NULL). Returns the check,
 * or NULL when memory ran out (r->oom is then set and the report keeps
 * what it had).
 */
struct dr_check *dr_add(struct dr_report *r, const char *id, int device, enum dr_status st,
                        const char *fix, const char *fact_fmt, ...) VR_PRINTF(6, 7);
void dr_free(struct dr_report *r);

/* "ok", "warn", "fail", "skip". */
const char *dr_status_name(enum dr_status st);

/* 1 when a check failed, else 0 (doctor's exit status when it could run). */
int dr_exit_status(const struct dr_report *r);

/* The readable report and the JSON one (keys in docs/doctor.md). Each
 * returns 0, or -1 when the stream reported a write error. */
int dr_format_text(FILE *f, const struct dr_report *r);
int dr_format_json(FILE *f, const struct dr_report *r);

/* ---- pure decisions, each filling one check ---- */

/*
 * The kernel module's release from the text of /proc/driver/nvidia/version
 * ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu ...";
 * open kernel modules say "Open Kernel Module"). Returns 0 with the release
 * in out, or -1 when the text holds none.
 */
int dr_kernel_release(const char *text, char *out, size_t len);

/* The release in a library's file name: "libcuda.so.550.54.14" ->
 * "550.54.14". Returns 0, or -1 when the name carries none. */
int dr_library_release(const char *path, char *out, size_t len);

/*
 * CUDA_VISIBLE_DEVICES (value; NULL when unset) against the machine's
 * devices as NVML numbers them (uuids[0..n-1], "GPU-..."; n < 0 when NVML
 * could not list them). Adds the check "env.visible_devices".
 */
void dr_check_visible(struct dr_report *r, const char *value, const char *const *uuids, int n);

/*
 * The registry directory, as the registry's own check (vr_check_dir) found
 * it: rc its result (0, -ENOENT, or the refusal's negative errno), why its
 * message, mode the directory's permission bits when rc is 0. Adds
 * "books.dir".
 */
void dr_check_dir(struct dr_report *r, const char *dir, int rc, const char *why, unsigned mode);

/* What an executable is, for LD_PRELOAD (dr_inspect_program). */
struct dr_program {
	int elf;          /* an ELF file of this machine's class */
	int dynamic;      /* has a program interpreter: the loader runs and honours LD_PRELOAD */
	int script;       /* starts with "#!" */
	int setid;        /* set-user-ID or set-group-ID bit */
	char interp[256]; /* the ELF interpreter, or the script's "#!" line */
};

/* Reads the start of the file at path. Returns 0, or a negative errno. */
int dr_inspect_program(const char *path, struct dr_program *out);

/*
 * Adds "hook.program" for the program at path (resolved, inspected as p).
 * cudart: the CUDA runtime major it links (dr_elf_needed_major, 0 unknown);
 * driver: the driver's CUDA version (cuDriverGetVersion, 0 unknown).
 */
void dr_check_program(struct dr_report *r, const char *path, const struct dr_program *p, int cudart,
                      int driver);

/*
 * 1 when the ELF shared object at path defines (exports) a dynamic symbol
 * named sym, 0 when not, a negative errno when it cannot be read as one.
 * Reads the file only: nothing is loaded or run.
 */
int dr_elf_defines(const char *path, const char *sym);

/*
 * The major version N of the first DT_NEEDED entry of the ELF file at path
 * named PREFIX.N... (prefix "libcudart.so." -> 12 for libcudart.so.12): N,
 * 0 when there is none, a negative errno when the file cannot be read as
 * ELF. Reads the file only.
 */
int dr_elf_needed_major(const char *path, const char *prefix);

#endif /* VRAMCTL_CLI_DOCTOR_REPORT_H */
