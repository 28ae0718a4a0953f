/*
 * guarantee_park.c - what parking asks of the guarantees
 * (guarantee_park.h, #36).
 */
#include <stdlib.h>

#include "hook/books.h"
#include "hook/guarantee_park.h"
#include "registry/devbook.h"

int vr_gt_owed(struct vr_dev *d)
{
	return d->gt.guarantee && vr_books_in_use(d) <= d->gt.guarantee;
}

int vr_gt_borrowing(struct vr_dev *d)
{
	return !d->gt.guarantee || vr_books_in_use(d) > d->gt.guarantee;
}

int vr_gt_owed_to_uid(const struct vr_dev *d, uint32_t uid)
{
	struct vr_devbook_view *v = malloc(sizeof *v);
	int owed = 0;
	if (v && vr_devbook_read(NULL, d->uuid, v) == 0)
		for (int i = 0; i < v->n && !owed; i++)
			owed =
			    v->e[i].live && v->e[i].uid == uid && v->e[i].held < v->e[i].guarantee;
	free(v);
	return owed;
}
