/*
 * test_top_layout - the fixed-width columns of `vramctl top` (top_layout):
 * a cell longer than its column is cut with a marker and a space always
 * separates columns, so a long group name never runs into the next value.
 */
#include <stdio.h>
#include <string.h>

#include "cli/top_layout.h"
#include "tests/test.h"

static void test_row(void)
{
	/* The row that showed as "run-1067-5d3.00 GiB": GROUP is 10 wide. */
	const int w[] = {7, 3, 8, 10, 8, 0};
	const char *cells[] = {"1067", "0", "alice", "run-1067-5df5a3a6", "3 GiB", "python x.py"};
	char out[256];
	int x[6];

	size_t n = top_layout(w, 6, cells, out, sizeof(out), x);
	ASSERT_STR_EQ(out, "1067    0   alice    run-1067-~ 3 GiB    python x.py");
	ASSERT_EQ(n, strlen(out));
	ASSERT_EQ(x[0], 0);
	ASSERT_EQ(x[3], 21);
	ASSERT_EQ(x[4], 32);
	ASSERT_EQ(x[5], 41);
	ASSERT(strstr(out, "5d3") == NULL);

	/* Exactly the width: no marker; one more character: a marker. */
	const char *exact[] = {"1234567", "abc"};
	const int w2[] = {7, 3};
	top_layout(w2, 2, exact, out, sizeof(out), NULL);
	ASSERT_STR_EQ(out, "1234567 abc");
	const char *over[] = {"12345678", "abcd"};
	top_layout(w2, 2, over, out, sizeof(out), NULL);
	ASSERT_STR_EQ(out, "123456~ ab~");

	/* Empty and missing cells are blanks of the column's width. */
	const char *empty[] = {"", NULL, "z"};
	const int w3[] = {2, 2, 0};
	top_layout(w3, 3, empty, out, sizeof(out), NULL);
	ASSERT_STR_EQ(out, "      z");

	/* UTF-8 is counted in characters and never cut inside one. */
	const char *utf[] = {"\xc3\xa9l\xc3\xa8ve", "x"};
	const int w4[] = {4, 0};
	top_layout(w4, 2, utf, out, sizeof(out), x);
	ASSERT_STR_EQ(out, "\xc3\xa9l\xc3\xa8~ x");
	ASSERT_EQ(x[1], 5);
	const char *utf2[] = {"\xc3\xa9l", "x"};
	top_layout(w4, 2, utf2, out, sizeof(out), NULL);
	ASSERT_STR_EQ(out, "\xc3\xa9l   x");

	/* A short buffer: cut, terminated. */
	char small[6];
	top_layout(w, 6, cells, small, sizeof(small), NULL);
	ASSERT_STR_EQ(small, "1067 ");
}

/* A line cut at the screen's edge ends in the cells' mark, never silently
 * (#35, Low): "h: help" cut to "h:" read as whole. */
static void test_cut(void)
{
	char out[64];
	ASSERT_STR_EQ(top_cut("sort: ON CARD  h: help", 22, out, sizeof(out)),
	              "sort: ON CARD  h: help");
	ASSERT_STR_EQ(top_cut("sort: ON CARD  h: help", 17, out, sizeof(out)), "sort: ON CARD  h~");
	ASSERT_STR_EQ(top_cut("\xc3\xa9l\xc3\xa8ve", 3, out, sizeof(out)), "\xc3\xa9l~");
	ASSERT_STR_EQ(top_cut("ab", 1, out, sizeof(out)), "~");
	char small[4];
	ASSERT_STR_EQ(top_cut("abcdef", 5, small, sizeof(small)), "abc");
}

int main(void)
{
	test_row();
	test_cut();
	printf("ok\n");
	return 0;
}
