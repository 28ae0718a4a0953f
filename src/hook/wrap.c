/*
 * wrap.c - the out-of-line part of the wrappers' pattern (wrap.h): what an
 * allocation the driver refused undoes. Out of line, so that only a
 * failure pays for it and the allocation path keeps its registers.
 */
#include "hook/wrap.h"

CUresult vr_wrap_refused(struct vr_dev *d, uint64_t bytes, CUresult rc)
{
	vr_card_landed();
	vr_policy_release(d, bytes);
	if (rc == CUDA_ERROR_OUT_OF_MEMORY && d)
		vr_drvlimit_explain(d, bytes);
	return rc;
}
