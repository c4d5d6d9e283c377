/*
 * test_uv_kinds.c - issue 17's kinds of lock through the libuv client
 * (lockd_uv_acquire_kind, lockd_uv_try_kind) against a real lockd: a
 * semaphore of 2 with three clients, readers together, a writer waiting
 * behind readers and a later reader waiting behind the writer, BADARG for
 * a request whose limit disagrees with the name's, kinds the wire cannot
 * carry refused unsent, and a request sent again after a fail-over with
 * the same rid, limit and mode.
 *
 * The loop and the recording callbacks are tests/lib/uv_loop.c's; every
 * wait is bounded by harness_uv_run_until().
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
#include "tests/lib/kinds.h"
#include "tests/lib/uv_loop.h"

#define TIMEOUT_MS 5000

static lockd_options
options_for(const char *host, int port)
{
	lockd_options o;

	memset(&o, 0, sizeof(o));
	o.host = host;
	o.port = port;
	o.connect_timeout_ms = TIMEOUT_MS;
	o.command_timeout_ms = TIMEOUT_MS;
	return o;
}

static lockd_uv_client *
connect_uv(void)
{
	lockd_options o = options_for("127.0.0.1", harness_shared->port);

	return harness_uv_connect(&o, TIMEOUT_MS);
}

/* A blocking context on the shared lockd, to look at what it holds. */
static lockd_context *
connect_blocking(void)
{
	lockd_options o = options_for("127.0.0.1", harness_shared->port);
	lockd_context *c = lockd_connect(&o);

	assert_non_null(c);
	if (c->err != 0)
		fail_msg("connect: %s", c->errstr);
	return c;
}

static lockd_acquire_options
wait_for(int64_t wait_ms)
{
	return harness_wait_options(wait_ms, LOCKD_ONCLOSE_RELEASE);
}

/* Issues call (which must be accepted) and runs the loop to its reply. */
#define RUN(r, call) do {                                               \
	memset(&(r), 0, sizeof(r));                                     \
	assert_int_equal((call), LOCKD_OK);                             \
	assert_true(harness_uv_run_until(&(r).done, TIMEOUT_MS));       \
} while (0)

/* What a lockd_uv_status_holders callback got. */
struct status_seen {
	bool done;
	int result;
	lockd_lock_info info;
	lockd_lock_holders holders;
};

static void
on_status(lockd_uv_client *client, int result, const lockd_lock_info *info,
    const lockd_lock_holders *holders, void *arg)
{
	struct status_seen *s = arg;

	(void)client;
	assert_non_null(info);
	assert_non_null(holders);
	assert_true(holders->size >= sizeof(lockd_lock_holders));
	s->done = true;
	s->result = result;
	s->info = *info;
	s->holders = *holders;
}

/* lockd_uv_status_holders on c for name, run to its answer. */
static struct status_seen
status_of(lockd_uv_client *c, const char *name)
{
	struct status_seen s;

	memset(&s, 0, sizeof(s));
	assert_int_equal(lockd_uv_status_holders(c, name, on_status, &s),
	    LOCKD_OK);
	assert_true(harness_uv_run_until(&s.done, TIMEOUT_MS));
	return s;
}

/* Releases what r was granted, on c, and runs the loop until it is. */
static void
release_grant(lockd_uv_client *c, const struct harness_uv_result *r)
{
	struct harness_uv_result rel;

	RUN(rel, lockd_uv_release(c, &r->reply.lease, harness_uv_on_reply,
	    &rel));
	assert_int_equal(rel.result, LOCKD_OK);
}

/* Runs the loop until name has `queue` waiters, as STATUS says. */
static void
wait_for_queue(lockd_context *check, const char *name, uint64_t queue)
{
	lockd_lock_status st;
	int i;

	for (i = 0; i < 500; i++) {
		assert_int_equal(lockd_status(check, name, &st), LOCKD_OK);
		if (st.queue == queue)
			return;
		harness_uv_run_for(10);
	}
	fail_msg("%s never had %llu waiters", name,
	    (unsigned long long)queue);
}

/* A semaphore of 2 and three clients: two hold, the third waits for a
 * permit and has it, with a fence of its own, when one is given back. */
static void
test_uv_kinds_a_semaphore_of_two_lets_two_of_three_hold(void **state)
{
	lockd_uv_client *c[3] = { connect_uv(), connect_uv(), connect_uv() };
	lockd_kind two = harness_kind(2, LOCKD_MODE_EXCLUSIVE);
	lockd_acquire_options now = wait_for(0), forever =
	    wait_for(LOCKD_WAIT_FOREVER);
	struct harness_uv_result r[3], busy;
	struct status_seen seen;
	lockd_context *check = connect_blocking();
	int i;

	(void)state;
	RUN(r[0], lockd_uv_try_kind(c[0], "uvk/sem", &now, &two, NULL,
	    harness_uv_on_reply, &r[0]));
	RUN(r[1], lockd_uv_acquire_kind(c[1], "uvk/sem", &forever, &two, NULL,
	    harness_uv_on_reply, &r[1]));
	assert_int_equal(r[0].result, LOCKD_OK);
	assert_int_equal(r[1].result, LOCKD_OK);
	assert_true(r[1].reply.lease.fence > r[0].reply.lease.fence);
	seen = status_of(c[2], "uvk/sem");
	assert_int_equal(seen.result, LOCKD_OK);
	assert_int_equal(seen.info.held, 1);
	assert_int_equal(seen.info.fence, r[1].reply.lease.fence);
	assert_int_equal(seen.holders.holders, 2);
	assert_int_equal(seen.holders.limit, 2);
	assert_int_equal(seen.holders.mode, LOCKD_MODE_EXCLUSIVE);

	/* The third: busy to a TRY, queued by an ACQUIRE. */
	RUN(busy, lockd_uv_try_kind(c[2], "uvk/sem", &now, &two, NULL,
	    harness_uv_on_reply, &busy));
	assert_int_equal(busy.result, LOCKD_HELD);
	memset(&r[2], 0, sizeof(r[2]));
	assert_int_equal(lockd_uv_acquire_kind(c[2], "uvk/sem", &forever,
	    &two, NULL, harness_uv_on_reply, &r[2]), LOCKD_OK);
	wait_for_queue(check, "uvk/sem", 1);
	assert_false(r[2].done);
	release_grant(c[0], &r[0]);
	assert_true(harness_uv_run_until(&r[2].done, TIMEOUT_MS));
	assert_int_equal(r[2].result, LOCKD_OK);
	assert_true(r[2].reply.lease.fence > r[1].reply.lease.fence);
	for (i = 0; i < 3; i++)
		harness_uv_close(c[i]);
	lockd_free(check);
}

/*
 * Readers hold together; a writer waits behind them, and a reader that
 * comes after the writer waits behind it (no reader overtakes a waiting
 * writer); each gets its turn, in that order, as the others leave.
 */
static void
test_uv_kinds_readers_share_and_a_writer_waits_its_turn(void **state)
{
	lockd_uv_client *r1 = connect_uv(), *r2 = connect_uv(),
	    *w = connect_uv(), *late = connect_uv();
	lockd_kind shared = harness_kind(0, LOCKD_MODE_SHARED);
	lockd_acquire_options now = wait_for(0), forever =
	    wait_for(LOCKD_WAIT_FOREVER);
	struct harness_uv_result a, b, wr, lr;
	struct status_seen seen;
	lockd_context *check = connect_blocking();

	(void)state;
	RUN(a, lockd_uv_try_kind(r1, "uvk/rw", &now, &shared, NULL,
	    harness_uv_on_reply, &a));
	RUN(b, lockd_uv_acquire_kind(r2, "uvk/rw", &forever, &shared, NULL,
	    harness_uv_on_reply, &b));
	assert_int_equal(a.result, LOCKD_OK);
	assert_int_equal(b.result, LOCKD_OK);
	seen = status_of(w, "uvk/rw");
	assert_int_equal(seen.holders.holders, 2);
	assert_int_equal(seen.holders.limit, 1);
	assert_int_equal(seen.holders.mode, LOCKD_MODE_SHARED);

	memset(&wr, 0, sizeof(wr));
	assert_int_equal(lockd_uv_acquire_kind(w, "uvk/rw", &forever, NULL,
	    NULL, harness_uv_on_reply, &wr), LOCKD_OK);
	wait_for_queue(check, "uvk/rw", 1);
	memset(&lr, 0, sizeof(lr));
	assert_int_equal(lockd_uv_acquire_kind(late, "uvk/rw", &forever,
	    &shared, NULL, harness_uv_on_reply, &lr), LOCKD_OK);
	wait_for_queue(check, "uvk/rw", 2);
	assert_false(wr.done);
	assert_false(lr.done);

	/* One reader leaves: the writer still waits for the other. */
	release_grant(r1, &a);
	harness_uv_run_for(50);
	assert_false(wr.done);
	release_grant(r2, &b);
	assert_true(harness_uv_run_until(&wr.done, TIMEOUT_MS));
	assert_int_equal(wr.result, LOCKD_OK);
	assert_true(wr.reply.lease.fence > b.reply.lease.fence);
	harness_uv_run_for(50);
	assert_false(lr.done);
	release_grant(w, &wr);
	assert_true(harness_uv_run_until(&lr.done, TIMEOUT_MS));
	assert_int_equal(lr.result, LOCKD_OK);
	assert_true(lr.reply.lease.fence > wr.reply.lease.fence);
	harness_uv_close(r1);
	harness_uv_close(r2);
	harness_uv_close(w);
	harness_uv_close(late);
	lockd_free(check);
}

/* The server's BADARG for a limit the name's holders disagree with; the
 * library's INVALID, unsent, for a kind the wire cannot carry. */
static void
test_uv_kinds_a_mismatch_is_badarg_and_a_bad_kind_invalid(void **state)
{
	lockd_uv_client *c = connect_uv();
	lockd_kind three = harness_kind(3, LOCKD_MODE_EXCLUSIVE);
	lockd_kind two = harness_kind(2, LOCKD_MODE_EXCLUSIVE);
	lockd_kind shared = harness_kind(0, LOCKD_MODE_SHARED);
	lockd_kind k;
	lockd_acquire_options now = wait_for(0);
	struct harness_uv_result held, r, unused;
	struct status_seen late;

	(void)state;
	RUN(held, lockd_uv_try_kind(c, "uvk/bad", &now, &three, NULL,
	    harness_uv_on_reply, &held));
	assert_int_equal(held.result, LOCKD_OK);
	RUN(r, lockd_uv_try_kind(c, "uvk/bad", &now, &two, NULL,
	    harness_uv_on_reply, &r));
	assert_int_equal(r.result, LOCKD_ERR_BADARG);
	assert_non_null(strstr(lockd_uv_errstr(c), "limit"));
	RUN(r, lockd_uv_acquire_kind(c, "uvk/bad", &now, NULL, NULL,
	    harness_uv_on_reply, &r));
	assert_int_equal(r.result, LOCKD_ERR_BADARG);
	RUN(r, lockd_uv_try_kind(c, "uvk/bad", &now, &shared, NULL,
	    harness_uv_on_reply, &r));
	assert_int_equal(r.result, LOCKD_ERR_BADARG);

	memset(&unused, 0, sizeof(unused));
	k = harness_kind(2, LOCKD_MODE_SHARED);
	assert_int_equal(lockd_uv_try_kind(c, "uvk/bad", &now, &k, NULL,
	    harness_uv_on_reply, &unused), LOCKD_ERR_INVALID);
	k = harness_kind(LOCKD_LIMIT_MAX + 1, LOCKD_MODE_EXCLUSIVE);
	assert_int_equal(lockd_uv_acquire_kind(c, "uvk/bad", &now, &k, NULL,
	    harness_uv_on_reply, &unused), LOCKD_ERR_INVALID);
	k = harness_kind(3, LOCKD_MODE_EXCLUSIVE);
	k.size = 0;
	assert_int_equal(lockd_uv_try_kind(c, "uvk/bad", &now, &k, NULL,
	    harness_uv_on_reply, &unused), LOCKD_ERR_INVALID);
	assert_int_equal(lockd_uv_pending(c), 0);
	harness_uv_run_for(20);
	assert_false(unused.done);
	assert_int_equal(lockd_uv_status_holders(c, "has space", on_status,
	    &late), LOCKD_ERR_INVALID);
	assert_int_equal(lockd_uv_status_holders(c, "uvk/bad", NULL, NULL),
	    LOCKD_ERR_INVALID);
	/* The client lives on: its permit is still there to release. */
	release_grant(c, &held);
	/* A status still due when the client closes: CLOSED, and zeroes. */
	memset(&late, 0, sizeof(late));
	assert_int_equal(lockd_uv_status_holders(c, "uvk/bad", on_status,
	    &late), LOCKD_OK);
	harness_uv_close(c);
	assert_true(late.done);
	assert_int_equal(late.result, LOCKD_ERR_CLOSED);
	assert_int_equal(late.holders.holders, 0);
	assert_int_equal(late.holders.limit, 1);
}

/* The rid= of a request line ("" when none), into rid. */
static void
rid_of(const char *line, char *rid, size_t size)
{
	const char *p = strstr(line, " rid=");
	size_t n = 0;

	rid[0] = '\0';
	if (p == NULL)
		return;
	p += 5;
	while (p[n] != '\0' && p[n] != ' ' && p[n] != '\n' && n + 1 < size)
		n++;
	memcpy(rid, p, n);
	rid[n] = '\0';
}

/*
 * A connection that breaks after the requests went out: the client fails
 * over to the next endpoint and sends them again, each with the rid the
 * library made for it and its limit or mode.  The first endpoint is a fake
 * that records what it got and hangs up; the second is the real lockd,
 * whose grants then carry that limit and mode, and whose answer to the
 * same rid is the same grant.
 */
static void
test_uv_kinds_fail_over_sends_again_with_rid_limit_and_mode(void **state)
{
	static const char *const replies[] = { NULL };
	struct harness_fake f;
	char hosts[64], got[1024], rid[80];
	lockd_options o;
	lockd_uv_client *c, *again;
	struct harness_uv_result sem, rw, rep;
	lockd_kind two = harness_kind(2, LOCKD_MODE_EXCLUSIVE);
	lockd_kind shared = harness_kind(0, LOCKD_MODE_SHARED);
	lockd_acquire_options now = wait_for(0);
	lockd_context *check = connect_blocking();
	lockd_lock_holders h = { .size = sizeof(h) };

	(void)state;
	assert_int_equal(harness_fake_start(&f, replies, 1), 0);
	snprintf(hosts, sizeof(hosts), "127.0.0.1:%d,127.0.0.1:%d", f.port,
	    harness_shared->port);
	o = options_for(hosts, 0);
	c = harness_uv_connect(&o, TIMEOUT_MS);

	memset(&sem, 0, sizeof(sem));
	memset(&rw, 0, sizeof(rw));
	assert_int_equal(lockd_uv_acquire_kind(c, "uvk/fo/sem", &now, &two,
	    NULL, harness_uv_on_reply, &sem), LOCKD_OK);
	assert_int_equal(lockd_uv_try_kind(c, "uvk/fo/rw", &now, &shared,
	    NULL, harness_uv_on_reply, &rw), LOCKD_OK);
	assert_true(harness_uv_run_until(&rw.done, TIMEOUT_MS));
	assert_int_equal(sem.calls, 1);
	assert_int_equal(sem.result, LOCKD_OK);
	assert_int_equal(rw.calls, 1);
	assert_int_equal(rw.result, LOCKD_OK);

	/* What the fake got before it hung up: the first request. */
	assert_true(harness_read_file(f.received, got, sizeof(got)));
	assert_memory_equal(got, "ACQUIRE uvk/fo/sem ", 19);
	assert_non_null(strstr(got, " limit=2"));
	rid_of(got, rid, sizeof(rid));
	assert_int_equal(strlen(rid), 32);

	/* lockd has them with their kinds. */
	assert_int_equal(lockd_status_holders(check, "uvk/fo/sem", NULL, &h),
	    LOCKD_OK);
	assert_int_equal(h.holders, 1);
	assert_int_equal(h.limit, 2);
	assert_int_equal(lockd_status_holders(check, "uvk/fo/rw", NULL, &h),
	    LOCKD_OK);
	assert_int_equal(h.holders, 1);
	assert_int_equal(h.mode, LOCKD_MODE_SHARED);
	/* And the rid the fake saw is the grant's: a repeat finds it. */
	again = connect_uv();
	RUN(rep, lockd_uv_acquire_kind(again, "uvk/fo/sem", &now, &two, rid,
	    harness_uv_on_reply, &rep));
	assert_int_equal(rep.result, LOCKD_OK);
	assert_int_equal(rep.reply.lease.fence, sem.reply.lease.fence);
	assert_string_equal(rep.reply.lease.handle, sem.reply.lease.handle);
	assert_int_equal(lockd_status_holders(check, "uvk/fo/sem", NULL, &h),
	    LOCKD_OK);
	assert_int_equal(h.holders, 1);

	harness_uv_close(again);
	harness_uv_close(c);
	harness_fake_stop(&f);
	lockd_free(check);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    test_uv_kinds_a_semaphore_of_two_lets_two_of_three_hold),
		cmocka_unit_test(
		    test_uv_kinds_readers_share_and_a_writer_waits_its_turn),
		cmocka_unit_test(
		    test_uv_kinds_a_mismatch_is_badarg_and_a_bad_kind_invalid),
		cmocka_unit_test(
		    test_uv_kinds_fail_over_sends_again_with_rid_limit_and_mode),
	};

	harness_begin();
	return cmocka_run_group_tests(tests, harness_uv_shared_setup,
	    harness_uv_shared_teardown);
}
