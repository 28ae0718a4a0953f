/*
 * symbols.h - call sites to function, file and line, with elfutils' libdw
 * (the CLI only; the injected library records raw addresses). Debug
 * information is found as gdb finds it: in the object, through its
 * .gnu_debuglink or build ID under /usr/lib/debug.
 */
#ifndef VRAMCTL_REPORT_SYMBOLS_H
#define VRAMCTL_REPORT_SYMBOLS_H

#include <stdint.h>

struct rep_symbols;

struct rep_frame {
	const char *module;   /* path of the object, or NULL */
	const char *function; /* NULL when unknown */
	const char *file;     /* NULL when there is no line information */
	int line;
	uint64_t offset; /* address - load base (what addr2line takes for a PIE/.so) */
};

struct rep_symbols *rep_symbols_new(void);
void rep_symbols_free(struct rep_symbols *s);
/* Resolves a return address pc of the object at path loaded at base. The
 * strings stay valid until rep_symbols_free. */
void rep_symbolise(struct rep_symbols *s, const char *path, uint64_t base, uint64_t pc,
                   struct rep_frame *out);

#endif /* VRAMCTL_REPORT_SYMBOLS_H */
