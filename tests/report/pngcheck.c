/*
 * pngcheck - looks at a rendered picture for the plot's tests: counts the
 * pixels close to a colour inside a rectangle, and names the row that
 * holds most of them. The picture comes from a real renderer (cairo's PNG
 * writer, or rsvg-convert for the SVG); the test asserts on what is where,
 * never on bytes.
 *
 *   pngcheck FILE.png R G B [X0 Y0 X1 Y1]
 *   -> "count N row Y rowcount M width W height H"
 */
#include <cairo.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	if (argc != 5 && argc != 9) {
		fprintf(stderr, "usage: pngcheck FILE.png R G B [X0 Y0 X1 Y1]\n");
		return 2;
	}
	cairo_surface_t *s = cairo_image_surface_create_from_png(argv[1]);
	if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
		fprintf(stderr, "pngcheck: %s: %s\n", argv[1],
		        cairo_status_to_string(cairo_surface_status(s)));
		return 2;
	}
	cairo_surface_flush(s);
	int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
	int stride = cairo_image_surface_get_stride(s);
	const unsigned char *px = cairo_image_surface_get_data(s);
	int r = atoi(argv[2]), g = atoi(argv[3]), b = atoi(argv[4]);
	int x0 = 0, y0 = 0, x1 = w, y1 = h;
	if (argc == 9) {
		x0 = atoi(argv[5]);
		y0 = atoi(argv[6]);
		x1 = atoi(argv[7]);
		y1 = atoi(argv[8]);
	}
	long count = 0;
	int best_row = -1, best = 0;
	for (int y = y0 < 0 ? 0 : y0; y < y1 && y < h; y++) {
		int in_row = 0;
		for (int x = x0 < 0 ? 0 : x0; x < x1 && x < w; x++) {
			/* ARGB32/RGB24 in native endianness: B, G, R, A on little-endian. */
			const unsigned char *p = px + (size_t)y * (size_t)stride + (size_t)x * 4;
			int dr = p[2] - r, dg = p[1] - g, db = p[0] - b;
			if (abs(dr) <= 40 && abs(dg) <= 40 && abs(db) <= 40)
				in_row++;
		}
		count += in_row;
		if (in_row > best) {
			best = in_row;
			best_row = y;
		}
	}
	printf("count %ld row %d rowcount %d width %d height %d\n", count, best_row, best, w, h);
	cairo_surface_destroy(s);
	return 0;
}
