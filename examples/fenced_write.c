/*
 * fenced_write.c - why fences matter: a client that stalls past its lease
 * comes back believing it still holds the lock, and only the fence lets the
 * resource turn its write away.
 *
 * The "resource" is a toy store that remembers the highest fence it has
 * seen and rejects any write carrying a lower one, as a real store would
 * (a database column compared in the UPDATE, an object store's condition).
 *
 *   fenced_write [HOST [PORT]]
 *
 * Exits 0 when the story went as it must: the stale write is rejected.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lockd.h>

#define LOCK "examples/fenced-write"

/* The guarded resource: it keeps the highest fence any write carried. */
struct toy_store {
	uint64_t highest_fence;
	char value[64];
};

static bool
toy_store_write(struct toy_store *s, uint64_t fence, const char *value)
{
	if (fence < s->highest_fence) {
		printf("store: REJECTED \"%s\" with fence %" PRIu64
		    " (seen %" PRIu64 ")\n", value, fence, s->highest_fence);
		return false;
	}
	s->highest_fence = fence;
	snprintf(s->value, sizeof(s->value), "%s", value);
	printf("store: wrote \"%s\" with fence %" PRIu64 "\n", value, fence);
	return true;
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static lockd_context *
connect_or_die(const lockd_options *o)
{
	lockd_context *c = lockd_connect(o);

	if (c == NULL || c->err != 0) {
		fprintf(stderr, "connect: %s\n", c ? c->errstr : "no memory");
		exit(2);
	}
	return c;
}

int
main(int argc, char **argv)
{
	lockd_options o = { 0 };
	lockd_context *a, *b;
	lockd_lease la, lb;
	struct toy_store store = { 0, "" };
	int rc;

	o.host = argc > 1 ? argv[1] : "127.0.0.1";
	o.port = argc > 2 ? atoi(argv[2]) : LOCKD_DEFAULT_PORT;
	o.connect_timeout_ms = 5000;
	o.command_timeout_ms = 5000;
	a = connect_or_die(&o);
	b = connect_or_die(&o);

	/* Client A takes the lock with a short lease, writes, renews. */
	if ((rc = lockd_acquire(a, LOCK, 300, LOCKD_WAIT_FOREVER,
	    LOCKD_ONCLOSE_KEEP, &la)) != LOCKD_OK) {
		fprintf(stderr, "A: acquire: %s\n", a->errstr);
		return 1;
	}
	printf("A: granted fence %" PRIu64 "\n", la.fence);
	toy_store_write(&store, la.fence, "A's first write");
	if (lockd_renew(a, &la, 300) != LOCKD_OK) {
		fprintf(stderr, "A: renew: %s\n", a->errstr);
		return 1;
	}
	printf("A: renewed for %" PRId64 " ms\n", la.lease_ms);

	/* A stalls (a GC pause, a swapped-out page...) past its lease. */
	printf("A: stalls for 600 ms\n");
	sleep_ms(600);

	/* Meanwhile B is granted the lock, with a higher fence. */
	if (lockd_acquire(b, LOCK, 5000, 2000, LOCKD_ONCLOSE_KEEP, &lb) !=
	    LOCKD_OK) {
		fprintf(stderr, "B: acquire: %s\n", b->errstr);
		return 1;
	}
	printf("B: granted fence %" PRIu64 "\n", lb.fence);
	toy_store_write(&store, lb.fence, "B's write");

	/* A wakes up and writes, not knowing: the store says no. */
	if (toy_store_write(&store, la.fence, "A's stale write")) {
		fprintf(stderr, "the stale write went through!\n");
		return 1;
	}
	/* And lockd tells A its lease is gone. */
	rc = lockd_renew(a, &la, 300);
	printf("A: renew: %s\n", rc == LOCKD_ERR_CONFLICT ?
	    "CONFLICT, the lease is lost" : lockd_strerror(rc));
	if (rc != LOCKD_ERR_CONFLICT)
		return 1;

	if (lockd_release(b, &lb) != LOCKD_OK) {
		fprintf(stderr, "B: release: %s\n", b->errstr);
		return 1;
	}
	printf("B: released; store holds \"%s\"\n", store.value);
	lockd_free(a);
	lockd_free(b);
	return 0;
}
