/*
 * config.c - the simulated GPU's configuration, read once from the
 * environment (docs/architecture.md, "Environment" under "The driver, and
 * the simulated GPU", lists every variable). A bad value gives one message
 * on stderr and the default is kept: the simulator never crashes on its input.
 */
#include "sim.h"

#include <ctype.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/size.h"

static struct sim_config g_cfg;

/* Parses "16G", "512M", "16GiB", "1024" (binary suffixes). Returns 0 on success. */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	while (isspace((unsigned char)*s))
		s++;
	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (toupper((unsigned char)*end)) {
	case 'K':
		mul = 1ull << 10;
		end++;
		break;
	case 'M':
		mul = 1ull << 20;
		end++;
		break;
	case 'G':
		mul = 1ull << 30;
		end++;
		break;
	case 'T':
		mul = 1ull << 40;
		end++;
		break;
	default:
		break;
	}
	if (mul > 1 && (*end == 'i' || *end == 'I'))
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	while (isspace((unsigned char)*end))
		end++;
	if (*end != '\0')
		return -1;
	if (v > UINT64_MAX / mul)
		return -1;
	*out = v * mul;
	return 0;
}

/* A size from the environment into *out; unset keeps *out, a bad value is
 * said and ignored. */
static void env_size(const char *name, uint64_t *out)
{
	const char *s = getenv(name);
	uint64_t v;
	if (!s || !*s)
		return;
	if (parse_size(s, &v))
		sim_warn("ignoring %s=\"%s\"", name, s);
	else
		*out = v;
}
static pthread_once_t g_cfg_once = PTHREAD_ONCE_INIT;

void sim_warn(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "vramsim: %s\n", buf);
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch = tolower(ch);
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/* Parses "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (the "GPU-" is optional). */
static int uuid_parse(const char *s, size_t len, unsigned char *b)
{
	int n = 0;
	if (len >= 4 && strncmp(s, "GPU-", 4) == 0) {
		s += 4;
		len -= 4;
	}
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '-')
			continue;
		int hi = hexval((unsigned char)s[i]);
		if (hi < 0 || i + 1 >= len)
			return -1;
		int lo = hexval((unsigned char)s[i + 1]);
		if (lo < 0 || n >= 16)
			return -1;
		b[n++] = (unsigned char)(hi << 4 | lo);
		i++;
	}
	return n == 16 ? 0 : -1;
}

/* A deterministic, plausible-looking UUID for device index i. */
static void uuid_default(int i, unsigned char *b)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)(i + 1);
	for (int k = 0; k < 16; k++) {
		h ^= (uint64_t)k * 0x9e3779b97f4a7c15ull;
		h *= 0x100000001b3ull;
		h ^= h >> 29;
		b[k] = (unsigned char)(h >> 24);
	}
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
}

/* A release string such as "580.82.07": digits and dots, at most len-1. */
static void release_env(const char *var, char *out, size_t len)
{
	const char *s = getenv(var);
	if (!s || !*s)
		return;
	if (strlen(s) >= len || strspn(s, "0123456789.") != strlen(s))
		sim_warn("ignoring %s=\"%s\" (want a release such as 580.82.07)", var, s);
	else
		snprintf(out, len, "%s", s);
}

static int parse_flag(const char *tok, int *v)
{
	if (!strcmp(tok, "0") || !strcmp(tok, "1")) {
		*v = tok[0] - '0';
		return 0;
	}
	return -1;
}

/* NVML's and CUDA's compute modes share their numbers. */
static int parse_compute_mode(const char *tok, int *v)
{
	static const char *const names[] = {"default", "exclusive_thread", "prohibited",
	                                    "exclusive_process"};
	for (int i = 0; i < 4; i++)
		if (!strcmp(tok, names[i]) || (tok[0] == '0' + i && !tok[1])) {
			*v = i;
			return 0;
		}
	return -1;
}

/*
 * Per-device values, "a,b,c": entry i applies to device i, missing entries
 * keep the default. field is the offset of an int in struct sim_dev_cfg.
 * A bad entry: one message, the whole variable ignored.
 */
static void per_device(struct sim_config *c, const char *var, int (*parse)(const char *, int *),
                       size_t field)
{
	const char *s = getenv(var);
	char buf[512];
	int v[SIM_MAX_DEVICES], n = 0;
	if (!s || !*s)
		return;
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n >= c->ndev || parse(tok, &v[n]) != 0) {
			sim_warn("ignoring %s=\"%s\" (one value per device, at most %d)", var, s,
			         c->ndev);
			return;
		}
		n++;
	}
	for (int i = 0; i < n; i++)
		memcpy((char *)&c->dev[i] + field, &v[i], sizeof(int));
}

/* VRAMSIM_DEVICE_FAIL: the physical indices of devices that fail to initialise. */
static void broken_devices(struct sim_config *c)
{
	const char *s = getenv("VRAMSIM_DEVICE_FAIL");
	char buf[256];
	if (!s || !*s)
		return;
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *end;
		long i = strtol(tok, &end, 10);
		if (*end || end == tok || i < 0 || i >= c->ndev)
			sim_warn("ignoring \"%s\" in VRAMSIM_DEVICE_FAIL=\"%s\" (want device "
			         "indices)",
			         tok, s);
		else
			c->dev[i].broken = 1;
	}
}

int sim_release_mismatch(void)
{
	const struct sim_config *c = sim_config();
	return strcmp(c->driver_release, c->kernel_release) != 0;
}

/* VRAMSIM_DEVICES: the cards and their sizes ("16G,8G"); all or nothing. */
static void env_devices(struct sim_config *c)
{
	const char *s = getenv("VRAMSIM_DEVICES");
	if (s && *s) {
		struct sim_config tmp = *c;
		char buf[1024];
		int ok = 1;
		snprintf(buf, sizeof(buf), "%s", s);
		tmp.ndev = 0;
		for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			uint64_t v;
			if (tmp.ndev >= SIM_MAX_DEVICES || parse_size(tok, &v) || v == 0) {
				ok = 0;
				break;
			}
			tmp.dev[tmp.ndev++].total = v;
		}
		if (ok && tmp.ndev > 0)
			*c = tmp;
		else
			sim_warn(
			    "ignoring VRAMSIM_DEVICES=\"%s\" (want sizes like 16G,8G; at most %d)",
			    s, SIM_MAX_DEVICES);
	}
}

/* Each card's identity: UUID (VRAMSIM_UUIDS, else derived from its
 * index) and name (VRAMSIM_NAME, else from its size). */
static void env_identities(struct sim_config *c)
{
	const char *s;

	for (int i = 0; i < c->ndev; i++) {
		c->dev[i].persistence = 1;
		uuid_default(i, c->dev[i].uuid);
		snprintf(c->dev[i].name, sizeof(c->dev[i].name), "NVIDIA Simulated GPU %lluGB",
		         (unsigned long long)(c->dev[i].total >> 30));
	}
	s = getenv("VRAMSIM_UUIDS");
	if (s && *s) {
		const char *p = s;
		for (int i = 0; i < c->ndev && *p; i++) {
			size_t len = strcspn(p, ",");
			unsigned char b[16];
			if (uuid_parse(p, len, b) == 0)
				memcpy(c->dev[i].uuid, b, 16);
			else
				sim_warn("ignoring bad UUID %d in VRAMSIM_UUIDS=\"%s\"", i, s);
			p += len;
			if (*p == ',')
				p++;
		}
	}
	for (int i = 0; i < c->ndev; i++)
		vr_format_uuid(c->dev[i].uuid, c->dev[i].uuid_str, sizeof(c->dev[i].uuid_str));
	s = getenv("VRAMSIM_NAME");
	if (s && *s)
		for (int i = 0; i < c->ndev; i++)
			snprintf(c->dev[i].name, sizeof(c->dev[i].name), "%s", s);
}

/* VRAMSIM_DRIVER_VERSION: the CUDA version the driver reports. */
static void env_driver_version(struct sim_config *c)
{
	const char *s = getenv("VRAMSIM_DRIVER_VERSION");
	if (s && *s) {
		char *end;
		long v = strtol(s, &end, 10);
		if (*end || v < 2000 || v > 99999)
			sim_warn("ignoring VRAMSIM_DRIVER_VERSION=\"%s\" (want e.g. 12040)", s);
		else
			c->driver_version = (int)v;
	}
}

/* Milliseconds from the environment (VRAMSIM_TEARDOWN_MS: how long a dead
 * process's memory stays; VRAMSIM_NVML_LAG_MS: how old NVML's figures are);
 * unset keeps *out, a bad value is said and ignored. */
static void env_ms(const char *name, uint32_t *out)
{
	const char *s = getenv(name);
	if (s && *s) {
		char *end;
		unsigned long v = strtoul(s, &end, 10);
		if (*end || end == s || *s == '-' || v > UINT32_MAX)
			sim_warn("ignoring %s=\"%s\" (want milliseconds)", name, s);
		else
			*out = (uint32_t)v;
	}
}

/*
 * Module loading: CUDA_MODULE_LOADING, the real driver's variable (LAZY or
 * EAGER); lazy by default from CUDA 12.2, and not there before 11.7. A
 * module's image takes VRAMSIM_MODULE_BYTES, in whole 2 MiB pages.
 */
static void env_modules(struct sim_config *c)
{
	const char *s = getenv("CUDA_MODULE_LOADING");
	c->lazy_loading = c->driver_version >= 12020;
	if (s && *s && c->driver_version >= 11070) {
		if (!strcmp(s, "LAZY"))
			c->lazy_loading = 1;
		else if (!strcmp(s, "EAGER"))
			c->lazy_loading = 0;
		else
			sim_warn("ignoring CUDA_MODULE_LOADING=\"%s\" (want LAZY or EAGER)", s);
	}
	c->module_bytes = 2ull << 20;
	env_size("VRAMSIM_MODULE_BYTES", &c->module_bytes);
	if (c->module_bytes > UINT64_MAX - (2ull << 20))
		c->module_bytes = UINT64_MAX - (2ull << 20);
	c->module_bytes = (c->module_bytes + (2ull << 20) - 1) / (2ull << 20) * (2ull << 20);
}

/* VRAMSIM_STATE_DIR, made absolute now; else $XDG_RUNTIME_DIR/vramsim or
 * /tmp/vramsim-<uid>. */
static void env_state_dir(struct sim_config *c)
{
	const char *s = getenv("VRAMSIM_STATE_DIR");
	if (s && *s == '/') {
		snprintf(c->state_dir, sizeof(c->state_dir), "%s", s);
	} else if (s && *s) {
		/* Relative: fixed now, so a later chdir cannot move the card. */
		char cwd[400];
		if (getcwd(cwd, sizeof(cwd)))
			snprintf(c->state_dir, sizeof(c->state_dir), "%s/%s", cwd, s);
		else
			snprintf(c->state_dir, sizeof(c->state_dir), "%s", s);
	} else {
		const char *rt = getenv("XDG_RUNTIME_DIR");
		if (rt && *rt)
			snprintf(c->state_dir, sizeof(c->state_dir), "%s/vramsim", rt);
		else
			snprintf(c->state_dir, sizeof(c->state_dir), "/tmp/vramsim-%u",
			         (unsigned)getuid());
	}
}

/* VRAMSIM_CGROUP (a path from "/", at most SIM_CGROUP_LEN - 1) and
 * VRAMSIM_EUID; the driver release's major number. */
static void env_cgroup(struct sim_config *c)
{
	const char *s = getenv("VRAMSIM_CGROUP");
	if (s && *s) {
		if (s[0] != '/' || strlen(s) >= sizeof(c->cgroup) || strstr(s, "/.."))
			sim_warn("ignoring VRAMSIM_CGROUP=\"%s\" (want a path such as /a/b)", s);
		else
			snprintf(c->cgroup, sizeof(c->cgroup), "%s", s);
	}
	c->euid = (int)geteuid();
	s = getenv("VRAMSIM_EUID");
	if (s && *s) {
		char *end;
		long v = strtol(s, &end, 10);
		if (*end || v < 0 || v > INT32_MAX)
			sim_warn("ignoring VRAMSIM_EUID=\"%s\" (want a UID)", s);
		else
			c->euid = (int)v;
	}
	c->release_major = atoi(c->driver_release);
}

static void load(void)
{
	struct sim_config *c = &g_cfg;
	const char *s;

	c->ndev = 1;
	c->dev[0].total = 16ull << 30;
	c->driver_version = 13000;
	c->context_bytes = 64ull << 20;

	env_devices(c);
	env_identities(c);
	env_driver_version(c);
	snprintf(c->driver_release, sizeof(c->driver_release), "580.82.07");
	release_env("VRAMSIM_DRIVER_RELEASE", c->driver_release, sizeof(c->driver_release));
	memcpy(c->kernel_release, c->driver_release, sizeof(c->kernel_release));
	release_env("VRAMSIM_KERNEL_RELEASE", c->kernel_release, sizeof(c->kernel_release));
	per_device(c, "VRAMSIM_COMPUTE_MODE", parse_compute_mode,
	           offsetof(struct sim_dev_cfg, compute_mode));
	per_device(c, "VRAMSIM_MIG", parse_flag, offsetof(struct sim_dev_cfg, mig));
	per_device(c, "VRAMSIM_PERSISTENCE", parse_flag, offsetof(struct sim_dev_cfg, persistence));
	broken_devices(c);
	env_size("VRAMSIM_CONTEXT_BYTES", &c->context_bytes);
	c->host_pinnable = UINT64_MAX;
	env_size("VRAMSIM_HOST_PINNABLE", &c->host_pinnable);
	/* Host locations for cuMemCreate came with CUDA 12.2, and not every
	 * platform has them: VRAMSIM_HOST_VMM=0 models one without. */
	s = getenv("VRAMSIM_HOST_VMM");
	c->host_vmm = c->driver_version >= 12020 && !(s && !strcmp(s, "0"));
	env_ms("VRAMSIM_TEARDOWN_MS", &c->teardown_ms);
	env_ms("VRAMSIM_NVML_LAG_MS", &c->nvml_lag_ms);
	env_size("VRAMSIM_HIDDEN_BYTES", &c->hidden_bytes);
	env_modules(c);
	s = getenv("VRAMSIM_NVML_UNKNOWN_USAGE");
	c->nvml_unknown_usage = s && *s && strcmp(s, "0") != 0;
	env_state_dir(c);
	env_cgroup(c);
}

const struct sim_config *sim_config(void)
{
	pthread_once(&g_cfg_once, load);
	return &g_cfg;
}

void sim_cgroup_self(char *buf, size_t n)
{
	const struct sim_config *cfg = sim_config();
	char text[4096];
	buf[0] = '\0';
	if (cfg->cgroup[0]) {
		snprintf(buf, n, "%s", cfg->cgroup);
		return;
	}
	int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t got = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (got <= 0)
		return;
	text[got] = '\0';
	/* cgroup v2: the one line "0::/path"; v1 hierarchies have no "0::". */
	const char *p = strncmp(text, "0::", 3) == 0 ? text : strstr(text, "\n0::");
	if (!p)
		return;
	p += p[0] == '\n' ? 4 : 3;
	size_t len = strcspn(p, "\n");
	if (len == 0 || len >= n)
		return;
	memcpy(buf, p, len);
	buf[len] = '\0';
}

int sim_limits_supported(void)
{
	return sim_config()->release_major >= 615;
}
