/*
 * doctor.c - `vramctl doctor`: is this machine set up for capping, and if
 * not, what to fix. It looks at the whole chain a cap depends on (driver,
 * NVML, kernel module, devices, CUDA_VISIBLE_DEVICES, the injected library
 * and every way a program reaches the driver, the books, who holds memory
 * outside any cap: doctor_books.c) and reports one check per line
 * (doctor_report.h, docs/doctor.md).
 *
 * It changes nothing on the machine: it reads files, loads the driver and
 * NVML, opens each GPU's primary context for a moment, and runs a small
 * test program under a 64 MiB test cap whose books live in a temporary
 * directory removed at the end.
 */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/libexec.h"
#include "cli/commands.h"
#include "cli/devices.h"
#include "cli/doctor_books.h"
#include "cli/doctor_enforce.h"
#include "cli/doctor_hook.h"
#include "cli/kernel_spec.h"
#include "cli/options.h"
#include "common/contract.h"
#include "common/cuda_api.h"
#include "common/exit.h"
#include "common/nvml_api.h"
#include "common/siteconf.h"
#include "monitor/collect.h"
#include "common/size.h"
#include "registry/registry.h"

#define WSL_DRIVER "/usr/lib/wsl/lib/libcuda.so.1"

/*
 * The kernel module's version file, and the setting that points doctor
 * elsewhere for tests: read with secure_getenv (ignored in set-ID programs),
 * and the check names the file it read, so a redirected run never passes
 * for the machine's own (doctor_hook.c does the same for ld.so.preload).
 */
#define KERNEL_VERSION_FILE "/proc/driver/nvidia/version"
#define KERNEL_VERSION_ENV  "VRAMCTL_DOCTOR_NVIDIA_VERSION_FILE"

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
	           "Exit status: 0 nothing failed, 1 a check failed, 2 doctor could not run,\n"
	           "125 a usage error.\n");
}

/* The driver's entry point, or NULL (no driver, or it lacks the name). */
static void *dr_cu_sym(const struct doc *d, const char *name)
{
	return d->cuda ? dlsym(d->cuda, name) : NULL;
}

/* "CUDA_ERROR_NO_DEVICE (100)", from the driver when it can say. */
static const char *cu_err(const struct doc *d, CUresult rc, char *buf, size_t len)
{
	vr_pfn_cuGetErrorName name = (vr_pfn_cuGetErrorName)dr_cu_sym(d, "cuGetErrorName");
	const char *s = NULL;
	if (!name || name(rc, &s) != CUDA_SUCCESS || !s)
		s = "error";
	snprintf(buf, len, "%s (%d)", s, (int)rc);
	return buf;
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
	case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
		what = "a CUDA forward-compatibility libcuda is used on a GPU that does not "
		       "support it";
		fix = "take the cuda-compat directory out of LD_LIBRARY_PATH, or update the driver";
		break;
	case CUDA_ERROR_SYSTEM_NOT_READY:
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
	dr_loaded_path(d->cuda, path, d->cuda_path, sizeof(d->cuda_path));
	vr_pfn_cuDriverGetVersion ver =
	    (vr_pfn_cuDriverGetVersion)dr_cu_sym(d, "cuDriverGetVersion");
	vr_pfn_cuInit init = (vr_pfn_cuInit)dr_cu_sym(d, "cuInit");
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

/* Parking: the driver's checkpoint API, and the helper the library
 * asks to use it. Neither is needed for caps or --wait: SKIP, not WARN,
 * where they are missing. */
static void check_checkpoint(struct doc *d)
{
	static const char *const fns[] = {"cuCheckpointProcessLock",
	                                  "cuCheckpointProcessCheckpoint",
	                                  "cuCheckpointProcessRestore", "cuCheckpointProcessUnlock",
	                                  "cuCheckpointProcessGetState"};
	const char *missing = NULL;
	for (size_t i = 0; i < VR_ARRAY_LEN(fns) && !missing; i++)
		if (!dr_cu_sym(d, fns[i]))
			missing = fns[i];
	char helper[PATH_MAX];
	if (missing)
		dr_add(&d->rep, "driver.checkpoint", -1, DR_SKIP, NULL,
		       "the driver has no checkpoint API (%s: drivers for CUDA 12.8 and later, "
		       "Linux): --park-idle and vramctl park never park a process here (caps and "
		       "--wait work as usual)",
		       missing);
	else if (cli_find_helper("vramctl-checkpoint", helper, sizeof helper) < 0)
		dr_add(&d->rep, "driver.checkpoint", -1, DR_WARN,
		       "install vramctl whole (make install, or the package): the library starts "
		       "libexec/vramctl-checkpoint to park",
		       "the driver has the checkpoint API, but vramctl-checkpoint is not installed "
		       "beside vramctl: --park-idle cannot park");
	else
		dr_add(&d->rep, "driver.checkpoint", -1, DR_OK, NULL,
		       "the driver has the checkpoint API (cuCheckpointProcess*): --park-idle and "
		       "vramctl park can move an idle process's GPU memory to host memory (%s)",
		       helper);
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

/*
 * The administrator's file and VRAMCTL_CONFIG's: one that cannot be used
 * makes `vramctl run` refuse and the library refuse every allocation, so
 * the self-test's programs would see a cap of 0: said here, by file and
 * line, and the self-test is skipped rather than blamed on another library.
 */
static void check_site(struct doc *d)
{
	const struct vr_site *site = vr_site_get();

	if (site->bad) {
		d->site_bad = 1;
		dr_add(&d->rep, "config.site", -1, DR_FAIL,
		       "fix that line (vramctl.conf(5)); 'vramctl run' names the same",
		       "%s: until the file is fixed, vramctl run refuses to start and the library "
		       "refuses every device allocation (fail closed)",
		       site->err);
	} else if (site->nfiles == 0) {
		const char *env = getenv(VR_ENV_CONFIG);

		dr_add(&d->rep, "config.site", -1, DR_OK, NULL,
		       "no configuration file: %s is not there%s%s%s", VR_SITE_CONF,
		       env && *env ? ", nor " : "", env && *env ? env : "",
		       env && *env ? " (VRAMCTL_CONFIG)" : "");
	} else {
		dr_add(&d->rep, "config.site", -1, DR_OK, NULL, "%s%s%s read", site->path[0],
		       site->nfiles > 1 ? " and " : "", site->nfiles > 1 ? site->path[1] : "");
	}
}

/* A default cap above the enforced maximum (it passed): every run
 * that takes the default is lowered to the maximum, said at each run. */
static void check_site_caps(struct doc *d)
{
	const struct vr_site *site = vr_site_get();
	const char *def = VR_SITE_TEXT_OF(site, default_limit);
	struct vr_limits l;
	if (site->bad || !def || vr_parse_limits(def, &l, NULL, 0) < 0)
		return;
	for (int i = 0; i < d->ndev; i++) {
		uint64_t cap, max;
		char a[32], b[32];
		const struct vr_launch_dev *dv = &d->devs[i];
		if (!vr_limits_cap_for(&l, dv->index, dv->uuid, dv->total, &cap) ||
		    !vr_site_max_for(site, dv->index, dv->uuid, dv->total, &max) || cap <= max)
			continue;
		dr_add(&d->rep, "config.site", dv->index, DR_WARN,
		       "lower default_limit to the maximum, or raise max_limit (vramctl.conf(5))",
		       "GPU %d: default_limit (%s) is above the enforced max_limit (%s): every run "
		       "that takes the default is lowered to the maximum",
		       dv->index, vr_format_size(cap, a, sizeof a),
		       vr_format_size(max, b, sizeof b));
		return;
	}
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
	    (vr_pfn_cuDeviceGetAttribute)dr_cu_sym(d, "cuDeviceGetAttribute");
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
	vr_pfn_cuDeviceGet get = (vr_pfn_cuDeviceGet)dr_cu_sym(d, "cuDeviceGet");
	vr_pfn_cuDeviceGetName name = (vr_pfn_cuDeviceGetName)dr_cu_sym(d, "cuDeviceGetName");
	vr_pfn_cuDevicePrimaryCtxRetain retain =
	    (vr_pfn_cuDevicePrimaryCtxRetain)dr_cu_sym(d, "cuDevicePrimaryCtxRetain");
	vr_pfn_cuDevicePrimaryCtxRelease_v2 release =
	    (vr_pfn_cuDevicePrimaryCtxRelease_v2)dr_cu_sym(d, "cuDevicePrimaryCtxRelease_v2");
	CUdevice dev;
	CUcontext ctx;
	char label[128] = "?", size[32], e[96];
	CUresult rc = get ? get(&dev, i) : CUDA_ERROR_NOT_FOUND;
	int got = rc == CUDA_SUCCESS;
	if (got && name && name(label, sizeof(label), dev) != CUDA_SUCCESS)
		snprintf(label, sizeof(label), "?");
	if (got)
		rc = retain && release ? retain(&ctx, dev) : CUDA_ERROR_NOT_FOUND;
	if (rc == CUDA_ERROR_DEVICES_UNAVAILABLE) {
		dr_add(
		    &d->rep, "device.init", i, DR_FAIL,
		    "wait for the process that holds it (nvidia-smi shows it), or set the compute "
		    "mode to default",
		    "GPU %d (%s, %s) is busy: %s: in exclusive-process mode another process "
		    "holds it",
		    i, label, d->devs[i].uuid, cu_err(d, rc, e, sizeof(e)));
	} else if (rc != CUDA_SUCCESS) {
		dr_add(&d->rep, "device.init", i, DR_FAIL,
		       "check 'nvidia-smi' and the kernel log (dmesg) for this GPU; a GPU reset "
		       "(nvidia-smi -r) or a reboot may bring it back",
		       "GPU %d (%s, %s) cannot be initialised: %s", i, label, d->devs[i].uuid,
		       cu_err(d, rc, e, sizeof(e)));
	} else {
		release(dev);
		dr_add(&d->rep, "device.init", i, DR_OK, NULL, "GPU %d: %s, %s, %s", i, label,
		       vr_format_size(d->devs[i].total, size, sizeof(size)), d->devs[i].uuid);
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
	d->ndev = cli_devices(d->devs, VR_MAX_DEVICES, err, sizeof(err));
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

static int parse_device(const char *s, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v >= VR_MAX_DEVICES)
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
	const char *word = "";
	int json = 0, c;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "+:jd:p:r:h", opts, &word)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'd':
			if (parse_device(optarg, &d.want_dev) < 0)
				return cli_usage_error(
				    "doctor", "bad --device '%s' (a GPU index: 0, 1, ...)", optarg);
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
			return cli_option_error("doctor", c, word);
		}
	}
	if (optind < argc)
		return cli_usage_error("doctor", "unexpected argument '%s'", argv[optind]);

	check_driver(&d);
	if (d.cuda)
		check_checkpoint(&d);
	check_nvml(&d);
	check_kernel(&d);
	check_platform(&d);
	check_site(&d);
	int rc = check_devices(&d);
	if (rc == 0) {
		check_site_caps(&d);
		check_visible(&d);
		dr_check_library(&d);
		dr_check_preload(&d);
		dr_self_test(&d);
		dr_check_program_arg(&d);
		struct mon_model m = {0};
		struct mon_sources src = {
		    .nvml = d.nv, .nvml_error = d.nverr, .registry_dir = d.registry};
		if (mon_collect(&src, &m) < 0) {
			d.rep.oom = 1;
		} else {
			dr_check_books(&d, &m);
			dr_check_picture(&d, &m);
			dr_check_guarantees(&d, &m);
		}
		mon_model_clear(&m);
		dr_check_kernels(&d);
		dr_check_enforcers(&d);
	}
	mon_nvml_close(d.nv);
	if (rc < 0) {
		dr_free(&d.rep);
		return VR_EXIT_DOCTOR_ERROR;
	}
	if (d.rep.oom) {
		fprintf(stderr, "vramctl: doctor: out of memory\n");
		dr_free(&d.rep);
		return VR_EXIT_DOCTOR_ERROR;
	}
	int w = json ? dr_format_json(stdout, &d.rep) : dr_format_text(stdout, &d.rep);
	rc = dr_exit_status(&d.rep);
	dr_free(&d.rep);
	if (w < 0 || fflush(stdout) != 0) {
		fprintf(stderr, "vramctl: doctor: cannot write the report: %s\n", strerror(errno));
		return VR_EXIT_DOCTOR_ERROR;
	}
	return rc;
}
