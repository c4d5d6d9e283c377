/*
 * test_uv.c - liblockd's libuv client (lockd_uv.h) against a real lockd:
 * every call with its callback, a long pipeline answered in order, the busy,
 * timeout and conflict results, closing with requests outstanding, the
 * keep-alive across a kill -9 and restart of lockd and its loss when lockd
 * stays down, and 1,000 locks in flight when lockd is killed and restarted.
 *
 * Every loop is bounded: harness_uv_run_until() (tests/lib/uv_loop.c) runs
 * the loop until a condition holds or a time limit passes (a guard timer
 * wakes it), and fails the test then.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client/lockd.h"
#include "client/lockd_uv.h"
#include "tests/lib/harness.h"
#include "tests/lib/uv_loop.h"

#define TIMEOUT_MS 5000
#define MANY 1000

static lockd_options
options_for(int port, int64_t command_timeout_ms)
{
	lockd_options o;

	memset(&o, 0, sizeof(o));
	o.host = "127.0.0.1";
	o.port = port;
	o.connect_timeout_ms = TIMEOUT_MS;
	o.command_timeout_ms = command_timeout_ms;
	return o;
}

static lockd_uv_client *
connect_uv(int port, int64_t command_timeout_ms)
{
	lockd_options o = options_for(port, command_timeout_ms);

	return harness_uv_connect(&o, TIMEOUT_MS);
}

static bool
all_done(const struct harness_uv_result *r, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!r[i].done)
			return false;
	return true;
}

/* Runs the loop until every result is in. */
static void
wait_all(struct harness_uv_result *r, size_t n)
{
	int64_t end = harness_now_ms() + TIMEOUT_MS;
	bool done = false;

	while (!(done = all_done(r, n)) && harness_now_ms() < end)
		harness_uv_run_for(10);
	assert_true(done);
}

/* ---- every call ------------------------------------------------------- */

static void
test_uv_every_call_answers_through_its_callback(void **state)
{
	lockd_uv_client *c = connect_uv(harness_shared->port, TIMEOUT_MS);
	struct harness_uv_result acq = { 0 }, r[6];
	lockd_lease lease;

	(void)state;
	memset(r, 0, sizeof(r));
	assert_int_equal(lockd_uv_acquire(c, "uv/every", 5000, 1000,
	    LOCKD_ONCLOSE_KEEP, harness_uv_on_reply, &acq), LOCKD_OK);
	assert_int_equal(lockd_uv_pending(c), 1);
	assert_true(harness_uv_run_until(&acq.done, TIMEOUT_MS));
	assert_int_equal(acq.result, LOCKD_OK);
	assert_int_equal(acq.reply.command, LOCKD_CMD_ACQUIRE);
	assert_string_equal(acq.reply.lease.name, "uv/every");
	assert_true(acq.reply.lease.fence > 0);
	assert_int_equal(acq.reply.lease.lease_ms, 5000);
	assert_true(acq.reply.lease.deadline_ms > lockd_now_ms());
	lease = acq.reply.lease;

	/* The rest pipelined at once, answered in order. */
	assert_int_equal(lockd_uv_try(c, "uv/every", 5000, 0,
	    harness_uv_on_reply, &r[0]), LOCKD_OK);
	assert_int_equal(lockd_uv_status(c, "uv/every", harness_uv_on_reply,
	    &r[1]), LOCKD_OK);
	assert_int_equal(lockd_uv_renew(c, &lease, 8000, harness_uv_on_reply,
	    &r[2]), LOCKD_OK);
	assert_int_equal(lockd_uv_release(c, &lease, harness_uv_on_reply,
	    &r[3]), LOCKD_OK);
	assert_int_equal(lockd_uv_release(c, &lease, harness_uv_on_reply,
	    &r[4]), LOCKD_OK);
	assert_int_equal(lockd_uv_ping(c, harness_uv_on_reply, &r[5]),
	    LOCKD_OK);
	assert_int_equal(lockd_uv_pending(c), 6);
	wait_all(r, 6);
	assert_int_equal(r[0].result, LOCKD_HELD);
	assert_int_equal(r[1].result, LOCKD_OK);
	assert_int_equal(r[1].reply.status.held, 1);
	assert_int_equal(r[1].reply.status.fence, lease.fence);
	assert_int_equal(r[2].result, LOCKD_OK);
	assert_int_equal(r[2].reply.lease.fence, lease.fence);
	assert_string_equal(r[2].reply.lease.handle, lease.handle);
	assert_int_equal(r[2].reply.lease.lease_ms, 8000);
	assert_int_equal(r[3].result, LOCKD_OK);
	assert_int_equal(r[4].result, LOCKD_NOTHELD);
	assert_int_equal(r[5].result, LOCKD_OK);
	assert_int_equal(r[5].reply.command, LOCKD_CMD_PING);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(r[i].calls, 1);
		if (i > 0)
			assert_true(r[i].order == r[i - 1].order + 1);
	}
	assert_int_equal(lockd_uv_pending(c), 0);
	harness_uv_close(c);
}

static void
test_uv_a_failed_call_never_calls_back(void **state)
{
	lockd_uv_client *c = connect_uv(harness_shared->port, TIMEOUT_MS);
	struct harness_uv_result r = { 0 };
	lockd_lease bad;

	(void)state;
	memset(&bad, 0, sizeof(bad));
	assert_int_equal(lockd_uv_acquire(c, "has space", 0, 0, 0,
	    harness_uv_on_reply, &r), LOCKD_ERR_INVALID);
	assert_non_null(strstr(lockd_uv_errstr(c), "name"));
	assert_int_equal(lockd_uv_try(c, "uv/x", -5, 0, harness_uv_on_reply,
	    &r), LOCKD_ERR_INVALID);
	assert_int_equal(lockd_uv_renew(c, &bad, 0, harness_uv_on_reply, &r),
	    LOCKD_ERR_INVALID);
	assert_int_equal(lockd_uv_release(c, NULL, harness_uv_on_reply, &r),
	    LOCKD_ERR_INVALID);
	assert_int_equal(lockd_uv_ping(c, NULL, NULL), LOCKD_ERR_INVALID);
	assert_int_equal(lockd_uv_pending(c), 0);
	harness_uv_run_for(50);
	assert_int_equal(r.calls, 0);
	assert_int_equal(lockd_uv_err(c), 0);
	harness_uv_close(c);
}

static void
test_uv_connect_over_a_unix_socket_and_to_a_closed_port(void **state)
{
	lockd_options o;
	struct harness_uv_result r = { 0 }, ping = { 0 }, failed = { 0 };
	lockd_uv_client *c;

	(void)state;
	memset(&o, 0, sizeof(o));
	o.unix_path = harness_shared->unix_path;
	c = lockd_uv_connect(&harness_uv_loop, &o, harness_uv_on_connect, &r);
	assert_non_null(c);
	/* Issued before the connection is made: sent once it is. */
	assert_int_equal(lockd_uv_ping(c, harness_uv_on_reply, &ping),
	    LOCKD_OK);
	assert_false(r.done);   /* never called from lockd_uv_connect */
	assert_true(harness_uv_run_until(&ping.done, TIMEOUT_MS));
	assert_int_equal(r.result, LOCKD_OK);
	assert_int_equal(ping.result, LOCKD_OK);
	harness_uv_close(c);

	/* A port nobody listens on: IO to connect and to the request. */
	memset(&r, 0, sizeof(r));
	o = options_for(harness_closed_port(), TIMEOUT_MS);
	o.host = "localhost";   /* resolved with uv_getaddrinfo */
	c = lockd_uv_connect(&harness_uv_loop, &o, harness_uv_on_connect, &r);
	assert_non_null(c);
	assert_int_equal(lockd_uv_ping(c, harness_uv_on_reply, &failed),
	    LOCKD_OK);
	assert_true(harness_uv_run_until(&failed.done, TIMEOUT_MS));
	assert_int_equal(r.result, LOCKD_ERR_IO);
	assert_int_equal(failed.result, LOCKD_ERR_IO);
	assert_int_equal(lockd_uv_err(c), LOCKD_ERR_IO);
	assert_non_null(strstr(lockd_uv_errstr(c), "connect to localhost"));
	/* Dead: later calls fail at once, without a callback. */
	assert_int_equal(lockd_uv_ping(c, harness_uv_on_reply, &failed),
	    LOCKD_ERR_IO);
	assert_int_equal(failed.calls, 1);
	harness_uv_close(c);
	o.port = 70000;
	assert_null(lockd_uv_connect(&harness_uv_loop, &o,
	    harness_uv_on_connect, &r));
}

/* ---- pipelining ------------------------------------------------------- */

static void
test_uv_a_long_pipeline_is_answered_in_order(void **state)
{
	lockd_uv_client *c = connect_uv(harness_shared->port, TIMEOUT_MS);
	struct harness_uv_result *r = calloc(2 * MANY, sizeof(*r));
	char name[64];
	int i, first;

	(void)state;
	assert_non_null(r);
	first = harness_uv_callbacks;
	for (i = 0; i < MANY; i++) {
		snprintf(name, sizeof(name), "uv/pipe/%d", i);
		assert_int_equal(lockd_uv_try(c, name, 10000, 0,
		    harness_uv_on_reply, &r[i]), LOCKD_OK);
	}
	assert_int_equal(lockd_uv_pending(c), MANY);
	wait_all(r, MANY);
	for (i = 0; i < MANY; i++) {
		snprintf(name, sizeof(name), "uv/pipe/%d", i);
		assert_int_equal(r[i].result, LOCKD_OK);
		assert_int_equal(r[i].calls, 1);
		assert_int_equal(r[i].order, first + i);
		assert_string_equal(r[i].reply.lease.name, name);
		assert_int_equal(lockd_uv_release(c, &r[i].reply.lease,
		    harness_uv_on_reply, &r[MANY + i]), LOCKD_OK);
	}
	wait_all(r + MANY, MANY);
	for (i = 0; i < MANY; i++)
		assert_int_equal(r[MANY + i].result, LOCKD_OK);
	free(r);
	harness_uv_close(c);
}

/* ---- busy, timeout, conflict ------------------------------------------ */

static void
test_uv_busy_wait_timeout_and_conflict_results(void **state)
{
	lockd_uv_client *a = connect_uv(harness_shared->port, TIMEOUT_MS);
	lockd_uv_client *b = connect_uv(harness_shared->port, 300);
	struct harness_uv_result held = { 0 }, r[4];
	lockd_lease forged;
	char handle[LOCKD_HANDLE_SIZE];
	int64_t t0;

	(void)state;
	memset(r, 0, sizeof(r));
	assert_int_equal(lockd_uv_acquire(a, "uv/busy", 5000, 0, 0,
	    harness_uv_on_reply, &held), LOCKD_OK);
	assert_true(harness_uv_run_until(&held.done, TIMEOUT_MS));
	assert_int_equal(held.result, LOCKD_OK);

	t0 = harness_now_ms();
	assert_int_equal(lockd_uv_try(b, "uv/busy", 0, 0, harness_uv_on_reply,
	    &r[0]), LOCKD_OK);
	/* A wait longer than the command timeout is not cut short by it. */
	assert_int_equal(lockd_uv_acquire(b, "uv/busy", 0, 500, 0,
	    harness_uv_on_reply, &r[1]), LOCKD_OK);
	snprintf(handle, sizeof(handle), "%llu-0123456789abcdef",
	    (unsigned long long)held.reply.lease.fence);
	assert_int_equal(lockd_lease_init(&forged, "uv/busy", handle),
	    LOCKD_OK);
	assert_int_equal(lockd_uv_renew(b, &forged, 1000, harness_uv_on_reply,
	    &r[2]), LOCKD_OK);
	wait_all(r, 3);
	assert_int_equal(lockd_uv_release(a, &held.reply.lease,
	    harness_uv_on_reply, &r[3]), LOCKD_OK);
	wait_all(r, 4);
	assert_int_equal(r[0].result, LOCKD_HELD);
	assert_int_equal(r[1].result, LOCKD_ERR_WAIT_TIMEOUT);
	assert_true(harness_now_ms() - t0 >= 500 - HARNESS_CLOCK_SLACK_MS);
	assert_int_equal(r[2].result, LOCKD_ERR_CONFLICT);
	assert_non_null(strstr(lockd_uv_errstr(b), "CONFLICT"));
	assert_int_equal(r[3].result, LOCKD_OK);
	/* Server errors leave the client usable. */
	assert_int_equal(lockd_uv_err(b), 0);
	harness_uv_close(a);
	harness_uv_close(b);
}

static void
test_uv_command_timeout_kills_the_client(void **state)
{
	struct harness_server *s = harness_start(NULL);
	lockd_uv_client *c = connect_uv(s->port, 200);
	struct harness_uv_result r[3];
	int64_t t0;

	(void)state;
	memset(r, 0, sizeof(r));
	harness_server_pause(s);
	t0 = harness_now_ms();
	for (int i = 0; i < 3; i++)
		assert_int_equal(lockd_uv_ping(c, harness_uv_on_reply, &r[i]),
		    LOCKD_OK);
	wait_all(r, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(r[i].result, LOCKD_ERR_TIMEOUT);
	assert_true(harness_now_ms() - t0 >= 200 - HARNESS_CLOCK_SLACK_MS);
	assert_true(harness_now_ms() - t0 < 2000);
	assert_int_equal(lockd_uv_err(c), LOCKD_ERR_TIMEOUT);
	harness_server_resume(s);
	harness_uv_close(c);
	harness_server_destroy(s);
}

/* ---- closing ---------------------------------------------------------- */

static int closed_order;

static void
on_reply_closes(lockd_uv_client *client, int result, const lockd_reply *reply,
    void *arg)
{
	harness_uv_on_reply(client, result, reply, arg);
	/* Closing again from a callback is harmless; requests fail at once. */
	lockd_uv_close(client, NULL, NULL);
	assert_int_equal(lockd_uv_ping(client, harness_uv_on_reply, arg),
	    LOCKD_ERR_CLOSED);
	closed_order++;
}

static void
test_uv_close_with_requests_outstanding(void **state)
{
	struct harness_server *s = harness_start(NULL);
	lockd_uv_client *c = connect_uv(s->port, 0);
	struct harness_uv_result r[50];
	bool closed = false;
	int i;

	(void)state;
	memset(r, 0, sizeof(r));
	harness_server_pause(s);     /* no reply can come */
	for (i = 0; i < 50; i++)
		assert_int_equal(lockd_uv_acquire(c, "uv/close", 1000,
		    LOCKD_WAIT_FOREVER, 0,
		    i == 0 ? on_reply_closes : harness_uv_on_reply, &r[i]),
		    LOCKD_OK);
	harness_uv_run_for(50);
	closed_order = 0;
	lockd_uv_close(c, harness_uv_on_closed, &closed);
	/* Every callback ran, in order, before lockd_uv_close returned. */
	for (i = 0; i < 50; i++) {
		assert_int_equal(r[i].calls, 1);
		assert_int_equal(r[i].result, LOCKD_ERR_CLOSED);
		assert_int_equal(r[i].reply.command, LOCKD_CMD_ACQUIRE);
	}
	assert_int_equal(closed_order, 1);
	assert_false(closed);        /* freed from the loop, later */
	assert_true(harness_uv_run_until(&closed, TIMEOUT_MS));
	harness_server_resume(s);
	harness_server_destroy(s);
}

/* ---- keep-alive ------------------------------------------------------- */

struct lost {
	bool done;
	int calls;
	int err;
	char errstr[LOCKD_ERRSTR_SIZE];
	int64_t at;
};

static void
on_lost(lockd_uv_keepalive *k, int err, const char *errstr, void *arg)
{
	struct lost *l = arg;

	(void)k;
	l->done = true;
	l->calls++;
	l->err = err;
	snprintf(l->errstr, sizeof(l->errstr), "%s", errstr);
	l->at = lockd_now_ms();
}

/* STATUS of name through the blocking client, a second client. */
static lockd_lock_status
status_of(int port, const char *name)
{
	lockd_options o = options_for(port, TIMEOUT_MS);
	lockd_context *c = lockd_connect(&o);
	lockd_lock_status st;

	assert_non_null(c);
	assert_int_equal(c->err, 0);
	assert_int_equal(lockd_status(c, name, &st), LOCKD_OK);
	lockd_free(c);
	return st;
}

static void
test_uv_keepalive_rides_out_a_lockd_restart(void **state)
{
	struct harness_server *s = harness_start(NULL);
	lockd_uv_client *c = connect_uv(s->port, TIMEOUT_MS);
	struct harness_uv_result acq = { 0 };
	struct lost lost = { 0 };
	lockd_uv_keepalive *k;
	lockd_lease now;
	lockd_lock_status st;
	int64_t restarted;

	(void)state;
	assert_int_equal(lockd_uv_acquire(c, "uv/keep", 3000, 0,
	    LOCKD_ONCLOSE_KEEP, harness_uv_on_reply, &acq), LOCKD_OK);
	assert_true(harness_uv_run_until(&acq.done, TIMEOUT_MS));
	assert_int_equal(acq.result, LOCKD_OK);
	k = lockd_uv_keepalive_start(c, &acq.reply.lease, on_lost, &lost);
	assert_non_null(k);
	harness_uv_run_for(1200);               /* one renewal at 1 s */
	lockd_uv_keepalive_lease(k, &now);
	assert_true(now.deadline_ms > acq.reply.lease.deadline_ms);

	harness_server_kill(s);      /* kill -9 */
	harness_uv_run_for(300);                /* renewals fail meanwhile */
	harness_server_restart(s);
	restarted = lockd_now_ms();
	harness_uv_run_for(3500);       /* past the lease: renewed since */
	assert_int_equal(lost.calls, 0);
	assert_int_equal(lockd_uv_keepalive_lost(k), 0);
	lockd_uv_keepalive_lease(k, &now);
	assert_int_equal(now.fence, acq.reply.lease.fence);
	assert_true(now.deadline_ms - now.lease_ms >= restarted);
	st = status_of(s->port, "uv/keep");
	assert_int_equal(st.held, 1);
	assert_int_equal(st.fence, acq.reply.lease.fence);
	lockd_uv_keepalive_stop(k);
	harness_uv_close(c);
	harness_server_destroy(s);
}

static void
test_uv_keepalive_reports_a_loss_when_lockd_stays_down(void **state)
{
	struct harness_server *s = harness_start(NULL);
	lockd_uv_client *c = connect_uv(s->port, TIMEOUT_MS);
	struct harness_uv_result acq = { 0 };
	struct lost lost = { 0 };
	lockd_uv_keepalive *k;
	lockd_lease last;

	(void)state;
	assert_int_equal(lockd_uv_acquire(c, "uv/lose", 1000, 0, 0,
	    harness_uv_on_reply, &acq), LOCKD_OK);
	assert_true(harness_uv_run_until(&acq.done, TIMEOUT_MS));
	k = lockd_uv_keepalive_start(c, &acq.reply.lease, on_lost, &lost);
	assert_non_null(k);
	harness_uv_run_for(400);
	harness_server_kill(s);
	assert_true(harness_uv_run_until(&lost.done, 3000));
	assert_int_equal(lost.calls, 1);
	assert_true(lockd_error_is_fatal(lost.err));
	assert_int_equal(lockd_uv_keepalive_lost(k), lost.err);
	assert_non_null(strstr(lost.errstr, "renewal failed"));
	/* Reported before the lease could end, with a tenth to spare. */
	lockd_uv_keepalive_lease(k, &last);
	assert_true(lost.at <= last.deadline_ms - last.lease_ms / 10 + 20);
	harness_uv_run_for(200);
	assert_int_equal(lost.calls, 1);
	lockd_uv_keepalive_stop(k);
	harness_uv_close(c);
	harness_server_destroy(s);
}

static void
test_uv_keepalive_reports_a_refused_renewal(void **state)
{
	lockd_uv_client *c = connect_uv(harness_shared->port, TIMEOUT_MS);
	struct harness_uv_result acq = { 0 }, rel = { 0 };
	struct lost lost = { 0 };
	lockd_uv_keepalive *k;

	(void)state;
	assert_int_equal(lockd_uv_acquire(c, "uv/refused", 600, 0, 0,
	    harness_uv_on_reply, &acq), LOCKD_OK);
	assert_true(harness_uv_run_until(&acq.done, TIMEOUT_MS));
	assert_int_equal(lockd_uv_release(c, &acq.reply.lease,
	    harness_uv_on_reply, &rel), LOCKD_OK);
	assert_true(harness_uv_run_until(&rel.done, TIMEOUT_MS));
	k = lockd_uv_keepalive_start(c, &acq.reply.lease, on_lost, &lost);
	assert_non_null(k);
	assert_true(harness_uv_run_until(&lost.done, 2000));
	assert_int_equal(lost.err, LOCKD_ERR_CONFLICT);
	lockd_uv_keepalive_stop(k);
	/* A keep-alive still running is stopped by closing its client. */
	k = lockd_uv_keepalive_start(c, &acq.reply.lease, on_lost, &lost);
	assert_non_null(k);
	harness_uv_close(c);
}

/* ---- 1,000 locks in flight through a kill -9 -------------------------- */

struct flight {
	struct harness_uv_result r;
	lockd_uv_keepalive *k;
	struct lost lost;
};

static struct flight *flights;
static struct harness_server *flight_server;
static int flight_granted, flight_failed, flight_answered;

static void
on_flight(lockd_uv_client *client, int result, const lockd_reply *reply,
    void *arg)
{
	struct flight *f = arg;

	harness_uv_on_reply(client, result, reply, &f->r);
	flight_answered++;
	if (result == LOCKD_OK) {
		flight_granted++;
		f->k = lockd_uv_keepalive_start(client, &reply->lease, on_lost,
		    &f->lost);
		assert_non_null(f->k);
	} else {
		flight_failed++;
	}
	/* Half-way through the replies, lockd dies under the program. */
	if (flight_answered == MANY / 2)
		harness_server_kill(flight_server);
}

static void
test_uv_a_thousand_locks_in_flight_survive_a_lockd_kill(void **state)
{
	lockd_uv_client *c;
	lockd_options o;
	lockd_context *check;
	lockd_reply st;
	char name[64];
	int i, held = 0, lost = 0;
	int64_t t0, restarted;

	(void)state;
	flight_server = harness_start(NULL);
	c = connect_uv(flight_server->port, TIMEOUT_MS);
	flights = calloc(MANY, sizeof(*flights));
	assert_non_null(flights);
	flight_granted = flight_failed = flight_answered = 0;
	t0 = harness_now_ms();
	for (i = 0; i < MANY; i++) {
		snprintf(name, sizeof(name), "uv/flight/%d", i);
		if (i % 2 == 0)
			assert_int_equal(lockd_uv_acquire(c, name, 4000, 0,
			    LOCKD_ONCLOSE_KEEP, on_flight, &flights[i]),
			    LOCKD_OK);
		else
			assert_int_equal(lockd_uv_try(c, name, 4000,
			    LOCKD_ONCLOSE_KEEP, on_flight, &flights[i]),
			    LOCKD_OK);
	}
	/* Every request is answered: granted, or failed with the kill. */
	for (int64_t end = harness_now_ms() + TIMEOUT_MS;
	    flight_answered < MANY && harness_now_ms() < end;)
		harness_uv_run_for(10);
	assert_int_equal(flight_answered, MANY);
	assert_int_equal(flight_granted + flight_failed, MANY);
	assert_true(flight_granted >= MANY / 2);
	for (i = 0; i < MANY; i++) {
		assert_int_equal(flights[i].r.calls, 1);
		if (flights[i].r.result != LOCKD_OK)
			assert_true(lockd_error_is_fatal(
			    flights[i].r.result));
	}
	harness_uv_run_for(200);                /* down for a while */
	harness_server_restart(flight_server);
	restarted = lockd_now_ms();
	harness_uv_run_for(3000);       /* beyond two renewals of every lease */

	o = options_for(flight_server->port, TIMEOUT_MS);
	check = lockd_connect(&o);
	assert_non_null(check);
	assert_int_equal(check->err, 0);
	for (i = 0; i < MANY; i++) {
		snprintf(name, sizeof(name), "uv/flight/%d", i);
		assert_int_equal(lockd_append_status(check, name), LOCKD_OK);
	}
	for (i = 0; i < MANY; i++) {
		struct flight *f = &flights[i];
		lockd_lease l;

		assert_int_equal(lockd_get_reply(check, &st), LOCKD_OK);
		if (f->r.result != LOCKD_OK)
			continue;
		assert_true(f->lost.calls <= 1);
		if (f->lost.calls == 1) {
			lost++;
			continue;
		}
		/* Still ours: same fence, renewed over the new connection,
		 * and a second client sees it held. */
		lockd_uv_keepalive_lease(f->k, &l);
		assert_int_equal(l.fence, f->r.reply.lease.fence);
		assert_true(l.deadline_ms - l.lease_ms >= restarted);
		assert_int_equal(st.status.held, 1);
		assert_int_equal(st.status.fence, f->r.reply.lease.fence);
		held++;
	}
	lockd_free(check);
	print_message("in flight: %d granted (%d held after the restart, "
	    "%d reported lost), %d failed with the kill, %lld ms\n",
	    flight_granted, held, lost, flight_failed,
	    (long long)(harness_now_ms() - t0));
	assert_int_equal(held + lost, flight_granted);
	assert_int_equal(lost, 0);
	for (i = 0; i < MANY; i++)
		if (flights[i].k != NULL)
			lockd_uv_keepalive_stop(flights[i].k);
	harness_uv_close(c);
	free(flights);
	harness_server_destroy(flight_server);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    test_uv_every_call_answers_through_its_callback),
		cmocka_unit_test(test_uv_a_failed_call_never_calls_back),
		cmocka_unit_test(
		    test_uv_connect_over_a_unix_socket_and_to_a_closed_port),
		cmocka_unit_test(test_uv_a_long_pipeline_is_answered_in_order),
		cmocka_unit_test(
		    test_uv_busy_wait_timeout_and_conflict_results),
		cmocka_unit_test(test_uv_command_timeout_kills_the_client),
		cmocka_unit_test(test_uv_close_with_requests_outstanding),
		cmocka_unit_test(test_uv_keepalive_rides_out_a_lockd_restart),
		cmocka_unit_test(
		    test_uv_keepalive_reports_a_loss_when_lockd_stays_down),
		cmocka_unit_test(test_uv_keepalive_reports_a_refused_renewal),
		cmocka_unit_test(
		    test_uv_a_thousand_locks_in_flight_survive_a_lockd_kill),
	};

	harness_begin();
	return cmocka_run_group_tests(tests, harness_uv_shared_setup,
	    harness_uv_shared_teardown);
}
