/*
 * top_layout.c - fixed-width columns for `vramctl top` (see top_layout.h). Pure:
 * no terminal, so it is tested on fixed input (tests/cli/test_top_layout).
 */
#include <stdio.h>
#include <string.h>

#include "cli/top_layout.h"

#define CUT_MARK '~'

/* Characters are counted as UTF-8 code points, one column each; a cut never
 * splits one. */
static int is_lead(unsigned char c)
{
	return (c & 0xc0) != 0x80;
}

/* Bytes of s that hold its first max characters; *chars gets how many. */
static size_t fit(const char *s, int max, int *chars)
{
	size_t i = 0;
	int n = 0;
	while (s[i]) {
		if (is_lead((unsigned char)s[i])) {
			if (n == max)
				break;
			n++;
		}
		i++;
	}
	*chars = n;
	return i;
}

size_t top_layout(const int *widths, int n, const char *const *cells, char *out, size_t len, int *x)
{
	size_t o = 0;
	int col = 0; /* characters written so far */

	if (len == 0)
		return 0;
#define PUT(c)                                                                                     \
	do {                                                                                       \
		if (o + 1 < len)                                                                   \
			out[o++] = (c);                                                            \
	} while (0)
	for (int i = 0; i < n; i++) {
		const char *s = cells[i] ? cells[i] : "";
		int w = widths[i], chars;
		size_t b;

		if (i > 0) {
			PUT(' ');
			col++;
		}
		if (x)
			x[i] = col;
		if (w <= 0) { /* the rest of the line */
			b = strlen(s);
			for (size_t k = 0; k < b; k++)
				PUT(s[k]);
			break;
		}
		b = fit(s, w, &chars);
		if (s[b]) { /* longer than the column: cut, and say so */
			b = fit(s, w - 1, &chars);
			for (size_t k = 0; k < b; k++)
				PUT(s[k]);
			PUT(CUT_MARK);
			chars++;
		} else {
			for (size_t k = 0; k < b; k++)
				PUT(s[k]);
		}
		for (; chars < w; chars++)
			PUT(' ');
		col += w;
	}
#undef PUT
	out[o] = '\0';
	return o;
}

char *top_cut(const char *s, int max, char *out, size_t len)
{
	int chars;
	size_t b = fit(s, max, &chars);

	if (len == 0)
		return out;
	if (!s[b]) {
		snprintf(out, len, "%s", s);
		return out;
	}
	b = fit(s, max - 1, &chars);
	snprintf(out, len, "%.*s%c", (int)b, s, CUT_MARK);
	return out;
}
