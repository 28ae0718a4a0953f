/*
 * log.c - every message the library prints goes through here: stderr only,
 * one write(2) per line (lines from threads never interleave, no stdio state
 * of the host program is touched), the fixed prefix "vramctl: ". The level is
 * checked by the vr_log macro before anything is formatted.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/size.h"
#include "hook/atfork.h"
#include "hook/log.h"

int vr_log_verbosity = VR_LOG_WARN;

void vr__log(int level, const char *fmt, ...)
{
	(void)level;
	char line[768] = "vramctl: ";
	size_t n = strlen(line);
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
	va_end(ap);
	if (k < 0)
		return;
	n += (size_t)k < sizeof line - n - 1 ? (size_t)k : sizeof line - n - 2;
	line[n++] = '\n';
	ssize_t w = write(2, line, n);
	(void)w;
}

/*
 * Denials: at most VR_DENY_BURST lines per second; the rest are counted and
 * the count is printed with the next line that gets through.
 */
#define VR_DENY_BURST 5
static _Atomic long deny_second;
static atomic_int deny_in_second;
static atomic_int deny_suppressed;

int vr_log_denial_gate(char *more, size_t len)
{
	more[0] = '\0';
	if (vr_log_verbosity < VR_LOG_WARN)
		return 0;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	long now = (long)ts.tv_sec;
	long was = atomic_load(&deny_second);
	if (was != now && atomic_compare_exchange_strong(&deny_second, &was, now))
		atomic_store(&deny_in_second, 0);
	if (atomic_fetch_add(&deny_in_second, 1) >= VR_DENY_BURST) {
		atomic_fetch_add(&deny_suppressed, 1);
		return 0;
	}
	int sup = atomic_exchange(&deny_suppressed, 0);
	if (sup > 0)
		snprintf(more, len, " (%d more denials not shown)", sup);
	return 1;
}

/* At exit, the denials held back since the last line that got through:
 * a program that ends before another line would carry them counted them
 * nowhere. */
__attribute__((destructor)) static void denials_at_exit(void)
{
	int sup = atomic_exchange(&deny_suppressed, 0);
	if (sup > 0 && vr_log_verbosity >= VR_LOG_WARN)
		vr__log(VR_LOG_WARN, "%d more denial%s not shown (at most %d lines a second)", sup,
		        sup == 1 ? "" : "s", VR_DENY_BURST);
}

/* A child's denials are its own: the parent says its held-back ones. */
static void log_atfork_child(void)
{
	atomic_store(&deny_suppressed, 0);
}
VR_ATFORK_CHILD(log_atfork_child);

void vr_log_denied_why(int ordinal, uint64_t bytes, uint64_t cap, uint64_t in_use, const char *why)
{
	char a[32], b[32], c[32], more[64];
	if (!vr_log_denial_gate(more, sizeof more))
		return;
	const uint64_t shown[] = {in_use, bytes, cap}; /* as say_denied (policy.c) */
	int dg = vr_size_digits(shown, 3, 1);
	vr__log(VR_LOG_WARN, "denied %s on GPU %d: cap %s, %s in use%s%s%s",
	        vr_format_size_digits(bytes, dg, a, sizeof a), ordinal,
	        vr_format_size_digits(cap, dg, b, sizeof b),
	        vr_format_size_digits(in_use, dg, c, sizeof c), why ? "; spill: " : "",
	        why ? why : "", more);
}
