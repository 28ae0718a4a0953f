/*
 * errors.c - the CUresult codes the simulator knows, with their names and
 * NVIDIA's strings: cuGetErrorName, cuGetErrorString, and codes by name
 * for the test controls (VRAMSIM_FAULT=cuMemAlloc_v2:1:CUDA_ERROR_...).
 */
#include "driver.h"

#include <string.h>

#define SIM_ERRORS(X)                                                                              \
	X(CUDA_SUCCESS, "no error")                                                                \
	X(CUDA_ERROR_INVALID_VALUE, "invalid argument")                                            \
	X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                                               \
	X(CUDA_ERROR_NOT_INITIALIZED, "initialization error")                                      \
	X(CUDA_ERROR_DEINITIALIZED, "driver shutting down")                                        \
	X(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library")                                \
	X(CUDA_ERROR_DEVICES_UNAVAILABLE, "CUDA-capable device(s) is/are busy or unavailable")     \
	X(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")                              \
	X(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")                                     \
	X(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")                                    \
	X(CUDA_ERROR_MAP_FAILED, "mapping of buffer object failed")                                \
	X(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped")                                    \
	X(CUDA_ERROR_NOT_MAPPED, "resource not mapped")                                            \
	X(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, "context is already in use")                          \
	X(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")                                    \
	X(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state")      \
	X(CUDA_ERROR_NOT_FOUND, "named symbol not found")                                          \
	X(CUDA_ERROR_NOT_READY, "device not ready")                                                \
	X(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "primary context active")                             \
	X(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,                                               \
	  "part or all of the requested memory range is already mapped")                           \
	X(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,                                                   \
	  "pointer does not correspond to a registered memory region")                             \
	X(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure")                                  \
	X(CUDA_ERROR_NOT_PERMITTED, "operation not permitted")                                     \
	X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")                                     \
	X(CUDA_ERROR_SYSTEM_NOT_READY, "system not yet initialized")                               \
	X(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,                                                       \
	  "system has unsupported display driver / cuda driver combination")                       \
	X(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,                                               \
	  "forward compatibility was attempted on non supported HW")                               \
	X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,                                                   \
	  "operation not permitted when stream is capturing")                                      \
	X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,                                                   \
	  "operation failed due to a previous error during capture")                               \
	X(CUDA_ERROR_UNKNOWN, "unknown error")

static int error_lookup(CUresult rc, const char **name, const char **str)
{
#define SIM_ERR_CASE(code, text)                                                                   \
	case code:                                                                                 \
		*name = #code;                                                                     \
		*str = text;                                                                       \
		return 0;
	switch (rc) {
		SIM_ERRORS(SIM_ERR_CASE)
	default:
		return -1;
	}
#undef SIM_ERR_CASE
}

int sim_error_by_name(const char *name, int *code)
{
#define SIM_ERR_NAME(c, text)                                                                      \
	if (strcmp(name, #c) == 0) {                                                               \
		*code = c;                                                                         \
		return 0;                                                                          \
	}
	SIM_ERRORS(SIM_ERR_NAME)
#undef SIM_ERR_NAME
	return -1;
}

/* cuGetErrorName (want_name) and cuGetErrorString: an unknown code sets
 * *pStr to NULL and returns CUDA_ERROR_INVALID_VALUE, as cuda.h says. */
static CUresult error_text(CUresult error, const char **pStr, int want_name)
{
	const char *name, *str;
	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	if (error_lookup(error, &name, &str) != 0) {
		*pStr = NULL;
		return CUDA_ERROR_INVALID_VALUE;
	}
	*pStr = want_name ? name : str;
	return CUDA_SUCCESS;
}

CUresult simi_cuGetErrorName(CUresult error, const char **pStr)
{
	return error_text(error, pStr, 1);
}

CUresult simi_cuGetErrorString(CUresult error, const char **pStr)
{
	return error_text(error, pStr, 0);
}
