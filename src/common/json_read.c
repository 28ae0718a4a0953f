/*
 * json_read.c - the JSON reader of the programs that do not link json-c
 * (json_read.h).
 */
#include <string.h>

#include "common/json_read.h"

const char *vr_json_skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* The end of the value starting at p (after blanks), or NULL when it is
 * malformed. */
static const char *skip_value(const char *p, const char *end)
{
	int depth = 0;

	p = vr_json_skip_ws(p, end);
	if (p >= end)
		return NULL;
	do {
		if (p >= end)
			return NULL;
		if (*p == '"') {
			for (p++; p < end && *p != '"'; p++)
				if (*p == '\\')
					p++;
			if (p >= end)
				return NULL;
			p++;
		} else if (*p == '{' || *p == '[') {
			depth++;
			p++;
		} else if (*p == '}' || *p == ']') {
			if (--depth < 0)
				return NULL;
			p++;
		} else if (depth == 0) {
			while (p < end && !strchr(",}] \t\r\n", *p))
				p++;
		} else {
			p++;
		}
	} while (depth > 0);
	return p;
}

int vr_json_get(const char *text, size_t len, const char *key, struct vr_json_span *out)
{
	const char *p = vr_json_skip_ws(text, text + len), *end = text + len;
	size_t kl = strlen(key);

	if (p >= end || *p != '{')
		return -1;
	p++;
	for (;;) {
		const char *k, *v;
		size_t klen;

		p = vr_json_skip_ws(p, end);
		if (p >= end || *p != '"')
			return -1;
		k = p + 1;
		p = skip_value(p, end);
		if (!p)
			return -1;
		klen = (size_t)(p - k) - 1;
		p = vr_json_skip_ws(p, end);
		if (p >= end || *p != ':')
			return -1;
		v = vr_json_skip_ws(p + 1, end);
		p = skip_value(v, end);
		if (!p)
			return -1;
		if (klen == kl && !strncmp(k, key, kl)) {
			out->p = v;
			out->n = (size_t)(p - v);
			return 0;
		}
		p = vr_json_skip_ws(p, end);
		if (p < end && *p == ',') {
			p++;
			continue;
		}
		return -1;
	}
}

void vr_json_text(const struct vr_json_span *s, char *buf, size_t len)
{
	size_t o = 0;

	if (len == 0)
		return;
	if (s->n >= 2 && s->p[0] == '"') {
		for (size_t i = 1; i + 1 < s->n && o + 1 < len; i++) {
			if (s->p[i] == '\\' && i + 2 < s->n && strchr("\"\\/", s->p[i + 1]))
				i++;
			buf[o++] = s->p[i];
		}
	}
	buf[o] = '\0';
}
