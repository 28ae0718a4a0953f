/*
 * top_layout.h - `vramctl top`'s fixed-width columns (top_layout.c): pure,
 * tested on fixed input.
 */
#ifndef VRAMCTL_CLI_TOP_LAYOUT_H
#define VRAMCTL_CLI_TOP_LAYOUT_H

#include <stddef.h>

/*
 * Lays out one line of n cells in columns of fixed widths (characters; a
 * width of 0 takes the rest). A cell longer than its column is cut and ends
 * in '~', and one space always separates two columns, so cells never run
 * into each other. x[i] (when x is not NULL) gets column i's first
 * character. Writes at most len - 1 bytes and a NUL; returns the line's
 * length in bytes.
 */
size_t top_layout(const int *widths, int n, const char *const *cells, char *out, size_t len,
                  int *x);

/*
 * s cut to the screen's max characters (max > 0): unchanged when it fits,
 * else its first max - 1 characters and '~', as a cell is cut, so a line
 * cut at the screen's edge says so. Writes at most len - 1 bytes and a NUL;
 * returns out.
 */
char *top_cut(const char *s, int max, char *out, size_t len);

#endif /* VRAMCTL_CLI_TOP_LAYOUT_H */
