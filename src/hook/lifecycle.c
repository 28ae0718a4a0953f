/*
 * lifecycle.c - the library's constructor: the top of the library, allowed
 * to start every module.
 *
 * Three stages, each lazy and idempotent:
 *   1. configuration (config.c): read here, or at the first wrapper call if
 *      another library's constructor calls one before this one runs;
 *   2. the driver (real.c): dlopen'ed at the first driver call that reaches
 *      a wrapper, never here;
 *   3. the books (books.c): joined at the first allocation or memory query
 *      under a cap.
 * The fork handler is registered with the configuration (atfork.h), so that
 * it is in place whichever of the two runs first.
 */
#include <stdlib.h>

#include "hook/park.h"
#include "hook/hook.h"
#include "hook/ptrmap.h"
#include "hook/record.h"

/*
 * --growth without the CLI (Slurm, Kubernetes, a user setting
 * VRAMCTL_GROWTH=1): the frameworks' own switches, set only when the user has
 * not set them. This is the one change the library makes to the environment,
 * and it was asked for; it runs in the constructor, before main and before
 * the program has threads of its own, where setenv is safe.
 */
static void apply_growth(void)
{
	if (!vr_g.growth || vr_g.passthrough)
		return;
	setenv("TF_FORCE_GPU_ALLOW_GROWTH", "true", 0);
	setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "false", 0);
}

__attribute__((constructor)) static void vr_constructor(void)
{
	vr_config_init();
	apply_growth();
	if (vr_g.active) {
		vr_rec_prime();
		vr_map_prepare();
		vr_park_arm(); /* --park-idle: the gate before the first driver call */
	}
}
