/*
 * top_collector.h - `vramctl top`'s NVML collector thread (top_collector.c): NVML
 * is only ever called there.
 */
#ifndef VRAMCTL_CLI_TOP_COLLECTOR_H
#define VRAMCTL_CLI_TOP_COLLECTOR_H

#include <pthread.h>

#include "monitor/collect.h"
#include "monitor/model.h"

struct collector {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	int seq;                /* bumped at each publication */
	struct mon_model nv;    /* latest NVML half (devices, NVML rows, notes) */
	struct mon_sources src; /* the collector's own: NVML is touched by it alone */
	char nverr[256];
	double period;
	pthread_t thread;
	int running;
};

/* Starts the thread (loading NVML is its first job). Returns 0, or -1 when
 * no thread could be started (frames then show the registry alone). */
int collector_start(struct collector *c, double period);

/* A deep copy of the latest NVML half into m (empty); *seq gets the number
 * of publications so far (0: NVML has not answered yet). Returns 0 or
 * -ENOMEM. */
int collector_latest(struct collector *c, struct mon_model *m, int *seq);

/* Asks the thread to stop and detaches it: a thread stuck inside NVML is not
 * waited for (the process exits around it). */
void collector_stop(struct collector *c);

#endif /* VRAMCTL_CLI_TOP_COLLECTOR_H */
