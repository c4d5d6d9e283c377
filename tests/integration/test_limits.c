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
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/lib/harness.h"

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
		harness_drop(c);
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

/* ---- --max-held against --map-size ------------------------------------ */

#define PROMPT_EXIT_MS (2000 * harness_slow())
#define SMALL_HELD 100
#define SMALL_HELD_ARG "100"
#define CHURN_ROUNDS 6

/*
 * Runs lockd with --max-held max_held --map-size map_size, which must be
 * refused at once with one line naming both flags; returns the map size
 * the line says is needed.
 */
static unsigned long long
refused_map(const char *max_held, const char *map_size)
{
	struct harness_run_result r;
	unsigned long long need = 0;
	const char *at;
	char want[64];

	harness_run_lockd(&r, PROMPT_EXIT_MS, "--listen", "127.0.0.1:0",
	    "--max-held", max_held, "--map-size", map_size, NULL);
	if (r.timed_out)
		fail_msg("lockd started with --max-held %s --map-size %s",
		    max_held, map_size);
	assert_int_equal(r.exit_code, 2);
	snprintf(want, sizeof(want), "lockd: --max-held %s needs --map-size ",
	    max_held);
	if (strncmp(r.err, want, strlen(want)) != 0 ||
	    strchr(r.err, '\n') != r.err + strlen(r.err) - 1)
		fail_msg("not one line naming both flags: '%s'", r.err);
	at = r.err + strlen(want);
	if (sscanf(at, "%llu", &need) != 1 || need <= strtoull(map_size,
	    NULL, 10))
		fail_msg("no size above %s in '%s'", map_size, r.err);
	return need;
}

static void
test_limits_max_held_that_cannot_fit_the_map_size_is_refused_at_start(
    void **state)
{
	struct harness_server *s;
	char need[32];

	(void)state;
	refused_map(SMALL_HELD_ARG, "65536");
	/* The old defaults: 4000000 in 1 GiB. */
	refused_map("4000000", "1073741824");
	/* The size named is enough (and the new defaults are, too: every
	 * other test starts with them). */
	snprintf(need, sizeof(need), "%llu",
	    refused_map(SMALL_HELD_ARG, "65536"));
	s = harness_start("--max-held", SMALL_HELD_ARG, "--map-size", need,
	    NULL);
	harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS, NULL);
}

static void
long_held_name(char *buf, int i)
{
	memset(buf, 'n', PROTO_NAME_MAX);
	buf[PROTO_NAME_MAX] = '\0';
	buf[snprintf(buf, 16, "held/%06d", i)] = 'n';
}

/* The held locks: name number and handle. */
struct held_long {
	int id;
	char handle[64];
};

/* Pipelines TRYs of the names of held[0..count) in one write; each must be
 * granted, its handle kept. */
static void
take_long(struct harness_conn *c, struct held_long **held, int count)
{
	static char buf[SMALL_HELD * (PROTO_NAME_MAX + 32)];
	char name[PROTO_NAME_MAX + 1];
	struct harness_grant g;
	const char *line;
	size_t len = 0;
	int i;

	for (i = 0; i < count; i++) {
		long_held_name(name, held[i]->id);
		len += (size_t)snprintf(buf + len, sizeof(buf) - len,
		    "TRY %s lease=60s\n", name);
	}
	harness_send_bytes(c, buf, len);
	for (i = 0; i < count; i++) {
		line = harness_read_line(c, HARNESS_REPLY_TIMEOUT_MS);
		if (line == NULL || !harness_parse_granted(line, &g))
			fail_msg("TRY %d: got '%s'", held[i]->id,
			    line ? line : "(nothing)");
		snprintf(held[i]->handle, sizeof(held[i]->handle), "%s",
		    g.handle);
	}
}

/*
 * --max-held locks of the longest names, in the smallest map the check
 * accepts, taken and churned (every other one released, as many new names
 * taken in one write): every TRY is granted, and the one past the limit
 * gets ERR LIMIT, never ERR UNAVAILABLE.
 */
static void
test_limits_max_held_long_names_in_the_smallest_map_end_in_err_limit(
    void **state)
{
	static struct held_long held[SMALL_HELD];
	struct held_long *batch[SMALL_HELD];
	struct harness_server *s;
	struct harness_conn *c;
	char need[32], name[PROTO_NAME_MAX + 1];
	int round, i, n, next = 0;

	(void)state;
	snprintf(need, sizeof(need), "%llu",
	    refused_map(SMALL_HELD_ARG, "65536"));
	s = harness_start("--max-held", SMALL_HELD_ARG, "--map-size", need,
	    "--journal-size", "65536", NULL);
	c = harness_connect(s);
	for (i = 0; i < SMALL_HELD; i++) {
		held[i].id = next++;
		batch[i] = &held[i];
	}
	take_long(c, batch, SMALL_HELD);
	for (round = 0; round < CHURN_ROUNDS; round++) {
		long_held_name(name, next);
		harness_send(c, "TRY %s\n", name);
		harness_expect_error(c, "LIMIT");
		/* Every other one out: leaves half empty, not merged. */
		for (n = 0, i = round % 2; i < SMALL_HELD; i += 2) {
			long_held_name(name, held[i].id);
			harness_send(c, "RELEASE %s %s\n", name,
			    held[i].handle);
			harness_expect_prefix(c, "RELEASED ");
			held[i].id = next++;
			batch[n++] = &held[i];
		}
		take_long(c, batch, n);
	}
	long_held_name(name, next);
	harness_send(c, "TRY %s\n", name);
	harness_expect_error(c, "LIMIT");
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
		    test_limits_max_held_that_cannot_fit_the_map_size_is_refused_at_start),
		HARNESS_TEST(
		    test_limits_max_held_long_names_in_the_smallest_map_end_in_err_limit),
		HARNESS_TEST(
		    test_limits_waiters_beyond_the_maximum_get_err_limit),
		HARNESS_TEST(
		    test_limits_client_that_never_reads_is_cut_off_at_the_output_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
