/*
 * doctor.c - `vramctl doctor`: is this machine set up for capping, and if
 * not, what to fix. It looks at the whole chain a cap depends on (driver,
 * NVML, kernel module, devices, CUDA_VISIBLE_DEVICES, the injected library
 * and every way a program reaches the driver, the books, who holds memory
 * outside any cap) and reports one check per line (doctor.h, docs/doctor.md).
 *
 * It changes nothing on the machine: it reads files, loads the driver and
 * NVML, opens each GPU's primary context for a moment, and runs a small
 * test program under a 64 MiB test cap whose books live in a temporary
 * directory removed at the end.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/doctor.h"
#include "cli/run.h"
#include "common/contract.h"
#include "common/cuda_api.h"
#include "common/nvml_api.h"
#include "monitor/collect.h"
#include "monitor/format.h"
#include "registry/registry.h"

#define DOCTOR_EXIT_ERROR 2
#define PROBE_NAME        "vramctl-doctor-probe"
#define PROBE_CAP         (64ull << 20)
#define PROBE_TIMEOUT_MS  60000
#define WSL_DRIVER        "/usr/lib/wsl/lib/libcuda.so.1"

/*
 * Machine files doctor reads, and the settings that point it elsewhere for
 * tests. They are read with secure_getenv (ignored in set-ID programs), and
 * every check names the file it read, so a redirected run never passes for
 * the machine's own.
 */
#define KERNEL_VERSION_FILE "/proc/driver/nvidia/version"
#define KERNEL_VERSION_ENV  "VRAMCTL_DOCTOR_NVIDIA_VERSION_FILE"
#define PRELOAD_FILE        "/etc/ld.so.preload"
#define PRELOAD_ENV         "VRAMCTL_DOCTOR_PRELOAD_FILE"

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
	struct cli_dev devs[CLI_MAX_DEVICES];

	struct mon_nvml *nv;
	char nverr[256];
	char nvml_release[80]; /* nvmlSystemGetDriverVersion */

	char lib[PATH_MAX]; /* libvramctl.so; "" when not found */
	pid_t probe_pid;
};

static void doctor_usage(FILE *f)
{
	fprintf(f, "usage: vramctl doctor [--json] [--device N] [--program PATH] [--registry DIR]\n"
	           "\n"
	           "Checks whether this machine is set up for GPU memory caps: the driver, NVML\n"
	           "and kernel module, the GPUs, CUDA_VISIBLE_DEVICES, every way a program\n"
	           "reaches the driver (a test program under a 64 MiB test cap), conflicting\n"
	           "preloaded libraries, the registry, and who holds GPU memory outside any cap.\n"
	           "Each check says OK, WARN, FAIL or SKIP, what it found, and how to fix it.\n"
	           "\n"
	           "  --json           JSON for fleet checks (keys in vramctl-doctor(1))\n"
	           "  --device N       check GPU N only (as programs number them); the self-test\n"
	           "                   runs on it (default: every GPU, self-test on GPU 0)\n"
	           "  --program PATH   also check that the cap can reach this program\n"
	           "  --registry DIR   registry directory (default as vramctl status)\n"
	           "\n"
	           "Exit status: 0 nothing failed, 1 a check failed, 2 doctor could not run.\n");
}

static void *cu_sym(const struct doc *d, const char *name)
{
	return d->cuda ? dlsym(d->cuda, name) : NULL;
}

/* "CUDA_ERROR_NO_DEVICE (100)", from the driver when it can say. */
static const char *cu_err(const struct doc *d, CUresult rc, char *buf, size_t len)
{
	vr_pfn_cuGetErrorName name = (vr_pfn_cuGetErrorName)cu_sym(d, "cuGetErrorName");
	const char *s = NULL;
	if (!name || name(rc, &s) != CUDA_SUCCESS || !s)
		s = "error";
	snprintf(buf, len, "%s (%d)", s, (int)rc);
	return buf;
}

static void loaded_path(void *h, const char *fallback, char *out, size_t len)
{
	struct link_map *lm = NULL;
	char real[PATH_MAX];
	const char *p = fallback;
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0])
		p = lm->l_name;
	snprintf(out, len, "%s", realpath(p, real) ? real : p);
}

/* ---- the driver ---- */

static void init_failure(struct doc *d, CUresult rc)
{
	char e[96];
	const char *fix, *what;
	switch ((int)rc) {
	case CUDA_ERROR_NO_DEVICE:
		what = "no CUDA GPU is visible";
		fix = "check 'nvidia-smi', and that CUDA_VISIBLE_DEVICES does not hide every GPU";
		break;
	case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
		what = "the kernel module and the driver libraries differ (a driver upgraded "
		       "without a reboot)";
		fix = "reboot, or unload and reload the nvidia kernel modules";
		break;
	case 804: /* CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE */
		what = "a CUDA forward-compatibility libcuda is used on a GPU that does not "
		       "support it";
		fix = "take the cuda-compat directory out of LD_LIBRARY_PATH, or update the driver";
		break;
	case 802: /* CUDA_ERROR_SYSTEM_NOT_READY */
		what = "the system is not ready (on NVSwitch systems: the fabric manager is not "
		       "running)";
		fix = "start nvidia-fabricmanager (systemctl start nvidia-fabricmanager)";
		break;
	case CUDA_ERROR_STUB_LIBRARY:
		what = "the libcuda.so.1 found is the CUDA toolkit's stub, not the driver";
		fix = "take the toolkit's lib64/stubs directory out of LD_LIBRARY_PATH";
		break;
	default:
		what = "the driver failed to initialise";
		fix = "check 'nvidia-smi' and the kernel log (dmesg) for NVRM errors";
	}
	dr_add(&d->rep, "driver.init", -1, DR_FAIL, fix, "cuInit: %s: %s",
	       cu_err(d, rc, e, sizeof(e)), what);
}

static void check_driver(struct doc *d)
{
	const char *env = getenv(VR_ENV_DRIVER);
	const char *path = env && *env ? env : "libcuda.so.1";
	char why[512] = "";
	d->cuda = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!d->cuda) {
		const char *e = dlerror();
		snprintf(why, sizeof(why), "%s", e ? e : "not found");
	}
	/* As the injected library does: WSL keeps the driver apart. */
	if (!d->cuda && !(env && *env)) {
		d->cuda = dlopen(WSL_DRIVER, RTLD_NOW | RTLD_LOCAL);
		if (d->cuda)
			path = WSL_DRIVER;
		else
			dlerror();
	}
	if (!d->cuda) {
		dr_add(&d->rep, "driver.library", -1, DR_FAIL,
		       "install the NVIDIA driver (it ships libcuda.so.1), or set VRAMCTL_DRIVER "
		       "to its path",
		       "cannot load the CUDA driver: %s", why);
		return;
	}
	loaded_path(d->cuda, path, d->cuda_path, sizeof(d->cuda_path));
	vr_pfn_cuDriverGetVersion ver = (vr_pfn_cuDriverGetVersion)cu_sym(d, "cuDriverGetVersion");
	vr_pfn_cuInit init = (vr_pfn_cuInit)cu_sym(d, "cuInit");
	if (!ver || !init || ver(&d->cuda_version) != CUDA_SUCCESS) {
		dr_add(&d->rep, "driver.library", -1, DR_FAIL,
		       "install the NVIDIA driver, or point VRAMCTL_DRIVER at its libcuda.so.1",
		       "%s is not a usable CUDA driver (no cuInit or cuDriverGetVersion)",
		       d->cuda_path);
		dlclose(d->cuda);
		d->cuda = NULL;
		return;
	}
	int v = d->cuda_version;
	dr_add(&d->rep, "driver.library", -1, DR_OK, NULL,
	       "libcuda.so.1: %s, CUDA %d.%d driver API", d->cuda_path, v / 1000, v % 1000 / 10);
	if (v < 12000)
		dr_add(&d->rep, "driver.version", -1, DR_WARN,
		       "install a driver for CUDA 12 or newer (R525 or later)",
		       "the driver supports CUDA %d.%d: programs built for CUDA 12 (current "
		       "PyTorch, JAX, TensorFlow and CuPy builds) will not start on it",
		       v / 1000, v % 1000 / 10);
	else
		dr_add(&d->rep, "driver.version", -1, DR_OK, NULL,
		       "CUDA %d.%d: programs built for CUDA %d.x run on it", v / 1000,
		       v % 1000 / 10, v / 1000);
	d->init_rc = init(0);
	if (d->init_rc == CUDA_SUCCESS)
		dr_add(&d->rep, "driver.init", -1, DR_OK, NULL, "cuInit succeeded");
	else
		init_failure(d, d->init_rc);
}

static void check_nvml(struct doc *d)
{
	int rc = mon_nvml_open(NULL, &d->nv, d->nverr, sizeof(d->nverr));
	if (rc < 0) {
		size_t n = strlen(d->nverr);
		if (n && d->nverr[n - 1] == '.')
			d->nverr[n - 1] = '\0';
		int mismatch = strstr(d->nverr, "mismatch") != NULL;
		dr_add(&d->rep, "driver.nvml", -1, DR_WARN,
		       mismatch ? "reboot, or unload and reload the nvidia kernel modules"
		                : "install the driver's NVML (libnvidia-ml.so.1), or set "
		                  "VRAMCTL_NVML to its path",
		       "%s; caps still apply, but vramctl status/top cannot see GPUs or uncapped "
		       "processes",
		       d->nverr);
		return;
	}
	char path[PATH_MAX], version[96];
	mon_nvml_identity(d->nv, path, sizeof(path), version, sizeof(version));
	vr_pfn_nvmlSystemGetDriverVersion dv = NULL;
	void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	if (h) {
		dv = (vr_pfn_nvmlSystemGetDriverVersion)dlsym(h, "nvmlSystemGetDriverVersion");
		if (dv && dv(d->nvml_release, sizeof(d->nvml_release)) != NVML_SUCCESS)
			d->nvml_release[0] = '\0';
		dlclose(h);
	}
	dr_add(&d->rep, "driver.nvml", -1, DR_OK, NULL, "libnvidia-ml.so.1: %s, NVML %s, driver %s",
	       path, version[0] ? version : "?", d->nvml_release[0] ? d->nvml_release : "?");
}

static void check_kernel(struct doc *d)
{
	static const char id[] = "driver.kernel";
	const char *file = secure_getenv(KERNEL_VERSION_ENV);
	char text[1024], kernel[64], user[64] = "";
	const char *user_from = NULL;
	FILE *f;
	size_t n;
	if (!file || !*file)
		file = KERNEL_VERSION_FILE;
	f = fopen(file, "re");
	if (!f) {
		dr_add(&d->rep, id, -1, DR_SKIP, NULL,
		       "%s: %s (no NVIDIA kernel module loaded, WSL, or a container without it)",
		       file, strerror(errno));
		return;
	}
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	if (dr_kernel_release(text, kernel, sizeof(kernel)) != 0) {
		dr_add(&d->rep, id, -1, DR_SKIP, NULL, "%s names no kernel module release", file);
		return;
	}
	if (d->nvml_release[0]) {
		snprintf(user, sizeof(user), "%s", d->nvml_release);
		user_from = "NVML";
	} else if (d->cuda && dr_library_release(d->cuda_path, user, sizeof(user)) == 0) {
		user_from = "libcuda";
	}
	if (user_from && strcmp(user, kernel) != 0) {
		dr_add(&d->rep, id, -1, DR_FAIL,
		       "reboot, or unload and reload the nvidia kernel modules, so that the module "
		       "matches the libraries",
		       "kernel module %s (%s) but user-space libraries %s (%s): Driver/library "
		       "version mismatch",
		       kernel, file, user, user_from);
	} else if (!user_from && d->init_rc == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH) {
		dr_add(&d->rep, id, -1, DR_FAIL,
		       "reboot, or unload and reload the nvidia kernel modules, so that the module "
		       "matches the libraries",
		       "kernel module %s (%s), and the driver libraries refuse it "
		       "(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH): Driver/library version mismatch",
		       kernel, file);
	} else if (user_from) {
		dr_add(&d->rep, id, -1, DR_OK, NULL, "kernel module %s (%s) matches the libraries",
		       kernel, file);
	} else {
		dr_add(&d->rep, id, -1, DR_OK, NULL,
		       "kernel module %s (%s); the libraries' release is unknown", kernel, file);
	}
}

static void check_platform(struct doc *d)
{
	char rel[256] = "";
	FILE *f = fopen("/proc/sys/kernel/osrelease", "re");
	if (f) {
		if (!fgets(rel, sizeof(rel), f))
			rel[0] = '\0';
		fclose(f);
	}
	rel[strcspn(rel, "\n")] = '\0';
	if (strcasestr(rel, "microsoft") || access(WSL_DRIVER, F_OK) == 0)
		dr_add(&d->rep, "driver.platform", -1, DR_OK, NULL,
		       "WSL (kernel %s): the driver comes from Windows; NVML cannot list GPU "
		       "processes there, and memory cannot be oversubscribed",
		       rel);
	else
		dr_add(&d->rep, "driver.platform", -1, DR_OK, NULL, "Linux %s", rel);
}

/* ---- the devices ---- */

static void check_modes(struct doc *d, int i)
{
	struct mon_nvml_modes m;
	char err[128];
	char fix[160];
	if (!d->nv) {
		dr_add(&d->rep, "device.modes", i, DR_SKIP, NULL,
		       "GPU %d: MIG and persistence modes need NVML", i);
		return;
	}
	if (mon_nvml_modes(d->nv, d->devs[i].uuid, &m, err, sizeof(err)) != 0) {
		dr_add(&d->rep, "device.modes", i, DR_SKIP, NULL,
		       "GPU %d: NVML cannot open it (%s)", i, err);
		return;
	}
	if (m.mig == NVML_DEVICE_MIG_ENABLE) {
		snprintf(fix, sizeof(fix),
		         "cap each instance (CUDA_VISIBLE_DEVICES=MIG-...), or turn MIG off: "
		         "sudo nvidia-smi -i %d -mig 0",
		         i);
		dr_add(&d->rep, "device.mig", i, DR_WARN, fix,
		       "GPU %d: MIG mode is on: programs see MIG instances, and a cap applies per "
		       "instance, not to the whole GPU",
		       i);
	} else if (m.mig < 0) {
		dr_add(&d->rep, "device.mig", i, DR_OK, NULL, "GPU %d: no MIG on this GPU", i);
	} else {
		dr_add(&d->rep, "device.mig", i, DR_OK, NULL, "GPU %d: MIG mode off%s", i,
		       m.mig_pending == NVML_DEVICE_MIG_ENABLE ? " (on after the next reset)" : "");
	}
	if (m.persistence == NVML_FEATURE_DISABLED) {
		snprintf(fix, sizeof(fix),
		         "sudo nvidia-smi -i %d -pm 1, or run nvidia-persistenced", i);
		dr_add(&d->rep, "device.persistence", i, DR_WARN, fix,
		       "GPU %d: persistence mode is off: the driver tears the GPU down whenever no "
		       "program uses it, so each start pays for bringing it up again",
		       i);
	} else if (m.persistence < 0) {
		dr_add(&d->rep, "device.persistence", i, DR_SKIP, NULL,
		       "GPU %d: NVML cannot tell the persistence mode", i);
	} else {
		dr_add(&d->rep, "device.persistence", i, DR_OK, NULL, "GPU %d: persistence mode on",
		       i);
	}
}

static void check_compute_mode(struct doc *d, int i, CUdevice dev)
{
	vr_pfn_cuDeviceGetAttribute attr =
	    (vr_pfn_cuDeviceGetAttribute)cu_sym(d, "cuDeviceGetAttribute");
	int mode = -1;
	char fix[96];
	if (!attr || attr(&mode, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, dev) != CUDA_SUCCESS) {
		dr_add(&d->rep, "device.compute_mode", i, DR_SKIP, NULL,
		       "GPU %d: the driver cannot tell the compute mode", i);
		return;
	}
	snprintf(fix, sizeof(fix), "sudo nvidia-smi -i %d -c DEFAULT", i);
	if (mode == 0)
		dr_add(&d->rep, "device.compute_mode", i, DR_OK, NULL,
		       "GPU %d: compute mode default (shared by any number of processes)", i);
	else if (mode == 2)
		dr_add(&d->rep, "device.compute_mode", i, DR_FAIL, fix,
		       "GPU %d: compute mode prohibited: no program can use it", i);
	else
		dr_add(&d->rep, "device.compute_mode", i, DR_WARN, fix,
		       "GPU %d: compute mode exclusive-%s: one %s at a time, so the processes of a "
		       "job cannot share it under one cap",
		       i, mode == 3 ? "process" : "thread", mode == 3 ? "process" : "context");
}

static void check_device(struct doc *d, int i)
{
	vr_pfn_cuDeviceGet get = (vr_pfn_cuDeviceGet)cu_sym(d, "cuDeviceGet");
	vr_pfn_cuDeviceGetName name = (vr_pfn_cuDeviceGetName)cu_sym(d, "cuDeviceGetName");
	vr_pfn_cuDevicePrimaryCtxRetain retain =
	    (vr_pfn_cuDevicePrimaryCtxRetain)cu_sym(d, "cuDevicePrimaryCtxRetain");
	vr_pfn_cuDevicePrimaryCtxRelease_v2 release =
	    (vr_pfn_cuDevicePrimaryCtxRelease_v2)cu_sym(d, "cuDevicePrimaryCtxRelease_v2");
	CUdevice dev;
	CUcontext ctx;
	char label[128] = "?", size[32], e[96];
	CUresult rc = get ? get(&dev, i) : CUDA_ERROR_NOT_FOUND;
	int got = rc == CUDA_SUCCESS;
	if (got && name && name(label, sizeof(label), dev) != CUDA_SUCCESS)
		snprintf(label, sizeof(label), "?");
	if (got)
		rc = retain && release ? retain(&ctx, dev) : CUDA_ERROR_NOT_FOUND;
	if (rc != CUDA_SUCCESS) {
		dr_add(&d->rep, "device.init", i, DR_FAIL,
		       "check 'nvidia-smi' and the kernel log (dmesg) for this GPU; a GPU reset "
		       "(nvidia-smi -r) or a reboot may bring it back",
		       "GPU %d (%s, %s) cannot be initialised: %s", i, label, d->devs[i].uuid,
		       cu_err(d, rc, e, sizeof(e)));
	} else {
		release(dev);
		dr_add(&d->rep, "device.init", i, DR_OK, NULL, "GPU %d: %s, %s, %s", i, label,
		       mon_human_size(d->devs[i].total, size, sizeof(size)), d->devs[i].uuid);
	}
	if (got)
		check_compute_mode(d, i, dev);
	check_modes(d, i);
}

/* Returns -1 when --device names no device (doctor then exits 2). */
static int check_devices(struct doc *d)
{
	char err[256];
	if (!d->cuda || d->init_rc != CUDA_SUCCESS) {
		if (d->want_dev >= 0) {
			dr_add(&d->rep, "device.init", d->want_dev, DR_SKIP, NULL,
			       "GPU %d not checked: the driver is not usable", d->want_dev);
		} else {
			dr_add(&d->rep, "device.init", -1, DR_SKIP, NULL,
			       "no GPU checked: the driver is not usable");
		}
		return 0;
	}
	d->ndev = cli_devices(d->devs, CLI_MAX_DEVICES, err, sizeof(err));
	if (d->ndev < 0) {
		dr_add(&d->rep, "device.init", -1, DR_FAIL,
		       "check 'nvidia-smi' and the kernel log (dmesg)", "%s", err);
		return 0;
	}
	if (d->want_dev >= d->ndev) {
		fprintf(stderr, "vramctl: doctor: --device %d: there %s %d GPU%s (0 to %d)\n",
		        d->want_dev, d->ndev == 1 ? "is" : "are", d->ndev, d->ndev == 1 ? "" : "s",
		        d->ndev - 1);
		return -1;
	}
	for (int i = 0; i < d->ndev; i++)
		if (d->want_dev < 0 || d->want_dev == i)
			check_device(d, i);
	return 0;
}

static void check_visible(struct doc *d)
{
	struct mon_model m = {0};
	const char *uuids[1024];
	int n = -1;
	if (d->nv) {
		struct mon_sources src = {.nvml = d->nv};
		if (mon_collect_nvml(&src, &m) == 0) {
			n = 0;
			for (int i = 0; i < m.ndevs && n < 1024; i++)
				uuids[n++] = m.devs[i].uuid;
		}
	}
	dr_check_visible(&d->rep, getenv("CUDA_VISIBLE_DEVICES"), uuids, n);
	mon_model_clear(&m);
}

/* ---- the interception ---- */

/* The file a preloaded entry names, as the loader loaded it into this
 * process (every process gets the same preloads), else the path itself. */
static int preload_path(const char *entry, char *out, size_t len)
{
	void *h = dlopen(entry, RTLD_LAZY | RTLD_NOLOAD);
	if (h) {
		loaded_path(h, entry, out, len);
		dlclose(h);
		return 0;
	}
	dlerror();
	if (!strchr(entry, '/') || access(entry, R_OK) != 0)
		return -1;
	snprintf(out, len, "%s", entry);
	return 0;
}

/* Looks at each entry of a preload list; appends conflicts to out. */
static void scan_preloads(const char *list, const char *where, char *out, size_t len, int *nconf,
                          int *nentries)
{
	char *copy = strdup(list), *save = NULL;
	if (!copy)
		return;
	for (char *tok = strtok_r(copy, " \t\n:", &save); tok;
	     tok = strtok_r(NULL, " \t\n:", &save)) {
		const char *base = strrchr(tok, '/');
		char path[PATH_MAX];
		base = base ? base + 1 : tok;
		(*nentries)++;
		if (!strncmp(base, "libvramctl", 10))
			continue;
		int found = preload_path(tok, path, sizeof(path)) == 0;
		int defines = found ? dr_elf_defines(path, "dlsym") : 0;
		if (defines == 1 || !strcmp(base, "libvgpu.so")) {
			size_t used = strlen(out);
			snprintf(out + used, len - used, "%s%s names %s", *nconf ? "; " : "", where,
			         found ? path : tok);
			(*nconf)++;
		}
	}
	free(copy);
}

static void check_preload(struct doc *d)
{
	const char *file = secure_getenv(PRELOAD_ENV);
	const char *env = getenv("LD_PRELOAD");
	char text[4096] = "", conf[1024] = "";
	int nconf = 0, nenv = 0, nfile = 0, have_file = 0;
	if (!file || !*file)
		file = PRELOAD_FILE;
	FILE *f = fopen(file, "re");
	if (f) {
		size_t n = fread(text, 1, sizeof(text) - 1, f);
		text[n] = '\0';
		fclose(f);
		have_file = 1;
	}
	if (env)
		scan_preloads(env, "LD_PRELOAD", conf, sizeof(conf), &nconf, &nenv);
	scan_preloads(text, file, conf, sizeof(conf), &nconf, &nfile);
	if (nconf)
		dr_add(&d->rep, "hook.preload", -1, DR_FAIL,
		       "remove it from LD_PRELOAD or from the preload file (root); for HAMi-core's "
		       "libvgpu.so set CUDA_DISABLE_CONTROL=true",
		       "%s, which also replaces dlsym: whichever comes first decides what programs "
		       "get, and vramctl can be bypassed",
		       conf);
	else
		dr_add(&d->rep, "hook.preload", -1, DR_OK, NULL,
		       "no other preloaded library replaces dlsym (LD_PRELOAD: %d entr%s; %s: %s)",
		       nenv, nenv == 1 ? "y" : "ies", file,
		       have_file ? (nfile ? "read" : "empty") : "none");
}

static void check_library(struct doc *d)
{
	char err[PATH_MAX + 200];
	if (cli_find_library(d->lib, sizeof(d->lib), err, sizeof(err)) < 0) {
		d->lib[0] = '\0';
		dr_add(&d->rep, "hook.library", -1, DR_FAIL,
		       "reinstall vramctl (make install), or set VRAMCTL_LIBRARY", "%s", err);
		return;
	}
	dr_add(&d->rep, "hook.library", -1, DR_OK, NULL, "%s", d->lib);
}

/* The test program's environment, set in the child before exec. */
static void probe_child(const char *probe, const char *lib, int dev, const char *dir, int out)
{
	char limit[64], devs[16], cap[32];
	dup2(out, STDOUT_FILENO);
	dup2(out, STDERR_FILENO);
	snprintf(limit, sizeof(limit), "%d=%llu", dev, (unsigned long long)PROBE_CAP);
	setenv(VR_ENV_LIMIT, limit, 1);
	setenv(VR_ENV_REGISTRY_DIR, dir, 1);
	setenv(VR_ENV_GROUP, "doctor-self-test", 1);
	setenv(VR_ENV_LOG, "error", 1);
	unsetenv(VR_ENV_GROWTH);
	if (cli_set_preload(lib) < 0)
		_exit(126);
	snprintf(devs, sizeof(devs), "%d", dev);
	snprintf(cap, sizeof(cap), "%llu", (unsigned long long)PROBE_CAP);
	execl(probe, probe, devs, cap, (char *)NULL);
	printf("setup cannot run %s: %s\n", probe, strerror(errno));
	_exit(127);
}

/* Reads the probe's output until it closes or the time runs out. */
static int read_all(int fd, char *buf, size_t len, int timeout_ms)
{
	size_t n = 0;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		long left = timeout_ms -
		            ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0)
			return -1;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = poll(&p, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		char tmp[512];
		ssize_t k = read(fd, tmp, sizeof(tmp));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		size_t take = (size_t)k < len - 1 - n ? (size_t)k : len - 1 - n;
		memcpy(buf + n, tmp, take);
		n += take;
	}
	buf[n] = '\0';
	return 0;
}

static const char *const ways[] = {"linked", "dlsym", "procaddr", "procaddr_old", "ptds"};
static const char *const way_text[] = {
    "a direct call (program linked with -lcuda)",
    "dlopen + dlsym of versioned names (TensorFlow, JAX)",
    "cuGetProcAddress_v2 at CUDA 12 (cudart, so PyTorch)",
    "the four-argument cuGetProcAddress (cudart 11.3 to 11.x)",
    "cuGetProcAddress_v2 with the per-thread default stream (cuMemAllocAsync_ptsz)",
};

/* The text after "KEY " on the first line of out that starts with it (the
 * loader's and the library's own lines may come first), or NULL. */
static const char *probe_line(const char *out, const char *key)
{
	size_t n = strlen(key);
	for (const char *l = out; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0))
		if (!strncmp(l, key, n) && l[n] == ' ')
			return l + n + 1;
	return NULL;
}

static void probe_results(struct doc *d, int dev, const char *out, int status)
{
	char id[32], line[600];
	const char *loaded = probe_line(out, "loaded");
	const char *setup = probe_line(out, "setup");
	if (setup || !loaded) {
		const char *why = setup ? setup : out;
		snprintf(line, sizeof(line), "%.*s", (int)strcspn(why, "\n"), why);
		if (WIFSIGNALED(status))
			snprintf(line, sizeof(line), "it died of signal %d", WTERMSIG(status));
		dr_add(&d->rep, "hook.selftest", dev, DR_FAIL,
		       "run the test program by hand to see more: VRAMCTL_LOG=debug vramctl run "
		       "--limit 64M -- " PROBE_NAME " 0 67108864",
		       "the test program did not run on GPU %d: %s", dev,
		       line[0] ? line : "no output");
		return;
	}
	int is_loaded = !strncmp(loaded, "yes", 3);
	for (size_t w = 0; w < VR_ARRAY_LEN(ways); w++) {
		snprintf(id, sizeof(id), "hook.%s", ways[w]);
		const char *l = probe_line(out, ways[w]);
		if (!is_loaded) {
			dr_add(
			    &d->rep, id, dev, DR_FAIL,
			    "check that LD_PRELOAD reaches programs (not set-ID, not static; see "
			    "hook.preload)",
			    "%s: libvramctl.so was not loaded into the test program", way_text[w]);
			continue;
		}
		if (!l) {
			dr_add(
			    &d->rep, id, dev, DR_FAIL,
			    "run the test program by hand: VRAMCTL_LOG=debug vramctl run --limit "
			    "64M -- " PROBE_NAME " 0 67108864",
			    "%s: the test program stopped before this way (%s)", way_text[w],
			    WIFSIGNALED(status) ? "killed by a signal" : "no result");
			continue;
		}
		if (!strncmp(l, "ok", 2) && (l[2] == '\n' || !l[2])) {
			dr_add(
			    &d->rep, id, dev, DR_OK, NULL,
			    "%s: capped (sees the 64 MiB test cap, 72 MiB refused, 1 MiB granted)",
			    way_text[w]);
			continue;
		}
		if (!strncmp(l, "skip ", 5)) {
			dr_add(&d->rep, id, dev, DR_SKIP, NULL, "%s: %.*s", way_text[w],
			       (int)strcspn(l + 5, "\n"), l + 5);
			continue;
		}
		l += strncmp(l, "fail ", 5) ? 0 : 5;
		dr_add(
		    &d->rep, id, dev, DR_FAIL,
		    "another library that replaces dlsym or the driver's entry points gets there "
		    "first (see hook.preload); else report it with VRAMCTL_LOG=debug output",
		    "%s: NOT capped: %.*s", way_text[w], (int)strcspn(l, "\n"), l);
	}
}

static void self_test(struct doc *d)
{
	int dev = d->want_dev >= 0 ? d->want_dev : 0;
	char probe[PATH_MAX + 64], dir[PATH_MAX], out[8192];
	const char *tmp = getenv("TMPDIR");
	if (!d->cuda || d->init_rc != CUDA_SUCCESS || d->ndev <= 0) {
		dr_add(&d->rep, "hook.selftest", -1, DR_SKIP, NULL,
		       "not run: the driver has no usable GPU");
		return;
	}
	if (!d->lib[0]) {
		dr_add(&d->rep, "hook.selftest", -1, DR_SKIP, NULL,
		       "not run: libvramctl.so not found");
		return;
	}
	if (cli_find_helper(PROBE_NAME, probe, sizeof(probe)) < 0) {
		dr_add(&d->rep, "hook.selftest", dev, DR_FAIL,
		       "reinstall vramctl (make install puts it in libexec/vramctl)",
		       "the test program " PROBE_NAME " is not installed beside vramctl");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/vramctl-doctor.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	int fds[2];
	if (!mkdtemp(dir) || pipe2(fds, O_CLOEXEC) < 0) {
		dr_add(&d->rep, "hook.selftest", dev, DR_FAIL, "set TMPDIR to a writable directory",
		       "cannot prepare the test: %s", strerror(errno));
		if (dir[strlen(dir) - 1] != 'X')
			rmdir(dir);
		return;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		probe_child(probe, d->lib, dev, dir, fds[1]);
	}
	close(fds[1]);
	int status = 0;
	if (pid < 0) {
		close(fds[0]);
		cli_remove_tree(dir);
		dr_add(&d->rep, "hook.selftest", dev, DR_FAIL, "try again", "cannot fork: %s",
		       strerror(errno));
		return;
	}
	d->probe_pid = pid;
	int timed_out = read_all(fds[0], out, sizeof(out), PROBE_TIMEOUT_MS) < 0;
	if (timed_out)
		kill(pid, SIGKILL);
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	cli_remove_tree(dir);
	if (timed_out) {
		dr_add(&d->rep, "hook.selftest", dev, DR_FAIL,
		       "run the test program by hand: VRAMCTL_LOG=debug vramctl run --limit 64M "
		       "-- " PROBE_NAME " 0 67108864",
		       "the test program on GPU %d did not finish in %d s", dev,
		       PROBE_TIMEOUT_MS / 1000);
		return;
	}
	probe_results(d, dev, out, status);
}

/* The program the user means to cap, found as execvp would find it. */
static void check_program(struct doc *d)
{
	char path[PATH_MAX];
	struct dr_program p;
	if (!d->program) {
		dr_add(&d->rep, "hook.program", -1, DR_SKIP, NULL,
		       "no --program given (name the program you will cap to check it)");
		return;
	}
	snprintf(path, sizeof(path), "%s", d->program);
	if (!strchr(d->program, '/')) {
		const char *pathvar = getenv("PATH");
		char *copy = strdup(pathvar ? pathvar : "/usr/bin:/bin"), *save = NULL;
		path[0] = '\0';
		for (char *dirp = copy ? strtok_r(copy, ":", &save) : NULL; dirp;
		     dirp = strtok_r(NULL, ":", &save)) {
			char cand[PATH_MAX];
			if (snprintf(cand, sizeof(cand), "%s/%s", dirp, d->program) <
			        (int)sizeof(cand) &&
			    access(cand, X_OK) == 0) {
				snprintf(path, sizeof(path), "%s", cand);
				break;
			}
		}
		free(copy);
	}
	int rc = path[0] ? dr_inspect_program(path, &p) : -ENOENT;
	if (rc < 0) {
		dr_add(&d->rep, "hook.program", -1, DR_FAIL, "give the program's path", "%s: %s",
		       d->program, strerror(-rc));
		return;
	}
	dr_check_program(&d->rep, path, &p);
}

/* ---- the books and the picture ---- */

static int is_self(const struct doc *d, const struct mon_proc *p)
{
	pid_t me = getpid();
	return p->host_pid == me || p->host_pid == d->probe_pid ||
	       ((p->valid & MON_P_NS_PID) && (p->ns_pid == me || p->ns_pid == d->probe_pid));
}

static void check_books(struct doc *d, const struct mon_model *m)
{
	char why[PATH_MAX + 200] = "";
	unsigned mode = 0;
	int rc = vr_check_dir(m->registry_dir, &mode, why, sizeof(why));
	dr_check_dir(&d->rep, m->registry_dir, rc, why, mode);

	char list[512] = "";
	int nstale = 0, ndead = 0, nbad = 0;
	for (int i = 0; i < m->ngroups; i++) {
		const struct mon_group *g = &m->groups[i];
		ndead += g->ndead;
		if (g->nmembers > 0)
			continue;
		size_t used = strlen(list);
		if (nstale < 4)
			snprintf(list + used, sizeof(list) - used, "%s%s", nstale ? ", " : "",
			         g->name);
		nstale++;
	}
	for (int i = 0; i < m->nnotes; i++)
		nbad += !strncmp(m->notes[i], "registry", 8) && strstr(m->notes[i], ".vrg");
	if (nstale || nbad) {
		char fix[PATH_MAX + 64];
		if (nstale == 1)
			snprintf(fix, sizeof(fix),
			         "if nothing of that group runs any more: rm %s/%s.vrg",
			         m->registry_dir, list);
		else
			snprintf(fix, sizeof(fix),
			         "if nothing of those groups runs any more: rm %s/NAME.vrg",
			         m->registry_dir);
		char stale[600] = "", bad[64] = "";
		if (nstale)
			snprintf(stale, sizeof(stale), "%d group%s with no live member (%s%s)",
			         nstale, nstale == 1 ? "" : "s", list, nstale > 4 ? ", ..." : "");
		if (nbad)
			snprintf(bad, sizeof(bad), "%s%d unreadable region file%s",
			         nstale ? "; " : "", nbad, nbad == 1 ? "" : "s");
		dr_add(&d->rep, "books.groups", -1, DR_WARN, fix, "%s%s", stale, bad);
	} else if (m->ngroups == 0) {
		dr_add(&d->rep, "books.groups", -1, DR_OK, NULL, "no group in the registry");
	} else {
		dr_add(&d->rep, "books.groups", -1, DR_OK, NULL,
		       "%d group%s, every one with a live member%s", m->ngroups,
		       m->ngroups == 1 ? "" : "s",
		       ndead ? " (dead members' memory is reclaimed at the next allocation)" : "");
	}
}

static void check_picture(struct doc *d, const struct mon_model *m)
{
	char list[600] = "", size[32], over[600] = "";
	int n = 0, nover = 0;
	if (!(m->valid & MON_M_NVML)) {
		dr_add(&d->rep, "gpu.uncapped", -1, DR_SKIP, NULL,
		       "who holds GPU memory needs NVML");
		dr_add(&d->rep, "gpu.overcommit", -1, DR_SKIP, NULL, "the GPUs' sizes need NVML");
		return;
	}
	for (int i = 0; i < m->nprocs; i++) {
		const struct mon_proc *p = &m->procs[i];
		if (!(p->valid & MON_P_NVML) || (p->valid & MON_P_CAPPED) || is_self(d, p))
			continue;
		size_t used = strlen(list);
		if (n < 5)
			snprintf(list + used, sizeof(list) - used, "%spid %d (%s) %s on GPU %d",
			         n ? ", " : "", (int)p->host_pid,
			         (p->valid & MON_P_COMMAND) ? p->command : "?",
			         (p->valid & MON_P_NVML_USED)
			             ? mon_human_size(p->nvml_used, size, sizeof(size))
			             : "unknown",
			         (p->valid & MON_P_DEVICE) ? m->devs[p->device].index : -1);
		n++;
	}
	if (n)
		dr_add(&d->rep, "gpu.uncapped", -1, DR_WARN,
		       "start them under vramctl run --limit ..., or ask their owners to",
		       "%d process%s hold%s GPU memory outside any cap: %s%s", n,
		       n == 1 ? "" : "es", n == 1 ? "s" : "", list, n > 5 ? ", ..." : "");
	else
		dr_add(&d->rep, "gpu.uncapped", -1, DR_OK, NULL,
		       "no process holds GPU memory outside a cap");
	for (int i = 0; i < m->ndevs; i++) {
		const struct mon_device *dv = &m->devs[i];
		char a[32], b[32];
		if (!dv->overcommitted)
			continue;
		size_t used = strlen(over);
		snprintf(over + used, sizeof(over) - used, "%sGPU %d: %d caps add up to %s of %s",
		         nover ? "; " : "", dv->index, dv->ncapped,
		         mon_human_size(dv->caps_sum, a, sizeof(a)),
		         mon_human_size(dv->total, b, sizeof(b)));
		nover++;
	}
	if (nover)
		dr_add(&d->rep, "gpu.overcommit", -1, DR_WARN,
		       "lower the caps so they fit the GPU, or accept that a group can run out of "
		       "memory below its cap",
		       "%s", over);
	else
		dr_add(&d->rep, "gpu.overcommit", -1, DR_OK, NULL,
		       "the caps on each GPU fit in it");
}

static int parse_device(const char *s, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v >= CLI_MAX_DEVICES)
		return -1;
	*out = (int)v;
	return 0;
}

int cmd_doctor(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},          {"device", required_argument, NULL, 'd'},
	    {"program", required_argument, NULL, 'p'}, {"registry", required_argument, NULL, 'r'},
	    {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
	};
	struct doc d = {.want_dev = -1, .init_rc = (CUresult)-1, .ndev = -1};
	int json = 0, c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+jd:p:r:h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'd':
			if (parse_device(optarg, &d.want_dev) < 0) {
				fprintf(
				    stderr,
				    "vramctl: doctor: bad --device '%s' (a GPU index: 0, 1, ...)\n",
				    optarg);
				return DOCTOR_EXIT_ERROR;
			}
			break;
		case 'p':
			d.program = optarg;
			break;
		case 'r':
			d.registry = optarg;
			break;
		case 'h':
			doctor_usage(stdout);
			return 0;
		default:
			doctor_usage(stderr);
			return DOCTOR_EXIT_ERROR;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vramctl: doctor: unexpected argument '%s'\n", argv[optind]);
		return DOCTOR_EXIT_ERROR;
	}

	check_driver(&d);
	check_nvml(&d);
	check_kernel(&d);
	check_platform(&d);
	int rc = check_devices(&d);
	if (rc == 0) {
		check_visible(&d);
		check_library(&d);
		check_preload(&d);
		self_test(&d);
		check_program(&d);
		struct mon_model m = {0};
		struct mon_sources src = {
		    .nvml = d.nv, .nvml_error = d.nverr, .registry_dir = d.registry};
		if (mon_collect(&src, &m) < 0) {
			d.rep.oom = 1;
		} else {
			check_books(&d, &m);
			check_picture(&d, &m);
		}
		mon_model_clear(&m);
	}
	mon_nvml_close(d.nv);
	if (rc < 0) {
		dr_free(&d.rep);
		return DOCTOR_EXIT_ERROR;
	}
	if (d.rep.oom) {
		fprintf(stderr, "vramctl: doctor: out of memory\n");
		dr_free(&d.rep);
		return DOCTOR_EXIT_ERROR;
	}
	int w = json ? dr_format_json(stdout, &d.rep) : dr_format_text(stdout, &d.rep);
	rc = dr_exit_status(&d.rep);
	dr_free(&d.rep);
	if (w < 0 || fflush(stdout) != 0) {
		fprintf(stderr, "vramctl: doctor: cannot write the report: %s\n", strerror(errno));
		return DOCTOR_EXIT_ERROR;
	}
	return rc;
}
