/*
 * report_json.h - the run's report as JSON, with json-c (report_json.c),
 * for --report=FILE.json (docs/report.md, "The report").
 */
#ifndef VRAMCTL_REPORT_REPORT_JSON_H
#define VRAMCTL_REPORT_REPORT_JSON_H

#include <stdint.h>

#include <json-c/json.h>

#include "report/report_facts.h"

/* The report of run r as a JSON object (the caller puts it), as
 * rep_text_report's arguments. */
json_object *rep_json_report(const struct rep_view *r, const struct devsum *ds, int child_rc,
                             uint64_t t_end, struct rep_symbols *sy);

#endif /* VRAMCTL_REPORT_REPORT_JSON_H */
