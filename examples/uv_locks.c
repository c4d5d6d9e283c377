/*
 * uv_locks.c - many locks from one libuv program, without blocking its
 * loop: pipelined TRYs on one connection, the granted leases kept alive on
 * the loop's timers, then released.
 *
 *   uv_locks [HOST [PORT [COUNT [SECONDS]]]]
 *
 * Tries COUNT locks (default 100) named examples/uv/0, 1, ... with a 1 s
 * lease, keeps those it got for SECONDS (default 2) while a timer of its
 * own stands for the program's work, releases them and prints what
 * happened.  Exits 1 when a lease was lost or lockd could not be reached.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <lockd_uv.h>

#define LEASE_MS 1000
#define COUNT_MAX 10000

struct lock {
	lockd_lease lease;
	lockd_uv_keepalive *keepalive;
	int state;                /* 0 asked, 1 held, 2 busy, 3 failed */
};

static struct lock locks[COUNT_MAX];
static int count = 100, answered, held, busy, lost, released;
static int64_t seconds = 2;
static lockd_uv_client *client;
static uv_timer_t work;

static void
on_lost(lockd_uv_keepalive *k, int err, const char *errstr, void *arg)
{
	struct lock *l = arg;

	(void)k;
	fprintf(stderr, "lost %s: %s (%s)\n", l->lease.name,
	    lockd_strerror(err), errstr);
	lost++;
}

static void
on_released(lockd_uv_client *c, int result, const lockd_reply *reply,
    void *arg)
{
	(void)reply;
	(void)arg;
	if (result == LOCKD_OK)
		released++;
	if (--held == 0)
		lockd_uv_close(c, NULL, NULL);
}

/* The work is done: stop renewing, release, close. */
static void
on_work_done(uv_timer_t *t)
{
	int i, n = held;

	uv_close((uv_handle_t *)t, NULL);
	printf("kept %d locks for %" PRId64 " s, %d lost\n", n, seconds, lost);
	for (i = 0; i < count; i++) {
		if (locks[i].state != 1)
			continue;
		lockd_uv_keepalive_stop(locks[i].keepalive);
		if (lockd_uv_release(client, &locks[i].lease, on_released,
		    &locks[i]) != LOCKD_OK)
			held--;
	}
	if (held == 0)
		lockd_uv_close(client, NULL, NULL);
}

static void
on_try(lockd_uv_client *c, int result, const lockd_reply *reply, void *arg)
{
	struct lock *l = arg;

	if (result == LOCKD_OK) {
		l->state = 1;
		l->lease = reply->lease;
		l->keepalive = lockd_uv_keepalive_start(c, &l->lease, on_lost,
		    l);
		held++;
	} else if (result == LOCKD_HELD) {
		l->state = 2;
		busy++;
	} else {
		l->state = 3;
		fprintf(stderr, "try: %s\n", lockd_uv_errstr(c));
	}
	if (++answered == count) {
		printf("held %d locks, %d busy\n", held, busy);
		uv_timer_init(uv_default_loop(), &work);
		uv_timer_start(&work, on_work_done, (uint64_t)seconds * 1000, 0);
	}
}

int
main(int argc, char **argv)
{
	lockd_options o = { 0 };
	char name[64];
	int i;

	o.host = argc > 1 ? argv[1] : "127.0.0.1";
	o.port = argc > 2 ? atoi(argv[2]) : LOCKD_DEFAULT_PORT;
	count = argc > 3 ? atoi(argv[3]) : 100;
	seconds = argc > 4 ? atoi(argv[4]) : 2;
	if (count < 1 || count > COUNT_MAX)
		count = 100;
	o.connect_timeout_ms = 5000;
	o.command_timeout_ms = 5000;

	client = lockd_uv_connect(uv_default_loop(), &o, NULL, NULL);
	if (client == NULL)
		return 1;
	/* All at once, before the connection is even made. */
	for (i = 0; i < count; i++) {
		snprintf(name, sizeof(name), "examples/uv/%d", i);
		if (lockd_uv_try(client, name, LEASE_MS, LOCKD_ONCLOSE_KEEP,
		    on_try, &locks[i]) != LOCKD_OK)
			return 1;
	}
	uv_run(uv_default_loop(), UV_RUN_DEFAULT);
	printf("released %d\n", released);
	uv_loop_close(uv_default_loop());
	return lost == 0 && released > 0 && released == count - busy ? 0 : 1;
}
