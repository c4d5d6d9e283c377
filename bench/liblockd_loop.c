/*
 * liblockd_loop.c - the C side of bench/go-vs-c.sh: STATUS requests to one
 * lockd through liblockd, one at a time (lockd_status), then pipelined
 * (DEPTH lockd_append_status, then as many lockd_get_reply), each phase
 * bounded by a count and by time.  Prints the lines lockd-gobench prints,
 * with "c" for "go".  Talks only to the address it is given.
 *
 *   liblockd_loop HOST PORT [N] [DEPTH]
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "client/lockd.h"

#define PHASE_LIMIT_MS 20000

static double
cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void
report(const char *phase, long done, int64_t start, double cpu0)
{
	double s = (lockd_now_ms() - start) / 1000.0;

	printf("c %s requests=%ld seconds=%.3f per_second=%.0f "
	    "cpu_seconds=%.3f\n", phase, done, s, s > 0 ? done / s : 0.0,
	    cpu_seconds() - cpu0);
}

int
main(int argc, char **argv)
{
	lockd_options o = { 0 };
	lockd_lock_status st;
	lockd_reply reply;
	lockd_context *c;
	long n, depth, done, i;
	int64_t start;
	double cpu0;
	char phase[32];

	if (argc < 3) {
		fprintf(stderr, "usage: liblockd_loop HOST PORT [N] [DEPTH]\n");
		return 64;
	}
	o.host = argv[1];
	o.port = atoi(argv[2]);
	o.connect_timeout_ms = o.command_timeout_ms = 5000;
	n = argc > 3 ? atol(argv[3]) : 20000;
	depth = argc > 4 ? atol(argv[4]) : 64;
	if ((c = lockd_connect(&o)) == NULL || c->err != 0) {
		fprintf(stderr, "connect: %s\n", c != NULL ? c->errstr : "oom");
		return 69;
	}

	start = lockd_now_ms();
	cpu0 = cpu_seconds();
	for (done = 0; done < n && lockd_now_ms() - start < PHASE_LIMIT_MS;
	    done++) {
		if (lockd_status(c, "bench/c", &st) != LOCKD_OK) {
			fprintf(stderr, "status: %s\n", c->errstr);
			return 70;
		}
	}
	report("one-at-a-time", done, start, cpu0);

	start = lockd_now_ms();
	cpu0 = cpu_seconds();
	for (done = 0; done < n && lockd_now_ms() - start < PHASE_LIMIT_MS;
	    done += depth) {
		for (i = 0; i < depth; i++)
			if (lockd_append_status(c, "bench/c") != LOCKD_OK)
				return 70;
		for (i = 0; i < depth; i++)
			if (lockd_get_reply(c, &reply) != LOCKD_OK) {
				fprintf(stderr, "reply: %s\n", c->errstr);
				return 70;
			}
	}
	snprintf(phase, sizeof(phase), "pipelined-%ld", depth);
	report(phase, done, start, cpu0);
	lockd_free(c);
	return 0;
}
