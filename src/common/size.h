/*
 * size.h - the size and cap grammar shared by `vramctl run --limit`, the
 * injected library (VRAMCTL_LIMIT) and the Slurm plugin (--gpu-mem).
 *
 *   SPEC  := ITEM ("," ITEM)*
 *   ITEM  := AMOUNT | DEV "=" AMOUNT
 *   AMOUNT:= SIZE | NUMBER "%"            (0 < percent <= 100)
 *   SIZE  := NUMBER [UNIT]                (integer or decimal, > 0)
 *   NUMBER:= DIGITS ["." DIGITS]          (at most 9 digits after the point)
 *   UNIT  := B | K | KB | KiB | M | MB | MiB | G | GB | GiB | T | TB | TiB
 *            (case-insensitive; all powers of 1024, as nvidia-smi reports)
 *   DEV   := device index as the program sees it (after CUDA_VISIBLE_DEVICES)
 *            | GPU UUID ("GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")
 *
 * A bare number is bytes. Functions return 0, or -EINVAL/-ERANGE with a
 * one-line message naming the bad text in err; on error *out is untouched.
 */
#ifndef VRAMCTL_SIZE_H
#define VRAMCTL_SIZE_H

#include <stddef.h>
#include <stdint.h>

#define VR_MAX_LIMITS   64
#define VR_DEV_TEXT_MAX 48 /* "GPU-" + 36 characters, with room */

struct vr_limit {
	char dev[VR_DEV_TEXT_MAX]; /* "" for every device; else index or UUID */
	int is_percent;
	uint64_t percent_e9; /* when is_percent: percent x 1e9, exact, in (0, 100e9] */
	uint64_t bytes;      /* otherwise: > 0 */
};

struct vr_limits {
	int count;
	struct vr_limit item[VR_MAX_LIMITS];
};

int vr_parse_size(const char *text, uint64_t *out, char *err, size_t errlen);
int vr_parse_limits(const char *spec, struct vr_limits *out, char *err, size_t errlen);

/*
 * The note said when a group already has another cap than the one asked
 * ("group 'GROUP' was created with a different cap than 'ASKED'; the
 * group's cap applies"): written by the launcher (vramctl run) and by the
 * library, in these words only. Into buf, cut to len; returns buf.
 */
char *vr_cap_differs_note(char *buf, size_t len, const char *group, const char *asked);

/*
 * Do two specs ask for the same caps? Compared as amounts, not as texts
 * ("5G" and "5120M" are the same cap; "4G,1=2G" and "1=2G,4G" too): the
 * same devices named (UUIDs by their bytes), each with an equal amount.
 * A spec that does not parse is compared as text. Returns 1 or 0.
 */
int vr_limits_same(const char *a, const char *b);

/*
 * The cap for one device: the item naming its index or UUID, else the item
 * for every device; percentages are taken of physical_total. Returns 1 and
 * sets *cap when some item applies, 0 when the device is uncapped.
 * uuid_text is "GPU-..." (may be NULL).
 */
int vr_limits_cap_for(const struct vr_limits *l, int index, const char *uuid_text,
                      uint64_t physical_total, uint64_t *cap);
/* The item vr_limits_cap_for takes for the device, or NULL when none applies. */
const struct vr_limit *vr_limits_item_for(const struct vr_limits *l, int index,
                                          const char *uuid_text);

/*
 * Does the item name this device: its index (as the program numbers it), or
 * its UUID compared by bytes ("GPU-..." and "MIG-..." texts, any case)?
 * uuid may be NULL (16 raw bytes otherwise). The item for every device
 * names none.
 */
int vr_limit_names(const struct vr_limit *it, int index, const unsigned char *uuid);

/*
 * An AMOUNT in the grammar's own words, exact and short: a percentage as
 * "50%" or "0.00001%" (never an exponent), bytes in the largest unit that
 * divides them ("4G", "1536M", "1000"). vr_parse_limits reads it back to the
 * same value: this is the one formatter of what launchers hand the library.
 */
char *vr_format_amount(const struct vr_limit *l, char *buf, size_t len);

/* The one human form of a size in vramctl (status, top, messages), powers
 * of 1024, one decimal rounded to the nearest: "512 B", "600 MiB", "1 GiB",
 * "1.5 GiB" (size.c states the rule). */
char *vr_format_size(uint64_t bytes, char *buf, size_t len);

/*
 * The same with `digits` decimals (trailing zeros dropped); more than
 * VR_SIZE_DIGITS_MAX: the exact bytes ("1073741825 B"). For a message that
 * shows sizes side by side, vr_size_digits gives the fewest decimals (1 at
 * least, as vr_format_size) with which the sizes v[0..n) read as they are:
 * sizes that differ print differently (a cap and what is in use never both
 * read "1.5 GiB" unless equal) and, with sum_over set and v[0] + v[1] >
 * v[2], what v[0] and v[1] read as adds up to more than what v[2] reads as
 * (a denial's in use + asked over the cap shows it). Returns a digits
 * value for vr_format_size_digits.
 */
#define VR_SIZE_DIGITS_MAX 6
char *vr_format_size_digits(uint64_t bytes, int digits, char *buf, size_t len);
int vr_size_digits(const uint64_t *v, int n, int sum_over);

/* The one text form of a GPU UUID, as NVML writes it:
 * "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (lower-case hex) from 16 raw
 * bytes; truncated to len - 1 characters (41 bytes hold it all). */
char *vr_format_uuid(const unsigned char uuid[16], char *buf, size_t len);
/* The reverse; accepts upper or lower case hex. Returns 0 or -EINVAL. */
int vr_parse_uuid(const char *text, unsigned char uuid[16]);

#endif /* VRAMCTL_SIZE_H */
