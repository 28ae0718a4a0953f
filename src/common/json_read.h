/*
 * json_read.h - just enough JSON reading for the programs that do not link
 * json-c (vramctl kernel reads kernelspecs with it). Values are handled as
 * raw JSON text: a value found is a span of the document, copied as it is
 * written, never decoded, so nothing can be lost or re-escaped wrongly.
 * The writer is json.h.
 */
#ifndef VRAMCTL_COMMON_JSON_READ_H
#define VRAMCTL_COMMON_JSON_READ_H

#include <stddef.h>

/* A value's raw text within the document. */
struct vr_json_span {
	const char *p;
	size_t n;
};

/* The first byte at or after p (before end) that is not JSON white space. */
const char *vr_json_skip_ws(const char *p, const char *end);

/* The raw value of key in the object text[0..len) (after blanks). 0, or -1
 * if it is absent or the object is malformed before it. */
int vr_json_get(const char *text, size_t len, const char *key, struct vr_json_span *out);

/* A JSON string value as plain text into buf (len > 0, always terminated,
 * cut to fit): the escapes \" \\ \/ undone, others kept as written; "" for
 * a value that is not a string. */
void vr_json_text(const struct vr_json_span *s, char *buf, size_t len);

#endif /* VRAMCTL_COMMON_JSON_READ_H */
