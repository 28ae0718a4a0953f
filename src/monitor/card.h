/*
 * card.h - what the card holds, beside what was allocated: the
 * on-card, allocated and overhead figures of each process row and each
 * group's device, and the words the formatters use for them.
 *
 * The books' in_use is what the cap counts for a member: what it allocated
 * through vramctl plus its overhead (its context, modules, local memory, the
 * driver's own use), as the library last read it from NVML. NVML's own
 * figure may run ahead of the books between two refreshes, so a live
 * member's on-card figure is the larger of the two, never less than what was
 * charged: each figure shown is one the card holds at least.
 */
#ifndef VRAMCTL_MONITOR_CARD_H
#define VRAMCTL_MONITOR_CARD_H

#include <stddef.h>

#include "monitor/model.h"

/* Fills the figures of every row (MON_P_ON_CARD) and of every group's device
 * (on_card, card_overhead, over_cap) from the books and NVML's rows already
 * in m, and raises a peak below what the card holds now to that figure (the
 * books' peak has not seen NVML's yet). Idempotent; never fails. */
void mon_card_figures(struct mon_model *m);

/* The JSON word of a counting: "card", "allocations", "no_figures". */
const char *mon_counting_name(enum vramctl_counting c);

/* The same for people: "card", "allocations only (asked)", "allocations only
 * (no driver figure)". */
const char *mon_counting_text(enum vramctl_counting c);

/* The decimals with which a row's sizes (allocated, on the card, overhead,
 * peak, cap) read apart: figures that differ never print the same
 * (vr_size_digits). For status's and top's rows alike. */
int mon_proc_digits(const struct mon_proc *p);
int mon_group_digits(const struct mon_group_dev *gd);

/* Why a group's device is over its cap on the card (gd->over_cap > 0), one
 * clause: "over cap on the card by X: members' overhead (contexts, modules,
 * driver use) Y, allocations Z (H held, cap C)". Returns buf; "" when it is
 * not over its cap. */
char *mon_over_cap_reason(const struct mon_group_dev *gd, char *buf, size_t len);

/* What being over its cap on the card does to a group's device (over_cap >
 * 0): every allocation refused where its books pass the cap too, else why
 * they are still granted. A clause, no trailing period. */
const char *mon_over_cap_effect(const struct mon_group_dev *gd);

#endif /* VRAMCTL_MONITOR_CARD_H */
