/*
 * cuda_syms.c - not compiled: the build runs the preprocessor over it to list
 * every exported driver entry point, one per line, for the version script.
 * VR_CUDA_FUNCS, with the simulator's VRAMSIM_CUDA_EXTRA_FUNCS, is the one
 * source of truth for what libcuda exports.
 */
#include "sim/cuda_extra.h"
VRAMSIM_SYMBOLS_BEGIN
#define VRAMSIM_SYM(name, params, args) VRAMSIM_SYM name VRAMSIM_SYM_END
VR_CUDA_FUNCS(VRAMSIM_SYM)
VRAMSIM_CUDA_EXTRA_FUNCS(VRAMSIM_SYM)
