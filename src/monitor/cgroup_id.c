/*
 * cgroup_id.c - container ID and pod UID from /proc/PID/cgroup's text
 * (cgroup_id.h). libc only; nothing here reads a file.
 *
 * A path is read from its root down as a sequence of placements: each
 * runtime's shape is taken only where that runtime puts it, counted from
 * the root of the hierarchy or from the cgroup of a container found above
 * (a runtime inside a container places its own from there). Anything else
 * ends the walk: a component that merely looks like a runtime's (a user's
 * own `user@1001.service/docker-<id>.scope`, made with `systemd-run
 * --user`) names nothing.
 */
#include <stdio.h>
#include <string.h>

#include "monitor/cgroup_id.h"

#define MAX_COMPS 64

struct comp {
	const char *p;
	size_t n;
};

static int is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static int eq(struct comp c, const char *s)
{
	return c.n == strlen(s) && !memcmp(c.p, s, c.n);
}

/* 1 if c is prefix, then n bytes that *rest points to, then suffix; *rest
 * gets the middle. */
static int framed(struct comp c, const char *prefix, const char *suffix, struct comp *mid)
{
	size_t a = strlen(prefix), b = strlen(suffix);
	if (c.n < a + b || memcmp(c.p, prefix, a) || memcmp(c.p + c.n - b, suffix, b))
		return 0;
	*mid = (struct comp){c.p + a, c.n - a - b};
	return 1;
}

/* A container ID: exactly 64 lower-case hexadecimal digits, copied to out. */
static int take_id(struct comp c, char *out)
{
	if (c.n != MON_CONTAINER_ID_LEN)
		return 0;
	for (size_t i = 0; i < c.n; i++)
		if (!is_hex(c.p[i]))
			return 0;
	memcpy(out, c.p, MON_CONTAINER_ID_LEN);
	out[MON_CONTAINER_ID_LEN] = '\0';
	return 1;
}

/* c is prefix<id>suffix. */
static int take_framed_id(struct comp c, const char *prefix, const char *suffix, char *out)
{
	struct comp mid;
	return framed(c, prefix, suffix, &mid) && take_id(mid, out);
}

/* A pod UID (36 characters, '-' or the systemd driver's '_' at the dashes),
 * written out with '-' as the API server shows it. */
static int take_uid(struct comp c, char *out)
{
	if (c.n != MON_POD_UID_LEN)
		return 0;
	for (size_t i = 0; i < c.n; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? (c.p[i] != '-' && c.p[i] != '_') : !is_hex(c.p[i]))
			return 0;
		out[i] = dash ? '-' : c.p[i];
	}
	out[MON_POD_UID_LEN] = '\0';
	return 1;
}

/* A container runtime's scope in a pod's slice (kubelet's systemd driver);
 * "crio-conmon-<id>.scope" is CRI-O's monitor, not a container. */
static int pod_scope(struct comp c, char *out)
{
	return take_framed_id(c, "cri-containerd-", ".scope", out) ||
	       take_framed_id(c, "crio-", ".scope", out) ||
	       take_framed_id(c, "docker-", ".scope", out);
}

/* What a walk found: the deepest container and its pod. */
struct found {
	char id[MON_CONTAINER_ID_LEN + 1];
	char pod[MON_POD_UID_LEN + 1];
	int bits; /* 1 id, 2 pod */
};

/* The pod's slice "<q>-pod<uid_>.slice" for one of the n names q. */
static int pod_slice(struct comp c, const char *const *q, int n, char *out)
{
	struct comp mid;
	for (int i = 0; i < n; i++) {
		char pfx[96];
		snprintf(pfx, sizeof(pfx), "%s-pod", q[i]);
		if (framed(c, pfx, ".slice", &mid) && take_uid(mid, out))
			return 1;
	}
	return 0;
}

/* kubelet's top slice as a slice below it names it ("kubepods", or kind's
 * "kubelet-kubepods"): the name up to the "-" that follows "kubepods". */
static int top_of(struct comp c, char *out, size_t len)
{
	for (size_t i = 8; i < c.n; i++)
		if (c.p[i] == '-' && !memcmp(c.p + i - 8, "kubepods", 8) && i < len) {
			memcpy(out, c.p, i);
			out[i] = '\0';
			return 1;
		}
	return 0;
}

/*
 * kubelet's tree from c[a] on (its pods and their containers): cgroupfs
 * kubepods[/<qos>]/pod<uid>[/<id>], systemd kubepods.slice[/kubepods-<qos>.slice]
 * /kubepods[-<qos>]-pod<uid_>.slice[/<runtime>-<id>.scope], or kind's
 * (kubelet.slice/kubelet-kubepods.slice/...). hidden: the path is seen from
 * below the reader's cgroup namespace root, which may hide the top (and the
 * QoS level): it may start at the QoS or the pod level. Returns the index
 * of the container's component (its ID in f), or -1 when there is no
 * container (f->pod may be set).
 */
static int kubelet_tree(const struct comp *c, int n, int a, int hidden, struct found *f)
{
	static const char *const classes[] = {"burstable", "besteffort"};
	struct comp mid;
	int k = a;
	if (k >= n)
		return -1;
	if (!framed(c[k], "", ".slice", &mid)) { /* cgroupfs */
		if (eq(c[k], "kubepods"))
			k++;
		else if (!hidden)
			return -1;
		if (k < n && (eq(c[k], classes[0]) || eq(c[k], classes[1])))
			k++;
		if (k >= n || !framed(c[k], "pod", "", &mid) || !take_uid(mid, f->pod))
			return -1;
		f->bits |= 2;
		return k + 1 < n && take_id(c[k + 1], f->id) ? k + 1 : -1;
	}
	/* systemd: a slice's name repeats its parents' (a-b.slice is in a.slice). */
	char top[64] = "kubepods";
	if (eq(c[k], "kubepods.slice")) {
		k++;
	} else if (eq(c[k], "kubelet.slice") && k + 1 < n &&
	           eq(c[k + 1], "kubelet-kubepods.slice")) {
		snprintf(top, sizeof(top), "kubelet-kubepods");
		k += 2;
	} else if (!hidden || !top_of(c[k], top, sizeof(top))) {
		return -1;
	}
	char q[3][96];
	const char *const qs[3] = {q[0], q[1], q[2]};
	int nq = 1;
	snprintf(q[0], sizeof(q[0]), "%s", top);
	for (int i = 0; i < 2; i++) {
		char s[96];
		snprintf(q[i + 1], sizeof(q[i + 1]), "%s-%s", top, classes[i]);
		snprintf(s, sizeof(s), "%s.slice", q[i + 1]);
		if (k < n && eq(c[k], s)) { /* the QoS level: its pods are named after it */
			snprintf(q[0], sizeof(q[0]), "%s", q[i + 1]);
			k++;
			hidden = 0;
			break;
		}
	}
	if (hidden && k == a) /* the pod level, its QoS hidden: any of the three */
		nq = 3;
	if (k >= n || !pod_slice(c[k], qs, nq, f->pod))
		return -1;
	f->bits |= 2;
	return k + 1 < n && pod_scope(c[k + 1], f->id) ? k + 1 : -1;
}

/*
 * A container placed from c[a] on, where its runtime puts it; returns the
 * index of the container's component (its ID in f), or -1. rel: the path
 * is seen from below the reader's cgroup namespace root (it began with
 * ".."), so what sits above c[a] is not shown.
 */
/* A podman pod's own cgroup in c[k], named pfx<pod ID>sfx: 1 when it is. */
static int pod_of_podman(struct comp c, const char *pfx, const char *sfx)
{
	char id[MON_CONTAINER_ID_LEN + 1];
	return take_framed_id(c, pfx, sfx, id);
}

static int placement(const struct comp *c, int n, int a, int rel, struct found *f)
{
	if (a + 1 < n) {
		if ((eq(c[a], "system.slice") &&
		     take_framed_id(c[a + 1], "docker-", ".scope", f->id)) ||
		    (eq(c[a], "machine.slice") &&
		     take_framed_id(c[a + 1], "libpod-", ".scope", f->id)) ||
		    (eq(c[a], "libpod_parent") && take_framed_id(c[a + 1], "libpod-", "", f->id)) ||
		    (eq(c[a], "docker") && take_id(c[a + 1], f->id)))
			return a + 1;
	}
	/* A podman pod's containers, in the pod's cgroup: cgroupfs
	 * libpod_parent/<pod>/libpod-<id>, systemd
	 * machine.slice/machine-libpod_pod_<pod>.slice/libpod-<id>.scope. */
	if (a + 2 < n && ((eq(c[a], "libpod_parent") && pod_of_podman(c[a + 1], "", "") &&
	                   take_framed_id(c[a + 2], "libpod-", "", f->id)) ||
	                  (eq(c[a], "machine.slice") &&
	                   pod_of_podman(c[a + 1], "machine-libpod_pod_", ".slice") &&
	                   take_framed_id(c[a + 2], "libpod-", ".scope", f->id))))
		return a + 2;
	/* Rootless podman and docker: the user's manager's user.slice (a
	 * rootless pod's containers in its slice there). */
	struct comp u1, u2;
	if (a + 4 < n && eq(c[a], "user.slice") && framed(c[a + 1], "user-", ".slice", &u1) &&
	    framed(c[a + 2], "user@", ".service", &u2) && u1.n == u2.n && u1.n > 0 &&
	    !memcmp(u1.p, u2.p, u1.n) && strspn(u1.p, "0123456789") >= u1.n &&
	    eq(c[a + 3], "user.slice")) {
		int k = a + 4;
		if (k + 1 < n && pod_of_podman(c[k], "user-libpod_pod_", ".slice"))
			k++;
		if (take_framed_id(c[k], "libpod-", ".scope", f->id) ||
		    (k == a + 4 && take_framed_id(c[k], "docker-", ".scope", f->id)))
			return k;
	}
	int k = kubelet_tree(c, n, a, 0, f);
	if (k >= 0 || (f->bits & 2) || !rel)
		return k;
	/* Seen from below a namespace root: the runtime's own names at the
	 * first level shown (their parents are hidden), or kubelet's tree from
	 * its QoS or pod level. */
	if (take_framed_id(c[a], "docker-", ".scope", f->id) ||
	    take_framed_id(c[a], "libpod-", ".scope", f->id) || pod_scope(c[a], f->id) ||
	    take_id(c[a], f->id))
		return a;
	return kubelet_tree(c, n, a, 1, f);
}

/* One line's path (after "ID:controllers:"): the deepest container placed
 * as its runtime places it, and its pod. Bits as mon_cgroup_id_parse. */
static int parse_path(const char *p, size_t len, struct mon_cgroup_id *id)
{
	struct comp c[MAX_COMPS];
	int n = 0;
	for (size_t i = 0; i < len && n < MAX_COMPS;) {
		size_t j = i;
		while (j < len && p[j] != '/')
			j++;
		if (j > i)
			c[n++] = (struct comp){p + i, j - i};
		i = j + 1;
	}
	int a = 0, rel = 0;
	while (a < n && eq(c[a], "..")) {
		a++;
		rel = 1;
	}
	struct found best = {0};
	while (a < n) {
		struct found f = {0};
		int k = placement(c, n, a, rel, &f);
		if (f.bits & 2) {
			memcpy(best.pod, f.pod, sizeof(best.pod));
			best.bits |= 2;
		}
		if (k < 0)
			break;
		memcpy(best.id, f.id, sizeof(best.id));
		best.bits |= 1;
		/* A runtime inside this container places its own from here (podman
		 * runs the container's processes in its "container" child). */
		a = k + 1 < n && eq(c[k + 1], "container") ? k + 2 : k + 1;
		rel = 0;
	}
	if (best.bits & 1)
		memcpy(id->container_id, best.id, sizeof(best.id));
	if (best.bits & 2)
		memcpy(id->pod_uid, best.pod, sizeof(best.pod));
	return best.bits;
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
