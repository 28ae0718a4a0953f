/*
 * test_siphash.c - vr_siphash24 against the reference implementation's
 * test vectors (key 00 01 .. 0f, messages 00 01 .. of length 0..63; the
 * first, the eighth and the last few of vectors.h's vectors_sip64).
 */
#include "common/siphash.h"
#include "tests/test.h"

int main(void)
{
	unsigned char k[16], m[64];
	for (int i = 0; i < 16; i++)
		k[i] = (unsigned char)i;
	for (int i = 0; i < 64; i++)
		m[i] = (unsigned char)i;
	static const struct {
		int len;
		uint64_t want;
	} v[] = {
	    {0, 0x726fdb47dd0e0e31ull},  {1, 0x74f839c593dc67fdull},  {7, 0xab0200f58b01d137ull},
	    {8, 0x93f5f5799a932462ull},  {15, 0xa129ca6149be45e5ull}, {16, 0x3f2acc7f57c29bdbull},
	    {63, 0x958a324ceb064572ull},
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		ASSERT_UEQ(vr_siphash24(k, m, (size_t)v[i].len), v[i].want);
	printf("ok\n");
	return 0;
}
