/*
 * devices.c - the program's devices as it numbers them (after
 * CUDA_VISIBLE_DEVICES), each with its UUID, physical total and cap in
 * force. Filled lazily, the first time a device is allocated on or asked
 * about, under one lock; read without locks afterwards (ready flag).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "hook/devices.h"
#include "hook/guarantee.h"
#include "hook/policy.h"

static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;
struct vr_dev vr__devs[VR_MAX_DEVICES];
atomic_int vr__ndev; /* 0: not enumerated yet */

/* Under dev_lock. Returns CUDA_SUCCESS with the device count in *np, or
 * the driver's error (cuInit not called, or the look-up failing): nothing is
 * cached then. */
static CUresult enumerate(int *np)
{
	int n = atomic_load_explicit(&vr__ndev, memory_order_acquire), count = 0;
	*np = n;
	if (n > 0)
		return CUDA_SUCCESS;
	if (!vr_real.cuDeviceGetCount || !vr_real.cuDeviceGet)
		return CUDA_ERROR_NOT_INITIALIZED;
	CUresult rc = vr_real.cuDeviceGetCount(&count);
	if (rc != CUDA_SUCCESS || count <= 0)
		return rc;
	if (count > VR_MAX_DEVICES)
		count = VR_MAX_DEVICES;
	for (int i = 0; i < count; i++) {
		vr__devs[i].ordinal = i;
		vr__devs[i].reg = -1;
		if (vr_real.cuDeviceGet(&vr__devs[i].handle, i) != CUDA_SUCCESS)
			vr__devs[i].handle = i;
	}
	atomic_store_explicit(&vr__ndev, count, memory_order_release);
	*np = count;
	return CUDA_SUCCESS;
}

/* Under dev_lock: UUID, total, then the policy's cap and the books. */
static void setup(struct vr_dev *d)
{
	if (atomic_load_explicit(&d->ready, memory_order_acquire))
		return;
	CUuuid u;
	memset(&u, 0, sizeof u);
	CUresult rc = CUDA_ERROR_NOT_FOUND;
	if (vr_real.cuDeviceGetUuid_v2)
		rc = vr_real.cuDeviceGetUuid_v2(&u, d->handle);
	if (rc != CUDA_SUCCESS && vr_real.cuDeviceGetUuid)
		rc = vr_real.cuDeviceGetUuid(&u, d->handle);
	memcpy(d->uuid, u.bytes, 16);
	vr_format_uuid(d->uuid, d->uuid_text, sizeof d->uuid_text);
	size_t total = 0;
	if (vr_real.cuDeviceTotalMem_v2)
		vr_real.cuDeviceTotalMem_v2(&total, d->handle);
	d->phys_total = total;
	d->gt.word = &vr_gt_none; /* no book until the policy opens one */
	vr_policy_device(d);
	atomic_store_explicit(&d->ready, 1, memory_order_release);
}

void vr_dev_say_failed(const char *call, CUresult rc)
{
	char more[64], copy[700] = "";
	const char *name = NULL;
	if (!vr_log_denial_gate(more, sizeof more))
		return;
	if (vr_real.cuGetErrorName)
		VR_OWN(vr_real.cuGetErrorName(rc, &name));
	/* No context because the cap refused this process's: the consequence
	 * of that refusal (said above it), not a fault of the driver's. */
	int refused = vr_card_refused_context();
	if (rc == CUDA_ERROR_INVALID_CONTEXT && refused >= 0) {
		vr__log(VR_LOG_ERROR,
		        "a CUDA call needs a context, and this process has none: its context on "
		        "GPU %d was refused at the cap (said above), so the call fails with the "
		        "driver's %s; the program cannot use the GPU under this cap (a larger cap, "
		        "or vramctl run --count allocations to cap what it allocates only)%s",
		        refused, name ? name : "CUDA_ERROR_INVALID_CONTEXT", more);
		return;
	}
	/* A program on another copy of the driver: its contexts are not the
	 * ones vramctl's driver sees. */
	if (vr_g.driver_path[0] &&
	    (rc == CUDA_ERROR_INVALID_CONTEXT || rc == CUDA_ERROR_NOT_INITIALIZED))
		snprintf(copy, sizeof copy,
		         "; VRAMCTL_DRIVER names %s: a program that uses another copy of the "
		         "driver cannot be counted",
		         vr_g.driver_path);
	vr__log(VR_LOG_ERROR,
	        "%s failed (%s, %d): vramctl cannot tell which GPU's cap applies, so the call "
	        "that needed it is refused with that error (fail closed)%s%s",
	        call, name ? name : "driver error", (int)rc, copy, more);
}

static CUresult by_handle(CUdevice h, struct vr_dev **out)
{
	int n;
	vr_policy_check_devices(); /* before the lock: see by_uuid */
	pthread_mutex_lock(&dev_lock);
	CUresult rc = enumerate(&n);
	if (rc == CUDA_SUCCESS)
		rc = CUDA_ERROR_INVALID_DEVICE;
	for (int i = 0; i < n; i++) {
		if (vr__devs[i].handle == h) {
			setup(&vr__devs[i]);
			*out = &vr__devs[i];
			rc = CUDA_SUCCESS;
			break;
		}
	}
	pthread_mutex_unlock(&dev_lock);
	if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_INVALID_DEVICE)
		vr_dev_say_failed("cuDeviceGetCount", rc);
	return rc;
}

CUresult vr__dev_for_handle(CUdevice h, struct vr_dev **out)
{
	CUresult rc;
	VR_OWN(rc = by_handle(h, out));
	return rc;
}

static struct vr_dev *dev_by_handle(CUdevice h)
{
	struct vr_dev *d;
	return vr_dev_for_handle(h, &d) == CUDA_SUCCESS ? d : NULL;
}

struct vr_dev *vr__dev_by_ordinal(int ordinal)
{
	CUdevice h;
	int n = atomic_load_explicit(&vr__ndev, memory_order_acquire);
	if (ordinal >= 0 && ordinal < n)
		return dev_by_handle(vr__devs[ordinal].handle);
	if (!vr_real.cuDeviceGet || vr_real.cuDeviceGet(&h, ordinal) != CUDA_SUCCESS)
		return NULL;
	return dev_by_handle(h);
}

int vr_dev_count(void)
{
	return atomic_load_explicit(&vr__ndev, memory_order_acquire);
}

/*
 * NVML numbers devices physically; the cap is given in the program's
 * numbering, so the two meet at the UUID. If the program has not initialised
 * the driver (an NVML-only program under a cap), vramctl calls cuInit(0)
 * once to learn the program's numbering. The cap's devices are checked
 * before the devices lock is taken: the check may load NVML, and nothing is
 * ever dlopen'ed under a lock of ours.
 */
static CUresult by_uuid(const char *uuid, struct vr_dev **out)
{
	int count;
	/* An NVML-only program under a cap: learn the program's numbering. */
	if (vr_real.cuDeviceGetCount && vr_real.cuDeviceGetCount(&count) != CUDA_SUCCESS &&
	    vr_real.cuInit)
		vr_real.cuInit(0);
	vr_policy_check_devices();
	pthread_mutex_lock(&dev_lock);
	int n;
	CUresult rc = enumerate(&n);
	for (int i = 0; i < n && !*out; i++) {
		setup(&vr__devs[i]);
		if (!strcmp(vr__devs[i].uuid_text, uuid))
			*out = &vr__devs[i];
	}
	pthread_mutex_unlock(&dev_lock);
	if (rc != CUDA_SUCCESS)
		vr_dev_say_failed("cuDeviceGetCount", rc);
	return rc;
}

CUresult vr_dev_for_uuid_text(const char *uuid, struct vr_dev **out)
{
	CUresult rc;
	*out = NULL;
	VR_OWN(rc = by_uuid(uuid, out));
	return rc;
}

/* Keeps nothing that another thread may have been changing at the fork. */
static void devices_atfork_child(void)
{
	pthread_mutex_init(&dev_lock, NULL);
	for (int i = 0; i < VR_MAX_DEVICES; i++) {
		atomic_store(&vr__devs[i].ready, 0);
		atomic_store(&vr__devs[i].local_in_use, 0);
		vr__devs[i].own = NULL; /* the parent's (books.c closes its copy) */
		atomic_store(&vr__devs[i].first_block, 0);
		atomic_store(&vr__devs[i].short_block, 0); /* the map is empty too */
		vr__devs[i].reg = -1;
		vr__devs[i].nouter = 0;
		vr_gt_forget(&vr__devs[i]);
	}
}
VR_ATFORK_CHILD(devices_atfork_child);
