/*
 * hook.h - the injected library (libvramctl.so): what every module above
 * the core includes. Nothing here is exported except the wrappers and
 * dlsym (exports.lds.in, from hooks.def).
 *
 * Layers, top first (src/hook/LAYERS, which `make layers` checks; calls
 * and includes only go down):
 *   lifecycle   the constructor: may start every module;
 *   ways in     dlsym (dlsym.c), then cuGetProcAddress (lookup.c) hand the
 *               program a wrapper;
 *   wrappers    the exported entry points of the driver and NVML: memory
 *               (alloc.c, array.c, graph.c), contexts (context.c), pools
 *               (pools.c), memory queries (query.c);
 *   wrap.h      the pattern of the allocation and free wrappers, inline;
 *   spill.h     past the cap, host memory (--spill);
 *   devices.h   which of the program's devices a call is about; sets each
 *               device up once, through the policy;
 *   policy.h    does it fit? reserve or deny, the cap of each device and
 *               the numbers the program is shown (the reserve path, top to
 *               bottom, is laid out there);
 *   card.h      what the card holds for the process beyond its blocks
 *               (NVML's figure); drvlimit.h, the driver's own per-cgroup
 *               limit over it;
 *   guarantee.h guarantees: the device book every group on a GPU shares;
 *   books.h     where the bytes are held: the group's registry or this
 *               process's own books; outer.h, the groups of the runs this
 *               one is nested in;
 *   record.h    what this member hands to --report/--trace; teardown.h,
 *               the registry's probe for dead members still on a GPU;
 *   nvmlproc.h  NVML's per-process list;
 *   ptrmap.h    what each allocation was charged, until it is freed
 *               (ptrmap_table.h); dev.h, struct vr_dev, one device as every
 *               layer above sees it;
 *   core        this header, then real.h (the real driver and NVML, the
 *               re-entry guard), job.h (the job a process belongs to),
 *               config.h (the environment, once), and atfork.h (the one
 *               fork handler, which runs the handler each module
 *               registers), dlreal.h (the real dlsym), hooks.def, log.h.
 */
#ifndef VRAMCTL_HOOK_H
#define VRAMCTL_HOOK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"
#include "common/cuda_api.h"
#include "common/nvml_api.h"
#include "common/size.h"
#include "hook/atfork.h"
#include "hook/config.h"
#include "hook/dlreal.h"
#include "hook/log.h"
#include "hook/real.h"
#include "registry/registry.h"

#endif /* VRAMCTL_HOOK_H */
