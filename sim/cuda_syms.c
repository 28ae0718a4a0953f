/*
 * cuda_syms.c - not compiled: the build runs the preprocessor over it to list
 * every exported driver entry point, one per line, for the version script.
 * VR_CUDA_FUNCS is the one source of truth for what libcuda exports.
 */
#include "common/cuda_api.h"
VRAMSIM_SYMBOLS_BEGIN
#define VRAMSIM_SYM(name, params, args) VRAMSIM_SYM name VRAMSIM_SYM_END
VR_CUDA_FUNCS(VRAMSIM_SYM)
