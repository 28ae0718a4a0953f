/*
 * module.c - code on the card: modules (cuModuleLoad*, cuModuleUnload) and
 * the context-independent libraries of CUDA 12.0 (cuLibraryLoad*,
 * cuLibraryUnload). A module's image takes VRAMSIM_MODULE_BYTES on its
 * context's card while it is loaded there. When it gets there follows
 * CUDA_MODULE_LOADING as the real driver does (cuda.h; the CUDA
 * Programming Guide, "Lazy Loading"):
 *
 *   EAGER  a module at cuModuleLoad*; a library into every live context at
 *          cuLibraryLoad*, and into each context created later.
 *   LAZY   a module at its first cuModuleGetFunction; a library into a
 *          context when a kernel of it is first needed there: launched
 *          (cuLaunchKernel on its CUkernel) or cuKernelGetFunction.
 *
 * Neither call allocates through an entry point a memory cap hooks, so the
 * memory appears on the card below them. The whole image loads at once (a
 * real driver loads lazily kernel by kernel), and it is never read: any
 * non-NULL image or file name loads. Unloading, or destroying the context,
 * gives the memory back.
 *
 * Handles are never freed (as streams): a stale one is told apart from a
 * live one, and a CUfunction this file did not hand out is left to the
 * launch's other checks, as before modules existed.
 */
#include "driver.h"

#include <stdlib.h>

#define SIM_MAGIC_MODULE 0x444f4d31u
#define SIM_MAGIC_LIB    0x42494c31u

struct sim_library;

/* A module in one context: loaded by cuModuleLoad* (lib NULL), or a
 * library's image in that context. fn is its CUfunction handle (one for
 * every name). */
struct sim_module {
	uint32_t magic;
	int alive;
	int loaded; /* the image is on the card (charged) */
	struct sim_ctx *ctx;
	struct sim_library *lib;
	char fn;
	struct sim_module *next;
};

/* A library: kern is its CUkernel handle (one for every name). */
struct sim_library {
	uint32_t magic;
	int alive;
	char kern;
	struct sim_library *next;
};

static struct sim_module *g_modules;
static struct sim_library *g_libraries;

/* With g_sim.mu held: puts the module's image on its context's card. */
static CUresult image_load(struct sim_module *m)
{
	if (m->loaded)
		return CUDA_SUCCESS;
	CUresult rc = sim_charge(sim_ctx_dev(m->ctx), sim_config()->module_bytes);
	if (rc == CUDA_SUCCESS)
		m->loaded = 1;
	return rc;
}

static void image_unload(struct sim_module *m)
{
	if (m->loaded)
		sim_uncharge(sim_ctx_dev(m->ctx), sim_config()->module_bytes);
	m->loaded = 0;
	m->alive = 0;
}

static struct sim_module *module_new(struct sim_ctx *c, struct sim_library *lib)
{
	struct sim_module *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->magic = SIM_MAGIC_MODULE;
	m->alive = 1;
	m->ctx = c;
	m->lib = lib;
	m->next = g_modules;
	g_modules = m;
	return m;
}

/* With g_sim.mu held: a live module loaded by cuModuleLoad*, or NULL. */
static struct sim_module *module_find(CUmodule h)
{
	for (struct sim_module *m = g_modules; m; m = m->next)
		if ((CUmodule)m == h && m->alive && !m->lib && sim_ctx_valid(m->ctx))
			return m;
	return NULL;
}

static struct sim_library *library_find(const void *h)
{
	for (struct sim_library *l = g_libraries; l; l = l->next)
		if ((const void *)l == h || (const void *)&l->kern == h)
			return l;
	return NULL;
}

/* With g_sim.mu held: the library's image in context c, loaded there now
 * if it is not yet. */
static CUresult library_in_ctx(struct sim_library *l, struct sim_ctx *c, struct sim_module **out)
{
	struct sim_module *m;
	for (m = g_modules; m; m = m->next)
		if (m->lib == l && m->ctx == c && m->alive)
			break;
	if (!m && !(m = module_new(c, l)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult rc = image_load(m);
	if (rc != CUDA_SUCCESS)
		m->alive = 0;
	if (out)
		*out = m;
	return rc;
}

CUresult sim_module_ctx_created(struct sim_ctx *c)
{
	if (sim_config()->lazy_loading)
		return CUDA_SUCCESS;
	for (struct sim_library *l = g_libraries; l; l = l->next) {
		CUresult rc = l->alive ? library_in_ctx(l, c, NULL) : CUDA_SUCCESS;
		if (rc != CUDA_SUCCESS)
			return rc;
	}
	return CUDA_SUCCESS;
}

void sim_module_ctx_destroyed(struct sim_ctx *c)
{
	for (struct sim_module *m = g_modules; m; m = m->next)
		if (m->ctx == c && m->alive)
			image_unload(m);
}

CUresult sim_module_launch(struct sim_ctx *c, CUfunction f)
{
	for (struct sim_module *m = g_modules; m; m = m->next)
		if ((void *)&m->fn == (void *)f)
			return m->alive && sim_ctx_valid(m->ctx) ? CUDA_SUCCESS
			                                         : CUDA_ERROR_INVALID_HANDLE;
	struct sim_library *l = library_find(f);
	if (!l || (void *)l == (void *)f)
		return CUDA_SUCCESS; /* not a handle of this file's */
	if (!l->alive)
		return CUDA_ERROR_INVALID_HANDLE;
	return library_in_ctx(l, c, NULL);
}

void sim_module_after_fork(void)
{
	SIM_FREE_LIST(struct sim_module, g_modules);
	SIM_FREE_LIST(struct sim_library, g_libraries);
}

/* ---- modules ---- */

static CUresult module_load(CUmodule *module, const void *image)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	struct sim_ctx *c = sim_cur_ctx(&rc);
	if (!c)
		SIM_UNLOCK_RETURN(rc);
	if (!module || !image)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	struct sim_module *m = module_new(c, NULL);
	if (!m)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	if (!sim_config()->lazy_loading && (rc = image_load(m)) != CUDA_SUCCESS) {
		m->alive = 0;
		SIM_UNLOCK_RETURN(rc);
	}
	*module = (CUmodule)m;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuModuleLoad(CUmodule *module, const char *fname)
{
	return module_load(module, fname);
}

CUresult simi_cuModuleLoadData(CUmodule *module, const void *image)
{
	return module_load(module, image);
}

CUresult simi_cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                 CUjit_option *options, void **optionValues)
{
	if (numOptions && (!options || !optionValues))
		return CUDA_ERROR_INVALID_VALUE;
	return module_load(module, image);
}

CUresult simi_cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	return module_load(module, fatCubin);
}

CUresult simi_cuModuleUnload(CUmodule hmod)
{
	SIM_LOCK_INIT();
	struct sim_module *m = module_find(hmod);
	if (!m)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_HANDLE);
	image_unload(m);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* Lazy loading loads the module's kernels here (the whole image, here). */
CUresult simi_cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	SIM_LOCK_INIT();
	struct sim_module *m = module_find(hmod);
	if (!m)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_HANDLE);
	if (!hfunc || !name)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	CUresult rc = image_load(m);
	if (rc == CUDA_SUCCESS)
		*hfunc = (CUfunction)(void *)&m->fn;
	SIM_UNLOCK_RETURN(rc);
}

CUresult simi_cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
	SIM_LOCK_INIT();
	if (!mode)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	*mode = sim_config()->lazy_loading ? VRAMSIM_CU_MODULE_LAZY_LOADING
	                                   : VRAMSIM_CU_MODULE_EAGER_LOADING;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* ---- libraries (CUDA 12.0) ---- */

/* Eager loading loads the library into every live context now. */
static CUresult library_load(CUlibrary *library, const void *code, unsigned int njit,
                             const CUjit_option *jit, void **jitv, unsigned int nlib,
                             const CUlibraryOption *lib, void **libv)
{
	SIM_LOCK_INIT();
	if (!library || !code || (njit && (!jit || !jitv)) || (nlib && (!lib || !libv)))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	struct sim_library *l = calloc(1, sizeof(*l));
	if (!l)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	l->magic = SIM_MAGIC_LIB;
	l->alive = 1;
	l->next = g_libraries;
	g_libraries = l;
	if (!sim_config()->lazy_loading) {
		CUresult rc = CUDA_SUCCESS;
		for (int i = 0; i < g_sim.ndev && rc == CUDA_SUCCESS; i++)
			if (g_sim.dev[i].primary.alive)
				rc = library_in_ctx(l, &g_sim.dev[i].primary, NULL);
		for (struct sim_ctx *c = g_sim.ctxs; c && rc == CUDA_SUCCESS; c = c->next)
			if (c->alive)
				rc = library_in_ctx(l, c, NULL);
		if (rc != CUDA_SUCCESS) {
			for (struct sim_module *m = g_modules; m; m = m->next)
				if (m->lib == l && m->alive)
					image_unload(m);
			l->alive = 0;
			SIM_UNLOCK_RETURN(rc);
		}
	}
	*library = (CUlibrary)l;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                void **jitOptionsValues, unsigned int numJitOptions,
                                CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                unsigned int numLibraryOptions)
{
	return library_load(library, code, numJitOptions, jitOptions, jitOptionsValues,
	                    numLibraryOptions, libraryOptions, libraryOptionValues);
}

CUresult simi_cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                    CUjit_option *jitOptions, void **jitOptionsValues,
                                    unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                    void **libraryOptionValues, unsigned int numLibraryOptions)
{
	return library_load(library, fileName, numJitOptions, jitOptions, jitOptionsValues,
	                    numLibraryOptions, libraryOptions, libraryOptionValues);
}

/* Unloads the library from every context it is loaded in. */
CUresult simi_cuLibraryUnload(CUlibrary library)
{
	SIM_LOCK_INIT();
	struct sim_library *l = library_find(library);
	if (!l || (void *)l != (void *)library || !l->alive)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_HANDLE);
	for (struct sim_module *m = g_modules; m; m = m->next)
		if (m->lib == l && m->alive)
			image_unload(m);
	l->alive = 0;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* A kernel handle loads nothing: it is context-independent. */
CUresult simi_cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
	SIM_LOCK_INIT();
	struct sim_library *l = library_find(library);
	if (!l || (void *)l != (void *)library || !l->alive)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_HANDLE);
	if (!pKernel || !name)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	*pKernel = (CUkernel)(void *)&l->kern;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* The kernel's function in the current context: the library is loaded
 * there now if it is not yet. */
CUresult simi_cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_module *m = NULL;
	SIM_LOCK_INIT();
	struct sim_ctx *c = sim_cur_ctx(&rc);
	if (!c)
		SIM_UNLOCK_RETURN(rc);
	struct sim_library *l = library_find(kernel);
	if (!l || (void *)&l->kern != (void *)kernel || !l->alive)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_HANDLE);
	if (!pFunc)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	rc = library_in_ctx(l, c, &m);
	if (rc == CUDA_SUCCESS)
		*pFunc = (CUfunction)(void *)&m->fn;
	SIM_UNLOCK_RETURN(rc);
}
