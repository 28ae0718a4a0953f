/*
 * json.c - the JSON writer of the light programs (see json.h).
 */
#include "common/json.h"

#include <errno.h>
#include <stdlib.h>

int jb_grow(struct jw *w, size_t len)
{
	if (w->oom)
		return -1;
	size_t ncap = w->cap ? w->cap : 16384;
	while (ncap < w->n + len)
		ncap *= 2;
	char *nb = realloc(w->b, ncap);
	if (!nb) {
		w->oom = 1;
		return -1;
	}
	w->b = nb;
	w->cap = ncap;
	return 0;
}

void jb_puts(struct jw *w, const char *s)
{
	jb_write(w, s, strlen(s));
}

static void jb_u64(struct jw *w, uint64_t v)
{
	char d[24];
	int i = (int)sizeof(d);
	do {
		d[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	jb_write(w, d + i, sizeof(d) - (size_t)i);
}

static void jb_i64(struct jw *w, long long v)
{
	if (v < 0) {
		jb_putc(w, '-');
		jb_u64(w, 0 - (uint64_t)v);
	} else {
		jb_u64(w, (uint64_t)v);
	}
}

/* A line break and the indentation of the current depth, in one copy: two
 * spaces a level, at most as deep as first[] allows. */
static void jw_nl(struct jw *w)
{
	static const char nl_indent[] = "\n"
	                                "                                "
	                                "                                ";
	if (w->compact)
		return;
	jb_write(w, nl_indent, 1 + 2 * (size_t)w->depth);
}

/* Before a value or a key: the comma and line break its container needs. */
static void jw_sep(struct jw *w)
{
	if (w->depth == 0)
		return;
	if (!w->first[w->depth])
		jb_putc(w, ',');
	w->first[w->depth] = 0;
	jw_nl(w);
}

/* The bytes a JSON string cannot hold as they are: controls (NUL ends the
 * string and stops the scan too), the quote and the backslash. A table
 * makes the scan of a value (commands are long) one load per byte. */
static const unsigned char json_escaped[256] = {
    /* clang-format off */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    /* clang-format on */
    ['"'] = 1,
    ['\\'] = 1,
};

/* A string value, quoted and escaped. */
void jb_str(struct jw *w, const char *s)
{
	jb_putc(w, '"');
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		/* Runs of characters that need no escape go out in one write. */
		const unsigned char *q = p;
		while (!json_escaped[*q])
			q++;
		if (q > p)
			jb_write(w, p, (size_t)(q - p));
		if (!*q)
			break;
		switch (*q) {
		case '"':
			jb_puts(w, "\\\"");
			break;
		case '\\':
			jb_puts(w, "\\\\");
			break;
		case '\n':
			jb_puts(w, "\\n");
			break;
		case '\t':
			jb_puts(w, "\\t");
			break;
		case '\r':
			jb_puts(w, "\\r");
			break;
		default:
			jb_puts(w, "\\u00");
			jb_putc(w, "0123456789abcdef"[*q >> 4]);
			jb_putc(w, "0123456789abcdef"[*q & 15]);
		}
		p = q + 1;
	}
	jb_putc(w, '"');
}

/* "key": with its separator. Keys are this file's own literals, plain
 * ASCII, so they are copied without the escape scan values get. */
static void jw_plain_key(struct jw *w, const char *key)
{
	size_t len = strlen(key);
	if (jb_room(w, len + 4) != 0)
		return;
	char *d = w->b + w->n;
	*d++ = '"';
	memcpy(d, key, len);
	d += len;
	*d++ = '"';
	*d++ = ':';
	if (!w->compact)
		*d++ = ' ';
	w->n = (size_t)(d - w->b);
}

void jw_open(struct jw *w, const char *key, char c)
{
	jw_sep(w);
	if (key)
		jw_plain_key(w, key);
	jb_putc(w, c);
	w->depth++;
	w->first[w->depth] = 1;
}

void jw_close(struct jw *w, char c)
{
	int empty = w->first[w->depth];
	w->depth--;
	if (!empty)
		jw_nl(w);
	jb_putc(w, c);
}

void jw_key(struct jw *w, const char *key)
{
	jw_sep(w);
	jw_plain_key(w, key);
}

void jw_str(struct jw *w, const char *key, const char *v)
{
	jw_key(w, key);
	if (v)
		jb_str(w, v);
	else
		jb_puts(w, "null");
}

void jw_u64(struct jw *w, const char *key, uint64_t v, int known)
{
	jw_key(w, key);
	if (known)
		jb_u64(w, v);
	else
		jb_puts(w, "null");
}

void jw_int(struct jw *w, const char *key, long long v, int known)
{
	jw_key(w, key);
	if (known)
		jb_i64(w, v);
	else
		jb_puts(w, "null");
}

void jw_bool(struct jw *w, const char *key, int v)
{
	jw_key(w, key);
	jb_puts(w, v ? "true" : "false");
}

void jw_item_str(struct jw *w, const char *v)
{
	jw_sep(w);
	jb_str(w, v);
}

int jw_finish(struct jw *w)
{
	jb_putc(w, '\n');
	if (w->oom) {
		free(w->b);
		return -ENOMEM;
	}
	fwrite(w->b, 1, w->n, w->f);
	free(w->b);
	return ferror(w->f) ? -EIO : 0;
}
