/*
 * export.c - `vramctl export`: the Prometheus formatter's output served at
 * /metrics by libmicrohttpd (one internal polling thread, so scrapes are
 * served one after another and share one NVML handle). Loopback by default.
 *
 * Idle and slow clients never starve scrapes: there is room for hundreds of
 * connections (poll or epoll, not select's 1,024 descriptors), an idle one
 * is dropped after IDLE_S seconds, and one that has not finished sending a
 * request REQUEST_S seconds after it connected or was last answered (one
 * byte now and then resets libmicrohttpd's idle timer: slow-loris) is shut
 * down by the main thread's watchdog. Clients that reopen every connection
 * closed on them never fill the slots either: when a connection opens with
 * fewer than SPARE_CONNS slots left, the one waiting longest (connected or
 * last answered) is shut down at once, so a scrape always finds a slot and
 * is answered before churning clients can push it out.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/export_priv.h"
#include "cli/options.h"
#include "cli/site.h"
#include "common/exit.h"
#include "common/siteconf.h"
#include "monitor/collect.h"
#include "monitor/format.h"

/* 9400 is dcgm-exporter's default, often running on the same GPU nodes. */
#define DEFAULT_LISTEN "127.0.0.1:9401"

#if MHD_VERSION < 0x00097002
typedef int mhd_result;
#else
typedef enum MHD_Result mhd_result;
#endif

#define IDLE_S      5u
#define REQUEST_S   5
#define MAX_CONNS   512u
#define SPARE_CONNS 32u        /* slots kept free for a new scrape */
#define WATCH_EVERY 250000000L /* ns */

/* A connection the watchdog keeps an eye on (its socket context). */
struct conn {
	struct conn *next, **prev;
	int fd;
	time_t since; /* connected, or last answered */
};

struct exporter {
	struct exp_link link; /* the collector (export_priv.c): it reads, this serves */
	pthread_mutex_t lock; /* the list; held by notify() while a socket closes */
	struct conn *conns;
	unsigned nconns, limit; /* open, and libmicrohttpd's limit */
};

/* Shuts down the connection waiting longest (the list's newest are first).
 * Called with the lock held. */
static void drop_oldest(struct exporter *x)
{
	struct conn *old = NULL;
	for (struct conn *k = x->conns; k; k = k->next)
		if (!old || k->since <= old->since)
			old = k;
	if (old)
		shutdown(old->fd, SHUT_RDWR);
}

static time_t now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

/* libmicrohttpd calls this as a connection opens and just before its socket
 * is closed, so the watchdog never touches a closed (or reused) descriptor. */
static void notify(void *cls, struct MHD_Connection *c, void **socket_context,
                   enum MHD_ConnectionNotificationCode code)
{
	struct exporter *x = cls;
	struct conn *k = *socket_context;
	pthread_mutex_lock(&x->lock);
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
		    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		k = ci ? calloc(1, sizeof(*k)) : NULL;
		if (k) {
			if (++x->nconns + SPARE_CONNS > x->limit)
				drop_oldest(x);
			k->fd = ci->connect_fd;
			k->since = now_s();
			k->next = x->conns;
			k->prev = &x->conns;
			if (x->conns)
				x->conns->prev = &k->next;
			x->conns = k;
		}
		*socket_context = k;
	} else if (k) {
		x->nconns--;
		*k->prev = k->next;
		if (k->next)
			k->next->prev = k->prev;
		free(k);
		*socket_context = NULL;
	}
	pthread_mutex_unlock(&x->lock);
}

/* Shuts down connections that took too long to send a request; libmicrohttpd
 * then sees them end and closes them. */
static void watchdog(struct exporter *x)
{
	time_t t = now_s();
	pthread_mutex_lock(&x->lock);
	for (struct conn *k = x->conns; k; k = k->next)
		if (t - k->since > REQUEST_S)
			shutdown(k->fd, SHUT_RDWR);
	pthread_mutex_unlock(&x->lock);
}

/* A request arrived whole: the connection's clock starts again. */
static void answered(struct exporter *x, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	pthread_mutex_lock(&x->lock);
	if (ci && ci->socket_context)
		((struct conn *)ci->socket_context)->since = now_s();
	pthread_mutex_unlock(&x->lock);
}

/* Room for MAX_CONNS connections if the descriptor limit allows it. */
static unsigned conn_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 64;
	if (rl.rlim_cur < MAX_CONNS + 64 && rl.rlim_max > rl.rlim_cur) {
		rl.rlim_cur = rl.rlim_max < MAX_CONNS + 64 ? rl.rlim_max : MAX_CONNS + 64;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur < 128)
		return 32;
	return rl.rlim_cur - 64 < MAX_CONNS ? (unsigned)(rl.rlim_cur - 64) : MAX_CONNS;
}

static void export_usage(FILE *f)
{
	fprintf(f,
	        "usage: vramctl export [--listen ADDR:PORT] [--registry DIR] [--hami] [--user "
	        "USER]\n"
	        "\n"
	        "Serves Prometheus metrics at http://ADDR:PORT/metrics (default %s;\n"
	        "ADDR is an IPv4 address or [IPv6]; port 0 picks a free port). Stops on\n"
	        "SIGINT or SIGTERM. Metrics are listed in vramctl-export(1). A collector\n"
	        "process keeps the capabilities the node's reads need; the server holds\n"
	        "none, and run as root it serves as USER (default nobody).\n"
	        "\n"
	        "  --user  the user the server runs as when export is started as root\n"
	        "  --hami  also serve the series of HAMi's node monitor (hami_vgpu_memory_*,\n"
	        "          vGPU_device_memory_*, ...) for pods whose processes carry\n"
	        "          VRAMCTL_POD_NAMESPACE and VRAMCTL_POD_NAME; node label from\n"
	        "          $NODE_NAME (docs/kubernetes.md)\n",
	        DEFAULT_LISTEN);
}

static mhd_result reply(struct MHD_Connection *c, unsigned status, const char *type, char *body,
                        size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", type);
	mhd_result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static mhd_result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                         const char *version, const char *upload, size_t *upload_size, void **state)
{
	struct exporter *x = cls;
	(void)version;
	(void)upload;
	(void)upload_size;
	(void)state;
	static char not_found[] = "not found: vramctl serves /metrics\n";
	/* The root answers, as exporters' do, with where the metrics are. */
	static char root[] = "vramctl export: Prometheus metrics at /metrics\n";
	answered(x, c);
	static char bad_method[] = "method not allowed\n";
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8",
		             bad_method, strlen(bad_method), MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/") == 0)
		return reply(c, MHD_HTTP_OK, "text/plain; charset=utf-8", root, strlen(root),
		             MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/metrics") != 0)
		return reply(c, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", not_found,
		             strlen(not_found), MHD_RESPMEM_PERSISTENT);

	/* The collector reads the node; this process only serves. */
	char *buf = NULL;
	size_t len = 0;
	if (exp_scrape(&x->link, &buf, &len) < 0) {
		static char oom[] = "vramctl: could not collect metrics\n";
		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain; charset=utf-8", oom,
		             strlen(oom), MHD_RESPMEM_PERSISTENT);
	}
	return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", buf, len,
	             MHD_RESPMEM_MUST_FREE);
}

/*
 * "HOST:PORT", "[ADDR6]:PORT" or ":PORT" (loopback) into host and port.
 * HOST may be a name (resolved by listen_on). Returns 0 or -EINVAL.
 */
static int parse_listen(const char *text, char *host, size_t hostlen, char *port, size_t portlen)
{
	const char *colon;
	if (text[0] == '[') {
		const char *end = strchr(text, ']');
		if (!end || end[1] != ':' || (size_t)(end - text - 1) >= hostlen)
			return -EINVAL;
		snprintf(host, hostlen, "%.*s", (int)(end - text - 1), text + 1);
		colon = end + 1;
	} else {
		colon = strrchr(text, ':');
		if (!colon || (size_t)(colon - text) >= hostlen)
			return -EINVAL;
		snprintf(host, hostlen, "%.*s", (int)(colon - text), text);
		if (!host[0])
			snprintf(host, hostlen, "127.0.0.1");
	}
	char *end;
	errno = 0;
	unsigned long p = strtoul(colon + 1, &end, 10);
	if (errno || !colon[1] || *end || p > 65535 || colon[1] == '-' || colon[1] == '+' ||
	    strlen(colon + 1) >= portlen || !host[0])
		return -EINVAL;
	snprintf(port, portlen, "%lu", p);
	return 0;
}

/*
 * A listening socket on host:port: each address the name resolves to, in
 * getaddrinfo's order, until one binds. Returns the socket with its
 * address in *ss, or -1 after one message (vramctl's: the server library
 * never gets to say its own).
 */
static int listen_on(const char *text, const char *host, const char *port,
                     struct sockaddr_storage *ss)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *res;
	int rc = getaddrinfo(host, port, &hints, &res), err = 0;
	if (rc != 0) {
		fprintf(stderr, "vramctl: export: bad --listen '%s': cannot resolve '%s': %s\n",
		        text, host, rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
		return -1;
	}
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		int one = 1, fd;
		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			err = errno;
			continue;
		}
		socklen_t sl = sizeof(*ss);
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ai->ai_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 64) == 0 &&
		    getsockname(fd, (struct sockaddr *)ss, &sl) == 0) {
			freeaddrinfo(res);
			return fd;
		}
		err = errno;
		close(fd);
	}
	freeaddrinfo(res);
	fprintf(stderr, "vramctl: export: cannot listen on %s: %s\n", text,
	        strerror(err ? err : EADDRNOTAVAIL));
	return -1;
}

/* libmicrohttpd's own messages, after it serves: with vramctl's prefix. */
static void mhd_log(void *arg, const char *fmt, va_list ap) VR_PRINTF(2, 0);

static void mhd_log(void *arg, const char *fmt, va_list ap)
{
	char msg[512];
	(void)arg;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	fprintf(stderr, "vramctl: export: %s\n", msg);
}

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"listen", required_argument, NULL, 'l'}, {"registry", required_argument, NULL, 'r'},
	    {"hami", no_argument, NULL, 'H'},         {"user", required_argument, NULL, 'u'},
	    {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
	};
	const char *listen = NULL, *registry = NULL, *user = NULL;
	int c, hami = 0;
	const char *word = "";
	optind = 1;
	while ((c = cli_getopt(argc, argv, "+:l:r:u:hH", opts, &word)) != -1) {
		switch (c) {
		case 'u':
			user = optarg;
			break;
		case 'l':
			listen = optarg;
			break;
		case 'r':
			registry = optarg;
			break;
		case 'H':
			hami = 1;
			break;
		case 'h':
			export_usage(stdout);
			return 0;
		default:
			return cli_option_error("export", c, word);
		}
	}
	if (optind < argc)
		return cli_usage_error("export", "unexpected argument '%s'", argv[optind]);
	/* Without --listen, the admin's export_listen (vramctl.conf(5)). */
	if (!listen && cli_site_check("vramctl export") < 0)
		return VR_EXIT_ERROR;
	if (!listen && !(listen = VR_SITE_TEXT_OF(vr_site_get(), export_listen)))
		listen = DEFAULT_LISTEN;
	struct sockaddr_storage ss;
	char host[256], port_text[16];
	if (parse_listen(listen, host, sizeof(host), port_text, sizeof(port_text)) < 0) {
		fprintf(stderr,
		        "vramctl: export: bad --listen '%s' (HOST:PORT, e.g. 127.0.0.1:9401, "
		        "localhost:9401 or [::1]:9401)\n",
		        listen);
		return VR_EXIT_ERROR;
	}
	int fd = listen_on(listen, host, port_text, &ss);
	if (fd < 0)
		return VR_EXIT_ERROR;
	/* The socket bound, the privileges part: the collector keeps the read
	 * capabilities, this process keeps none (export_priv.h). */
	struct exporter x = {.lock = PTHREAD_MUTEX_INITIALIZER, .limit = conn_limit()};
	struct exp_what what = {.registry_dir = registry, .hami = hami};
	what.hopts.node = getenv("NODE_NAME");
	if (exp_split(fd, user, &what, &x.link) < 0) {
		close(fd);
		return VR_EXIT_ERROR;
	}

	/* SIGINT and SIGTERM are taken with sigwait; block them before the
	 * server's thread starts so it inherits the mask. */
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, &old);

	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	struct MHD_Daemon *d =
	    /* The logger first: libmicrohttpd warns on stderr, at every start,
	     * of one given after other options. */
	    MHD_start_daemon(flags, 0, NULL, NULL, handle, &x, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
	                     NULL, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_TIMEOUT,
	                     IDLE_S, MHD_OPTION_CONNECTION_LIMIT, x.limit,
	                     MHD_OPTION_NOTIFY_CONNECTION, notify, &x, MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "vramctl: export: cannot serve on %s: %s\n", listen,
		        strerror(errno ? errno : EINVAL));
		close(fd);
		exp_close(&x.link);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return VR_EXIT_ERROR;
	}
	unsigned port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
	                                              : ((struct sockaddr_in6 *)&ss)->sin6_port);
	char addr[INET6_ADDRSTRLEN] = "";
	if (ss.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, addr, sizeof(addr));
	else
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, addr, sizeof(addr));
	printf(ss.ss_family == AF_INET ? "vramctl: serving http://%s:%u/metrics\n"
	                               : "vramctl: serving http://[%s]:%u/metrics\n",
	       addr, port);
	if (x.link.nvml_error[0])
		printf("vramctl: %s: GPU totals and uncapped processes unknown\n",
		       x.link.nvml_error);
	fflush(stdout);

	int sig = 0, gone = 0;
	for (;;) {
		struct timespec tick = {.tv_nsec = WATCH_EVERY};
		sig = sigtimedwait(&set, NULL, &tick);
		if (sig == SIGINT || sig == SIGTERM)
			break;
		/* Without its collector it could serve nothing true: it ends. */
		if ((gone = exp_collector_gone(&x.link)))
			break;
		watchdog(&x);
	}
	MHD_stop_daemon(d);
	exp_close(&x.link);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (gone)
		return VR_EXIT_ERROR;
	fprintf(stderr, "vramctl: export: stopped (%s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
	return 0;
}
