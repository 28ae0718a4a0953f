/*
 * nvml_syms.c - not compiled: preprocessed by the build to list the NVML
 * exports (VR_NVML_FUNCS) for the version script, like cuda_syms.c.
 */
#include "common/nvml_api.h"
VRAMSIM_SYMBOLS_BEGIN
#define VRAMSIM_SYM(name, params, args) VRAMSIM_SYM name VRAMSIM_SYM_END
VR_NVML_FUNCS(VRAMSIM_SYM)
