/*
 * json.h - the JSON writer of the programs that do not link json-c (vramctl
 * itself: status --json, doctor --json, kernel install): tokens appended to
 * one buffer that goes to stdio once (jw_finish). Keys are the caller's own
 * plain ASCII literals and are copied without the escape scan; values are
 * escaped. The reader is json_read.h; libexec's heavy programs use json-c.
 */
#ifndef VRAMCTL_COMMON_JSON_H
#define VRAMCTL_COMMON_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/*
 * The writer appends to its own buffer and hands it to stdio once: a
 * thousand processes make some 20,000 tokens, and a stdio call per token
 * cost more than everything else `status --json` does. Start with
 * {.f = stream, .compact = 0 or 1}, end with jw_finish.
 */
struct jw {
	FILE *f;
	int compact;
	int depth;
	int first[32]; /* per depth: no member written yet */
	char *b;
	size_t n, cap;
	int oom;
};

/* Grows the buffer to hold len more bytes (jb_room's slow path). Returns 0,
 * or -1 (and sets oom, leaving the buffer as it was) when memory runs out. */
int jb_grow(struct jw *w, size_t len);

/* Makes room for len more bytes: 0, or -1 when memory runs out. Inline, as
 * it runs for every token and almost always finds the room there. */
static inline int jb_room(struct jw *w, size_t len)
{
	return w->n + len <= w->cap ? 0 : jb_grow(w, len);
}

/* jb_write and jb_putc are inline for the same reason as jb_room: a call
 * per token cost as much as the copy it made. */
static inline void jb_write(struct jw *w, const void *p, size_t len)
{
	if (jb_room(w, len) == 0) {
		memcpy(w->b + w->n, p, len);
		w->n += len;
	}
}

static inline void jb_putc(struct jw *w, char c)
{
	if (jb_room(w, 1) == 0)
		w->b[w->n++] = c;
}

/* The writer's calls; each writes nothing more once memory ran out. */
void jb_puts(struct jw *w, const char *s);
void jw_open(struct jw *w, const char *key, char c);
void jw_close(struct jw *w, char c);
void jw_key(struct jw *w, const char *key);
void jw_str(struct jw *w, const char *key, const char *v);
void jw_u64(struct jw *w, const char *key, uint64_t v, int known);
void jw_int(struct jw *w, const char *key, long long v, int known);
void jw_bool(struct jw *w, const char *key, int v);
void jw_item_str(struct jw *w, const char *v);
/* A string, quoted and escaped, with nothing before it (for a document the
 * caller lays out itself with jb_puts). */
void jb_str(struct jw *w, const char *s);

/* Ends the document with a line break and writes it to w->f in one call;
 * frees the buffer. Returns 0, -ENOMEM when memory ran out (nothing is
 * written), or -EIO when the stream reported an error. */
int jw_finish(struct jw *w);

#endif /* VRAMCTL_COMMON_JSON_H */
