/*
 * compiler.h - the few compiler attributes the project uses, in one place.
 * Everything is built with -fvisibility=hidden; VR_EXPORT marks the symbols a
 * shared library really exports (its version script lists them too).
 */
#ifndef VRAMCTL_COMPILER_H
#define VRAMCTL_COMPILER_H

#define VR_EXPORT            __attribute__((visibility("default")))
#define VR_UNUSED            __attribute__((unused))
#define VR_LIKELY(x)         __builtin_expect(!!(x), 1)
#define VR_UNLIKELY(x)       __builtin_expect(!!(x), 0)
#define VR_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#define VR_ARRAY_LEN(a)      (sizeof(a) / sizeof((a)[0]))

#endif /* VRAMCTL_COMPILER_H */
