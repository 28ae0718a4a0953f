/*
 * atfork.h - the one fork handler of the library (atfork.c). In a child
 * after fork the CUDA state of the parent does not carry over, so neither
 * do its books: each module forgets what it holds (and makes new the locks
 * another thread may have held at the fork); the child joins anew at its
 * first allocation.
 *
 * Each module names its own handler beside its state with
 * VR_ATFORK_CHILD(fn): a pointer placed in the section vr_atfork, which
 * atfork.c walks. So the handler is in place from the start (a wrapper may
 * run before the library's constructor, from another library's), and the
 * bottom of the library runs every module's handler without calling up
 * into any of them. Handlers only reset their own module: their order
 * (link order) does not matter.
 */
#ifndef VRAMCTL_HOOK_ATFORK_H
#define VRAMCTL_HOOK_ATFORK_H

typedef void (*vr_atfork_fn)(void);

/* Clang's AddressSanitizer would pad the entries apart (gcc's leaves
 * globals in named sections alone). */
#if defined(__clang__)
#define VR_ATFORK_NO_ASAN __attribute__((no_sanitize("address")))
#else
#define VR_ATFORK_NO_ASAN
#endif

#define VR_ATFORK_CHILD(fn)                                                                        \
	static const vr_atfork_fn vr__atfork_##fn                                                  \
	    __attribute__((used, section("vr_atfork"), aligned(sizeof(vr_atfork_fn))))             \
	    VR_ATFORK_NO_ASAN = fn

/* Registers the handler with pthread_atfork, once (under a cap). */
void vr_atfork_register(void);

#endif /* VRAMCTL_HOOK_ATFORK_H */
