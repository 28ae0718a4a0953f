/*
 * report_facts.h - what the run's report says, drawn from the members'
 * records (report_facts.c): how each member ended, the devices' sums,
 * the blocks held at exit and their call sites. Both formatters
 * (report_text.c, report_json.c) read the run through these.
 */
#ifndef VRAMCTL_REPORT_REPORT_FACTS_H
#define VRAMCTL_REPORT_REPORT_FACTS_H

#include <stddef.h>
#include <stdint.h>

#include "common/record.h"
#include "registry/caps.h"
#include "report/members.h"
#include "report/symbols.h"

/* A process of the run that ran outside the cap (`vramctl run`'s watcher:
 * the library was not loaded in it), charged to the group while seen. */
struct rep_escapee {
	int32_t pid;
	uint64_t start;    /* its start time (/proc/PID/stat field 22) */
	char command[128]; /* its own text */
	char why[160];
	char uuid[48];
	int gpu;       /* the run's index of the GPU, else NVML's */
	uint64_t peak; /* the most the card held for it at once, as seen */
};

/* The run as the formatters see it (report.c fills it from its state). */
struct rep_view {
	const char *command;   /* the command line, words joined by spaces */
	uint64_t t0;           /* when the run started (CLOCK_MONOTONIC, ns) */
	struct rep_members ms; /* every member's record */
	int started;           /* 0: the command could not be started (126, 127) */
	/* The group's cap changes made while the run ran (`vramctl limit`),
	 * oldest first: the last nchanges of changes_total (older ones are
	 * not kept by the group's books). */
	uint64_t changes_total;
	int nchanges;
	const struct vramctl_cap_change *changes;
	int changes_damaged; /* the group's record of them was overwritten: none shown */
	/* Processes of the run that ran outside the cap (report.h). */
	int nescaped;
	const struct rep_escapee *escaped;
};

/* How a member ended. */
enum end_kind { END_EXIT, END_SIGNAL, END_EXITED, END_RUNNING, END_VANISHED };

struct ending {
	enum end_kind kind;
	int code; /* exit status or signal */
	char text[160];
};

/* One device of the run: its cap and the members' sums. peak is of what
 * was allocated; card_peak of what the card held (allocations + overhead),
 * known where a member measured its overhead (card_members > 0). */
struct devsum {
	int used;
	unsigned char uuid[16];
	uint64_t cap, peak, denials, denied_max, denied_need, spilled_peak;
	int peak_exact;   /* the group's peak: the registry's, the trace's, or the
	                     one member's that allocated (else the largest member's) */
	int peak_members; /* members that allocated on it */
	int card_holders; /* members that held memory on its card */
	/* Refusals a larger cap would not grant (other groups' guarantees),
	 * and the new contexts the cap refused (in denials too). */
	uint64_t gt_denials, gt_denied_max, ctx_denials, ctx_denied_max;
	/* The most the run needed at once: on the card + spilled (the
	 * largest member's, or the group's where one member spilled). */
	uint64_t need_peak;
	uint64_t spilled_sum;   /* the members' spilled peaks, summed */
	int spill_members;      /* members that spilled */
	uint64_t card_peak;     /* the group's, or the largest member's (card_exact 0) */
	int card_exact;         /* the registry's group peak on the card */
	int card_members;       /* members whose overhead was measured */
	uint64_t overhead_peak; /* their overhead peaks, summed */
	uint64_t overhead_end;  /* their overhead when they (or the run) ended, summed */
	/* The cap is the one in force at the end; where it changed while the
	 * run ran (rep_cap_history), the lowest it was (UINT64_MAX: none). */
	int cap_changed;
	uint64_t cap_lowest;
	/* Waits for room and parks, summed over the members. */
	uint64_t waits, waits_granted, wait_ns, wait_ns_max, parks, parked_max;
};

/* Fills e with how member m ended (a sentence in e->text). */
void rep_how_ended(const struct rep_member *m, struct ending *e);
/* The JSON key of an end_kind ("exit", "signal", ...). */
const char *rep_end_key(enum end_kind k);

/* A device's UUID as "GPU-..." text. */
void rep_uuid_text(const unsigned char *u, char *out, size_t len);
/* The smallest cap in whole MiB that holds bytes. */
uint64_t rep_right_size(uint64_t bytes);
/* The devices of the members' records, summed (ds: VR_REC_DEVS entries,
 * overwritten); the group's own peaks are the registry's (report.c). */
void rep_sum_devices(const struct rep_members *ms, struct devsum *ds);
/* Marks the devices whose cap changed while the run ran (cap_changed,
 * cap_lowest) from the view's changes. */
void rep_cap_history(const struct rep_view *r, struct devsum *ds);
/* The report's index of the device with this UUID ("GPU-...", as the
 * books' changes have it; ds: VR_REC_DEVS entries), or -1 when no member
 * of the run used it. */
int rep_device_index(const struct devsum *ds, const char *uuid);
/* The peak the cap counted on a device: on the card where it was measured,
 * else of the allocations. */
uint64_t rep_counted_peak(const struct devsum *d);

/* What the run needed at once on a device without spill: the counted peak
 * plus what it spilled to host memory (exact where one member held memory
 * there, else the sum of the peaks: at most that); *exact says which. The
 * counted peak where nothing was spilled. */
uint64_t rep_needed(const struct devsum *d, int *exact);

/* An allocation kind's name ("linear", "vmm", ...; "?" when unknown). */
const char *rep_kind_name(int k);
/* The member's held blocks, largest first (malloc'ed copy; NULL and *n 0
 * when there are none or memory ran out). */
struct vr_rec_leak *rep_sorted_leaks(const struct vr_rec_hdr *h, uint32_t *n);
/* The frameworks of the bits in fw, comma-separated, into buf. Returns buf. */
const char *rep_framework_names(uint32_t fw, char *buf, size_t len);
/* A call site's frames, symbolised (paths: each frame's module). Returns
 * the frame count. */
int rep_site_frames(struct rep_symbols *sy, const struct vr_rec_hdr *h, uint32_t site1,
                    struct rep_frame *out, char paths[][256]);
/* One frame as text: "function (file:line)", "function (module)" or
 * "module+0xOFFSET". */
void rep_frame_text(const struct rep_frame *f, char *buf, size_t len);

/* Seconds from the run's start to t (0 before it). */
double rep_secs(const struct rep_view *r, uint64_t t);

#endif /* VRAMCTL_REPORT_REPORT_FACTS_H */
