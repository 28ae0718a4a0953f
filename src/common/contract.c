/*
 * contract.c - the rules of the environment contract that more than one part
 * of vramctl checks (see contract.h).
 */
#include "common/contract.h"

#include <errno.h>

#include "common/text.h"

int vr_group_name_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

int vr_group_name_check(const char *name, char *err, size_t errlen)
{
	size_t n = 0;

	if (name && name[0] != '.') {
		while (n <= VR_GROUP_NAME_MAX && name[n] &&
		       vr_group_name_char((unsigned char)name[n]))
			n++;
		if (n >= 1 && n <= VR_GROUP_NAME_MAX && !name[n])
			return 0;
	}
	vr_seterr(err, errlen,
	          "bad group name '%.80s': use 1 to %d of A-Z a-z 0-9 . _ -, not starting with '.'",
	          name ? name : "(null)", VR_GROUP_NAME_MAX);
	return -EINVAL;
}
