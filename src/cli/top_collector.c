/*
 * top_collector.c - the thread that reads NVML for `vramctl top` (see
 * top_collector.h). NVML calls can block for a long time on a sick driver, so only
 * this thread makes them: it reads NVML at most once a second and publishes
 * its half of the model under a mutex; the screen never waits for it, not
 * even for its first answer.
 */
#include <errno.h>
#include <time.h>

#include "cli/top_collector.h"

static void *collector_main(void *arg)
{
	struct collector *c = arg;
	mon_nvml_open(NULL, &c->src.nvml, c->nverr, sizeof(c->nverr));
	c->src.nvml_error = c->nverr;
	pthread_mutex_lock(&c->mu);
	while (!c->stop) {
		pthread_mutex_unlock(&c->mu);
		struct mon_model m = {0};
		int rc = mon_collect_nvml(&c->src, &m);
		pthread_mutex_lock(&c->mu);
		if (rc == 0) {
			mon_model_clear(&c->nv);
			c->nv = m;
			c->seq++;
		}
		/* At most once a second, whatever the screen's refresh. */
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		double p = c->period < 1.0 ? 1.0 : c->period;
		dl.tv_sec += (time_t)p;
		dl.tv_nsec += (long)((p - (double)(time_t)p) * 1e9);
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
		while (!c->stop && pthread_cond_timedwait(&c->cv, &c->mu, &dl) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

int collector_start(struct collector *c, double period)
{
	c->period = period;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	c->running = pthread_create(&c->thread, NULL, collector_main, c) == 0;
	return c->running ? 0 : -1;
}

int collector_latest(struct collector *c, struct mon_model *m, int *seq)
{
	pthread_mutex_lock(&c->mu);
	int rc = mon_model_copy(m, &c->nv);
	*seq = c->seq;
	pthread_mutex_unlock(&c->mu);
	return rc;
}

void collector_stop(struct collector *c)
{
	if (!c->running)
		return;
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	/* A collector stuck inside NVML is not waited for: exiting ends it. */
	pthread_detach(c->thread);
	c->running = 0;
}
