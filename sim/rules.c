/*
 * rules.c - the test controls shared by both simulated libraries:
 * VRAMSIM_FAULT ("name:N:code", "name:N+:code"; code a number or a name such
 * as CUDA_ERROR_OUT_OF_MEMORY), VRAMSIM_SLOW
 * ("name:microseconds") and VRAMSIM_STOP ("name:N"). Each library keeps its
 * own table of names and call counters; a rule naming the other library's
 * function (by its "cu"/"nvml" prefix) is left to it, an unknown name of its
 * own is reported once on stderr and ignored.
 */
#include "sim.h"

#include "common/compiler.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { RULE_FAULT, RULE_SLOW, RULE_STOP };

static int fn_index(const struct sim_rules *r, const char *name)
{
	for (int i = 0; i < r->count; i++)
		if (strcmp(r->names[i], name) == 0)
			return i;
	return -1;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return (errno || *end) ? -1 : 0;
}

/* One rule; returns 0 (added or not ours), or -1 when malformed. */
static int parse_rule(struct sim_rules *r, int kind, char *tok)
{
	char *f[4] = {0};
	int nf = 0;
	struct sim_rule rule = {.kind = kind};
	for (char *save = NULL, *p = strtok_r(tok, ":", &save); p && nf < 4;
	     p = strtok_r(NULL, ":", &save))
		f[nf++] = p;
	if (nf < 2)
		return -1;
	if (strncmp(f[0], r->prefix, strlen(r->prefix)) != 0)
		return strncmp(f[0], r->other_prefix, strlen(r->other_prefix)) == 0 ? 0 : -1;
	if ((rule.fn = fn_index(r, f[0])) < 0)
		return -1;
	if (kind == RULE_FAULT) {
		uint64_t code;
		size_t l = strlen(f[1]);
		if (nf != 3)
			return -1;
		if (l > 1 && f[1][l - 1] == '+') {
			rule.from = 1;
			f[1][l - 1] = '\0';
		}
		if (parse_u64(f[1], &rule.n) || rule.n == 0)
			return -1;
		if (parse_u64(f[2], &code) == 0 && code <= 100000)
			rule.code = (int)code;
		else if (!r->code_by_name || r->code_by_name(f[2], &rule.code) != 0)
			return -1;
	} else if (kind == RULE_SLOW) {
		if (nf != 2 || parse_u64(f[1], &rule.us))
			return -1;
	} else {
		if (nf != 2 || parse_u64(f[1], &rule.n) || rule.n == 0)
			return -1;
	}
	if (r->nrules >= SIM_MAX_RULES)
		return -1;
	r->rules[r->nrules++] = rule;
	atomic_store(&r->has[rule.fn], 1);
	return 0;
}

static void parse_env(struct sim_rules *r, const char *var, int kind)
{
	const char *s = getenv(var);
	char buf[2048];
	if (!s || !*s)
		return;
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char copy[256];
		snprintf(copy, sizeof(copy), "%s", tok);
		if (parse_rule(r, kind, copy) != 0)
			sim_warn(
			    "ignoring \"%s\" in %s (unknown function, bad number or unknown code)",
			    tok, var);
	}
}

static void load(struct sim_rules *r)
{
	pthread_mutex_lock(&r->mu);
	if (!atomic_load(&r->loaded)) {
		parse_env(r, "VRAMSIM_FAULT", RULE_FAULT);
		parse_env(r, "VRAMSIM_SLOW", RULE_SLOW);
		parse_env(r, "VRAMSIM_STOP", RULE_STOP);
		atomic_store(&r->loaded, 1);
	}
	pthread_mutex_unlock(&r->mu);
}

int sim_rules_pre(struct sim_rules *r, int fn, int *code)
{
	if (VR_UNLIKELY(!atomic_load(&r->loaded)))
		load(r);
	uint64_t n = atomic_fetch_add(&r->calls[fn], 1) + 1;
	if (!atomic_load(&r->has[fn]))
		return 0;
	for (int i = 0; i < r->nrules; i++) {
		const struct sim_rule *u = &r->rules[i];
		if (u->fn == fn && u->kind == RULE_STOP && u->n == n)
			raise(SIGSTOP);
	}
	for (int i = 0; i < r->nrules; i++) {
		const struct sim_rule *u = &r->rules[i];
		if (u->fn != fn || u->kind != RULE_SLOW)
			continue;
		struct timespec ts = {(time_t)(u->us / 1000000), (long)(u->us % 1000000) * 1000};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
	for (int i = 0; i < r->nrules; i++) {
		const struct sim_rule *u = &r->rules[i];
		if (u->fn == fn && u->kind == RULE_FAULT && (n == u->n || (u->from && n > u->n))) {
			*code = u->code;
			return 1;
		}
	}
	return 0;
}
