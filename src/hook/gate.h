/*
 * gate.h - the gate in front of every driver call of a process that may be
 * parked (gate.c: --park-idle). Parking moves the process's device
 * memory to host memory with the driver's checkpoint API; from then on
 * the driver holds every driver call of the process until it is restored.
 * So that a call is never held there forever, each one passes the gate
 * first, and a call that finds the process parked has it restored before
 * it goes on (park.c):
 *
 *   the wrappers (hooks.def) through vr_enter's slow path (real.h), which
 *     the gate reaches by setting vr_g.driver_state to VR_DRIVER_GATED:
 *     their fast path is unchanged (one load they already make);
 *   every other driver entry point the program looks up (dlsym,
 *     cuGetProcAddress) while parking is on: a trampoline of a few
 *     instructions (one load, an indirect jump) that keeps the call's
 *     registers and stack as they are, whatever its signature.
 *
 * The gate is open (0), shut for a probe (the next call through it says
 * the process is not idle: the idle clock's only cost), or shut while the
 * process is parked or being parked (the call waits, or restores it).
 * Without parking, nothing here is used: the program gets the driver's
 * own pointers, and vr_enter's fast path is as it was.
 */
#ifndef VRAMCTL_HOOK_GATE_H
#define VRAMCTL_HOOK_GATE_H

#include <stdint.h>

#include "hook/hook.h"

/* What a call at the shut gate runs is vr_gate_pass (real.h), which
 * park.c sets; never for the library's own calls (vr_in_hook). */

/* 1 when the program's look-ups get trampolines (parking is on and this
 * machine has them). */
int vr_gate_armed(void);
/* The trampoline for the driver's entry point real (the same one for the
 * same real), or real itself when there is none left (said once: that
 * process can then not be parked). */
void *vr_gate_wrap(void *real);
/* 1 when every look-up got a trampoline (none ran out). */
int vr_gate_complete(void);

/* Shuts the gate (every driver call goes to vr_gate_pass) or opens it. */
void vr_gate_shut(void);
void vr_gate_open(void);
/* 1 while shut. */
int vr_gate_is_shut(void);

#endif /* VRAMCTL_HOOK_GATE_H */
