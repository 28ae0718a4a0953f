/*
 * doctor_books.h - doctor's checks of the books, the picture of who holds
 * memory outside any cap, and the installed Jupyter kernels
 * (doctor_books.c). Each adds its checks to d's report.
 */
#ifndef VRAMCTL_CLI_DOCTOR_BOOKS_H
#define VRAMCTL_CLI_DOCTOR_BOOKS_H

#include "cli/doctor_hook.h"
#include "monitor/model.h"

/* The registry's books: damage (books.damage) and groups (books.groups). */
void dr_check_books(struct doc *d, const struct mon_model *m);
/* Who holds memory on each GPU outside any cap. */
void dr_check_picture(struct doc *d, const struct mon_model *m);
/* The guarantees on each GPU (guarantees): their sum, the free memory
 * nobody is guaranteed, and whether borrowing can be checked (NVML). */
void dr_check_guarantees(struct doc *d, const struct mon_model *m);
/* Kernels vramctl installed whose program is gone (kernel.stale). */
void dr_check_kernels(struct doc *d);

#endif /* VRAMCTL_CLI_DOCTOR_BOOKS_H */
