/*
 * lookup.c - ways in number 2 to 4: the answer of dlsym on a handle, of
 * cuGetProcAddress_v2 and of the 11.3 four-argument cuGetProcAddress.
 *
 * The driver is always asked first, so versions, flags and symbolStatus stay
 * exactly its own; only a pointer equal to the real address of a hooked
 * symbol is replaced by the matching wrapper (generated from hooks.def).
 * Everything else (cuLaunchKernel, ...) reaches the program as the driver's
 * own pointer: no cost at all on calls vramctl does not hook. A request for
 * cuGetProcAddress itself returns the wrapper, so later lookups come back.
 */
#include <dlfcn.h>
#include <string.h>

#define VR_CUDA_PROTOTYPES
#define VR_NVML_PROTOTYPES
#include "hook/gate.h"
#include "hook/hook.h"
#include "hook/job.h"
#include "hook/park.h"
#include "hook/lookup.h"

/* The wrapper of the hooked symbol whose real address is p, or NULL. */
static void *wrapper_for(const void *p)
{
#define VR_HOOK_CU(n)                                                                              \
	if (vr_real.n && (const void *)vr_real.n == p)                                             \
		return (void *)n;
#define VR_HOOK_NVML(n) VR_HOOK_CU(n)
#include "hook/hooks.def"
	return NULL;
}

/* The wrapper of the hooked driver symbol with exactly this name, or NULL. */
static void *wrapper_named(const char *name)
{
#define VR_HOOK_CU(n)                                                                              \
	if (!strcmp(name, #n))                                                                     \
		return (void *)n;
#include "hook/hooks.def"
	return NULL;
}

/* Could a cuGetProcAddress request for base name sym return a hooked
 * symbol? ("cuMemAlloc" -> cuMemAlloc_v2, "cuMemAllocAsync" -> _ptsz) */
static int maybe_hooked(const char *sym)
{
	size_t n = strlen(sym);
#define VR_HOOK_CU(h)                                                                              \
	if (!strncmp(#h, sym, n) && (#h[n] == 0 || #h[n] == '_'))                                  \
		return 1;
#include "hook/hooks.def"
	return 0;
}

/* A driver entry point vramctl does not wrap, as the program gets it: its
 * own pointer, or behind the gate (a trampoline) when the process may be
 * parked (gate.h). */
static void *gated(void *p)
{
	if (VR_LIKELY(!vr_gate_armed()))
		return p;
	vr_park_arm(); /* a cap found without the environment: armed now */
	return vr_gate_wrap(p);
}

/*
 * A driver pointer as the program should see it. A real driver may hand
 * cuGetProcAddress callers an internal entry rather than the exported one;
 * then dladdr's exact symbol name decides.
 */
static void *substitute_cu(void *p, const char *requested)
{
	void *w = wrapper_for(p);
	if (w || !requested || !maybe_hooked(requested))
		return w ? w : gated(p);
	Dl_info di;
	if (dladdr(p, &di) && di.dli_saddr == p && di.dli_sname && di.dli_fbase && vr_g.driver &&
	    (w = wrapper_named(di.dli_sname)) != NULL)
		return w;
	return gated(p);
}

/*
 * A hooked driver symbol found in a CUDA driver other than the one vramctl
 * loaded (VRAMCTL_DRIVER naming another copy, or a path that does not load):
 * vramctl cannot count what that driver allocates, so the program is handed
 * nothing for it (fail closed), and told why once. The same name defined by
 * a library that is not a driver (another interposer) is its own business.
 */
static void *foreign(void *real, const char *name)
{
	static atomic_int said;
	Dl_info di;
	if (!wrapper_named(name))
		return real; /* not a memory entry point: the program's own business */
	const char *file = dladdr(real, &di) && di.dli_fname ? di.dli_fname : "";
	const char *base = strrchr(file, '/');
	base = base ? base + 1 : file;
	if (strncmp(base, "libcuda.so", 10) != 0)
		return real;
	if (!atomic_exchange(&said, 1))
		vr_log(VR_LOG_ERROR,
		       "the program looks up the CUDA driver in %s, but vramctl uses %s "
		       "(VRAMCTL_DRIVER%s); its look-ups of %s and every other memory entry "
		       "point find nothing, so nothing runs uncapped (fail closed)",
		       file, vr_g.driver_path[0] ? vr_g.driver_path : "libcuda.so.1",
		       vr_g.driver ? "" : ", which did not load", name);
	return NULL;
}

/* Is p in the driver vramctl loaded? */
static int in_our_driver(const void *p)
{
	Dl_info a, b;
	const void *ours = (const void *)vr_real.cuGetProcAddress_v2;
	if (!ours)
		ours = (const void *)vr_real.cuInit;
	return ours && dladdr(p, &a) && dladdr(ours, &b) && a.dli_fbase == b.dli_fbase;
}

/* dlsym on a handle found a name starting with 'c' or 'n' (dlsym.c). */
void *vr_lookup_substitute(void *real, const char *name)
{
	if (vr_in_hook)
		return real;
	vr_config_init();
	int cu = name[0] == 'c' && name[1] == 'u';
	if (!cu && strncmp(name, "nvml", 4) != 0)
		return real; /* not the driver's: nothing to settle for it */
	vr_job_resolve();
	if (!vr_g.active)
		return real;
	if (cu) {
		if (vr_driver_init() != 0)
			return foreign(real, name);
		void *w = wrapper_for(real);
		if (w)
			return w;
		return in_our_driver(real) ? gated(real) : foreign(real, name);
	}
	if (!strncmp(name, "nvml", 4)) {
		if (vr_nvml_init() != 0)
			return real;
		void *w = wrapper_for(real);
		return w ? w : real;
	}
	return real;
}

VR_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                       cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *symbolStatus)
{
	VR_PASS(cuGetProcAddress_v2, (symbol, pfn, cudaVersion, flags, symbolStatus));
	CUresult rc = vr_real.cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, symbolStatus);
	if (rc == CUDA_SUCCESS && pfn && *pfn)
		*pfn = substitute_cu(*pfn, symbol);
	return rc;
}

VR_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                    cuuint64_t flags)
{
	VR_PASS(cuGetProcAddress, (symbol, pfn, cudaVersion, flags));
	CUresult rc = vr_real.cuGetProcAddress(symbol, pfn, cudaVersion, flags);
	if (rc == CUDA_SUCCESS && pfn && *pfn)
		*pfn = substitute_cu(*pfn, symbol);
	return rc;
}
