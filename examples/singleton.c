/*
 * singleton.c - a job that must never run twice at once (a cron job, a
 * report generator): try the lock, skip the run if someone has it, and keep
 * the lease alive in the background while working.
 *
 *   singleton [HOST [PORT [SECONDS]]]
 *
 * Prints "skipped" and exits 0 when another instance holds the lock;
 * otherwise "running", works for SECONDS (default 2) with a 1 s lease kept
 * alive by the keep-alive helper, and prints "done".  If the lease is lost
 * mid-run it stops at once and exits 1.
 */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>

#include <lockd.h>

#define LOCK "examples/singleton"
#define LEASE_MS 1000

int
main(int argc, char **argv)
{
	lockd_options o = { 0 };
	lockd_context *c;
	lockd_keepalive *k;
	lockd_lease lease;
	struct pollfd lost;
	int64_t end;
	int rc;

	o.host = argc > 1 ? argv[1] : "127.0.0.1";
	o.port = argc > 2 ? atoi(argv[2]) : LOCKD_DEFAULT_PORT;
	o.connect_timeout_ms = 5000;
	o.command_timeout_ms = 5000;
	end = lockd_now_ms() + (argc > 3 ? atoi(argv[3]) : 2) * 1000;

	c = lockd_connect(&o);
	if (c == NULL || c->err != 0) {
		fprintf(stderr, "connect: %s\n", c ? c->errstr : "no memory");
		return 2;
	}
	/* onclose=release: if this process dies, the lock is free at once. */
	rc = lockd_try(c, LOCK, LEASE_MS, LOCKD_ONCLOSE_RELEASE, &lease);
	if (rc == LOCKD_HELD) {
		printf("skipped: another instance is running\n");
		lockd_free(c);
		return 0;
	}
	if (rc != LOCKD_OK) {
		fprintf(stderr, "try: %s\n", c->errstr);
		return 2;
	}
	printf("running with fence %" PRIu64 "\n", lease.fence);
	fflush(stdout);

	/* Renewals happen on the helper's own thread and connection. */
	k = lockd_keepalive_start(&o, &lease, NULL, NULL);
	if (k == NULL || lockd_keepalive_lost(k) != 0) {
		fprintf(stderr, "keep-alive: %s\n",
		    k ? lockd_keepalive_errstr(k) : "no memory");
		return 2;
	}
	/* The work: slices of 100 ms, each after checking the lease. */
	lost.fd = lockd_keepalive_fd(k);
	lost.events = POLLIN;
	while (lockd_now_ms() < end) {
		if (poll(&lost, 1, 100) > 0) {
			fprintf(stderr, "lease lost: %s; stopping\n",
			    lockd_keepalive_errstr(k));
			lockd_keepalive_stop(k);
			return 1;
		}
	}
	lockd_keepalive_stop(k);
	if (lockd_release(c, &lease) != LOCKD_OK) {
		fprintf(stderr, "release: %s\n", c->errstr);
		return 1;
	}
	printf("done\n");
	lockd_free(c);
	return 0;
}
