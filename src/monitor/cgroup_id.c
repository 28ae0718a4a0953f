/*
 * cgroup_id.c - container ID and pod UID from /proc/PID/cgroup's text
 * (cgroup_id.h). libc only; nothing here reads a file.
 */
#include <string.h>

#include "monitor/cgroup_id.h"

static int is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* 1 if the component c[0..n) ends with suffix, which is then cut off *n. */
static int cut_suffix(const char *c, size_t *n, const char *suffix)
{
	size_t l = strlen(suffix);
	if (*n < l || memcmp(c + *n - l, suffix, l))
		return 0;
	*n -= l;
	return 1;
}

/* 1 if c[0..n) contains word. */
static int contains(const char *c, size_t n, const char *word)
{
	size_t l = strlen(word);
	for (size_t i = 0; i + l <= n; i++)
		if (!memcmp(c + i, word, l))
			return 1;
	return 0;
}

/*
 * A container ID in component c[0..n): the whole component is 64 hex digits
 * (cgroupfs), or a runtime's prefix ending in '-' then 64 hex digits, with
 * ".scope" after them (systemd) or not (podman's cgroupfs "libpod-<id>").
 * The runtimes' monitor scopes ("...-conmon-<id>") are not containers.
 */
static int component_id(const char *c, size_t n, char *out)
{
	cut_suffix(c, &n, ".scope");
	if (n < MON_CONTAINER_ID_LEN)
		return 0;
	const char *id = c + n - MON_CONTAINER_ID_LEN;
	for (int i = 0; i < MON_CONTAINER_ID_LEN; i++)
		if (!is_hex(id[i]))
			return 0;
	size_t plen = n - MON_CONTAINER_ID_LEN;
	if (plen && (id[-1] != '-' || (plen >= 7 && !memcmp(id - 7, "conmon-", 7))))
		return 0;
	memcpy(out, id, MON_CONTAINER_ID_LEN);
	out[MON_CONTAINER_ID_LEN] = '\0';
	return 1;
}

/*
 * A pod UID in component c[0..n): "pod<uid>" (cgroupfs) or
 * "kubepods[-<class>]-pod<uid_>.slice" (systemd, '-' escaped as '_'; kind
 * and other nested kubelets prefix it: "kubelet-kubepods-..."). The
 * UID is written out with '-' (as the API server shows it).
 */
static int component_pod(const char *c, size_t n, char *out)
{
	if (cut_suffix(c, &n, ".slice") && !contains(c, n, "kubepods"))
		return 0;
	if (n < 3 + MON_POD_UID_LEN)
		return 0;
	const char *u = c + n - MON_POD_UID_LEN;
	if (memcmp(u - 3, "pod", 3) || (u - 3 != c && u[-4] != '-'))
		return 0;
	for (int i = 0; i < MON_POD_UID_LEN; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? (u[i] != '-' && u[i] != '_') : !is_hex(u[i]))
			return 0;
		out[i] = dash ? '-' : u[i];
	}
	out[MON_POD_UID_LEN] = '\0';
	return 1;
}

/* One line's path (after "ID:controllers:"), components deepest first:
 * the deepest container ID (a container nested in another is the one the
 * process runs in) and the pod UID. Bits as mon_cgroup_id_parse. */
static int parse_path(const char *p, size_t len, struct mon_cgroup_id *id)
{
	int found = 0;
	size_t end = len;
	while (end > 0) {
		size_t start = end;
		while (start > 0 && p[start - 1] != '/')
			start--;
		const char *c = p + start;
		size_t n = end - start;
		if (!(found & 1) && component_id(c, n, id->container_id))
			found |= 1;
		if (!(found & 2) && component_pod(c, n, id->pod_uid))
			found |= 2;
		end = start > 0 ? start - 1 : 0;
	}
	return found;
}

int mon_cgroup_id_parse(const char *text, struct mon_cgroup_id *out)
{
	memset(out, 0, sizeof(*out));
	int found = 0;
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *c1 = memchr(line, ':', len);
		const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
		if (c2) {
			struct mon_cgroup_id one = {0};
			const char *path = c2 + 1;
			int f = parse_path(path, len - (size_t)(path - line), &one);
			if ((f & 1) && !(found & 1)) {
				memcpy(out->container_id, one.container_id,
				       sizeof(one.container_id));
				found |= 1;
				/* The pod of the container's own line wins. */
				if (f & 2) {
					memcpy(out->pod_uid, one.pod_uid, sizeof(one.pod_uid));
					found |= 2;
				}
			}
			if ((f & 2) && !(found & 2)) {
				memcpy(out->pod_uid, one.pod_uid, sizeof(one.pod_uid));
				found |= 2;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return found;
}
