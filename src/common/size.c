/*
 * size.c - the size and cap grammar (see size.h). Pure code: no allocation,
 * no locale dependence, no global state, so the injected library can call it
 * from any thread at any time.
 */
#include "common/size.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/compiler.h"
#include "common/text.h"

static int lower(int c)
{
	return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int is_space(int c)
{
	return c == ' ' || c == '\t';
}

/* Case-insensitive comparison of [s, s+n) with a NUL-terminated word. */
static int word_eq(const char *s, size_t n, const char *word)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!word[i] || lower((unsigned char)s[i]) != word[i])
			return 0;
	return word[i] == '\0';
}

/* A DEV index (at most 9 digits, checked by the parser) as a number. */
static int strtol_index(const char *s)
{
	int v = 0;

	for (; is_digit(*s); s++)
		v = v * 10 + (*s - '0');
	return v;
}

/* Unit text to a power of 1024; -1 when unknown. */
static int unit_shift(const char *s, size_t n)
{
	static const struct {
		const char *a, *b, *c;
		int shift;
	} units[] = {
	    {"b", "b", "b", 0},     {"k", "kb", "kib", 10}, {"m", "mb", "mib", 20},
	    {"g", "gb", "gib", 30}, {"t", "tb", "tib", 40},
	};

	if (n == 0)
		return 0;
	for (size_t i = 0; i < VR_ARRAY_LEN(units); i++)
		if (word_eq(s, n, units[i].a) || word_eq(s, n, units[i].b) ||
		    word_eq(s, n, units[i].c))
			return units[i].shift;
	return -1;
}

#define FRAC_DIGITS 9
#define FRAC_ONE    1000000000ull /* 10^FRAC_DIGITS */

/*
 * Parses "INT[.FRAC]" at s (no sign, no exponent) as an exact fixed-point
 * number: *whole, and up to 9 fractional digits scaled by 1e9 in *frac.
 * Returns the characters consumed, 0 when there is no number, -1 on
 * overflow, -2 when more than 9 digits follow the point (a value that
 * cannot be kept exactly is refused, never rounded).
 */
static int parse_decimal(const char *s, uint64_t *whole, uint64_t *frac)
{
	const char *p = s;
	uint64_t w = 0, f = 0, scale = 100000000;
	int digits = 0;

	while (is_digit(*p)) {
		unsigned d = (unsigned)(*p - '0');
		if (w > (UINT64_MAX - d) / 10)
			return -1;
		w = w * 10 + d;
		p++;
		digits++;
	}
	if (*p == '.') {
		p++;
		while (is_digit(*p)) {
			if (scale == 0)
				return -2;
			f += (uint64_t)(*p - '0') * scale;
			scale /= 10;
			p++;
			digits++;
		}
	}
	if (digits == 0)
		return 0;
	*whole = w;
	*frac = f;
	return (int)(p - s);
}

/* Multiplies whole.frac by 2^shift into *out; -ERANGE on overflow. */
static int scale_bytes(uint64_t whole, uint64_t frac, int shift, uint64_t *out)
{
	uint64_t hi, lo;

	if (shift > 0 && whole > (UINT64_MAX >> shift))
		return -ERANGE;
	hi = whole << shift;
	/* frac is in units of 1e-9; 2^40 * 1e9 fits in 64 bits. */
	lo = (uint64_t)(((unsigned __int128)frac << shift) / 1000000000u);
	if (hi > UINT64_MAX - lo)
		return -ERANGE;
	*out = hi + lo;
	return 0;
}

/* Length of text without trailing blanks. */
static size_t trimmed_len(const char *s, size_t n)
{
	while (n > 0 && is_space(s[n - 1]))
		n--;
	return n;
}

/* Parses a SIZE occupying exactly [s, s+n). */
static int parse_size_n(const char *s, size_t n, uint64_t *out, char *err, size_t errlen)
{
	char text[96];
	uint64_t whole, frac, bytes;
	int used, shift;
	size_t start = 0;

	snprintf(text, sizeof(text), "%.*s", (int)(n < 80 ? n : 80), s);
	while (start < n && is_space(s[start]))
		start++;
	n = trimmed_len(s, n);
	if (start >= n) {
		vr_seterr(err, errlen, "empty size");
		return -EINVAL;
	}
	if (s[start] == '-') {
		vr_seterr(err, errlen, "'%s': a size cannot be negative", text);
		return -EINVAL;
	}
	if (s[start] == '+')
		start++;
	used = parse_decimal(s + start, &whole, &frac);
	if (used == -2) {
		vr_seterr(err, errlen, "'%s': at most %d digits after the point", text,
		          FRAC_DIGITS);
		return -EINVAL;
	}
	if (used < 0) {
		vr_seterr(err, errlen, "'%s': too large", text);
		return -ERANGE;
	}
	if (used == 0) {
		vr_seterr(err, errlen, "'%s': not a size (expected a number and a unit, e.g. 4G)",
		          text);
		return -EINVAL;
	}
	start += (size_t)used;
	while (start < n && is_space(s[start]))
		start++;
	shift = unit_shift(s + start, n - start);
	if (shift < 0) {
		vr_seterr(err, errlen,
		          "'%s': unknown unit '%.*s' (use B, K, M, G or T, powers of 1024)", text,
		          (int)(n - start), s + start);
		return -EINVAL;
	}
	/* A fraction of a byte cannot be kept: "1.5" would be 1 B, shown so
	 * where 1.5 was asked (a unit was meant, most likely). */
	if (shift == 0 && frac && whole) {
		if (start == n) /* no unit at all */
			vr_seterr(err, errlen,
			          "'%s': a size in bytes must be whole (a unit is missing? '%sG' "
			          "is %s GiB)",
			          text, text, text);
		else
			vr_seterr(err, errlen, "'%s': a size in bytes must be whole", text);
		return -EINVAL;
	}
	if (scale_bytes(whole, frac, shift, &bytes) < 0) {
		vr_seterr(err, errlen, "'%s': too large", text);
		return -ERANGE;
	}
	if (bytes == 0) {
		vr_seterr(err, errlen, "'%s': a cap must be more than zero bytes", text);
		return -EINVAL;
	}
	*out = bytes;
	return 0;
}

int vr_parse_size(const char *text, uint64_t *out, char *err, size_t errlen)
{
	if (!text) {
		vr_seterr(err, errlen, "empty size");
		return -EINVAL;
	}
	return parse_size_n(text, strlen(text), out, err, errlen);
}

/* Parses AMOUNT (SIZE or PCT%) in [s, s+n) into l. */
static int parse_amount(const char *s, size_t n, struct vr_limit *l, char *err, size_t errlen)
{
	size_t end = trimmed_len(s, n);

	if (end > 0 && s[end - 1] == '%') {
		char text[96];
		uint64_t whole, frac;
		size_t start = 0;
		int used;

		snprintf(text, sizeof(text), "%.*s", (int)(end < 80 ? end : 80), s);
		while (start < end && is_space(s[start]))
			start++;
		if (start < end && s[start] == '-') {
			vr_seterr(err, errlen, "'%s': a percentage cannot be negative", text);
			return -EINVAL;
		}
		used = parse_decimal(s + start, &whole, &frac);
		if (used == -2) {
			vr_seterr(err, errlen, "'%s': at most %d digits after the point", text,
			          FRAC_DIGITS);
			return -EINVAL;
		}
		if (used <= 0 ||
		    trimmed_len(s + start + used, end - 1 - start - (size_t)used) != 0) {
			vr_seterr(err, errlen, "'%s': not a percentage (expected e.g. 50%%)", text);
			return -EINVAL;
		}
		if (whole > 100 || (whole == 100 && frac > 0)) {
			vr_seterr(err, errlen, "'%s': more than 100%%", text);
			return -ERANGE;
		}
		if (whole == 0 && frac == 0) {
			vr_seterr(err, errlen, "'%s': a cap must be more than 0%%", text);
			return -EINVAL;
		}
		l->is_percent = 1;
		l->percent_e9 = whole * FRAC_ONE + frac;
		l->bytes = 0;
		return 0;
	}
	l->is_percent = 0;
	l->percent_e9 = 0;
	return parse_size_n(s, n, &l->bytes, err, errlen);
}

/* Checks a DEV text: a decimal index or a GPU-/MIG- UUID. */
static int valid_dev(const char *s, size_t n)
{
	size_t i;

	if (n == 0)
		return 0;
	for (i = 0; i < n && is_digit(s[i]); i++)
		;
	if (i == n)
		return n <= 9;
	if (n >= 4 && (word_eq(s, 4, "gpu-") || word_eq(s, 4, "mig-"))) {
		for (i = 4; i < n; i++)
			if (!(is_digit(s[i]) || (lower(s[i]) >= 'a' && lower(s[i]) <= 'f') ||
			      s[i] == '-' || s[i] == '/'))
				return 0;
		return n > 4;
	}
	return 0;
}

int vr_parse_limits(const char *spec, struct vr_limits *out, char *err, size_t errlen)
{
	struct vr_limits res;
	const char *p;

	if (!spec || !*spec) {
		vr_seterr(err, errlen, "empty limit");
		return -EINVAL;
	}
	memset(&res, 0, sizeof(res));
	p = spec;
	for (;;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		const char *eq = memchr(p, '=', n);
		struct vr_limit l;
		char item[96];
		int rc;

		memset(&l, 0, sizeof(l));
		snprintf(item, sizeof(item), "%.*s", (int)(n < 80 ? n : 80), p);
		if (trimmed_len(p, n) == 0) {
			vr_seterr(err, errlen, "'%s': empty item in the limit list", spec);
			return -EINVAL;
		}
		if (eq) {
			const char *d = p;
			size_t dn = (size_t)(eq - p);

			while (dn > 0 && is_space(*d)) {
				d++;
				dn--;
			}
			dn = trimmed_len(d, dn);
			if (!valid_dev(d, dn) || dn >= VR_DEV_TEXT_MAX) {
				vr_seterr(err, errlen,
				          "'%s': '%.*s' is not a device (an index such as 0, or a "
				          "UUID such as GPU-...)",
				          item, (int)dn, d);
				return -EINVAL;
			}
			memcpy(l.dev, d, dn);
			l.dev[dn] = '\0';
			rc = parse_amount(eq + 1, n - (size_t)(eq + 1 - p), &l, err, errlen);
		} else {
			rc = parse_amount(p, n, &l, err, errlen);
		}
		if (rc < 0)
			return rc;
		for (int i = 0; i < res.count; i++) {
			if (strcasecmp(res.item[i].dev, l.dev) == 0) {
				vr_seterr(err, errlen, "'%s': %s given more than once", item,
				          l.dev[0] ? "device" : "the cap for every device");
				return -EINVAL;
			}
		}
		if (res.count == VR_MAX_LIMITS) {
			vr_seterr(err, errlen, "too many items in the limit list (at most %d)",
			          VR_MAX_LIMITS);
			return -E2BIG;
		}
		res.item[res.count++] = l;
		if (!end)
			break;
		p = end + 1;
	}
	*out = res;
	return 0;
}

/* percent_e9 / 1e9 percent of total, rounded down, at least one byte. */
static uint64_t percent_of(uint64_t total, uint64_t percent_e9)
{
	unsigned __int128 v = (unsigned __int128)total * percent_e9 / (100 * FRAC_ONE);

	if (v >= total)
		return total;
	return v < 1 ? 1 : (uint64_t)v;
}

/* The 16 bytes of a "GPU-..." or "MIG-..." DEV text; -EINVAL if it is not one. */
static int dev_uuid(const char *dev, unsigned char raw[16])
{
	if (word_eq(dev, 4, "mig-"))
		dev += 4;
	return vr_parse_uuid(dev, raw);
}

int vr_limit_names(const struct vr_limit *it, int index, const unsigned char *uuid)
{
	unsigned char raw[16];
	size_t n = strlen(it->dev), i;

	if (!n)
		return 0;
	for (i = 0; i < n && is_digit(it->dev[i]); i++)
		;
	if (i == n)
		return index >= 0 && strtol_index(it->dev) == index;
	return uuid && dev_uuid(it->dev, raw) == 0 && memcmp(raw, uuid, 16) == 0;
}

/* Items x and y name the same device (both every device, the same index,
 * or UUIDs with the same bytes) with the same amount. */
static int item_same(const struct vr_limit *x, const struct vr_limit *y)
{
	unsigned char rx[16], ry[16];
	if (x->is_percent != y->is_percent ||
	    (x->is_percent ? x->percent_e9 != y->percent_e9 : x->bytes != y->bytes))
		return 0;
	if (!strcmp(x->dev, y->dev))
		return 1;
	return dev_uuid(x->dev, rx) == 0 && dev_uuid(y->dev, ry) == 0 && !memcmp(rx, ry, 16);
}

int vr_limits_same(const char *a, const char *b)
{
	struct vr_limits *la = malloc(2 * sizeof(*la)), *lb = la + 1;
	int same;
	if (!la || vr_parse_limits(a, la, NULL, 0) < 0 || vr_parse_limits(b, lb, NULL, 0) < 0) {
		free(la);
		return !strcmp(a, b);
	}
	same = la->count == lb->count;
	for (int i = 0; same && i < la->count; i++) {
		int found = 0;
		for (int k = 0; !found && k < lb->count; k++)
			found = item_same(&la->item[i], &lb->item[k]);
		same = found;
	}
	free(la);
	return same;
}

const struct vr_limit *vr_limits_item_for(const struct vr_limits *l, int index,
                                          const char *uuid_text)
{
	const struct vr_limit *hit = NULL, *all = NULL;
	unsigned char raw[16];
	const unsigned char *uuid = uuid_text && vr_parse_uuid(uuid_text, raw) == 0 ? raw : NULL;

	for (int i = 0; i < l->count; i++) {
		const struct vr_limit *it = &l->item[i];

		if (!it->dev[0])
			all = it;
		else if (vr_limit_names(it, index, uuid))
			hit = it;
	}
	return hit ? hit : all;
}

int vr_limits_cap_for(const struct vr_limits *l, int index, const char *uuid_text,
                      uint64_t physical_total, uint64_t *cap)
{
	const struct vr_limit *hit = vr_limits_item_for(l, index, uuid_text);

	if (!hit)
		return 0;
	*cap = hit->is_percent ? percent_of(physical_total, hit->percent_e9) : hit->bytes;
	return 1;
}

char *vr_format_amount(const struct vr_limit *l, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	uint64_t v = l->bytes;
	int u = -1;

	if (l->is_percent) {
		uint64_t whole = l->percent_e9 / FRAC_ONE, frac = l->percent_e9 % FRAC_ONE;
		int digits = FRAC_DIGITS;

		if (!frac) {
			snprintf(buf, len, "%llu%%", (unsigned long long)whole);
			return buf;
		}
		while (frac % 10 == 0) {
			frac /= 10;
			digits--;
		}
		snprintf(buf, len, "%llu.%0*llu%%", (unsigned long long)whole, digits,
		         (unsigned long long)frac);
		return buf;
	}
	while (u < 3 && v >= 1024 && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%llu", (unsigned long long)v);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long)v, units[u]);
	return buf;
}

/*
 * The rule, for every size vramctl shows a person: the largest unit the
 * amount reaches, one decimal rounded to the nearest (halves up), ".0"
 * dropped; a value that rounds to 1024 of a unit is shown in the next one.
 * So 1,500 MiB is "1.5 GiB" (1.46), 1,536 MiB "1.5 GiB", 40 GiB "40 GiB",
 * 1,048,575 bytes "1 MiB".
 */
/* The unit (power of 1024) bytes is shown in with digits decimals, and
 * the amount in units x 10^digits, rounded to the nearest (halves up). */
static int size_unit(uint64_t bytes, int digits, uint64_t *scaled)
{
	unsigned __int128 pow10 = 1;
	int u = 0;
	for (int i = 0; i < digits; i++)
		pow10 *= 10;
	while (u < 6 && bytes >= (1ull << (10 * (u + 1))))
		u++;
	if (u == 0) {
		*scaled = (uint64_t)(bytes * pow10);
		return 0;
	}
	for (;;) {
		uint64_t unit = 1ull << (10 * u);
		*scaled = (uint64_t)(((unsigned __int128)bytes * pow10 + unit / 2) / unit);
		if (*scaled < 1024 * pow10 || u == 6)
			return u;
		u++;
	}
}

char *vr_format_size_digits(uint64_t bytes, int digits, char *buf, size_t len)
{
	static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	uint64_t scaled, pow10 = 1;
	if (digits > VR_SIZE_DIGITS_MAX || bytes < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
		return buf;
	}
	if (digits < 0)
		digits = 0;
	int u = size_unit(bytes, digits, &scaled);
	for (int i = 0; i < digits; i++)
		pow10 *= 10;
	uint64_t whole = scaled / pow10, frac = scaled % pow10;
	if (!frac) {
		snprintf(buf, len, "%llu %s", (unsigned long long)whole, names[u]);
		return buf;
	}
	while (frac % 10 == 0) { /* trailing zeros dropped */
		frac /= 10;
		digits--;
	}
	snprintf(buf, len, "%llu.%0*llu %s", (unsigned long long)whole, digits,
	         (unsigned long long)frac, names[u]);
	return buf;
}

char *vr_format_size(uint64_t bytes, char *buf, size_t len)
{
	return vr_format_size_digits(bytes, 1, buf, len);
}

/* What bytes reads as with digits decimals, in units of 1/10^digits of a
 * byte (exact: bytes are whole). */
static unsigned __int128 shown(uint64_t bytes, int digits)
{
	uint64_t scaled;
	int u = size_unit(bytes, digits, &scaled);
	return (unsigned __int128)scaled << (10 * u);
}

int vr_size_digits(const uint64_t *v, int n, int sum_over)
{
	int d;
	for (d = 1; d <= VR_SIZE_DIGITS_MAX; d++) {
		int ok = 1;
		for (int i = 0; i < n && ok; i++)
			for (int k = i + 1; k < n && ok; k++)
				ok = v[i] == v[k] || shown(v[i], d) != shown(v[k], d);
		/* All three read at the same scale (1/10^d of a byte). */
		if (ok && sum_over && n >= 3 && (unsigned __int128)v[0] + v[1] > v[2])
			ok = shown(v[0], d) + shown(v[1], d) > shown(v[2], d);
		if (ok)
			return d;
	}
	return VR_SIZE_DIGITS_MAX + 1;
}

char *vr_format_uuid(const unsigned char uuid[16], char *buf, size_t len)
{
	static const char hx[] = "0123456789abcdef";
	char text[41], *p = text;

	memcpy(p, "GPU-", 4);
	p += 4;
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hx[uuid[i] >> 4];
		*p++ = hx[uuid[i] & 15];
	}
	*p = '\0';
	if (len) {
		size_t n = sizeof(text) - 1 < len - 1 ? sizeof(text) - 1 : len - 1;

		memcpy(buf, text, n);
		buf[n] = '\0';
	}
	return buf;
}

static int hexval(int c)
{
	c = lower(c);
	if (is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int vr_parse_uuid(const char *text, unsigned char uuid[16])
{
	unsigned char out[16];
	const char *p = text;
	int n = 0;

	if (!text)
		return -EINVAL;
	if (word_eq(p, 4, "gpu-"))
		p += 4;
	while (*p && n < 32) {
		int v;

		if (*p == '-') {
			p++;
			continue;
		}
		v = hexval((unsigned char)*p);
		if (v < 0)
			return -EINVAL;
		if (n % 2 == 0)
			out[n / 2] = (unsigned char)(v << 4);
		else
			out[n / 2] |= (unsigned char)v;
		n++;
		p++;
	}
	if (n != 32 || *p)
		return -EINVAL;
	memcpy(uuid, out, 16);
	return 0;
}

char *vr_cap_differs_note(char *buf, size_t len, const char *group, const char *asked)
{
	snprintf(buf, len,
	         "group '%s' was created with a different cap than '%s'; the group's cap applies",
	         group, asked);
	return buf;
}
