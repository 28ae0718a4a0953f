/*
 * prom.c - the Prometheus writer the formatters share (prom.h).
 */
#include <inttypes.h>
#include <stdio.h>

#include "monitor/prom.h"

/* A label value, escaped as the exposition format requires. */
static void prom_label_value(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '"')
			fputs("\\\"", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

void mon_prom_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Writes name{k="v",...} value. labels: NULL-terminated key, value pairs.
 * A label whose value is unknown (empty: a GPU index or a name without
 * NVML, a PID in another namespace) is left out, never written as "". */
void mon_prom_sample(FILE *f, const char *name, const char *const *labels, uint64_t value)
{
	fputs(name, f);
	int n = 0;
	for (int i = 0; labels && labels[i]; i += 2) {
		if (!labels[i + 1][0])
			continue;
		fprintf(f, "%s%s=\"", n++ ? "," : "{", labels[i]);
		prom_label_value(f, labels[i + 1]);
		fputc('"', f);
	}
	if (n)
		fputc('}', f);
	fprintf(f, " %" PRIu64 "\n", value);
}
