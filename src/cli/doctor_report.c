/*
 * doctor_report.c - the pure half of `vramctl doctor`: the list of checks,
 * its two formats, and the decisions that need no machine (a version
 * string, CUDA_VISIBLE_DEVICES against a list of UUIDs, what an executable
 * is). Nothing here looks at the environment or the clock.
 */
#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/doctor_report.h"
#include "common/exit.h"
#include "common/text.h"
#include "common/json.h"

#ifndef VRAMCTL_VERSION
#define VRAMCTL_VERSION "0.1.0"
#endif

struct dr_check *dr_add(struct dr_report *r, const char *id, int device, enum dr_status st,
                        const char *fix, const char *fact_fmt, ...)
{
	if (r->n == r->cap) {
		int ncap = r->cap ? r->cap * 2 : 32;
		struct dr_check *c = realloc(r->checks, sizeof(*c) * (size_t)ncap);
		if (!c) {
			r->oom = 1;
			return NULL;
		}
		r->checks = c;
		r->cap = ncap;
	}
	struct dr_check *c = &r->checks[r->n++];
	memset(c, 0, sizeof(*c));
	snprintf(c->id, sizeof(c->id), "%s", id);
	c->device = device;
	c->status = st;
	va_list ap;
	va_start(ap, fact_fmt);
	vsnprintf(c->fact, sizeof(c->fact), fact_fmt, ap);
	va_end(ap);
	if (fix && st != DR_OK && st != DR_SKIP)
		snprintf(c->fix, sizeof(c->fix), "%s", fix);
	return c;
}

void dr_free(struct dr_report *r)
{
	free(r->checks);
	memset(r, 0, sizeof(*r));
}

const char *dr_status_name(enum dr_status st)
{
	switch (st) {
	case DR_OK:
		return "ok";
	case DR_WARN:
		return "warn";
	case DR_FAIL:
		return "fail";
	default:
		return "skip";
	}
}

static void count(const struct dr_report *r, int n[4])
{
	memset(n, 0, 4 * sizeof(int));
	for (int i = 0; i < r->n; i++)
		n[r->checks[i].status]++;
}

int dr_exit_status(const struct dr_report *r)
{
	int n[4];
	count(r, n);
	return n[DR_FAIL] > 0 ? VR_EXIT_DOCTOR_FAILED : VR_EXIT_OK;
}

static const char *result_name(const int n[4])
{
	return n[DR_FAIL] ? "fail" : n[DR_WARN] ? "warn" : "ok";
}

/* Text for a terminal: facts carry other users' command lines and paths,
 * escaped as every view escapes them (vr_text_escape: control characters and
 * invalid UTF-8 as \xNN), so they cannot drive the terminal. */
static void put_safe(FILE *f, const char *s)
{
	char buf[4 * sizeof(((struct dr_check *)0)->fact) + 1];
	fputs(vr_text_escape(buf, sizeof(buf), s), f);
	fputc('\n', f);
}

int dr_format_text(FILE *f, const struct dr_report *r)
{
	static const char *const word[] = {"OK", "WARN", "FAIL", "SKIP"};
	int n[4];
	count(r, n);
	for (int i = 0; i < r->n; i++) {
		const struct dr_check *c = &r->checks[i];
		fprintf(f, "%-5s %-22s ", word[c->status], c->id);
		put_safe(f, c->fact);
		if (c->fix[0]) {
			fprintf(f, "%28s ", "fix:");
			put_safe(f, c->fix);
		}
	}
	fprintf(f, "\n%s: %d failed, %d warning%s, %d ok, %d skipped\n", result_name(n), n[DR_FAIL],
	        n[DR_WARN], n[DR_WARN] == 1 ? "" : "s", n[DR_OK], n[DR_SKIP]);
	return ferror(f) ? -1 : 0;
}

int dr_format_json(FILE *f, const struct dr_report *r)
{
	struct jw w = {.f = f};
	int n[4];
	count(r, n);
	jw_open(&w, NULL, '{');
	/* schema_version, as vramctl status --json names it; "schema", the
	 * older name, stays for the consumers that read it (vramctl-doctor(1)). */
	jw_int(&w, "schema_version", DR_SCHEMA_VERSION, 1);
	jw_int(&w, "schema", DR_SCHEMA_VERSION, 1);
	jw_str(&w, "version", VRAMCTL_VERSION);
	jw_str(&w, "result", result_name(n));
	jw_int(&w, "exit_status", n[DR_FAIL] > 0, 1);
	jw_open(&w, "counts", '{');
	for (int st = DR_OK; st <= DR_SKIP; st++)
		jw_int(&w, dr_status_name((enum dr_status)st), n[st], 1);
	jw_close(&w, '}');
	jw_open(&w, "checks", '[');
	for (int i = 0; i < r->n; i++) {
		const struct dr_check *c = &r->checks[i];
		jw_open(&w, NULL, '{');
		jw_str(&w, "id", c->id);
		jw_int(&w, "device", c->device, c->device >= 0);
		jw_str(&w, "status", dr_status_name(c->status));
		jw_str(&w, "fact", c->fact);
		jw_str(&w, "fix", c->fix[0] ? c->fix : NULL);
		jw_close(&w, '}');
	}
	jw_close(&w, ']');
	jw_close(&w, '}');
	return jw_finish(&w) < 0 ? -1 : 0;
}

/* ---- versions ---- */

/* A release: digits and dots, with at least one dot ("550.54.14"). */
static size_t release_len(const char *s)
{
	size_t n = strspn(s, "0123456789.");
	if (n == 0 || !isdigit((unsigned char)s[0]) || !memchr(s, '.', n))
		return 0;
	return n;
}

static int copy_release(const char *s, char *out, size_t len)
{
	size_t n = release_len(s);
	if (n == 0 || n >= len)
		return -1;
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

int dr_kernel_release(const char *text, char *out, size_t len)
{
	const char *p = strstr(text, "Kernel Module");
	if (!p)
		return -1;
	p += strlen("Kernel Module");
	/* Some builds add a word before the release ("for x86_64"): take the
	 * first token of the line that looks like one. */
	while (*p && *p != '\n') {
		while (*p == ' ' || *p == '\t')
			p++;
		if (copy_release(p, out, len) == 0)
			return 0;
		p += strcspn(p, " \t\n");
	}
	return -1;
}

int dr_library_release(const char *path, char *out, size_t len)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	const char *so = strstr(base, ".so.");
	if (!so)
		return -1;
	so += 4;
	if (release_len(so) != strlen(so))
		return -1;
	return copy_release(so, out, len);
}

/* ---- CUDA_VISIBLE_DEVICES ---- */

/* The device an entry names: its NVML index, -1 when none, -2 when a UUID
 * prefix matches several, -3 for a MIG instance (not checked). */
static int visible_entry(const char *tok, const char *const *uuids, int n)
{
	if (!strncasecmp(tok, "MIG-", 4))
		return -3;
	if (isdigit((unsigned char)tok[0])) {
		char *end;
		long v = strtol(tok, &end, 10);
		return (*end || v >= n) ? -1 : (int)v;
	}
	if (strncasecmp(tok, "GPU-", 4) != 0 || !tok[4])
		return -1;
	int found = -1;
	for (int i = 0; i < n; i++)
		if (!strncasecmp(uuids[i], tok, strlen(tok))) {
			if (found >= 0)
				return -2;
			found = i;
		}
	return found;
}

void dr_check_visible(struct dr_report *r, const char *value, const char *const *uuids, int n)
{
	static const char id[] = "env.visible_devices";
	if (!value) {
		if (n >= 0)
			dr_add(r, id, -1, DR_OK, NULL,
			       "CUDA_VISIBLE_DEVICES is unset: every GPU is visible (%d)", n);
		else
			dr_add(r, id, -1, DR_OK, NULL, "CUDA_VISIBLE_DEVICES is unset");
		return;
	}
	if (value[strspn(value, " \t")] == '\0') {
		dr_add(r, id, -1, DR_FAIL,
		       "unset CUDA_VISIBLE_DEVICES, or list the GPUs to use (e.g. "
		       "CUDA_VISIBLE_DEVICES=0)",
		       "CUDA_VISIBLE_DEVICES is set but empty: it hides every GPU");
		return;
	}
	if (n < 0) {
		dr_add(r, id, -1, DR_SKIP, NULL,
		       "CUDA_VISIBLE_DEVICES=\"%.200s\" (not checked: NVML could not list the "
		       "GPUs)",
		       value);
		return;
	}
	char buf[512], seen[1024] = {0};
	int good = 0, mig = 0, dup = -1, pos = 0;
	const char *bad = NULL;
	int bad_kind = 0;
	snprintf(buf, sizeof(buf), "%s", value);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save), pos++) {
		while (*tok == ' ')
			tok++;
		tok[strcspn(tok, " ")] = '\0';
		int d = visible_entry(tok, uuids, n);
		if (d == -3) {
			mig++;
			good++;
			continue;
		}
		if (d < 0) {
			bad = value + (tok - buf);
			bad_kind = d;
			break;
		}
		if (d < (int)sizeof(seen) && seen[d]) {
			dup = d;
			break;
		}
		if (d < (int)sizeof(seen))
			seen[d] = 1;
		good++;
	}
	if (bad) {
		int len = (int)strcspn(bad, ",");
		dr_add(r, id, -1, good ? DR_WARN : DR_FAIL,
		       "list GPUs that exist: indices 0 to N-1 or full GPU-... UUIDs from "
		       "'nvidia-smi -L'",
		       "CUDA_VISIBLE_DEVICES=\"%.200s\": entry \"%.*s\" %s (%d GPU%s here); CUDA "
		       "shows only the %d entr%s before it",
		       value, len, bad,
		       bad_kind == -2 ? "matches several GPUs" : "names no GPU of this machine", n,
		       n == 1 ? "" : "s", good, good == 1 ? "y" : "ies");
		return;
	}
	if (dup >= 0) {
		dr_add(r, id, -1, DR_WARN, "name each GPU once in CUDA_VISIBLE_DEVICES",
		       "CUDA_VISIBLE_DEVICES=\"%.200s\" names GPU %d twice; CUDA stops at the "
		       "repeat (%d GPU%s visible)",
		       value, dup, good, good == 1 ? "" : "s");
		return;
	}
	dr_add(r, id, -1, DR_OK, NULL, "CUDA_VISIBLE_DEVICES=\"%.200s\" selects %d of %d GPU%s%s",
	       value, good, n, n == 1 ? "" : "s",
	       mig ? " (MIG instances: caps apply per instance)" : "");
}

/* ---- the registry directory ---- */

void dr_check_dir(struct dr_report *r, const char *dir, int rc, const char *why, unsigned mode)
{
	static const char id[] = "books.dir";
	char fix[320];
	if (rc == -ENOENT) {
		dr_add(r, id, -1, DR_OK, NULL,
		       "%s does not exist yet (created private, 0700, at the first capped run)",
		       dir);
		return;
	}
	if (rc == -EPERM || rc == -ELOOP || rc == -ENOTDIR) {
		snprintf(fix, sizeof(fix),
		         rc == -EPERM
		             ? "if it is yours: chmod 700 %s; else point VRAMCTL_REGISTRY_DIR at a "
		               "private directory"
		             : "remove %s (vramctl creates its own), or point VRAMCTL_REGISTRY_DIR "
		               "at a private directory",
		         dir);
		dr_add(r, id, -1, DR_FAIL, fix,
		       "%s; vramctl run refuses to start, and programs capped through the "
		       "environment keep per-process books (no shared cap)",
		       why);
		return;
	}
	if (rc < 0) {
		dr_add(r, id, -1, DR_FAIL,
		       "check the path, or point VRAMCTL_REGISTRY_DIR at a private directory", "%s",
		       why);
		return;
	}
	dr_add(r, id, -1, DR_OK, NULL, "%s is yours and private (mode %04o)", dir, mode & 07777);
}

/* ---- executables ---- */

/* pread of exactly len bytes at off: 0, or -1. */
static int read_at(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t k = pread(fd, (char *)buf + done, len - done, off + (off_t)done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		done += (size_t)k;
	}
	return 0;
}

static int read_ehdr(int fd, Elf64_Ehdr *eh)
{
	if (read_at(fd, eh, sizeof(*eh), 0) != 0 || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
		return -1;
	if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB)
		return -1;
	return 0;
}

int dr_inspect_program(const char *path, struct dr_program *out)
{
	memset(out, 0, sizeof(*out));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	out->setid = (st.st_mode & (S_ISUID | S_ISGID)) != 0;
	char head[256] = {0};
	ssize_t k = pread(fd, head, sizeof(head) - 1, 0);
	if (k >= 2 && head[0] == '#' && head[1] == '!') {
		out->script = 1;
		head[strcspn(head, "\n")] = '\0';
		const char *p = head + 2;
		while (*p == ' ')
			p++;
		snprintf(out->interp, sizeof(out->interp), "%s", p);
		close(fd);
		return 0;
	}
	Elf64_Ehdr eh;
	if (read_ehdr(fd, &eh) == 0 && eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum < 4096) {
		out->elf = 1;
		for (unsigned i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;
			if (read_at(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != 0)
				break;
			if (ph.p_type != PT_INTERP)
				continue;
			out->dynamic = 1;
			size_t n = ph.p_filesz < sizeof(out->interp) ? ph.p_filesz
			                                             : sizeof(out->interp) - 1;
			if (read_at(fd, out->interp, n, (off_t)ph.p_offset) != 0)
				out->interp[0] = '\0';
			out->interp[sizeof(out->interp) - 1] = '\0';
		}
	}
	close(fd);
	return 0;
}

void dr_check_program(struct dr_report *r, const char *path, const struct dr_program *p, int cudart,
                      int driver)
{
	static const char id[] = "hook.program";
	if (p->setid) {
		dr_add(
		    r, id, -1, DR_FAIL,
		    "run a copy without the set-ID bit, or cap the programs it starts",
		    "%s is set-user-ID or set-group-ID: the loader ignores LD_PRELOAD for it, so "
		    "vramctl cannot cap it",
		    path);
	} else if (p->script) {
		dr_add(r, id, -1, DR_OK, NULL,
		       "%s is a script run by \"%s\": the cap reaches that interpreter (check it "
		       "with --program)",
		       path, p->interp);
	} else if (!p->elf) {
		dr_add(r, id, -1, DR_FAIL, "name the program's 64-bit executable",
		       "%s is not a 64-bit ELF executable of this machine: libvramctl.so cannot "
		       "be loaded into it",
		       path);
	} else if (!p->dynamic) {
		dr_add(r, id, -1, DR_FAIL, "use a dynamically linked build of the program",
		       "%s is statically linked: no dynamic loader runs, so LD_PRELOAD (and "
		       "vramctl) cannot reach it",
		       path);
	} else if (cudart > 0 && driver > 0 && cudart * 1000 > driver) {
		char fix[64];
		snprintf(fix, sizeof(fix), "install a driver for CUDA %d or newer", cudart);
		dr_add(r, id, -1, DR_FAIL, fix,
		       "%s links the CUDA %d runtime (libcudart.so.%d), but the driver supports "
		       "CUDA %d.%d: it will not start",
		       path, cudart, cudart, driver / 1000, driver % 1000 / 10);
	} else {
		char rt[64] = "";
		if (cudart > 0)
			snprintf(rt, sizeof(rt), "; it links the CUDA %d runtime", cudart);
		dr_add(r, id, -1, DR_OK, NULL,
		       "%s is dynamically linked (%s): LD_PRELOAD reaches it%s", path, p->interp,
		       rt);
	}
}

/* Bounds for what is read of an ELF file's dynamic tables. */
#define DR_ELF_MAX_TABLE (64u << 20)

/* An ELF file's first section of one type and the string table it links to. */
struct elf_table {
	void *data;
	size_t size;
	char *str; /* NUL-terminated one past its size */
	size_t str_size;
};

static void elf_table_free(struct elf_table *t)
{
	free(t->data);
	free(t->str);
}

/*
 * Reads the file's first section of this type (SHT_DYNSYM, SHT_DYNAMIC) and
 * its string table. Returns 1 with t filled, 0 when the file has no such
 * section, or a negative errno (-ENOEXEC: not a 64-bit ELF file of this
 * machine's byte order, or a damaged one). Nothing is loaded or run.
 */
static int elf_read_table(const char *path, uint32_t type, struct elf_table *t)
{
	memset(t, 0, sizeof(*t));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	int rc = -ENOEXEC;
	if (read_ehdr(fd, &eh) != 0)
		goto out;
	rc = 0;
	if (eh.e_shnum == 0) /* no section headers (stripped of them): no table */
		goto out;
	rc = -ENOEXEC;
	if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum > 4096)
		goto out;
	sh = calloc(eh.e_shnum, sizeof(*sh));
	if (!sh) {
		rc = -ENOMEM;
		goto out;
	}
	if (read_at(fd, sh, eh.e_shnum * sizeof(*sh), (off_t)eh.e_shoff) != 0)
		goto out;
	rc = 0;
	for (unsigned i = 0; i < eh.e_shnum && rc == 0; i++) {
		const Elf64_Shdr *ds = &sh[i];
		if (ds->sh_type != type)
			continue;
		rc = -ENOEXEC;
		if (ds->sh_link >= eh.e_shnum || ds->sh_size > DR_ELF_MAX_TABLE ||
		    sh[ds->sh_link].sh_size > DR_ELF_MAX_TABLE || sh[ds->sh_link].sh_size == 0)
			break;
		const Elf64_Shdr *ss = &sh[ds->sh_link];
		t->data = malloc(ds->sh_size ? ds->sh_size : 1);
		t->str = malloc(ss->sh_size + 1);
		if (!t->data || !t->str) {
			rc = -ENOMEM;
			break;
		}
		if (read_at(fd, t->data, ds->sh_size, (off_t)ds->sh_offset) != 0 ||
		    read_at(fd, t->str, ss->sh_size, (off_t)ss->sh_offset) != 0)
			break;
		t->size = ds->sh_size;
		t->str_size = ss->sh_size;
		t->str[ss->sh_size] = '\0';
		rc = 1;
	}
out:
	if (rc <= 0)
		elf_table_free(t);
	free(sh);
	close(fd);
	return rc;
}

int dr_elf_defines(const char *path, const char *sym)
{
	struct elf_table t;
	int rc = elf_read_table(path, SHT_DYNSYM, &t);
	if (rc <= 0)
		return rc;
	rc = 0;
	const Elf64_Sym *syms = t.data;
	for (size_t k = 0; k < t.size / sizeof(Elf64_Sym) && !rc; k++) {
		int bind = ELF64_ST_BIND(syms[k].st_info);
		rc = syms[k].st_shndx != SHN_UNDEF && syms[k].st_name < t.str_size &&
		     (bind == STB_GLOBAL || bind == STB_WEAK) &&
		     !strcmp(t.str + syms[k].st_name, sym);
	}
	elf_table_free(&t);
	return rc;
}

int dr_elf_needed_major(const char *path, const char *prefix)
{
	struct elf_table t;
	int rc = elf_read_table(path, SHT_DYNAMIC, &t);
	if (rc <= 0)
		return rc;
	rc = 0;
	const Elf64_Dyn *dyn = t.data;
	size_t n = strlen(prefix);
	for (size_t k = 0; k < t.size / sizeof(Elf64_Dyn) && dyn[k].d_tag != DT_NULL; k++) {
		if (dyn[k].d_tag != DT_NEEDED || dyn[k].d_un.d_val >= t.str_size)
			continue;
		const char *name = t.str + dyn[k].d_un.d_val;
		if (!strncmp(name, prefix, n) && isdigit((unsigned char)name[n])) {
			rc = atoi(name + n);
			break;
		}
	}
	elf_table_free(&t);
	return rc;
}
