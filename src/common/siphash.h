/*
 * siphash.h - SipHash-2-4 (Aumasson and Bernstein), a keyed 64-bit hash:
 * the device book names a group by the hash of a secret (its books' key,
 * or a launcher's token) under a fixed key, so a reader of the book finds
 * its own group without anyone learning another group's secret (finding a
 * 64-bit secret back means trying the 2^64 of them). Pure, libc only.
 */
#ifndef VRAMCTL_COMMON_SIPHASH_H
#define VRAMCTL_COMMON_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

/* SipHash-2-4 of len bytes at p under the 16-byte key k, as the reference
 * implementation computes it (its test vectors: tests/unit/test_siphash.c). */
uint64_t vr_siphash24(const unsigned char k[16], const void *p, size_t len);

#endif /* VRAMCTL_COMMON_SIPHASH_H */
