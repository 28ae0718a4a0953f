/*
 * atfork.c - runs every module's fork handler in a child (atfork.h).
 */
#include <pthread.h>

#include "hook/atfork.h"

/* Set by the linker around the section's entries. */
extern const vr_atfork_fn __start_vr_atfork[] __attribute__((visibility("hidden")));
extern const vr_atfork_fn __stop_vr_atfork[] __attribute__((visibility("hidden")));

static void atfork_child(void)
{
	for (const vr_atfork_fn *f = __start_vr_atfork; f < __stop_vr_atfork; f++)
		(*f)();
}

void vr_atfork_register(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}
