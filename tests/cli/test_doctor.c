/*
 * test_doctor - the pure half of `vramctl doctor` on fixed inputs: version
 * strings, CUDA_VISIBLE_DEVICES against a list of UUIDs, the registry
 * directory verdicts, what an executable is, whether a shared object
 * defines dlsym, and the exact text and JSON of a fixed report.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/doctor_report.h"
#include "tests/test.h"

#ifndef VRAMCTL_VERSION
#define VRAMCTL_VERSION "0.1.0"
#endif

static const struct dr_check *last(const struct dr_report *r)
{
	ASSERT(r->n > 0);
	return &r->checks[r->n - 1];
}

static void test_versions(void)
{
	char out[64];
	ASSERT_EQ(dr_kernel_release("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  "
	                            "Thu Feb 22 01:44:30 UTC 2024\nGCC version:  gcc 12.2.0\n",
	                            out, sizeof(out)),
	          0);
	ASSERT_STR_EQ(out, "550.54.14");
	ASSERT_EQ(dr_kernel_release("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "
	                            "570.86.15  Release Build  (dvs-builder@U16)  Thu Jan 23\n",
	                            out, sizeof(out)),
	          0);
	ASSERT_STR_EQ(out, "570.86.15");
	ASSERT_EQ(dr_kernel_release("NVRM version: NVIDIA UNIX Kernel Module\nnext 1.2\n", out,
	                            sizeof(out)),
	          -1);
	ASSERT_EQ(dr_kernel_release("", out, sizeof(out)), -1);
	ASSERT_EQ(
	    dr_library_release("/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.14", out, sizeof(out)),
	    0);
	ASSERT_STR_EQ(out, "550.54.14");
	ASSERT_EQ(dr_library_release("/usr/lib/libcuda.so.1", out, sizeof(out)), -1);
	ASSERT_EQ(dr_library_release("libcuda.so", out, sizeof(out)), -1);
	ASSERT_EQ(dr_library_release("/opt/libcuda.so.550.54.14-custom", out, sizeof(out)), -1);
}

static void test_visible(void)
{
	static const char *const uuids[] = {"GPU-11111111-2222-3333-4444-555555555555",
	                                    "GPU-11112222-0000-0000-0000-000000000000",
	                                    "GPU-99999999-0000-0000-0000-000000000000"};
	struct dr_report r = {0};
	dr_check_visible(&r, NULL, uuids, 3);
	ASSERT_EQ(last(&r)->status, DR_OK);
	ASSERT_STR_EQ(last(&r)->id, "env.visible_devices");
	ASSERT(strstr(last(&r)->fact, "unset: every GPU is visible (3)"));
	dr_check_visible(&r, "", uuids, 3);
	ASSERT_EQ(last(&r)->status, DR_FAIL);
	ASSERT(strstr(last(&r)->fact, "hides every GPU"));
	ASSERT(last(&r)->fix[0]);
	dr_check_visible(&r, "2,0", uuids, 3);
	ASSERT_EQ(last(&r)->status, DR_OK);
	ASSERT(strstr(last(&r)->fact, "selects 2 of 3 GPUs"));
	ASSERT_EQ(last(&r)->fix[0], '\0');
	dr_check_visible(&r, "3", uuids, 3);
	ASSERT_EQ(last(&r)->status, DR_FAIL);
	ASSERT(strstr(last(&r)->fact, "entry \"3\" names no GPU of this machine (3 GPUs here)"));
	ASSERT(strstr(last(&r)->fact, "only the 0 entries before it"));
	dr_check_visible(&r, "0, 7,1", uuids, 3);
	ASSERT_EQ(last(&r)->status, DR_WARN);
	ASSERT(strstr(last(&r)->fact, "entry \"7\""));
	ASSERT(strstr(last(&r)->fact, "only the 1 entry before it"));
	dr_check_visible(&r, "GPU-9999", uuids, 3);
	ASSERT_EQ(last(&r)->status, DR_OK);
	dr_check_visible(&r, "GPU-1111", uuids, 3);
	ASSERT_EQ(last(&r)->status, DR_FAIL);
	ASSERT(strstr(last(&r)->fact, "matches several GPUs"));
	dr_check_visible(&r, "gpu-deadbeef", uuids, 3);
	ASSERT_EQ(last(&r)->status, DR_FAIL);
	dr_check_visible(&r, "1,GPU-11112222", uuids, 3);
	ASSERT_EQ(last(&r)->status, DR_WARN);
	ASSERT(strstr(last(&r)->fact, "names GPU 1 twice"));
	dr_check_visible(&r, "MIG-aaaa-bbbb", uuids, 3);
	ASSERT_EQ(last(&r)->status, DR_OK);
	ASSERT(strstr(last(&r)->fact, "MIG instances"));
	dr_check_visible(&r, "-1", uuids, 3);
	ASSERT_EQ(last(&r)->status, DR_FAIL);
	dr_check_visible(&r, "0", uuids, -1);
	ASSERT_EQ(last(&r)->status, DR_SKIP);
	dr_free(&r);
}

static void test_dir(void)
{
	struct dr_report r = {0};
	dr_check_dir(&r, "/run/user/1/vramctl", -ENOENT, "", 0);
	ASSERT_EQ(last(&r)->status, DR_OK);
	ASSERT(strstr(last(&r)->fact, "does not exist yet"));
	dr_check_dir(&r, "/tmp/vramctl-1", -EPERM,
	             "registry directory /tmp/vramctl-1 is group or world writable (mode 0777): "
	             "refusing",
	             0777);
	ASSERT_EQ(last(&r)->status, DR_FAIL);
	ASSERT(strstr(last(&r)->fact, "mode 0777"));
	ASSERT(strstr(last(&r)->fix, "chmod 700 /tmp/vramctl-1"));
	dr_check_dir(&r, "/tmp/vramctl-1", -ELOOP, "registry directory /tmp/vramctl-1 is a symlink",
	             0);
	ASSERT_EQ(last(&r)->status, DR_FAIL);
	ASSERT(strstr(last(&r)->fix, "remove /tmp/vramctl-1"));
	dr_check_dir(&r, "/d", 0, "", 0700);
	ASSERT_EQ(last(&r)->status, DR_OK);
	dr_check_dir(&r, "/d", -EACCES, "cannot open registry directory /d: Permission denied", 0);
	ASSERT_EQ(last(&r)->status, DR_FAIL);
	dr_free(&r);
}

/* A minimal static ELF executable: a header and one PT_LOAD, no PT_INTERP. */
static void write_static_elf(const char *path)
{
	Elf64_Ehdr eh = {0};
	Elf64_Phdr ph = {0};
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_EXEC;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(eh);
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(ph);
	eh.e_phnum = 1;
	ph.p_type = PT_LOAD;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	ASSERT(fd >= 0);
	ASSERT_EQ(write(fd, &eh, sizeof(eh)), (ssize_t)sizeof(eh));
	ASSERT_EQ(write(fd, &ph, sizeof(ph)), (ssize_t)sizeof(ph));
	close(fd);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	ASSERT(fd >= 0);
	ASSERT_EQ(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	ASSERT_EQ(chmod(path, mode), 0);
}

static void test_programs(void)
{
	struct dr_program p;
	struct dr_report r = {0};
	ASSERT_EQ(dr_inspect_program("/proc/self/exe", &p), 0);
	ASSERT(p.elf && p.dynamic && !p.setid && !p.script);
	ASSERT(strstr(p.interp, "ld-linux"));
	dr_check_program(&r, "/x/prog", &p, 0, 13000);
	ASSERT_EQ(last(&r)->status, DR_OK);
	ASSERT_STR_EQ(last(&r)->id, "hook.program");

	/* The CUDA runtime a program links, against the driver. */
	dr_check_program(&r, "/x/prog", &p, 12, 11080);
	ASSERT_EQ(last(&r)->status, DR_FAIL);
	ASSERT(strstr(last(&r)->fact, "links the CUDA 12 runtime (libcudart.so.12), but the "
	                              "driver supports CUDA 11.8"));
	ASSERT_STR_EQ(last(&r)->fix, "install a driver for CUDA 12 or newer");
	dr_check_program(&r, "/x/prog", &p, 12, 12040);
	ASSERT_EQ(last(&r)->status, DR_OK);
	ASSERT(strstr(last(&r)->fact, "it links the CUDA 12 runtime"));
	dr_check_program(&r, "/x/prog", &p, 13, 0); /* driver unknown */
	ASSERT_EQ(last(&r)->status, DR_OK);

	write_static_elf("static-prog");
	ASSERT_EQ(dr_inspect_program("static-prog", &p), 0);
	ASSERT(p.elf && !p.dynamic);
	dr_check_program(&r, "static-prog", &p, 0, 0);
	ASSERT_EQ(last(&r)->status, DR_FAIL);
	ASSERT(strstr(last(&r)->fact, "statically linked"));

	write_file("script", "#!/usr/bin/python3 -u\nprint(1)\n", 0755);
	ASSERT_EQ(dr_inspect_program("script", &p), 0);
	ASSERT(p.script && !p.elf);
	ASSERT_STR_EQ(p.interp, "/usr/bin/python3 -u");
	dr_check_program(&r, "script", &p, 0, 0);
	ASSERT_EQ(last(&r)->status, DR_OK);

	write_file("setuid", "#!/bin/sh\n", 04755);
	ASSERT_EQ(dr_inspect_program("setuid", &p), 0);
	ASSERT(p.setid);
	dr_check_program(&r, "setuid", &p, 0, 0);
	ASSERT_EQ(last(&r)->status, DR_FAIL);
	ASSERT(strstr(last(&r)->fact, "ignores LD_PRELOAD"));

	write_file("text", "hello\n", 0755);
	ASSERT_EQ(dr_inspect_program("text", &p), 0);
	dr_check_program(&r, "text", &p, 0, 0);
	ASSERT_EQ(last(&r)->status, DR_FAIL);
	ASSERT_EQ(dr_inspect_program("no-such-file", &p), -ENOENT);
	dr_free(&r);
}

static void test_elf_defines(void)
{
	const char *build = getenv("VR_BUILD");
	char lib[4096], sim[4096];
	if (!build)
		SKIP("VR_BUILD is not set (run through tests/run)");
	snprintf(lib, sizeof(lib), "%s/libvramctl.so", build);
	snprintf(sim, sizeof(sim), "%s/sim/libcuda.so.1", build);
	ASSERT_EQ(dr_elf_defines(lib, "dlsym"), 1);
	ASSERT_EQ(dr_elf_defines(lib, "cuMemAlloc_v2"), 1);
	ASSERT_EQ(dr_elf_defines(lib, "malloc"), 0); /* used, not defined */
	ASSERT_EQ(dr_elf_defines(sim, "dlsym"), 0);
	ASSERT_EQ(dr_elf_defines(sim, "cuInit"), 1);
	write_file("not-elf.so", "garbage", 0644);
	ASSERT_EQ(dr_elf_defines("not-elf.so", "dlsym"), -ENOEXEC);
	ASSERT_EQ(dr_elf_defines("missing.so", "dlsym"), -ENOENT);
	/* DT_NEEDED: the hook links libc only; the program links libcuda.so.1. */
	ASSERT_EQ(dr_elf_needed_major(lib, "libc.so."), 6);
	ASSERT_EQ(dr_elf_needed_major(lib, "libcudart.so."), 0);
	ASSERT_EQ(dr_elf_needed_major("/proc/self/exe", "libcudart.so."), 0);
	ASSERT_EQ(dr_elf_needed_major("not-elf.so", "libc.so."), -ENOEXEC);
	ASSERT_EQ(dr_elf_needed_major("static-prog", "libc.so."), 0);
}

static char *format(const struct dr_report *r, int json)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ASSERT(f);
	ASSERT_EQ(json ? dr_format_json(f, r) : dr_format_text(f, r), 0);
	fclose(f);
	return buf;
}

static void test_format(void)
{
	struct dr_report r = {0};
	dr_add(&r, "driver.library", -1, DR_OK, "never shown", "libcuda.so.1: %s", "/lib/x");
	dr_add(&r, "device.persistence", 1, DR_WARN, "sudo nvidia-smi -i 1 -pm 1",
	       "GPU 1: persistence mode is off");
	dr_add(&r, "hook.dlsym", 0, DR_FAIL, "remove \"it\"", "NOT capped: a\tb");
	dr_add(&r, "hook.program", -1, DR_SKIP, NULL, "no --program given");
	ASSERT_EQ(dr_exit_status(&r), 1);
	char *text = format(&r, 0);
	ASSERT_STR_EQ(text, "OK    driver.library         libcuda.so.1: /lib/x\n"
	                    "WARN  device.persistence     GPU 1: persistence mode is off\n"
	                    "                        fix: sudo nvidia-smi -i 1 -pm 1\n"
	                    "FAIL  hook.dlsym             NOT capped: a\\x09b\n"
	                    "                        fix: remove \"it\"\n"
	                    "SKIP  hook.program           no --program given\n"
	                    "\n"
	                    "fail: 1 failed, 1 warning, 1 ok, 1 skipped\n");
	free(text);
	char *json = format(&r, 1);
	ASSERT_STR_EQ(json, "{\n"
	                    "  \"schema_version\": 1,\n"
	                    "  \"schema\": 1,\n"
	                    "  \"version\": \"" VRAMCTL_VERSION "\",\n"
	                    "  \"result\": \"fail\",\n"
	                    "  \"exit_status\": 1,\n"
	                    "  \"counts\": {\n"
	                    "    \"ok\": 1,\n"
	                    "    \"warn\": 1,\n"
	                    "    \"fail\": 1,\n"
	                    "    \"skip\": 1\n"
	                    "  },\n"
	                    "  \"checks\": [\n"
	                    "    {\n"
	                    "      \"id\": \"driver.library\",\n"
	                    "      \"device\": null,\n"
	                    "      \"status\": \"ok\",\n"
	                    "      \"fact\": \"libcuda.so.1: /lib/x\",\n"
	                    "      \"fix\": null\n"
	                    "    },\n"
	                    "    {\n"
	                    "      \"id\": \"device.persistence\",\n"
	                    "      \"device\": 1,\n"
	                    "      \"status\": \"warn\",\n"
	                    "      \"fact\": \"GPU 1: persistence mode is off\",\n"
	                    "      \"fix\": \"sudo nvidia-smi -i 1 -pm 1\"\n"
	                    "    },\n"
	                    "    {\n"
	                    "      \"id\": \"hook.dlsym\",\n"
	                    "      \"device\": 0,\n"
	                    "      \"status\": \"fail\",\n"
	                    "      \"fact\": \"NOT capped: a\\tb\",\n"
	                    "      \"fix\": \"remove \\\"it\\\"\"\n"
	                    "    },\n"
	                    "    {\n"
	                    "      \"id\": \"hook.program\",\n"
	                    "      \"device\": null,\n"
	                    "      \"status\": \"skip\",\n"
	                    "      \"fact\": \"no --program given\",\n"
	                    "      \"fix\": null\n"
	                    "    }\n"
	                    "  ]\n"
	                    "}\n");
	free(json);
	dr_free(&r);

	/* Control characters never reach a terminal; JSON escapes them. */
	dr_add(&r, "gpu.uncapped", -1, DR_WARN, "x\x1b]0;t\x07", "pid 1 (\x1b[2Jevil\x7f) holds");
	text = format(&r, 0);
	ASSERT(strstr(text, "pid 1 (\\x1b[2Jevil\\x7f) holds\n"));
	ASSERT(strstr(text, "fix: x\\x1b]0;t\\x07\n"));
	free(text);
	json = format(&r, 1);
	ASSERT(strstr(json, "pid 1 (\\u001b[2Jevil\x7f) holds"));
	free(json);
	dr_free(&r);

	/* Only WARN: exit 0, result "warn"; empty: "ok". */
	dr_add(&r, "gpu.uncapped", -1, DR_WARN, "x", "y");
	ASSERT_EQ(dr_exit_status(&r), 0);
	json = format(&r, 1);
	ASSERT(strstr(json, "\"result\": \"warn\""));
	free(json);
	dr_free(&r);
	json = format(&r, 1);
	ASSERT(strstr(json, "\"result\": \"ok\""));
	ASSERT(strstr(json, "\"checks\": []"));
	free(json);
}

int main(void)
{
	test_versions();
	test_visible();
	test_dir();
	test_programs();
	test_format();
	test_elf_defines();
	return 0;
}
