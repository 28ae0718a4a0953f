/*
 * dlsym.c - the dlsym override (way in number 2: dlopen + dlsym).
 *
 * glibc computes dlsym(RTLD_NEXT, ...) from its caller's return address, and
 * RTLD_DEFAULT from the caller's namespace. A C function that forwards with
 * an ordinary call makes libvramctl.so the "caller": another preloaded
 * library's dlsym(RTLD_NEXT, "puts") would then get its own puts back. That
 * only works at -O2 when the compiler happens to emit a tail jump, so the
 * exported entry point is a few instructions of assembly that jump (never
 * call) to the real dlsym for RTLD_NEXT and RTLD_DEFAULT, in every build
 * type. Only lookups on a real handle come to C, where the result is
 * compared with the real addresses of the hooked symbols (lookup.c).
 *
 * RTLD_DEFAULT results are never substituted: with the library preloaded, a
 * global lookup of a hooked name already finds the exported wrapper first.
 *
 * The entry is exported twice, as dlsym@GLIBC_2.2.5 (old binaries) and
 * dlsym@@GLIBC_2.34 (binaries linked against glibc >= 2.34); exports.lds.in
 * declares both version nodes.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>

#include "hook/hook.h"
#include "hook/lookup.h"

void *vr_dlsym_handle(void *handle, const char *name);
/* dlsym on a real handle: the driver's answer, or the matching wrapper. */
void *vr_dlsym_handle(void *handle, const char *name)
{
	void *r = vr_dlsym_real(handle, name);
	if (!r || !name)
		return r;
	/* One branch for every name that cannot be a hooked one. */
	if (VR_LIKELY(name[0] != 'c' && name[0] != 'n'))
		return r;
	return vr_lookup_substitute(r, name);
}

#if defined(__x86_64__)
/*
 * dlsym(handle, name):
 *   RTLD_NEXT ((void *)-1) or RTLD_DEFAULT (0): tail-jump to the real dlsym,
 *     so it sees the program's (or the other interposer's) return address;
 *   anything else: tail-jump to vr_dlsym_handle.
 * The real pointer is resolved on first use with the argument registers
 * saved and the stack aligned, then jumped to with the caller's frame intact.
 * That resolution is in assembly too: sanitizer runtimes call dlsym from
 * their own initialisation, before instrumented C code may run.
 */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl vr_dlsym_entry_new\n"
        ".type vr_dlsym_entry_new, @function\n"
        ".globl vr_dlsym_entry_old\n"
        ".type vr_dlsym_entry_old, @function\n"
        "vr_dlsym_entry_new:\n"
        "vr_dlsym_entry_old:\n"
        "	.cfi_startproc\n"
        "	cmpq $-1, %rdi\n"
        "	je 1f\n"
        "	testq %rdi, %rdi\n"
        "	je 1f\n"
        "	jmp vr_dlsym_handle\n"
        "1:	movq vr_dlsym_next(%rip), %rax\n"
        "	testq %rax, %rax\n"
        "	je 2f\n"
        "	jmp *%rax\n"
        "2:	pushq %rdi\n"
        "	.cfi_adjust_cfa_offset 8\n"
        "	pushq %rsi\n"
        "	.cfi_adjust_cfa_offset 8\n"
        "	subq $8, %rsp\n"
        "	.cfi_adjust_cfa_offset 8\n"
        "	movq $-1, %rdi\n"
        "	leaq .Lvr_name(%rip), %rsi\n"
        "	leaq .Lvr_v234(%rip), %rdx\n"
        "	call dlvsym@PLT\n"
        "	testq %rax, %rax\n"
        "	jne 3f\n"
        "	movq $-1, %rdi\n"
        "	leaq .Lvr_name(%rip), %rsi\n"
        "	leaq .Lvr_v225(%rip), %rdx\n"
        "	call dlvsym@PLT\n"
        "	testq %rax, %rax\n"
        "	jne 3f\n"
        "	leaq vr_dlsym_nothing(%rip), %rax\n"
        "3:	movq %rax, vr_dlsym_next(%rip)\n"
        "	addq $8, %rsp\n"
        "	.cfi_adjust_cfa_offset -8\n"
        "	popq %rsi\n"
        "	.cfi_adjust_cfa_offset -8\n"
        "	popq %rdi\n"
        "	.cfi_adjust_cfa_offset -8\n"
        "	jmp *%rax\n"
        "	.cfi_endproc\n"
        ".size vr_dlsym_entry_new, .-vr_dlsym_entry_new\n"
        ".size vr_dlsym_entry_old, .-vr_dlsym_entry_old\n"
        /* Stands in for dlsym if glibc offered none: finds nothing. */
        "vr_dlsym_nothing:\n"
        "	xorl %eax, %eax\n"
        "	ret\n"
        ".section .rodata\n"
        ".Lvr_name: .string \"dlsym\"\n"
        ".Lvr_v234: .string \"GLIBC_2.34\"\n"
        ".Lvr_v225: .string \"GLIBC_2.2.5\"\n"
        ".text\n"
        ".symver vr_dlsym_entry_new, dlsym@@GLIBC_2.34\n"
        ".symver vr_dlsym_entry_old, dlsym@GLIBC_2.2.5\n");
#else
#error "libvramctl's dlsym thunk exists for x86-64 only; port the few instructions in dlsym.c"
#endif
