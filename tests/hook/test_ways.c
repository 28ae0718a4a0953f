/*
 * test_ways - every way a program reaches the driver leads through vramctl,
 * and nothing else changes:
 *   linked (-lcuda); dlopen("libcuda.so.1") + dlsym (RTLD_LOCAL too, and
 *   "libcuda.so"); cuGetProcAddress_v2 at 11030/12000/13000 with flags 0, 1,
 *   2 (status and the symbol handed out are the driver's own, compared with
 *   its answers without the library); the four-argument cuGetProcAddress;
 *   cuGetProcAddress asked for itself; dlsym(RTLD_NEXT/RTLD_DEFAULT) from the
 *   program and from another preloaded interposer built at -O0 (in either
 *   order); unhooked entry points are the driver's own pointers; a call from
 *   another library's constructor before cuInit is safe.
 */
#include <link.h>

#include "hooktest.h"

/*
 * What dlsym(RTLD_NEXT, sym) means for code in the object whose path
 * contains `after` ("" for the program): the first definition in a later
 * object of the global search order. Computed from the link map, without
 * going through anyone's dlsym override for RTLD_NEXT.
 */
static void *expected_next(const char *after, const char *sym)
{
	struct link_map *m = NULL;
	ASSERT_EQ(dlinfo(dlopen(NULL, RTLD_NOW), RTLD_DI_LINKMAP, &m), 0);
	if (after[0]) {
		while (m && !strstr(m->l_name, after))
			m = m->l_next;
		ASSERT(m);
	}
	for (m = m->l_next; m; m = m->l_next) {
		void *h = m->l_name[0] ? dlopen(m->l_name, RTLD_NOW | RTLD_NOLOAD) : NULL;
		void *p = h ? dlsym(h, sym) : NULL;
		Dl_info di;
		if (p && dladdr(p, &di) && !strcmp(di.dli_fname, m->l_name))
			return p;
	}
	return NULL;
}

static const char *const hooked[] = {
#define VR_HOOK_CU(n) #n,
#include "hook/hooks.def"
    NULL};

static int is_hooked(const char *name)
{
	for (int i = 0; hooked[i]; i++)
		if (!strcmp(hooked[i], name))
			return 1;
	return 0;
}

/* Base names asked of cuGetProcAddress, hooked or not. */
static const char *const asked[] = {"cuMemAlloc",
                                    "cuMemFree",
                                    "cuMemGetInfo",
                                    "cuDeviceTotalMem",
                                    "cuMemAllocPitch",
                                    "cuMemAllocManaged",
                                    "cuMemAllocAsync",
                                    "cuMemFreeAsync",
                                    "cuMemAllocFromPoolAsync",
                                    "cuStreamSynchronize",
                                    "cuMemCreate",
                                    "cuMemRelease",
                                    "cuArrayCreate",
                                    "cuArray3DCreate",
                                    "cuMemHostAlloc",
                                    "cuMemAllocHost",
                                    "cuMemHostRegister",
                                    "cuGetProcAddress",
                                    "cuLaunchKernel",
                                    "cuInit",
                                    "cuCtxGetDevice",
                                    "cuMemAddressReserve",
                                    "cuMemMap",
                                    "cuGraphLaunch",
                                    "cuGraphInstantiate",
                                    "cuGraphInstantiateWithFlags",
                                    "cuGraphInstantiateWithParams",
                                    "cuNoSuchFunction",
                                    NULL};
static const int versions[] = {11030, 12000, 13000};
static const cuuint64_t flagset[] = {0, 1, 2};

static const char *where(void *p, const char **file)
{
	Dl_info di;
	*file = "-";
	if (!p)
		return "NULL";
	if (!dladdr(p, &di) || !di.dli_sname)
		return "?";
	*file = di.dli_fname;
	return di.dli_sname;
}

/* One line per question: "sym ver flags rc status name". */
static void table(FILE *out, int check_files)
{
	for (int i = 0; asked[i]; i++)
		for (int v = 0; v < 3; v++)
			for (int f = 0; f < 3; f++) {
				void *p = NULL;
				CUdriverProcAddressQueryResult st = -1;
				CUresult rc =
				    cuGetProcAddress_v2(asked[i], &p, versions[v], flagset[f], &st);
				const char *file, *name = where(p, &file);
				fprintf(out, "v2 %s %d %d %d %d %s\n", asked[i], versions[v],
				        (int)flagset[f], rc, (int)st, name);
				if (check_files && p) {
					int ours = strstr(file, "libvramctl") != NULL;
					if (ours != is_hooked(name))
						TEST_FAILF("%s at %d flags %d: %s from %s",
						           asked[i], versions[v], (int)flagset[f],
						           name, file);
				}
				p = NULL;
				rc = cuGetProcAddress(asked[i], &p, versions[v], flagset[f]);
				name = where(p, &file);
				fprintf(out, "v1 %s %d %d %d %s\n", asked[i], versions[v],
				        (int)flagset[f], rc, name);
				if (check_files && p &&
				    (strstr(file, "libvramctl") != NULL) != is_hooked(name))
					TEST_FAILF("4-arg %s: %s from %s", asked[i], name, file);
			}
}

static int from_vramctl(void *p)
{
	const char *file;
	where(p, &file);
	return strstr(file, "libvramctl") != NULL;
}

static int child(void)
{
	ht_ctx();
	/* 1. cuGetProcAddress: the driver's answers, wrappers where hooked. */
	char path[1024], ref[1024];
	snprintf(path, sizeof path, "%s/procaddr.child", ht_tmp());
	snprintf(ref, sizeof ref, "%s/procaddr.ref", ht_tmp());
	FILE *out = fopen(path, "w");
	ASSERT(out);
	table(out, 1);
	fclose(out);
	/* Compared here, not with cmp(1): a shell would inherit the preload,
	 * and a clang sanitizer build of the library cannot load into it. */
	static char ref_text[1 << 16], got[1 << 16];
	FILE *fw = fopen(ref, "r"), *fg = fopen(path, "r");
	ASSERT(fw && fg);
	ref_text[fread(ref_text, 1, sizeof ref_text - 1, fw)] = 0;
	got[fread(got, 1, sizeof got - 1, fg)] = 0;
	fclose(fw);
	fclose(fg);
	if (strcmp(ref_text, got) != 0) {
		size_t i = 0, line = 0;
		while (ref_text[i] && ref_text[i] == got[i])
			line += ref_text[i++] == '\n';
		TEST_FAILF("cuGetProcAddress answers differ under the library at line %zu",
		           line + 1);
	}

	/* cuGetProcAddress asked for itself hands out the wrapper. */
	void *p = NULL;
	CUdriverProcAddressQueryResult st;
	ASSERT_CU(cuGetProcAddress_v2("cuGetProcAddress", &p, 12000, 0, &st), CUDA_SUCCESS);
	ASSERT(p && from_vramctl(p));
	/* ... and lookups through it come back through vramctl too. */
	vr_pfn_cuGetProcAddress_v2 gpa = (vr_pfn_cuGetProcAddress_v2)p;
	void *alloc = NULL;
	ASSERT_CU(gpa("cuMemAlloc", &alloc, 12000, 0, &st), CUDA_SUCCESS);
	ASSERT(alloc == (void *)cuMemAlloc_v2);

	/* The pointer handed out is capped: past the cap is refused. */
	uint64_t cap = ht_env_u64("T_CAP");
	CUdeviceptr d;
	ASSERT_CU(((vr_pfn_cuMemAlloc_v2)alloc)(&d, cap + 1), CUDA_ERROR_OUT_OF_MEMORY);

	/* 2. linked: the program's own reference is the wrapper. */
	ASSERT(from_vramctl((void *)cuMemAlloc_v2));
	ASSERT(!from_vramctl((void *)cuLaunchKernel));

	/* 3. dlopen + dlsym, versioned names, RTLD_LOCAL and libcuda.so. */
	const char *libs[] = {"libcuda.so.1", "libcuda.so"};
	int modes[] = {RTLD_NOW | RTLD_LOCAL, RTLD_LAZY | RTLD_GLOBAL};
	for (int l = 0; l < 2; l++)
		for (int m = 0; m < 2; m++) {
			void *h = dlopen(libs[l], modes[m]);
			if (!h && l == 1)
				continue; /* no development symlink on this machine */
			ASSERT(h);
			for (int i = 0; hooked[i]; i++) {
				void *s = dlsym(h, hooked[i]);
				if (s) /* the driver has it: it must be the wrapper */
					ASSERT(from_vramctl(s));
			}
			ASSERT(dlsym(h, "cuMemAlloc_v2") == (void *)cuMemAlloc_v2);
			void *k = dlsym(h, "cuLaunchKernel");
			ASSERT(k && !from_vramctl(k) && k == (void *)cuLaunchKernel);
			ASSERT(dlsym(h, "cuNoSuchFunction") == NULL);
		}

	/* 4. RTLD_DEFAULT and RTLD_NEXT from the program keep their meaning. */
	ASSERT(dlsym(RTLD_DEFAULT, "cuMemAlloc_v2") == (void *)cuMemAlloc_v2);
	ASSERT(dlsym(RTLD_DEFAULT, "cuLaunchKernel") == (void *)cuLaunchKernel);
	void *(*ip_next)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "interposer_next_puts");
	if (ip_next) {
		/* The interposer's own RTLD_NEXT finds the puts after it (libc's,
		 * or a sanitizer's), never itself. */
		void *want = expected_next("libinterposer", "puts");
		ASSERT(want != NULL);
		ASSERT(ip_next() == want);
		void *(*ip_default)(const char *) =
		    (void *(*)(const char *))dlsym(RTLD_DEFAULT, "interposer_default");
		ASSERT(ip_default("cuMemAlloc_v2") == (void *)cuMemAlloc_v2);
		/* The program's RTLD_NEXT reaches the interposer's puts. */
		ASSERT(dlsym(RTLD_NEXT, "puts") == expected_next("", "puts"));
		int *calls = dlsym(RTLD_DEFAULT, "interposer_puts_calls");
		ASSERT(calls);
		puts("interposed puts works");
		ASSERT_EQ(*calls, 1);
		/* Its constructor called the driver before cuInit: an error, no crash. */
		int *rc = dlsym(RTLD_DEFAULT, "interposer_ctor_rc");
		int *rc2 = dlsym(RTLD_DEFAULT, "interposer_ctor_info_rc");
		ASSERT(rc && rc2);
		ASSERT_EQ(*rc, CUDA_ERROR_NOT_INITIALIZED);
		ASSERT_EQ(*rc2, CUDA_ERROR_NOT_INITIALIZED);
	} else {
		ASSERT(dlsym(RTLD_NEXT, "puts") == expected_next("", "puts"));
	}
	ASSERT(dlsym(RTLD_NEXT, "cuMemAlloc_v2") == (void *)cuMemAlloc_v2);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return strcmp(argv[1], "child") == 0 ? child() : 2;

	/* The driver's own answers, without the library. */
	char ref[1024];
	snprintf(ref, sizeof ref, "%s/procaddr.ref", ht_tmp());
	FILE *out = fopen(ref, "w");
	ASSERT(out);
	ASSERT_CU(cuInit(0), CUDA_SUCCESS);
	table(out, 0);
	fclose(out);

	uint64_t cap = ht_total() / 4;
	char limit[64], pre1[2048], pre2[2048];
	snprintf(limit, sizeof limit, "VRAMCTL_LIMIT=%llu", (unsigned long long)cap);
	snprintf(pre1, sizeof pre1, "LD_PRELOAD=%s:%s/tests/hook/libinterposer.so", ht_lib(),
	         ht_build());
	snprintf(pre2, sizeof pre2, "LD_PRELOAD=%s/tests/hook/libinterposer.so:%s", ht_build(),
	         ht_lib());

	const char *alone[] = {limit, ht_kv("T_CAP", cap), NULL};
	ASSERT_EQ(ht_run("child", alone), 0);
	const char *after[] = {limit, ht_kv("T_CAP", cap), pre1, NULL};
	ASSERT_EQ(ht_run("child", after), 0);
	const char *before[] = {limit, ht_kv("T_CAP", cap), pre2, NULL};
	ASSERT_EQ(ht_run("child", before), 0);
	return 0;
}
