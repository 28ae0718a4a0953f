/*
 * site.c - what the CLI takes from the administrator's configuration file
 * (vramctl.conf(5), common/siteconf.h): the default cap of `vramctl run`,
 * the site's maximum, and the message for a file that cannot be used.
 */
#include <stdio.h>
#include <string.h>

#include "cli/site.h"
#include "common/siteconf.h"

int cli_site_check(const char *what)
{
	const struct vr_site *site = vr_site_get();

	if (!site->bad)
		return 0;
	fprintf(stderr,
	        "vramctl: %s\nvramctl: %s: refused until the file is fixed (vramctl.conf(5))\n",
	        site->err, what);
	return -1;
}

const char *cli_site_default_spec(void)
{
	const struct vr_site *site = vr_site_get();
	const char *d = VR_SITE_TEXT_OF(site, default_limit);

	return d ? d : VR_SITE_TEXT_OF(site, max_limit);
}

int cli_site_clamp(struct vr_limits *lim, const struct vr_launch_dev *devs, int ndev, char *spec,
                   size_t len)
{
	struct vr_limits out;
	size_t used = 0;
	int lowered = 0;
	char err[256];

	memset(&out, 0, sizeof out);
	for (int i = 0; i < ndev && i < VR_MAX_LIMITS; i++) {
		uint64_t want, max;
		struct vr_limit *it = &out.item[out.count];
		char a[32], b[32];

		if (!vr_limits_cap_for(lim, i, devs[i].uuid, devs[i].total, &want))
			want = UINT64_MAX;
		if (vr_site_max_for(vr_site_get(), i, devs[i].uuid, devs[i].total, &max) &&
		    max < want) {
			fprintf(stderr,
			        "vramctl: GPU %d: %s is above the site's maximum, %s "
			        "(vramctl.conf(5)); the maximum applies\n",
			        i,
			        want == UINT64_MAX ? "no cap" : vr_format_size(want, a, sizeof a),
			        vr_format_size(max, b, sizeof b));
			want = max;
			lowered = 1;
		}
		if (want == UINT64_MAX)
			continue;
		snprintf(it->dev, sizeof it->dev, "%s", devs[i].uuid);
		it->bytes = want;
		out.count++;
	}
	if (!lowered)
		return 0;
	/* The caps in force, per device: the children and the group's books
	 * get them, so the library has nothing to lower again. */
	spec[0] = '\0';
	for (int i = 0; i < out.count; i++) {
		char amount[64];
		int n =
		    snprintf(spec + used, len - used, "%s%s=%s", used ? "," : "", out.item[i].dev,
		             vr_format_amount(&out.item[i], amount, sizeof amount));

		if (n < 0 || (size_t)n >= len - used)
			return -1;
		used += (size_t)n;
	}
	if (vr_parse_limits(spec, lim, err, sizeof err) < 0) {
		fprintf(stderr, "vramctl: the site's maximum: %s\n", err);
		return -1;
	}
	return 0;
}
