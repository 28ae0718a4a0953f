/*
 * hold.h - the handshake of the tests' helper programs (tests/monitor/lib.bash,
 * start_holder): "ready N PID" on stdout once set up, then hold whatever
 * they hold until their stdin closes. Tests synchronise on that line and on
 * closing the pipe, never on time.
 */
#ifndef VRAMCTL_TESTS_HOLD_H
#define VRAMCTL_TESTS_HOLD_H

#include <stdio.h>
#include <unistd.h>

static inline void hold_ready(int n)
{
	printf("ready %d %d\n", n, (int)getpid());
	fflush(stdout);
	char buf[64];
	while (read(0, buf, sizeof(buf)) > 0)
		;
}

#endif /* VRAMCTL_TESTS_HOLD_H */
