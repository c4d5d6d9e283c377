/*
 * test_pipeline_kinds.c - issue 17's kinds of lock through liblockd's
 * pipeline (lockd_append_acquire_kind, lockd_append_try_kind,
 * lockd_get_reply_holders, lockd_poll_reply_holders) against a real lockd:
 * pipelined semaphore and shared grants, a misfit limit answered BADARG in
 * its place in the pipeline, a rid repeated in one pipeline granted once,
 * a pipelined STATUS's holders, limit and mode, and bad arguments refused
 * without anything buffered or sent; and against the scripted fake
 * server, the request lines put on the wire and the holders zeroed when
 * the connection breaks under a STATUS.
 *
 * Lock names are unique per test, so the tests share one daemon.
 */
#include <poll.h>
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
#include "tests/lib/harness.h"
#include "tests/lib/kinds.h"

#define TIMEOUT_MS 5000

static lockd_context *
connect_port(int port)
{
	lockd_options o;
	lockd_context *c;

	memset(&o, 0, sizeof(o));
	o.port = port;
	o.connect_timeout_ms = TIMEOUT_MS;
	o.command_timeout_ms = TIMEOUT_MS;
	c = lockd_connect(&o);
	assert_non_null(c);
	if (c->err != 0)
		fail_msg("connect to port %d: %s", port, c->errstr);
	return c;
}

/* A lockd_lock_holders with its size set and a mark in every field, so
 * that a field the library failed to write shows. */
static lockd_lock_holders
marked_holders(void)
{
	lockd_lock_holders h;

	memset(&h, 0, sizeof(h));
	h.size = sizeof(h);
	h.holders = 99;
	h.limit = 99;
	h.mode = 99;
	return h;
}

/* The next reply must have this result and command; returns its holders. */
static lockd_lock_holders
next_reply(lockd_context *c, int result, lockd_command command,
    lockd_reply *r)
{
	lockd_lock_holders h = marked_holders();
	int rc = lockd_get_reply_holders(c, r, &h);

	if (rc != result)
		fail_msg("reply %d (%s), wanted %d", rc, c->errstr, result);
	assert_int_equal(r->command, command);
	return h;
}

static void
assert_holders(const lockd_lock_holders *h, uint64_t holders,
    unsigned int limit, int mode)
{
	assert_int_equal(h->holders, holders);
	assert_int_equal(h->limit, limit);
	assert_int_equal(h->mode, mode);
}

static void
test_pipeline_kinds_semaphore_grants_and_a_misfit_in_order(void **state)
{
	lockd_context *c = connect_port(harness_shared->port);
	lockd_acquire_options now = harness_wait_options(0, LOCKD_ONCLOSE_KEEP);
	lockd_kind two = harness_kind(2, LOCKD_MODE_EXCLUSIVE);
	lockd_kind three = harness_kind(3, LOCKD_MODE_EXCLUSIVE);
	lockd_lease a, b;
	lockd_lock_holders h;
	lockd_reply r;

	(void)state;
	assert_int_equal(lockd_append_try_kind(c, "pk/sem", &now, &two, NULL),
	    LOCKD_OK);
	assert_int_equal(lockd_append_acquire_kind(c, "pk/sem", &now, &two,
	    "pk-sem-2"), LOCKD_OK);
	assert_int_equal(lockd_append_try_kind(c, "pk/sem", &now, &two, NULL),
	    LOCKD_OK);
	assert_int_equal(lockd_append_try_kind(c, "pk/sem", &now, &three,
	    NULL), LOCKD_OK);
	assert_int_equal(lockd_append_try_kind(c, "pk/sem", &now, NULL, NULL),
	    LOCKD_OK);
	assert_int_equal(lockd_append_status(c, "pk/sem"), LOCKD_OK);
	assert_int_equal(lockd_append_ping(c), LOCKD_OK);
	assert_int_equal(lockd_pending(c), 7);

	/* Two permits, then the pool is full: HELD, not an error. */
	h = next_reply(c, LOCKD_OK, LOCKD_CMD_TRY, &r);
	assert_holders(&h, 0, 0, 0);
	a = r.lease;
	next_reply(c, LOCKD_OK, LOCKD_CMD_ACQUIRE, &r);
	b = r.lease;
	assert_true(b.fence > a.fence);
	assert_string_equal(b.name, "pk/sem");
	next_reply(c, LOCKD_HELD, LOCKD_CMD_TRY, &r);
	/* A limit, or none, that does not fit the name's: BADARG in its
	 * place, and the context goes on. */
	next_reply(c, LOCKD_ERR_BADARG, LOCKD_CMD_TRY, &r);
	assert_int_equal(c->err, LOCKD_ERR_BADARG);
	h = next_reply(c, LOCKD_ERR_BADARG, LOCKD_CMD_TRY, &r);
	assert_holders(&h, 0, 0, 0);
	h = next_reply(c, LOCKD_OK, LOCKD_CMD_STATUS, &r);
	assert_holders(&h, 2, 2, LOCKD_MODE_EXCLUSIVE);
	assert_int_equal(r.status.held, 1);
	assert_int_equal(r.status.fence, b.fence);
	h = next_reply(c, LOCKD_OK, LOCKD_CMD_PING, &r);
	assert_holders(&h, 0, 0, 0);
	assert_int_equal(lockd_pending(c), 0);

	/* Released in a pipeline too; the name is then free. */
	assert_int_equal(lockd_append_release(c, &a), LOCKD_OK);
	assert_int_equal(lockd_append_release(c, &b), LOCKD_OK);
	assert_int_equal(lockd_append_status(c, "pk/sem"), LOCKD_OK);
	next_reply(c, LOCKD_OK, LOCKD_CMD_RELEASE, &r);
	next_reply(c, LOCKD_OK, LOCKD_CMD_RELEASE, &r);
	/* A free name has no limit any more: the next request sets it. */
	h = next_reply(c, LOCKD_OK, LOCKD_CMD_STATUS, &r);
	assert_int_equal(h.holders, 0);
	assert_int_equal(h.limit, 1);
	assert_int_equal(h.mode, LOCKD_MODE_EXCLUSIVE);
	assert_int_equal(r.status.held, 0);
	lockd_free(c);
}

static void
test_pipeline_kinds_readers_share_and_a_writer_is_held_off(void **state)
{
	lockd_context *c = connect_port(harness_shared->port);
	lockd_context *w = connect_port(harness_shared->port);
	lockd_acquire_options now = harness_wait_options(0, LOCKD_ONCLOSE_KEEP);
	lockd_kind shared = harness_kind(0, LOCKD_MODE_SHARED);
	lockd_kind excl = harness_kind(1, LOCKD_MODE_EXCLUSIVE);
	lockd_lease r1, r2, wl;
	lockd_lock_holders h;
	lockd_reply r;

	(void)state;
	assert_int_equal(lockd_append_try_kind(c, "pk/rw", &now, &shared,
	    NULL), LOCKD_OK);
	assert_int_equal(lockd_append_acquire_kind(c, "pk/rw", &now, &shared,
	    NULL), LOCKD_OK);
	assert_int_equal(lockd_append_status(c, "pk/rw"), LOCKD_OK);
	next_reply(c, LOCKD_OK, LOCKD_CMD_TRY, &r);
	r1 = r.lease;
	next_reply(c, LOCKD_OK, LOCKD_CMD_ACQUIRE, &r);
	r2 = r.lease;
	assert_true(r2.fence > r1.fence);
	h = next_reply(c, LOCKD_OK, LOCKD_CMD_STATUS, &r);
	assert_holders(&h, 2, 1, LOCKD_MODE_SHARED);

	/* A writer is held off by the readers, from another pipeline. */
	assert_int_equal(lockd_append_try_kind(w, "pk/rw", &now, &excl, NULL),
	    LOCKD_OK);
	assert_int_equal(lockd_append_acquire_kind(w, "pk/rw", &now, NULL,
	    NULL), LOCKD_OK);
	next_reply(w, LOCKD_HELD, LOCKD_CMD_TRY, &r);
	next_reply(w, LOCKD_ERR_WAIT_TIMEOUT, LOCKD_CMD_ACQUIRE, &r);

	/* The readers go; the writer gets it, and STATUS says exclusive. */
	assert_int_equal(lockd_append_release(c, &r1), LOCKD_OK);
	assert_int_equal(lockd_append_release(c, &r2), LOCKD_OK);
	next_reply(c, LOCKD_OK, LOCKD_CMD_RELEASE, &r);
	next_reply(c, LOCKD_OK, LOCKD_CMD_RELEASE, &r);
	assert_int_equal(lockd_append_try_kind(w, "pk/rw", &now, &excl, NULL),
	    LOCKD_OK);
	assert_int_equal(lockd_append_status(w, "pk/rw"), LOCKD_OK);
	next_reply(w, LOCKD_OK, LOCKD_CMD_TRY, &r);
	wl = r.lease;
	assert_true(wl.fence > r2.fence);
	h = next_reply(w, LOCKD_OK, LOCKD_CMD_STATUS, &r);
	assert_holders(&h, 1, 1, LOCKD_MODE_EXCLUSIVE);
	assert_int_equal(lockd_release(w, &wl), LOCKD_OK);
	lockd_free(w);
	lockd_free(c);
}

/* A rid repeated in one pipeline: the same grant twice, one holder. */
static void
test_pipeline_kinds_a_repeated_rid_is_granted_once(void **state)
{
	lockd_context *c = connect_port(harness_shared->port);
	lockd_acquire_options now = harness_wait_options(0, LOCKD_ONCLOSE_KEEP);
	lockd_kind two = harness_kind(2, LOCKD_MODE_EXCLUSIVE);
	lockd_lease first;
	lockd_lock_holders h;
	lockd_reply r;

	(void)state;
	assert_int_equal(lockd_append_acquire_kind(c, "pk/rid", &now, &two,
	    "pk-rid-1"), LOCKD_OK);
	assert_int_equal(lockd_append_try_kind(c, "pk/rid", &now, &two,
	    "pk-rid-1"), LOCKD_OK);
	assert_int_equal(lockd_append_status(c, "pk/rid"), LOCKD_OK);
	next_reply(c, LOCKD_OK, LOCKD_CMD_ACQUIRE, &r);
	first = r.lease;
	next_reply(c, LOCKD_OK, LOCKD_CMD_TRY, &r);
	assert_int_equal(r.lease.fence, first.fence);
	assert_string_equal(r.lease.handle, first.handle);
	h = next_reply(c, LOCKD_OK, LOCKD_CMD_STATUS, &r);
	assert_holders(&h, 1, 2, LOCKD_MODE_EXCLUSIVE);
	assert_int_equal(lockd_release(c, &first), LOCKD_OK);
	lockd_free(c);
}

/* The next reply by lockd_poll_reply_holders, as an event loop takes it:
 * poll the fd, then take what came; bounded by TIMEOUT_MS.  A call that
 * finds no whole reply must still write holders (zeroes). */
static int
poll_next(lockd_context *c, lockd_reply *r, lockd_lock_holders *h)
{
	int64_t deadline = harness_now_ms() + TIMEOUT_MS;
	int rc;

	for (;;) {
		struct pollfd p = { .fd = c->fd, .events = POLLIN };

		*h = marked_holders();
		rc = lockd_poll_reply_holders(c, r, h);
		if (rc != LOCKD_AGAIN || harness_now_ms() >= deadline)
			return rc;
		assert_holders(h, 0, 0, 0);
		poll(&p, 1, 100);
	}
}

static void
test_pipeline_kinds_poll_gives_a_status_its_holders(void **state)
{
	lockd_context *c = connect_port(harness_shared->port);
	lockd_acquire_options now = harness_wait_options(0, LOCKD_ONCLOSE_KEEP);
	lockd_kind three = harness_kind(3, LOCKD_MODE_EXCLUSIVE);
	lockd_lock_holders h;
	lockd_reply r;

	(void)state;
	assert_int_equal(lockd_append_try_kind(c, "pk/poll", &now, &three,
	    NULL), LOCKD_OK);
	assert_int_equal(lockd_append_status(c, "pk/poll"), LOCKD_OK);
	assert_int_equal(lockd_flush(c), LOCKD_OK);
	assert_int_equal(poll_next(c, &r, &h), LOCKD_OK);
	assert_int_equal(r.command, LOCKD_CMD_TRY);
	assert_holders(&h, 0, 0, 0);
	assert_int_equal(poll_next(c, &r, &h), LOCKD_OK);
	assert_int_equal(r.command, LOCKD_CMD_STATUS);
	assert_holders(&h, 1, 3, LOCKD_MODE_EXCLUSIVE);
	assert_int_equal(lockd_pending(c), 0);
	lockd_free(c);
}

static void
test_pipeline_kinds_bad_arguments_are_refused_unsent(void **state)
{
	lockd_context *c = connect_port(harness_shared->port);
	lockd_acquire_options now = harness_wait_options(0, LOCKD_ONCLOSE_KEEP);
	lockd_kind unsized = harness_kind(2, LOCKD_MODE_EXCLUSIVE);
	lockd_kind too_many = harness_kind(LOCKD_LIMIT_MAX + 1,
	    LOCKD_MODE_EXCLUSIVE);
	lockd_kind shared_two = harness_kind(2, LOCKD_MODE_SHARED);
	lockd_kind odd_mode = harness_kind(0, 7);
	lockd_lock_holders h = marked_holders(), small = marked_holders();
	char long_rid[80];
	lockd_reply r;

	(void)state;
	unsized.size = 0;
	memset(long_rid, 'r', sizeof(long_rid) - 1);
	long_rid[sizeof(long_rid) - 1] = '\0';
	assert_int_equal(lockd_append_try_kind(c, "pk/bad", &now, &unsized,
	    NULL), LOCKD_ERR_INVALID);
	assert_int_equal(c->err, LOCKD_ERR_INVALID);
	assert_non_null(strstr(c->errstr, "size"));
	assert_int_equal(lockd_append_acquire_kind(c, "pk/bad", &now,
	    &too_many, NULL), LOCKD_ERR_INVALID);
	assert_int_equal(lockd_append_try_kind(c, "pk/bad", &now, &shared_two,
	    NULL), LOCKD_ERR_INVALID);
	assert_int_equal(lockd_append_acquire_kind(c, "pk/bad", &now,
	    &odd_mode, NULL), LOCKD_ERR_INVALID);
	assert_int_equal(lockd_append_try_kind(c, "pk/bad", &now, NULL,
	    long_rid), LOCKD_ERR_INVALID);
	assert_int_equal(lockd_append_acquire_kind(c, "", &now, NULL, NULL),
	    LOCKD_ERR_INVALID);
	assert_int_equal(lockd_pending(c), 0);

	/* A holders struct without its size: refused, the reply stays due
	 * and comes whole to the next call. */
	assert_int_equal(lockd_append_status(c, "pk/bad"), LOCKD_OK);
	small.size = 0;
	assert_int_equal(lockd_get_reply_holders(c, &r, &small),
	    LOCKD_ERR_INVALID);
	assert_int_equal(lockd_poll_reply_holders(c, &r, &small),
	    LOCKD_ERR_INVALID);
	assert_int_equal(small.holders, 99);
	assert_int_equal(lockd_pending(c), 1);
	/* Nothing refused went out: the first reply is the STATUS's (a
	 * TRY's would be a protocol error here). */
	assert_int_equal(lockd_get_reply_holders(c, &r, &h), LOCKD_OK);
	assert_int_equal(r.command, LOCKD_CMD_STATUS);
	assert_holders(&h, 0, 1, LOCKD_MODE_EXCLUSIVE);
	assert_int_equal(lockd_pending(c), 0);
	/* No reply due: out of turn, holders zeroed; NULL holders is fine. */
	h = marked_holders();
	assert_int_equal(lockd_get_reply_holders(c, &r, &h),
	    LOCKD_ERR_INVALID);
	assert_holders(&h, 0, 0, 0);
	assert_int_equal(lockd_append_ping(c), LOCKD_OK);
	assert_int_equal(lockd_get_reply_holders(c, &r, NULL), LOCKD_OK);
	lockd_free(c);
}

/* An older caller's smaller lockd_lock_holders: only what its size
 * covers is written. */
static void
test_pipeline_kinds_an_older_holders_struct_is_written_within(void **state)
{
	lockd_context *c = connect_port(harness_shared->port);
	lockd_lock_holders h = marked_holders();
	lockd_reply r;

	(void)state;
	h.size = offsetof(lockd_lock_holders, holders) + sizeof(h.holders);
	assert_int_equal(lockd_append_status(c, "pk/old"), LOCKD_OK);
	assert_int_equal(lockd_get_reply_holders(c, &r, &h), LOCKD_OK);
	assert_int_equal(h.holders, 0);
	assert_int_equal(h.limit, 99);
	assert_int_equal(h.mode, 99);
	lockd_free(c);
}

static void
test_pipeline_kinds_on_the_wire(void **state)
{
	static const char *const replies[] = {
		"HELD a\r\n", "HELD a\r\n", "ERR TIMEOUT x\r\n",
		"STATUS a held=1 fence=7 ttl=900 queue=0 holders=2 limit=3\r\n",
	};
	static const char expected[] =
	    "TRY a limit=3\n"
	    "TRY a rid=r-1 mode=shared\n"
	    "ACQUIRE a wait=0 limit=65535\n"
	    "STATUS a\n";
	struct harness_fake f;
	lockd_context *c;
	lockd_acquire_options now;
	lockd_kind k;
	lockd_lock_holders h = marked_holders();
	lockd_reply r;
	char got[1024];

	(void)state;
	memset(&now, 0, sizeof(now));
	assert_int_equal(harness_fake_start(&f, replies, 4), 0);
	c = connect_port(f.port);
	k = harness_kind(3, LOCKD_MODE_EXCLUSIVE);
	assert_int_equal(lockd_append_try_kind(c, "a", &now, &k, NULL),
	    LOCKD_OK);
	k = harness_kind(1, LOCKD_MODE_SHARED);
	assert_int_equal(lockd_append_try_kind(c, "a", &now, &k, "r-1"),
	    LOCKD_OK);
	k = harness_kind(LOCKD_LIMIT_MAX, LOCKD_MODE_EXCLUSIVE);
	assert_int_equal(lockd_append_acquire_kind(c, "a", &now, &k, NULL),
	    LOCKD_OK);
	assert_int_equal(lockd_append_status(c, "a"), LOCKD_OK);
	assert_int_equal(lockd_get_reply(c, &r), LOCKD_HELD);
	assert_int_equal(lockd_get_reply(c, &r), LOCKD_HELD);
	assert_int_equal(lockd_get_reply(c, &r), LOCKD_ERR_WAIT_TIMEOUT);
	assert_int_equal(lockd_get_reply_holders(c, &r, &h), LOCKD_OK);
	assert_holders(&h, 2, 3, LOCKD_MODE_EXCLUSIVE);
	assert_int_equal(r.status.fence, 7);
	lockd_free(c);
	assert_true(harness_read_file(f.received, got, sizeof(got)));
	assert_string_equal(got, expected);
	harness_fake_stop(&f);
}

/* A connection that breaks under a pipelined STATUS: the error, and the
 * holders zeroed rather than left as they were. */
static void
test_pipeline_kinds_a_broken_connection_zeroes_the_holders(void **state)
{
	static const char *const replies[] = { NULL };
	struct harness_fake f;
	lockd_context *c;
	lockd_lock_holders h = marked_holders();
	lockd_reply r;

	(void)state;
	assert_int_equal(harness_fake_start(&f, replies, 1), 0);
	c = connect_port(f.port);
	assert_int_equal(lockd_append_status(c, "a"), LOCKD_OK);
	assert_int_equal(lockd_get_reply_holders(c, &r, &h), LOCKD_ERR_EOF);
	assert_holders(&h, 0, 0, 0);
	h = marked_holders();
	assert_int_equal(lockd_poll_reply_holders(c, &r, &h), LOCKD_ERR_EOF);
	assert_holders(&h, 0, 0, 0);
	lockd_free(c);
	harness_fake_stop(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    test_pipeline_kinds_semaphore_grants_and_a_misfit_in_order),
		cmocka_unit_test(
		    test_pipeline_kinds_readers_share_and_a_writer_is_held_off),
		cmocka_unit_test(
		    test_pipeline_kinds_a_repeated_rid_is_granted_once),
		cmocka_unit_test(
		    test_pipeline_kinds_poll_gives_a_status_its_holders),
		cmocka_unit_test(
		    test_pipeline_kinds_bad_arguments_are_refused_unsent),
		cmocka_unit_test(
		    test_pipeline_kinds_an_older_holders_struct_is_written_within),
		cmocka_unit_test(test_pipeline_kinds_on_the_wire),
		cmocka_unit_test(
		    test_pipeline_kinds_a_broken_connection_zeroes_the_holders),
	};

	harness_begin();
	return cmocka_run_group_tests(tests, harness_shared_setup,
	    harness_shared_teardown);
}
