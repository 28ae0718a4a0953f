/*
 * export_priv.h - `vramctl export` in two processes (privilege
 * separation): a collector that keeps the capabilities the node's reads need
 * (CAP_SYS_ADMIN to enter containers' IPC namespaces, CAP_SYS_PTRACE,
 * CAP_IPC_OWNER, CAP_DAC_READ_SEARCH, where the exporter holds them) and
 * never touches the network, and the server, which answers HTTP and holds
 * no capability at all: started as root, it becomes an unprivileged user
 * (nobody unless --user says otherwise). The server asks for each scrape
 * over a socket pair; the collector answers with the Prometheus text. A
 * flaw in the HTTP code then reaches a process that can do nothing the
 * serving user cannot.
 */
#ifndef VRAMCTL_CLI_EXPORT_PRIV_H
#define VRAMCTL_CLI_EXPORT_PRIV_H

#include <stddef.h>
#include <sys/types.h>

#include "monitor/collect.h"
#include "monitor/format.h"

/* What the collector collects: the registry directory, HAMi's series. */
struct exp_what {
	const char *registry_dir;
	int hami;
	struct mon_hami_opts hopts;
};

struct exp_link {
	int fd;               /* the server's end of the socket pair */
	pid_t pid;            /* the collector */
	char nvml_error[256]; /* "" when NVML could be opened, else why not */
};

/*
 * Forks the collector (which closes listen_fd, keeps the read capabilities
 * only and serves the server's requests until its end closes) and makes
 * this process the server: the user `user` (NULL: nobody when this process
 * is root, else itself), no capability, no_new_privs. Waits for the
 * collector's first word (NVML opened or not). Returns 0, or -1 after one
 * message (nothing left running).
 */
int exp_split(int listen_fd, const char *user, const struct exp_what *what, struct exp_link *l);

/* One scrape: the collector's Prometheus text into *buf (malloc'ed, *len
 * bytes). 0, or -1 (the collector is gone or answered nothing: *buf NULL). */
int exp_scrape(struct exp_link *l, char **buf, size_t *len);

/* 1 when the collector has ended (reaped, with a message), else 0. */
int exp_collector_gone(struct exp_link *l);

/* Ends the collector (its end closes; it exits) and reaps it. */
void exp_close(struct exp_link *l);

#endif /* VRAMCTL_CLI_EXPORT_PRIV_H */
