/*
 * spill.h - the host budget of --spill (docs/spill.md), one grammar for
 * `vramctl run --spill[=SIZE]`, VRAMCTL_SPILL and the Slurm plugin:
 *
 *   SPILL := SIZE          the group's host budget (size.h grammar: 16G, 512M)
 *          | "auto"        a conservative share of the host's free memory:
 *                          VR_SPILL_AUTO_SHARE of MemAvailable (/proc/meminfo)
 *                          when the budget is fixed
 *          | "0" | "off"   no spill
 *
 * libc only: used by the injected library too.
 */
#ifndef VRAMCTL_SPILL_H
#define VRAMCTL_SPILL_H

#include <stddef.h>
#include <stdint.h>

/* "auto" takes a quarter of MemAvailable: room for the program's own host
 * memory, the page cache and everyone else on the node. */
#define VR_SPILL_AUTO_SHARE 4

/*
 * Parses SPILL into *budget (0 for off). Returns 0, or -EINVAL/-ERANGE with
 * a one-line message naming the bad text in err (*budget untouched). "auto"
 * with MemAvailable unreadable is -ENOENT (say why: no budget can be
 * chosen).
 */
int vr_parse_spill(const char *text, uint64_t *budget, char *err, size_t errlen);

/* MemAvailable from /proc/meminfo in bytes, or 0 when unknown. */
uint64_t vr_host_available(void);

/*
 * The note said when a group already has another spill budget than the one
 * asked ("group 'GROUP' already has a different spill budget: THEIRS, not
 * ASKED; the group's applies", 0 written "none"): written by the launcher
 * and by the library, in these words only. Into buf, cut to len; returns
 * buf.
 */
char *vr_spill_differs_note(char *buf, size_t len, const char *group, uint64_t theirs,
                            uint64_t asked);

#endif /* VRAMCTL_SPILL_H */
