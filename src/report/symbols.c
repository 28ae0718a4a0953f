/*
 * symbols.c - libdw (elfutils) symbolisation of recorded call sites. One
 * offline Dwfl session per report; each object is reported once at the
 * base it had in the member, so recorded addresses are looked up as they
 * were. A return address points after the call: the line of pc - 1 is the
 * call's.
 */
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/symbols.h"

#define MAX_OBJECTS 256

struct rep_symbols {
	Dwfl *dwfl;
	int n;
	struct {
		char *path;
		uint64_t base;
		Dwfl_Module *mod;
	} obj[MAX_OBJECTS];
};

static char *debuginfo_path;
static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

struct rep_symbols *rep_symbols_new(void)
{
	struct rep_symbols *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->dwfl = dwfl_begin(&callbacks);
	if (!s->dwfl) {
		free(s);
		return NULL;
	}
	return s;
}

void rep_symbols_free(struct rep_symbols *s)
{
	if (!s)
		return;
	dwfl_end(s->dwfl);
	for (int i = 0; i < s->n; i++)
		free(s->obj[i].path);
	free(s);
}

static Dwfl_Module *object(struct rep_symbols *s, const char *path, uint64_t base)
{
	for (int i = 0; i < s->n; i++)
		if (s->obj[i].base == base && !strcmp(s->obj[i].path, path))
			return s->obj[i].mod;
	if (s->n == MAX_OBJECTS)
		return NULL;
	dwfl_report_begin_add(s->dwfl);
	Dwfl_Module *mod = dwfl_report_elf(s->dwfl, path, path, -1, base, false);
	dwfl_report_end(s->dwfl, NULL, NULL);
	s->obj[s->n].path = strdup(path);
	s->obj[s->n].base = base;
	s->obj[s->n].mod = mod;
	if (!s->obj[s->n].path)
		return NULL;
	s->n++;
	return mod;
}

void rep_symbolise(struct rep_symbols *s, const char *path, uint64_t base, uint64_t pc,
                   struct rep_frame *out)
{
	memset(out, 0, sizeof *out);
	out->module = path;
	out->offset = pc - base;
	if (!s || !path || !*path || path[0] != '/')
		return;
	Dwfl_Module *mod = object(s, path, base);
	if (!mod)
		return;
	Dwarf_Addr addr = pc - 1;
	out->function = dwfl_module_addrname(mod, addr);
	Dwfl_Line *line = dwfl_module_getsrc(mod, addr);
	if (line) {
		int lineno = 0;
		const char *file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
		if (file) {
			out->file = file;
			out->line = lineno;
		}
	}
}
