/*
 * spill.c - the --spill grammar (spill.h) and the host's free memory.
 */
#include "common/spill.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/size.h"
#include "common/text.h"

uint64_t vr_host_available(void)
{
	char buf[4096];
	int fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *p = strstr(buf, "MemAvailable:");
	unsigned long long kib;
	if (!p || sscanf(p + 13, "%llu", &kib) != 1)
		return 0;
	return (uint64_t)kib * 1024;
}

int vr_parse_spill(const char *text, uint64_t *budget, char *err, size_t errlen)
{
	if (!text || !*text) {
		vr_seterr(err, errlen, "empty spill size (give SIZE, auto or 0)");
		return -EINVAL;
	}
	if (!strcmp(text, "0") || !strcasecmp(text, "off")) {
		*budget = 0;
		return 0;
	}
	if (!strcasecmp(text, "auto")) {
		uint64_t avail = vr_host_available();
		if (avail == 0) {
			vr_seterr(err, errlen,
			          "spill 'auto': the host's free memory is unknown (no "
			          "MemAvailable in /proc/meminfo); give a size");
			return -ENOENT;
		}
		*budget = avail / VR_SPILL_AUTO_SHARE;
		return 0;
	}
	uint64_t b;
	int rc = vr_parse_size(text, &b, err, errlen);
	if (rc == 0)
		*budget = b;
	return rc;
}

char *vr_spill_differs_note(char *buf, size_t len, const char *group, uint64_t theirs,
                            uint64_t asked)
{
	char a[32], b[32];
	snprintf(buf, len,
	         "group '%s' already has a different spill budget: %s, not %s; the group's applies",
	         group, theirs ? vr_format_size(theirs, a, sizeof a) : "none",
	         asked ? vr_format_size(asked, b, sizeof b) : "none");
	return buf;
}
