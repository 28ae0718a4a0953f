/*
 * siphash.c - SipHash-2-4 (siphash.h), after the reference implementation.
 */
#include <string.h>

#include "common/siphash.h"

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void round2(uint64_t v[4])
{
	v[0] += v[1];
	v[1] = ROTL(v[1], 13);
	v[1] ^= v[0];
	v[0] = ROTL(v[0], 32);
	v[2] += v[3];
	v[3] = ROTL(v[3], 16);
	v[3] ^= v[2];
	v[0] += v[3];
	v[3] = ROTL(v[3], 21);
	v[3] ^= v[0];
	v[2] += v[1];
	v[1] = ROTL(v[1], 17);
	v[1] ^= v[2];
	v[2] = ROTL(v[2], 32);
}

static void absorb(uint64_t v[4], uint64_t m)
{
	v[3] ^= m;
	round2(v);
	round2(v);
	v[0] ^= m;
}

uint64_t vr_siphash24(const unsigned char k[16], const void *p, size_t len)
{
	const unsigned char *in = p;
	uint64_t k0 = le64(k), k1 = le64(k + 8);
	uint64_t v[4] = {k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull,
	                 k0 ^ 0x6c7967656e657261ull, k1 ^ 0x7465646279746573ull};
	size_t whole = len - len % 8;
	for (size_t i = 0; i < whole; i += 8)
		absorb(v, le64(in + i));
	unsigned char last[8] = {0};
	memcpy(last, in + whole, len % 8);
	last[7] = (unsigned char)len;
	absorb(v, le64(last));
	v[2] ^= 0xff;
	for (int i = 0; i < 4; i++)
		round2(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}
