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

/* The GPU index of model device i as text, "" when unknown (left out). */
static const char *gpu_label(const struct mon_model *m, int i, char *buf, size_t len)
{
	int idx = mon_model_gpu_index(m, i, 1);
	if (idx >= 0)
		snprintf(buf, len, "%d", idx);
	else
		buf[0] = 0;
	return buf;
}

void mon_prom_device(FILE *f, const struct mon_model *m, int i, const char *name, const char *help,
                     int *any, const char *const *extra, uint64_t v)
{
	if (!*any)
		mon_prom_head(f, name, "gauge", help);
	*any = 1;
	char gpu[16];
	const char *labels[13] = {"gpu", gpu_label(m, i, gpu, sizeof gpu), "uuid", m->devs[i].uuid};
	for (int k = 0; extra && k < 8 && extra[k]; k++)
		labels[4 + k] = extra[k];
	mon_prom_sample(f, name, labels, v);
}

void mon_prom_group_dev(FILE *f, const struct mon_model *m, const struct mon_group *g,
                        const struct mon_group_dev *gd, const char *name, const char *help,
                        int *any, uint64_t v)
{
	if (!*any)
		mon_prom_head(f, name, "gauge", help);
	*any = 1;
	char gpu[16];
	const char *labels[] = {"group", g->name,  "gpu", gpu_label(m, gd->device, gpu, sizeof gpu),
	                        "uuid",  gd->uuid, NULL};
	mon_prom_sample(f, name, labels, v);
}
