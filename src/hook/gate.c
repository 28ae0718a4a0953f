/*
 * gate.c - the gate in front of every driver call of a process that may
 * be parked (gate.h).
 *
 * The trampolines are a pool of VR_TRAMP_N stubs in the library's text
 * (no code is written at run time): stub i loads i into r11 and jumps to
 * one common body, which, while the gate is open, jumps on to the real
 * entry point vr_tramp_real[i] with the caller's registers and stack as
 * they came (r10 and r11 are scratch registers no C function takes an
 * argument in). While it is shut the body saves every argument register
 * (the integer ones, rax and the eight vector ones, for any signature),
 * calls vr_tramp_slow in C and then either jumps on the same way or
 * returns the CUresult it gave. x86-64 only, as the dlsym thunk
 * (dlsym.c).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "hook/gate.h"
#include "hook/log.h"

#define VR_TRAMP_N 4096

/* Read by the trampolines: 0 open. */
__attribute__((visibility("hidden"))) _Atomic int vr_gate_shut_word;
__attribute__((visibility("hidden"))) void *vr_tramp_real[VR_TRAMP_N];

/* The slow path of a trampoline at the shut gate. */
__attribute__((visibility("hidden"), used)) int vr_tramp_slow(unsigned idx);
int vr_tramp_slow(unsigned idx)
{
	(void)idx;
	if (vr_in_hook || !vr_gate_pass)
		return 0;
	return vr_gate_pass();
}

__asm__(".text\n"
        ".p2align 4\n"
        ".globl vr_tramp_pool\n"
        ".hidden vr_tramp_pool\n"
        ".type vr_tramp_pool, @function\n"
        "vr_tramp_pool:\n"
        ".set vr_tramp_i, 0\n"
        ".rept 4096\n"
        "	movl $vr_tramp_i, %r11d\n"
        "	jmp vr_tramp_body\n"
        "	.p2align 4\n"
        "	.set vr_tramp_i, vr_tramp_i + 1\n"
        ".endr\n"
        ".size vr_tramp_pool, .-vr_tramp_pool\n"
        ".p2align 4\n"
        ".type vr_tramp_body, @function\n"
        "vr_tramp_body:\n"
        "	.cfi_startproc\n"
        "	cmpl $0, vr_gate_shut_word(%rip)\n"
        "	jne 1f\n"
        "0:	leaq vr_tramp_real(%rip), %r10\n"
        "	jmp *(%r10,%r11,8)\n"
        "1:	pushq %rdi\n"
        "	.cfi_adjust_cfa_offset 8\n"
        "	pushq %rsi\n"
        "	.cfi_adjust_cfa_offset 8\n"
        "	pushq %rdx\n"
        "	.cfi_adjust_cfa_offset 8\n"
        "	pushq %rcx\n"
        "	.cfi_adjust_cfa_offset 8\n"
        "	pushq %r8\n"
        "	.cfi_adjust_cfa_offset 8\n"
        "	pushq %r9\n"
        "	.cfi_adjust_cfa_offset 8\n"
        "	pushq %rax\n"
        "	.cfi_adjust_cfa_offset 8\n"
        "	pushq %r11\n"
        "	.cfi_adjust_cfa_offset 8\n"
        "	subq $136, %rsp\n"
        "	.cfi_adjust_cfa_offset 136\n"
        "	movdqu %xmm0, 0(%rsp)\n"
        "	movdqu %xmm1, 16(%rsp)\n"
        "	movdqu %xmm2, 32(%rsp)\n"
        "	movdqu %xmm3, 48(%rsp)\n"
        "	movdqu %xmm4, 64(%rsp)\n"
        "	movdqu %xmm5, 80(%rsp)\n"
        "	movdqu %xmm6, 96(%rsp)\n"
        "	movdqu %xmm7, 112(%rsp)\n"
        "	movl %r11d, %edi\n"
        "	call vr_tramp_slow\n"
        "	movl %eax, 128(%rsp)\n"
        "	movdqu 0(%rsp), %xmm0\n"
        "	movdqu 16(%rsp), %xmm1\n"
        "	movdqu 32(%rsp), %xmm2\n"
        "	movdqu 48(%rsp), %xmm3\n"
        "	movdqu 64(%rsp), %xmm4\n"
        "	movdqu 80(%rsp), %xmm5\n"
        "	movdqu 96(%rsp), %xmm6\n"
        "	movdqu 112(%rsp), %xmm7\n"
        "	movl 128(%rsp), %r10d\n"
        "	addq $136, %rsp\n"
        "	.cfi_adjust_cfa_offset -136\n"
        "	popq %r11\n"
        "	.cfi_adjust_cfa_offset -8\n"
        "	popq %rax\n"
        "	.cfi_adjust_cfa_offset -8\n"
        "	popq %r9\n"
        "	.cfi_adjust_cfa_offset -8\n"
        "	popq %r8\n"
        "	.cfi_adjust_cfa_offset -8\n"
        "	popq %rcx\n"
        "	.cfi_adjust_cfa_offset -8\n"
        "	popq %rdx\n"
        "	.cfi_adjust_cfa_offset -8\n"
        "	popq %rsi\n"
        "	.cfi_adjust_cfa_offset -8\n"
        "	popq %rdi\n"
        "	.cfi_adjust_cfa_offset -8\n"
        "	testl %r10d, %r10d\n"
        "	je 0b\n"
        "	movl %r10d, %eax\n"
        "	ret\n"
        "	.cfi_endproc\n"
        ".size vr_tramp_body, .-vr_tramp_body\n");

extern const char vr_tramp_pool[] __attribute__((visibility("hidden")));

/* Which trampoline each real entry point has: an open-addressing table of
 * twice the pool, filled under a mutex (look-ups are few: cudart makes
 * them all at its start). */
#define VR_TRAMP_SLOTS (2 * VR_TRAMP_N)
static struct {
	void *real;
	unsigned idx;
} slots[VR_TRAMP_SLOTS];
static unsigned used;
static atomic_int ran_out;
static pthread_mutex_t tramp_lock = PTHREAD_MUTEX_INITIALIZER;

int vr_gate_armed(void)
{
	return vr_g.active && vr_g.park_idle_ms != 0;
}

void *vr_gate_wrap(void *real)
{
	if (!real)
		return real;
	uintptr_t h = (uintptr_t)real;
	h ^= h >> 17;
	h *= 0x9e3779b97f4a7c15ull;
	unsigned k = (unsigned)(h >> 40) % VR_TRAMP_SLOTS;
	void *out = real;
	pthread_mutex_lock(&tramp_lock);
	for (;; k = (k + 1) % VR_TRAMP_SLOTS) {
		if (slots[k].real == real) {
			out = (void *)(vr_tramp_pool + 16 * slots[k].idx);
			break;
		}
		if (!slots[k].real) {
			if (used == VR_TRAMP_N) {
				if (!atomic_exchange(&ran_out, 1))
					vr_log(VR_LOG_WARN,
					       "the program looked up more than %d driver entry "
					       "points: "
					       "the rest are not gated, so this process is never "
					       "parked",
					       VR_TRAMP_N);
				break;
			}
			vr_tramp_real[used] = real;
			slots[k].real = real;
			slots[k].idx = used;
			out = (void *)(vr_tramp_pool + 16 * used);
			used++;
			break;
		}
	}
	pthread_mutex_unlock(&tramp_lock);
	return out;
}

int vr_gate_complete(void)
{
	return !atomic_load(&ran_out);
}

void vr_gate_shut(void)
{
	atomic_store(&vr_gate_shut_word, 1);
	int one = 1;
	atomic_compare_exchange_strong(&vr_g.driver_state, &one, VR_DRIVER_GATED);
}

void vr_gate_open(void)
{
	int gated = VR_DRIVER_GATED;
	atomic_compare_exchange_strong(&vr_g.driver_state, &gated, 1);
	atomic_store(&vr_gate_shut_word, 0);
}

int vr_gate_is_shut(void)
{
	return atomic_load(&vr_gate_shut_word) != 0;
}
