/*
 * test_text.c - vr_text_escape: what reaches a terminal from text vramctl
 * did not write itself. Printable ASCII and valid UTF-8 pass; C0 controls,
 * DEL, C1 controls (as UTF-8, U+0080..U+009F), raw bytes 0x80..0xff that
 * are not valid UTF-8, overlong forms and surrogates become \xNN; the output
 * is cut, never overrun, and always terminated.
 */
#include "common/text.h"
#include "tests/test.h"

static void expect(const char *in, const char *want)
{
	char out[128];
	ASSERT_STR_EQ(vr_text_escape(out, sizeof(out), in), want);
}

int main(void)
{
	expect("python train.py --lr 0.1", "python train.py --lr 0.1");
	expect("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
	       "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	expect("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07");
	expect("a\tb\nc\rd\x7f", "a\\x09b\\x0ac\\x0dd\\x7f");
	expect("\xc2\x9b"
	       "31m",
	       "\\xc2\\x9b31m"); /* C1 CSI as UTF-8 */
	expect("\x9b"
	       "31m",
	       "\\x9b31m");                                            /* raw C1 byte */
	expect("\xc0\xaf \xe0\x80\xaf", "\\xc0\\xaf \\xe0\\x80\\xaf"); /* overlong */
	expect("\xed\xa0\x80", "\\xed\\xa0\\x80");                     /* a surrogate */
	expect("\xe2\x82", "\\xe2\\x82");                              /* cut short */
	expect(NULL, "");
	char small[6];
	ASSERT_STR_EQ(vr_text_escape(small, sizeof(small), "abcdefgh"), "abcde");
	ASSERT_STR_EQ(vr_text_escape(small, sizeof(small), "ab\x1b"), "ab"); /* no half escape */
	ASSERT_STR_EQ(vr_text_escape(small, sizeof(small), "a\xe2\x82\xac\xe2\x82\xac"),
	              "a\xe2\x82\xac");
	printf("ok\n");
	return 0;
}
