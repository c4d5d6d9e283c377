/*
 * fifo_queue.c - lockd's queue is first come, first served: processes that
 * wait for a lock get it in the order they asked, and every grant carries a
 * fence higher than the one before.
 *
 * The parent holds the lock, starts N children one at a time (each waits
 * for the lock; the next starts only once STATUS shows it queued), then
 * lets go.  Each child reports its number and fence through a pipe when
 * granted, holds the lock briefly, and releases it.
 *
 *   fifo_queue [HOST [PORT [N]]]
 *
 * Exits 0 when the grants came in order with strictly increasing fences.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lockd.h>

#define LOCK "examples/fifo"
#define MAX_CHILDREN 16

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* A child: its own connection (never the parent's), wait, report, go. */
static int
child(const lockd_options *o, int number, int report)
{
	lockd_context *c = lockd_connect(o);
	lockd_lease lease;
	char line[64];
	int n;

	if (c == NULL || c->err != 0)
		return 2;
	if (lockd_acquire(c, LOCK, 5000, LOCKD_WAIT_FOREVER,
	    LOCKD_ONCLOSE_RELEASE, &lease) != LOCKD_OK) {
		fprintf(stderr, "child %d: %s\n", number, c->errstr);
		return 1;
	}
	n = snprintf(line, sizeof(line), "%d %" PRIu64 "\n", number,
	    lease.fence);
	if (write(report, line, (size_t)n) != n)
		return 1;
	sleep_ms(20);
	lockd_release(c, &lease);
	lockd_free(c);
	return 0;
}

int
main(int argc, char **argv)
{
	lockd_options o = { 0 };
	lockd_context *c;
	lockd_lease held;
	lockd_lock_status st;
	uint64_t last_fence;
	pid_t pids[MAX_CHILDREN];
	int n, i, fds[2], number, status, ok = 1;
	unsigned long long fence;
	FILE *reports;

	o.host = argc > 1 ? argv[1] : "127.0.0.1";
	o.port = argc > 2 ? atoi(argv[2]) : LOCKD_DEFAULT_PORT;
	o.connect_timeout_ms = 5000;
	o.command_timeout_ms = 5000;
	n = argc > 3 ? atoi(argv[3]) : 5;
	if (n < 1 || n > MAX_CHILDREN)
		n = 5;

	c = lockd_connect(&o);
	if (c == NULL || c->err != 0 || pipe(fds) != 0) {
		fprintf(stderr, "connect: %s\n", c ? c->errstr : "no memory");
		return 2;
	}
	if (lockd_acquire(c, LOCK, 10000, 5000, LOCKD_ONCLOSE_RELEASE,
	    &held) != LOCKD_OK) {
		fprintf(stderr, "parent: %s\n", c->errstr);
		return 1;
	}
	printf("parent holds fence %" PRIu64 "\n", held.fence);
	last_fence = held.fence;
	for (i = 0; i < n; i++) {
		fflush(stdout);
		if ((pids[i] = fork()) == 0) {
			close(fds[0]);
			_exit(child(&o, i, fds[1]));
		}
		/* Queue order is the order the ACQUIREs arrived: wait for it. */
		do {
			sleep_ms(5);
			if (lockd_status(c, LOCK, &st) != LOCKD_OK)
				return 1;
		} while (st.queue < (uint64_t)i + 1);
	}
	close(fds[1]);
	lockd_release(c, &held);

	reports = fdopen(fds[0], "r");
	for (i = 0; i < n; i++) {
		if (fscanf(reports, "%d %llu", &number, &fence) != 2) {
			fprintf(stderr, "a child did not report\n");
			return 1;
		}
		printf("child %d granted fence %llu\n", number, fence);
		if (number != i || fence <= last_fence)
			ok = 0;
		last_fence = fence;
	}
	for (i = 0; i < n; i++)
		if (waitpid(pids[i], &status, 0) != pids[i] ||
		    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			ok = 0;
	printf(ok ? "FIFO order and increasing fences: ok\n" :
	    "out of order!\n");
	lockd_free(c);
	return ok ? 0 : 1;
}
