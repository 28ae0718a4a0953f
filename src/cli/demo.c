/*
 * demo.c - `vramctl demo`: what a cap does, in three acts, on a simulated
 * 16 GiB GPU.
 *
 * It runs a small program that behaves like a preallocating framework
 * (demo_app/demo_app.c) three times: uncapped, under `vramctl run --limit 1G`
 * and under `vramctl run --limit 1G --growth`, each time through the real
 * `vramctl run` (this same binary), so the demo shows exactly what a user
 * gets. The simulated driver is used even where a real GPU is present, so the
 * demo never takes memory from anyone; `--real` uses the system's driver.
 * The simulated card's state and the registry live in a temporary directory
 * removed at the end.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/devices.h"
#include "cli/libexec.h"
#include "cli/fs.h"
#include "cli/options.h"
#include "cli/paths.h"
#include "cli/spawn.h"
#include "common/contract.h"
#include "common/exit.h"

#define DEMO_APP "vramctl-demo-app"
#define DEMO_CAP "1G"

static void demo_usage(FILE *f)
{
	fprintf(f, "usage: vramctl demo [--real]\n"
	           "\n"
	           "Shows, in three acts, what a GPU memory cap does to a program that grabs\n"
	           "memory up front like TensorFlow or JAX: without a cap, with --limit " DEMO_CAP
	           ",\n"
	           "and with --limit " DEMO_CAP " --growth. It runs on a simulated 16 GiB GPU\n"
	           "(nothing is allocated on a real one); --real uses the system's CUDA driver\n"
	           "instead.\n");
}

static void act(int n, const char *title, const char *explain, const char *cmdline)
{
	printf("\n=== Act %d: %s ===\n%s\n$ %s\n", n, title, explain, cmdline);
	fflush(stdout);
}

int cmd_demo(int argc, char **argv)
{
	char dir[PATH_MAX], self[PATH_MAX + 16], app[PATH_MAX + 64], sim[PATH_MAX + 64];
	char tmp[PATH_MAX], path[PATH_MAX + 32];
	const char *tmpdir = getenv("TMPDIR");
	int real = 0, rc[3], bad = 0;

	static const struct option opts[] = {
	    {"real", no_argument, NULL, 'r'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *word = "";
	int c;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "+:h", opts, &word)) == 'r' || c == 'h') {
		if (c == 'h') {
			demo_usage(stdout);
			return 0;
		}
		real = 1;
	}
	if (c != -1)
		return cli_option_error("demo", c, word);
	if (optind < argc)
		return cli_usage_error("demo", "unexpected argument '%s'", argv[optind]);
	if (vr_self_dir(dir, sizeof(dir)) < 0) {
		fprintf(stderr, "vramctl: demo: cannot find its own path\n");
		return VR_EXIT_ERROR;
	}
	snprintf(self, sizeof(self), "%s/vramctl", dir);
	if (cli_find_helper(DEMO_APP, app, sizeof(app)) < 0) {
		fprintf(stderr,
		        "vramctl: demo: cannot find %s (looked in %s/libexec and "
		        "%s/../libexec/vramctl); build it with 'make'\n",
		        DEMO_APP, dir, dir);
		return VR_EXIT_ERROR;
	}
	if (!real && cli_find_libfile("sim/libcuda.so.1", sim, sizeof(sim)) < 0) {
		fprintf(stderr,
		        "vramctl: demo: cannot find the simulated driver sim/libcuda.so.1 (looked "
		        "in %s); build it with 'make', or use --real\n",
		        sim);
		return VR_EXIT_ERROR;
	}

	/* --real on a machine with no usable driver: the three acts would fail
	 * the same way, so say it once, before any. */
	if (real) {
		static struct vr_launch_dev devs[VR_MAX_DEVICES];
		char why[512];
		int n = cli_devices(devs, VR_MAX_DEVICES, why, sizeof(why));

		if (n <= 0) {
			fprintf(stderr,
			        "vramctl: demo --real: %s; 'vramctl demo' runs on the simulated "
			        "GPU, 'vramctl doctor' says what to fix\n",
			        n < 0 ? why : "the driver sees no GPU");
			return VR_EXIT_ERROR;
		}
	}

	/* A clean slate: nothing the user set may change act 1. */
	unsetenv(VR_ENV_LIMIT);
	unsetenv(VR_ENV_GROUP);
	unsetenv(VR_ENV_GROWTH);
	unsetenv("TF_FORCE_GPU_ALLOW_GROWTH");
	unsetenv("XLA_PYTHON_CLIENT_PREALLOCATE");

	snprintf(tmp, sizeof(tmp), "%s/vramctl-demo.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
	if (!mkdtemp(tmp)) {
		fprintf(stderr, "vramctl: demo: cannot create a temporary directory in %s: %s\n",
		        tmpdir && *tmpdir ? tmpdir : "/tmp", strerror(errno));
		return VR_EXIT_ERROR;
	}
	snprintf(path, sizeof(path), "%s/registry", tmp);
	mkdir(path, 0700);
	setenv(VR_ENV_REGISTRY_DIR, path, 1);

	if (real && cli_driver_is_sim()) {
		/* The loader found vramctl's simulator as libcuda.so.1 (an
		 * LD_LIBRARY_PATH or VRAMCTL_DRIVER naming sim/): it is no GPU. */
		printf("vramctl demo on the CUDA driver found (GPU 0), which is vramctl's "
		       "simulator,\nnot NVIDIA's: nothing is allocated on a real GPU.\n");
	} else if (real) {
		printf("vramctl demo on the system's CUDA driver (GPU 0): the program really "
		       "allocates GPU memory.\n");
	} else {
		const char *old = getenv("LD_LIBRARY_PATH");
		char *slash = strrchr(sim, '/');
		char ld[2 * PATH_MAX];

		snprintf(path, sizeof(path), "%s/card", tmp);
		mkdir(path, 0700);
		setenv("VRAMSIM_STATE_DIR", path, 1);
		setenv("VRAMSIM_DEVICES", "16G", 1);
		setenv("VRAMSIM_NAME", "vramctl demo GPU (simulated)", 1);
		unsetenv("CUDA_VISIBLE_DEVICES");
		setenv(VR_ENV_DRIVER, sim, 1);
		*slash = '\0';
		snprintf(ld, sizeof(ld), "%s%s%s", sim, old && *old ? ":" : "", old ? old : "");
		setenv("LD_LIBRARY_PATH", ld, 1);
		*slash = '/';
		printf("vramctl demo on a simulated 16 GiB GPU (%s).\n"
		       "Nothing is allocated on a real GPU, even if this machine has one.\n",
		       sim);
	}
	printf("The program below behaves like TensorFlow or JAX: it asks the driver how much\n"
	       "memory is free, grabs 90%% of it up front, then allocates 256 MiB at a time\n"
	       "until it is refused. Lines starting with [app] are the program's own.\n");

	{
		const char *const a1[] = {app, NULL};
		const char *const a2[] = {self, "run", "--limit", DEMO_CAP, "--", app, NULL};
		const char *const a3[] = {self,       "run", "--limit", DEMO_CAP,
		                          "--growth", "--",  app,       NULL};

		act(1, "no cap",
		    "Uncapped, the program sees the whole GPU and takes nearly all of it:\n"
		    "anyone else on this GPU is left with almost nothing.",
		    DEMO_APP);
		rc[0] = cli_spawn(a1);

		act(2, "vramctl run --limit " DEMO_CAP,
		    "Under a 1 GiB cap the program sees a 1 GiB GPU, so its 90% grab fits the\n"
		    "cap. When it asks for more, vramctl refuses with the same\n"
		    "CUDA_ERROR_OUT_OF_MEMORY a full GPU gives (frameworks recover from it),\n"
		    "and says why on stderr (the 'vramctl: denied' line). The rest of the\n"
		    "GPU stays free for others.",
		    "vramctl run --limit " DEMO_CAP " -- " DEMO_APP);
		rc[1] = cli_spawn(a2);

		act(3, "vramctl run --limit " DEMO_CAP " --growth",
		    "--growth sets the frameworks' own switches (TF_FORCE_GPU_ALLOW_GROWTH=true,\n"
		    "XLA_PYTHON_CLIENT_PREALLOCATE=false): the program grabs nothing up front\n"
		    "and grows on demand, until the cap refuses it.",
		    "vramctl run --limit " DEMO_CAP " --growth -- " DEMO_APP);
		rc[2] = cli_spawn(a3);
	}

	printf("\n=== The end ===\n");
	for (int i = 0; i < 3; i++) {
		if (rc[i] != 0) {
			printf("Act %d did not run as it should (exit status %d).\n", i + 1, rc[i]);
			bad = 1;
		}
	}
	if (!bad)
		printf("Try it on your own program:  vramctl run --limit 4G -- python train.py\n"
		       "More: man vramctl-run, and 'vramctl status' while it runs.\n");
	if (cli_remove_tree(tmp) < 0)
		fprintf(stderr, "vramctl: demo: could not remove %s: %s\n", tmp, strerror(errno));
	return bad ? VR_EXIT_ERROR : 0;
}
