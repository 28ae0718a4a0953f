/*
 * cuda_extra.h - driver entry points the simulated driver exports that the
 * project's own declarations (src/common/cuda_api.h) do not name: loading
 * code onto the card (modules, and the context-independent libraries of
 * CUDA 12.0). The injected library does not hook them: with lazy loading
 * (CUDA_MODULE_LOADING) their memory appears below every hooked call, which
 * is what the tests of "the cap counts the whole footprint" need.
 *
 * Prototypes and versions follow cuda.h and cudaTypedefs.h of CUDA 13.0.
 * VRAMSIM_CUDA_EXTRA_FUNCS has VR_CUDA_FUNCS's shape: exports.c and
 * cuda_syms.c expand both lists.
 */
#ifndef VRAMSIM_CUDA_EXTRA_H
#define VRAMSIM_CUDA_EXTRA_H

#include "common/cuda_api.h"

/* Repeating a typedef of the same type is valid C11, should cuda_api.h
 * come to declare these too. */
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef int CUjit_option;
typedef int CUlibraryOption;
typedef int CUmoduleLoadingMode; /* CU_MODULE_EAGER_LOADING 1, CU_MODULE_LAZY_LOADING 2 */

#define VRAMSIM_CU_MODULE_EAGER_LOADING 1
#define VRAMSIM_CU_MODULE_LAZY_LOADING  2

#define VRAMSIM_CUDA_EXTRA_FUNCS(X)                                                                \
	X(cuModuleLoad, (CUmodule * module, const char *fname), (module, fname))                   \
	X(cuModuleLoadData, (CUmodule * module, const void *image), (module, image))               \
	X(cuModuleLoadDataEx,                                                                      \
	  (CUmodule * module, const void *image, unsigned int numOptions, CUjit_option *options,   \
	   void **optionValues),                                                                   \
	  (module, image, numOptions, options, optionValues))                                      \
	X(cuModuleLoadFatBinary, (CUmodule * module, const void *fatCubin), (module, fatCubin))    \
	X(cuModuleUnload, (CUmodule hmod), (hmod))                                                 \
	X(cuModuleGetFunction, (CUfunction * hfunc, CUmodule hmod, const char *name),              \
	  (hfunc, hmod, name))                                                                     \
	X(cuModuleGetLoadingMode, (CUmoduleLoadingMode * mode), (mode))                            \
	X(cuLibraryLoadData,                                                                       \
	  (CUlibrary * library, const void *code, CUjit_option *jitOptions,                        \
	   void **jitOptionsValues, unsigned int numJitOptions, CUlibraryOption *libraryOptions,   \
	   void **libraryOptionValues, unsigned int numLibraryOptions),                            \
	  (library, code, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,             \
	   libraryOptionValues, numLibraryOptions))                                                \
	X(cuLibraryLoadFromFile,                                                                   \
	  (CUlibrary * library, const char *fileName, CUjit_option *jitOptions,                    \
	   void **jitOptionsValues, unsigned int numJitOptions, CUlibraryOption *libraryOptions,   \
	   void **libraryOptionValues, unsigned int numLibraryOptions),                            \
	  (library, fileName, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,         \
	   libraryOptionValues, numLibraryOptions))                                                \
	X(cuLibraryUnload, (CUlibrary library), (library))                                         \
	X(cuLibraryGetKernel, (CUkernel * pKernel, CUlibrary library, const char *name),           \
	  (pKernel, library, name))                                                                \
	X(cuKernelGetFunction, (CUfunction * pFunc, CUkernel kernel), (pFunc, kernel))

/*
 * A test control, not a driver entry point: libcuda.so.1 exports it for test
 * programs (declare it, or dlsym it). The driver takes bytes on device dev's
 * card for the calling process, through no entry point, as a library that
 * reaches the driver by private paths (or its workspace) would make it: in
 * NVML's per-process figure and cuMemGetInfo like everything else. A
 * negative count gives back up to what it took. The device needs a live
 * context of the process (CUDA_ERROR_INVALID_CONTEXT); what was taken goes
 * with the device's last context. CUDA_ERROR_OUT_OF_MEMORY (nothing taken)
 * when it does not fit.
 */
CUresult vramsim_take(CUdevice dev, long long bytes);

#ifdef VR_CUDA_PROTOTYPES
#define VRAMSIM_CUDA_EXTRA_DECL(name, params, args) CUresult name params;
VRAMSIM_CUDA_EXTRA_FUNCS(VRAMSIM_CUDA_EXTRA_DECL)
#undef VRAMSIM_CUDA_EXTRA_DECL
#endif

#endif /* VRAMSIM_CUDA_EXTRA_H */
