/*
 * test_instantiate - graph memory is charged at every form of instantiation:
 * cuGraphInstantiateWithFlags, cuGraphInstantiateWithParams (and _ptsz, with
 * and without CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) and cuGraphInstantiate_v2.
 * Each counts the graph's memory nodes, refuses past the cap before the
 * driver is called (proved with VRAMSIM_FAULT: the driver's first call,
 * set to fail, is still the next one after a refusal), gives the memory
 * back at cuGraphExecDestroy, and changes no books when the driver fails.
 * The new forms are reached through cuGetProcAddress at 12000 and 13000.
 */
#include "hooktest.h"

static uint64_t cap;

static uint64_t used(void)
{
	return cap - ht_free();
}

static CUgraph graph_with(CUdevice dev, uint64_t bytes)
{
	return ct_graph_with(dev, bytes, NULL);
}

enum form { WITH_FLAGS, WITH_PARAMS, WITH_PARAMS_UPLOAD, WITH_PARAMS_PTSZ, V2, NFORMS };
static const char *const form_name[NFORMS] = {"WithFlags", "WithParams", "WithParams+upload",
                                              "WithParams_ptsz", "_v2"};

/* Set around a call the simulator fails by injection: it returns the code and
 * does nothing else, so the form's own error reporting is not filled. */
static int injected;

/* Instantiates g by one form; checks the form's own error reporting. */
static CUresult instantiate(enum form f, CUgraphExec *e, CUgraph g, CUstream s)
{
	CUDA_GRAPH_INSTANTIATE_PARAMS p;
	CUresult rc;
	CUgraphNode err = (CUgraphNode)0x1;
	char log[128] = "untouched";
	switch (f) {
	case WITH_FLAGS:
		return cuGraphInstantiateWithFlags(e, g, 0);
	case WITH_PARAMS:
	case WITH_PARAMS_UPLOAD:
	case WITH_PARAMS_PTSZ:
		p = ct_instantiate_params(
		    f == WITH_PARAMS_UPLOAD ? CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD : 0, s);
		rc = f == WITH_PARAMS_PTSZ ? cuGraphInstantiateWithParams_ptsz(e, g, &p)
		                           : cuGraphInstantiateWithParams(e, g, &p);
		if (injected)
			return rc;
		ASSERT_EQ(p.result_out, rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS
		                                           : CUDA_GRAPH_INSTANTIATE_ERROR);
		ASSERT(p.hErrNode_out == NULL);
		return rc;
	default:
		rc = cuGraphInstantiate_v2(e, g, &err, log, sizeof log);
		if (rc != CUDA_SUCCESS && !injected) {
			ASSERT(err == NULL);
			ASSERT(strcmp(log, "untouched") != 0 && strlen(log) < sizeof log);
		}
		return rc;
	}
}

/* Counted at instantiation, refused past the cap, returned at destroy. */
static int counted(void)
{
	cap = ht_env_u64("T_CAP");
	CUdevice dev = ht_ctx();
	CUstream s;
	ASSERT_CU(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	uint64_t part = cap / 4 / (2 * MiB) * (2 * MiB);
	for (int f = 0; f < NFORMS; f++) {
		fprintf(stderr, "form %s\n", form_name[f]);
		CUgraphExec e, big_e = (CUgraphExec)0x1;
		CUgraph g = graph_with(dev, part);
		ASSERT_UEQ(used(), 0); /* a node alone is not charged */
		ASSERT_CU(instantiate((enum form)f, &e, g, s), CUDA_SUCCESS);
		ASSERT_UEQ(used(), part);

		/* Past the cap: refused, nothing charged, nothing created. */
		CUgraph big = graph_with(dev, cap - part + MiB);
		ASSERT_CU(instantiate((enum form)f, &big_e, big, s), CUDA_ERROR_OUT_OF_MEMORY);
		ASSERT(big_e == (CUgraphExec)0x1);
		ASSERT_UEQ(used(), part);

		ASSERT_CU(cuGraphLaunch(e, s), CUDA_SUCCESS);
		ASSERT_UEQ(used(), part);
		ASSERT_CU(cuGraphExecDestroy(e), CUDA_SUCCESS);
		ASSERT_UEQ(used(), 0);
		/* With the room made, the big graph fits exactly. */
		ASSERT_CU(cuGraphDestroy(g), CUDA_SUCCESS);
		big = graph_with(dev, cap); /* a fresh graph: the old one's node stays */
		ASSERT_CU(instantiate((enum form)f, &big_e, big, s), CUDA_SUCCESS);
		ASSERT_UEQ(used(), cap);
		ASSERT_CU(cuGraphExecDestroy(big_e), CUDA_SUCCESS);
		ASSERT_UEQ(used(), 0);
		ASSERT_CU(cuGraphDestroy(big), CUDA_SUCCESS);
	}
	return 0;
}

/*
 * VRAMSIM_FAULT fails the first driver call of each new form. A refusal
 * first: it must not reach the driver, so the next, fitting call is the
 * driver's first and fails with the injected code, changing no books; the
 * one after that counts.
 */
static int faults(void)
{
	cap = ht_env_u64("T_CAP");
	CUdevice dev = ht_ctx();
	CUstream s;
	ASSERT_CU(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	static const struct {
		enum form f;
		CUresult code;
	} want[] = {{WITH_PARAMS_UPLOAD, CUDA_ERROR_OUT_OF_MEMORY},
	            {WITH_PARAMS_PTSZ, CUDA_ERROR_UNKNOWN},
	            {V2, CUDA_ERROR_INVALID_VALUE}};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		fprintf(stderr, "form %s\n", form_name[want[i].f]);
		CUgraphExec e;
		CUgraph big = graph_with(dev, cap + MiB);
		ASSERT_CU(instantiate(want[i].f, &e, big, s), CUDA_ERROR_OUT_OF_MEMORY);
		ASSERT_UEQ(used(), 0);
		CUgraph g = graph_with(dev, 4 * MiB);
		injected = 1;
		ASSERT_CU(instantiate(want[i].f, &e, g, s), want[i].code);
		injected = 0;
		ASSERT_UEQ(used(), 0);
		ASSERT_CU(instantiate(want[i].f, &e, g, s), CUDA_SUCCESS);
		ASSERT_UEQ(used(), 4 * MiB);
		ASSERT_CU(cuGraphExecDestroy(e), CUDA_SUCCESS);
		ASSERT_UEQ(used(), 0);
		ASSERT_CU(cuGraphDestroy(g), CUDA_SUCCESS);
		ASSERT_CU(cuGraphDestroy(big), CUDA_SUCCESS);
	}
	/* A failing exec destroy (the 4th: VRAMSIM_FAULT) keeps the charge; the
	 * next one returns it. */
	CUgraphExec e;
	CUgraph g = graph_with(dev, 4 * MiB);
	ASSERT_CU(instantiate(WITH_PARAMS, &e, g, s), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 4 * MiB);
	ASSERT_CU(cuGraphExecDestroy(e), CUDA_ERROR_INVALID_VALUE);
	ASSERT_UEQ(used(), 4 * MiB);
	ASSERT_CU(cuGraphExecDestroy(e), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 0);
	return 0;
}

/* p is vramctl's wrapper called `name`. */
static void expect_wrapper(void *p, const char *name, const char *asked, int ver, int flags)
{
	Dl_info di;
	if (!p || !dladdr(p, &di) || !di.dli_sname || strcmp(di.dli_sname, name) != 0 ||
	    !strstr(di.dli_fname, "libvramctl"))
		TEST_FAILF("cuGetProcAddress(%s, %d, %d): %s from %s, not vramctl's %s", asked, ver,
		           flags, p && dladdr(p, &di) && di.dli_sname ? di.dli_sname : "?",
		           p && dladdr(p, &di) ? di.dli_fname : "-", name);
}

/* Reached through cuGetProcAddress (both forms) at 12000 and 13000, and
 * the pointers handed out count. */
static int ways(void)
{
	cap = ht_env_u64("T_CAP");
	CUdevice dev = ht_ctx();
	static const int versions[] = {12000, 13000};
	for (int v = 0; v < 2; v++)
		for (int flags = 0; flags <= 2; flags++) {
			int ver = versions[v];
			void *p = NULL;
			CUdriverProcAddressQueryResult st = -1;
			ASSERT_CU(cuGetProcAddress_v2("cuGraphInstantiateWithParams", &p, ver,
			                              (cuuint64_t)flags, &st),
			          CUDA_SUCCESS);
			ASSERT_EQ(st, CU_GET_PROC_ADDRESS_SUCCESS);
			expect_wrapper(p,
			               flags == 2 ? "cuGraphInstantiateWithParams_ptsz"
			                          : "cuGraphInstantiateWithParams",
			               "cuGraphInstantiateWithParams", ver, flags);
			p = NULL;
			ASSERT_CU(cuGetProcAddress("cuGraphInstantiateWithParams", &p, ver,
			                           (cuuint64_t)flags),
			          CUDA_SUCCESS);
			expect_wrapper(p,
			               flags == 2 ? "cuGraphInstantiateWithParams_ptsz"
			                          : "cuGraphInstantiateWithParams",
			               "cuGraphInstantiateWithParams", ver, flags);
			p = NULL;
			ASSERT_CU(cuGetProcAddress_v2("cuGraphInstantiate", &p, ver,
			                              (cuuint64_t)flags, &st),
			          CUDA_SUCCESS);
			expect_wrapper(p, "cuGraphInstantiate_v2", "cuGraphInstantiate", ver,
			               flags);
		}

	/* The pointers handed out are the counting ones. */
	vr_pfn_cuGraphInstantiateWithParams wp = NULL;
	vr_pfn_cuGraphInstantiate_v2 v2 = NULL;
	ASSERT_CU(cuGetProcAddress_v2("cuGraphInstantiateWithParams", (void **)&wp, 12000, 0, NULL),
	          CUDA_SUCCESS);
	ASSERT_CU(cuGetProcAddress_v2("cuGraphInstantiate", (void **)&v2, 13000, 0, NULL),
	          CUDA_SUCCESS);
	CUgraph g = graph_with(dev, 8 * MiB), h = graph_with(dev, cap);
	CUgraphExec e, f;
	CUDA_GRAPH_INSTANTIATE_PARAMS p = ct_instantiate_params(0, NULL);
	ASSERT_CU(wp(&e, g, &p), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 8 * MiB);
	ASSERT_CU(v2(&f, h, NULL, NULL, 0), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_CU(cuGraphExecDestroy(e), CUDA_SUCCESS);
	ASSERT_CU(v2(&f, h, NULL, NULL, 0), CUDA_SUCCESS);
	ASSERT_UEQ(used(), cap);
	ASSERT_CU(cuGraphExecDestroy(f), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 0);
	return 0;
}

int main(int argc, char **argv)
{
	REQUIRE_SIM();
	if (argc > 1) {
		if (!strcmp(argv[1], "counted"))
			return counted();
		if (!strcmp(argv[1], "faults"))
			return faults();
		if (!strcmp(argv[1], "ways"))
			return ways();
		return 2;
	}
	uint64_t c = ht_total() / 4 / (2 * MiB) * (2 * MiB);
	const char *env[] = {ht_kv("VRAMCTL_LIMIT", c), ht_kv("T_CAP", c), NULL};
	ASSERT_EQ(ht_run("counted", env), 0);
	ASSERT_EQ(ht_err_count("counted", "vramctl: denied"), NFORMS);
	ASSERT_EQ(ht_run("ways", env), 0);
	const char *fenv[] = {ht_kv("VRAMCTL_LIMIT", c), ht_kv("T_CAP", c),
	                      "VRAMSIM_FAULT=cuGraphInstantiateWithParams:1:2,"
	                      "cuGraphInstantiateWithParams_ptsz:1:999,"
	                      "cuGraphInstantiate_v2:1:1,cuGraphExecDestroy:4:1",
	                      NULL};
	ASSERT_EQ(ht_run("faults", fenv), 0);
	return 0;
}
