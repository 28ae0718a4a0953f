/*
 * fake_vgpu - a test stand-in for another preloaded library that replaces
 * dlsym, as HAMi-core's libvgpu.so does. Its dlsym jumps straight to
 * glibc's, skipping every other interposer: when it comes before
 * libvramctl.so in LD_PRELOAD, programs that reach the driver through dlsym
 * or cuGetProcAddress get the driver's own functions. vramctl doctor must
 * name it as a conflict, and its self-test must see those ways uncapped.
 *
 * The entry is a jump, not a call, so glibc still sees the caller's return
 * address. RTLD_NEXT and RTLD_DEFAULT go on to the next dlsym (their meaning
 * kept: sanitizer runtimes look up their real functions that way before
 * anything is ready, even before this library's constructors); a real
 * handle goes straight to glibc's, found at the first such call. x86-64
 * only, like the library it stands beside.
 */
#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <stddef.h>

void *fake_vgpu_libc(void);
void *fake_vgpu_next(void);
void *fake_vgpu_libc_fn, *fake_vgpu_next_fn;

static void *versioned(void *h)
{
	void *p = dlvsym(h, "dlsym", "GLIBC_2.34");
	return p ? p : dlvsym(h, "dlsym", "GLIBC_2.2.5");
}

void *fake_vgpu_libc(void)
{
	void *libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
	void *p = libc ? versioned(libc) : NULL;
	__atomic_store_n(&fake_vgpu_libc_fn, p, __ATOMIC_RELEASE);
	return p;
}

void *fake_vgpu_next(void)
{
	void *p = versioned(RTLD_NEXT);
	__atomic_store_n(&fake_vgpu_next_fn, p, __ATOMIC_RELEASE);
	return p;
}

#if !defined(__x86_64__)
#error "fake_vgpu: x86-64 only"
#endif
/* FN: the cached pointer, RESOLVE: its resolver (registers kept around it). */
#define FAKE_VGPU_JUMP(fn, resolve, label)                                                         \
	"  movq " fn "(%rip), %rax\n"                                                              \
	"  testq %rax, %rax\n"                                                                     \
	"  jnz " label "f\n"                                                                       \
	"  pushq %rdi\n"                                                                           \
	"  pushq %rsi\n"                                                                           \
	"  subq $8, %rsp\n"                                                                        \
	"  call " resolve "@PLT\n"                                                                 \
	"  addq $8, %rsp\n"                                                                        \
	"  popq %rsi\n"                                                                            \
	"  popq %rdi\n"                                                                            \
	"  testq %rax, %rax\n"                                                                     \
	"  jz 9f\n" label ":\n"                                                                    \
	"  jmp *%rax\n"
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        "  testq %rdi, %rdi\n"
        "  jz 5f\n"
        "  cmpq $-1, %rdi\n"
        "  je 5f\n" FAKE_VGPU_JUMP("fake_vgpu_libc_fn", "fake_vgpu_libc",
                                   "1") "5:\n" FAKE_VGPU_JUMP("fake_vgpu_next_fn", "fake_vgpu_next",
                                                              "2") "9:\n"
                                                                   "  ret\n"
                                                                   ".size dlsym, .-dlsym\n");
