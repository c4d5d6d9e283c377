/*
 * test_limits.c - integration tests of lockd's server limits: the
 * connection limit, the waiters-per-connection limit and the output cap
 * that cuts off a client that sends and never reads, while everybody else
 * goes on being served.
 *
 * Limits are set small on the command line so that each is hit in a few
 * milliseconds.  This file tests behaviour seen on the wire only; it
 * includes nothing of daemon/.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tests/integration/harness.h"

static void
test_limits_connection_over_the_maximum_gets_err_limit_and_closes(
    void **state)
{
	struct harness_server *s = harness_start("--max-connections", "2",
	    NULL);
	struct harness_conn *a = harness_connect(s);
	struct harness_conn *b = harness_connect(s);
	struct harness_conn *c;
	int64_t deadline;

	(void)state;
	/* Both accepted and counted before the third comes. */
	harness_send(a, "PING\n");
	harness_expect_line(a, "PONG");
	harness_send(b, "PING\n");
	harness_expect_line(b, "PONG");

	c = harness_connect(s);
	harness_expect_error(c, "LIMIT");
	harness_expect_eof(c, HARNESS_REPLY_TIMEOUT_MS);
	harness_send(a, "PING\n");
	harness_expect_line(a, "PONG");

	/* A slot freed is a slot to be had again. */
	harness_close(a);
	deadline = harness_now_ms() + HARNESS_REPLY_TIMEOUT_MS;
	for (;;) {
		const char *line;

		c = harness_connect(s);
		harness_send(c, "PING\n");
		line = harness_read_line(c, HARNESS_REPLY_TIMEOUT_MS);
		if (line != NULL && strcmp(line, "PONG") == 0)
			break;
		if (line == NULL || strncmp(line, "ERR LIMIT", 9) != 0)
			fail_msg("expected PONG or ERR LIMIT, got '%s'",
			    line ? line : "(nothing)");
		harness_close(c);
		if (harness_now_ms() >= deadline)
			fail_msg("a closed connection's slot was not freed");
		harness_sleep_ms(10);
	}
	harness_send(b, "PING\n");
	harness_expect_line(b, "PONG");
}

static void
test_limits_third_waiter_on_one_connection_gets_err_limit(void **state)
{
	struct harness_server *s = harness_start(
	    "--max-waiters-per-connection", "2", NULL);
	struct harness_conn *holder = harness_connect(s);
	struct harness_conn *greedy = harness_connect(s);
	struct harness_conn *other = harness_connect(s);
	struct harness_grant w1, w2;
	struct harness_status st;

	(void)state;
	harness_try(holder, "lim/1", 10000, &w1);
	harness_try(holder, "lim/2", 10000, &w2);
	harness_try(holder, "lim/3", 10000, NULL);
	harness_send(greedy, "ACQUIRE lim/1\nACQUIRE lim/2\nACQUIRE lim/3\n");
	harness_await_queue(holder, "lim/1", 1);
	harness_await_queue(holder, "lim/2", 1);
	/* Refused on arrival: it never joined the queue. */
	harness_status(holder, "lim/3", &st);
	assert_int_equal(st.queue, 0);
	/* The limit is per connection: another one may still queue. */
	harness_send(other, "ACQUIRE lim/3\n");
	harness_await_queue(holder, "lim/3", 1);

	/* The refusal is answered in request order, after the two grants. */
	harness_expect_silence(greedy, 50);
	harness_send(holder, "RELEASE lim/1 %s\nRELEASE lim/2 %s\n", w1.handle,
	    w2.handle);
	harness_expect_line(holder, "RELEASED lim/1");
	harness_expect_line(holder, "RELEASED lim/2");
	harness_expect_granted(greedy, "lim/1", NULL);
	harness_expect_granted(greedy, "lim/2", NULL);
	harness_expect_error(greedy, "LIMIT");

	/* Its waiters granted, the connection may queue again. */
	harness_send(greedy, "ACQUIRE lim/3\n");
	harness_await_queue(holder, "lim/3", 2);
}

static void
test_limits_held_locks_beyond_the_maximum_get_err_limit(void **state)
{
	struct harness_server *s = harness_start("--max-held", "2", NULL);
	struct harness_conn *a = harness_connect(s);
	struct harness_conn *b = harness_connect(s);
	struct harness_grant g;
	struct harness_status st;

	(void)state;
	harness_try(a, "held/1", 10000, &g);
	harness_try(b, "held/2", 10000, NULL);
	harness_send(a, "TRY held/3\n");
	harness_expect_error(a, "LIMIT");
	harness_send(b, "ACQUIRE held/4 wait=0\n");
	harness_expect_error(b, "LIMIT");
	harness_status(a, "held/3", &st);
	assert_false(st.held);
	/* One released, one to be had. */
	harness_send(a, "RELEASE held/1 %s\n", g.handle);
	harness_expect_line(a, "RELEASED held/1");
	harness_try(b, "held/3", 10000, NULL);
}

static void
test_limits_waiters_beyond_the_maximum_get_err_limit(void **state)
{
	struct harness_server *s = harness_start("--max-waiters", "1", NULL);
	struct harness_conn *holder = harness_connect(s);
	struct harness_conn *first = harness_connect(s);
	struct harness_conn *second = harness_connect(s);

	(void)state;
	harness_try(holder, "crowd", 10000, NULL);
	harness_send(first, "ACQUIRE crowd\n");
	harness_await_queue(holder, "crowd", 1);
	harness_send(second, "ACQUIRE crowd\n");
	harness_expect_error(second, "LIMIT");
	harness_await_queue(holder, "crowd", 1);
	harness_send(second, "PING\n");
	harness_expect_line(second, "PONG");
}

static void
test_limits_client_that_never_reads_is_cut_off_at_the_output_cap(
    void **state)
{
	struct harness_server *s = harness_start("--max-output", "65536", NULL);
	/* A small receive window, so replies pile up in lockd, not here. */
	struct harness_conn *flood = harness_connect_rcvbuf(s, 4096);
	struct harness_conn *other = harness_connect(s);
	static char chunk[5 * 13000];
	int64_t deadline, sent = 0, started;
	bool cut = false;
	size_t i;

	(void)state;
	for (i = 0; i + 5 <= sizeof(chunk); i += 5)
		memcpy(chunk + i, "HELP\n", 5);
	deadline = harness_now_ms() + 10000;
	while (!cut && harness_now_ms() < deadline) {
		ssize_t n = harness_try_send(flood, chunk, sizeof(chunk), 200);

		if (n < 0) {
			if (errno != EPIPE && errno != ECONNRESET)
				fail_msg("flood: unexpected error %s",
				    strerror(errno));
			cut = true;
			break;
		}
		sent += n;
		/* Everybody else is served all along. */
		started = harness_now_ms();
		harness_send(other, "PING\n");
		harness_expect_line(other, "PONG");
		if (harness_now_ms() - started > 2000)
			fail_msg("PING took %lld ms during the flood",
			    (long long)(harness_now_ms() - started));
	}
	if (!cut)
		fail_msg("a client that sent %lld bytes of HELP and read "
		    "nothing was not cut off", (long long)sent);
	harness_send(other, "PING\n");
	harness_expect_line(other, "PONG");
	deadline = harness_now_ms() + HARNESS_REPLY_TIMEOUT_MS;
	while (harness_stat(other, "connections") != 1 &&
	    harness_now_ms() < deadline)
		harness_sleep_ms(10);
	assert_int_equal(harness_stat(other, "connections"), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		HARNESS_TEST(
		    test_limits_connection_over_the_maximum_gets_err_limit_and_closes),
		HARNESS_TEST(
		    test_limits_third_waiter_on_one_connection_gets_err_limit),
		HARNESS_TEST(
		    test_limits_held_locks_beyond_the_maximum_get_err_limit),
		HARNESS_TEST(
		    test_limits_waiters_beyond_the_maximum_get_err_limit),
		HARNESS_TEST(
		    test_limits_client_that_never_reads_is_cut_off_at_the_output_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
