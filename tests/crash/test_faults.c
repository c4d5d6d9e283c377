/*
 * test_faults.c - build/tests/crash_faults: one test per fault-injection
 * point of lockd (daemon/daemon.h), each run on build/tests/lockd-faulty and
 * then restarted on the real lockd, checking the promise of that point:
 *
 *   before the commit      the grant was never told, and is not there after
 *                          the restart; no told fence is reused
 *   after the commit       the grant was not told but is durable: held after
 *                          the restart, and its fence never comes again
 *   between the replies    whatever one connection was told before the crash
 *   of a pass              is durable, though others of the pass heard nothing
 *   a failing commit       ERR UNAVAILABLE, nothing granted or renewed, and
 *                          the service goes on
 *
 * The process's exit status (137, as after kill -9) and its log prove the
 * fault did fire where the test meant it to.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tests/crash/crashlib.h"
#include "tests/lib/harness.h"

#define FAULT_EXIT 137
#define MID_CONNS 8
#define MID_PIPELINE 3
#define MID_ROUNDS 40

/* Waits for the faulty lockd to have died by itself; requires 137. */
static void
expect_injected_crash(struct harness_server *s, const char *what)
{
	char needle[128];

	assert_int_equal(harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS, NULL),
	    FAULT_EXIT);
	snprintf(needle, sizeof(needle), "injected crash: %s", what);
	if (!harness_log_contains(s, needle))
		fail_msg("the log of lockd-faulty lacks '%s'", needle);
}

static void
test_faults_crash_before_a_commit_tells_nothing_and_keeps_nothing(
    void **state)
{
	struct harness_server *s;
	struct harness_conn *c;
	struct harness_grant a, next;
	struct harness_status st;

	(void)state;
	crash_use_faulty("before_commit:2");
	s = harness_start(NULL);
	c = harness_connect(s);
	harness_try(c, "a", 30000, &a);          /* commit 1 */
	harness_send(c, "TRY b lease=30000\n");   /* commit 2: dies first */
	harness_expect_eof(c, HARNESS_REPLY_TIMEOUT_MS);
	expect_injected_crash(s, "before_commit 2");

	crash_use_lockd();
	harness_server_restart(s);
	c = harness_connect(s);
	harness_status(c, "a", &st);
	assert_true(st.held);
	assert_int_equal(st.fence, a.fence);
	harness_status(c, "b", &st);
	assert_false(st.held);
	/* The grant of b never happened: b is free, and no fence told
	 * before comes again. */
	harness_try(c, "b", 1000, &next);
	assert_true(next.fence > a.fence);
}

static void
test_faults_crash_after_a_commit_keeps_the_untold_grant(void **state)
{
	struct harness_server *s;
	struct harness_conn *c;
	struct harness_grant a, other, again;
	struct harness_status st;
	uint64_t untold;

	(void)state;
	crash_use_faulty("after_commit:2");
	s = harness_start(NULL);
	c = harness_connect(s);
	harness_try(c, "a", 30000, &a);          /* commit 1 */
	harness_send(c, "TRY b lease=800\n");     /* commit 2, then it dies */
	harness_expect_eof(c, HARNESS_REPLY_TIMEOUT_MS);
	expect_injected_crash(s, "after_commit 2");

	crash_use_lockd();
	harness_server_restart(s);
	c = harness_connect(s);
	harness_status(c, "a", &st);
	assert_true(st.held);
	assert_int_equal(st.fence, a.fence);
	/* Durable though never told: b is held, by a fence after a's. */
	harness_status(c, "b", &st);
	assert_true(st.held);
	assert_true(st.fence > a.fence);
	assert_true(st.ttl_ms <= 800);
	untold = st.fence;
	/* Its fence is never issued again, on any name. */
	harness_try(c, "c", 1000, &other);
	assert_true(other.fence > untold);
	/* When its lease runs out, b is granted again with a later fence. */
	harness_send(c, "ACQUIRE b lease=1000 wait=3000\n");
	harness_expect_granted_within(c, "b", 3000, &again);
	assert_true(again.fence > other.fence);
}

struct told {
	char name[PROTO_NAME_MAX + 1];
	uint64_t fence;
};

static void
test_faults_crash_between_the_replies_of_a_pass_keeps_what_was_told(
    void **state)
{
	static struct told told[MID_CONNS * MID_PIPELINE * MID_ROUNDS];
	struct harness_conn *conns[MID_CONNS], *c;
	struct harness_server *s;
	struct harness_status st;
	struct harness_grant g;
	size_t ntold = 0, i;
	uint64_t max_fence = 0;
	int round, k, heard_all = 0, heard_none = 0;
	bool dead = false;

	(void)state;
	crash_use_faulty("mid_reply:1");
	s = harness_start(NULL);
	for (k = 0; k < MID_CONNS; k++)
		conns[k] = harness_connect(s);
	for (round = 0; round < MID_ROUNDS && !dead; round++) {
		/* Every connection pipelines a few TRYs at once, so that one
		 * pass has the replies of several connections to write. */
		for (k = 0; k < MID_CONNS; k++) {
			char batch[512];
			size_t n = 0;
			int j;
			for (j = 0; j < MID_PIPELINE; j++)
				n += (size_t)snprintf(batch + n, sizeof(batch) - n,
				    "TRY mid-%d-%d-%d lease=30000\n", round, k, j);
			if (harness_try_send(conns[k], batch, n, 1000) !=
			    (ssize_t)n)
				dead = true;
		}
		for (k = 0; k < MID_CONNS; k++) {
			int got = 0, j;
			for (j = 0; j < MID_PIPELINE; j++) {
				const char *line = harness_read_line(conns[k],
				    dead ? 200 : 1000);
				if (line == NULL)
					break;
				if (!harness_parse_granted(line, &g))
					fail_msg("expected GRANTED, got '%s'",
					    line);
				snprintf(told[ntold].name,
				    sizeof(told[ntold].name), "%s", g.name);
				told[ntold++].fence = g.fence;
				if (g.fence > max_fence)
					max_fence = g.fence;
				got++;
			}
			if (got < MID_PIPELINE)
				dead = true;
			if (got == MID_PIPELINE)
				heard_all++;
			else if (got == 0)
				heard_none++;
		}
		if (!dead) {
			heard_all = 0;
			heard_none = 0;
		}
	}
	if (!dead)
		fail_msg("no pass wrote the replies of two connections in %d "
		    "rounds", MID_ROUNDS);
	expect_injected_crash(s, "mid_reply 1");
	/* The last round: some connections heard everything, some nothing. */
	assert_true(heard_all > 0);
	assert_true(heard_none > 0);
	printf("mid_reply: %zu grants told before the crash; in the last "
	    "pass %d connections heard all, %d nothing\n", ntold, heard_all,
	    heard_none);

	crash_use_lockd();
	harness_server_restart(s);
	c = harness_connect(s);
	for (i = 0; i < ntold; i++) {
		harness_status(c, told[i].name, &st);
		if (!st.held || st.fence != told[i].fence)
			fail_msg("%s was told fence %llu before the crash; after "
			    "it STATUS shows held=%d fence=%llu", told[i].name,
			    (unsigned long long)told[i].fence, st.held,
			    (unsigned long long)st.fence);
	}
	harness_try(c, "after", 1000, &g);
	assert_true(g.fence > max_fence);
}

static void
test_faults_failed_commit_answers_unavailable_and_service_goes_on(
    void **state)
{
	struct harness_server *s;
	struct harness_conn *c;
	struct harness_grant a, b;
	struct harness_status st;

	(void)state;
	crash_use_faulty("fail:2:1");
	s = harness_start(NULL);
	c = harness_connect(s);
	harness_try(c, "a", 30000, &a);          /* commit 1 */
	harness_send(c, "TRY b lease=30000\n");   /* commit 2 fails */
	harness_expect_error(c, "UNAVAILABLE");
	harness_status(c, "b", &st);
	assert_false(st.held);
	harness_status(c, "a", &st);
	assert_true(st.held);
	assert_int_equal(st.fence, a.fence);
	harness_send(c, "PING\n");
	harness_expect_line(c, "PONG");
	harness_try(c, "b", 30000, &b);          /* commit 3 */
	assert_true(b.fence > a.fence);

	/* What was told is what the disk holds. */
	assert_int_equal(harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS, NULL),
	    0);
	crash_use_lockd();
	harness_server_restart(s);
	c = harness_connect(s);
	harness_status(c, "a", &st);
	assert_true(st.held && st.fence == a.fence);
	harness_status(c, "b", &st);
	assert_true(st.held && st.fence == b.fence);
}

static void
test_faults_failed_commit_of_a_renewal_keeps_the_old_lease(void **state)
{
	struct harness_server *s;
	struct harness_conn *c;
	struct harness_grant a;
	struct harness_status st;
	char want[128];

	(void)state;
	crash_use_faulty("fail:2:1");
	s = harness_start(NULL);
	c = harness_connect(s);
	harness_try(c, "a", 3000, &a);           /* commit 1 */
	harness_send(c, "RENEW a %s lease=60000\n", a.handle);   /* fails */
	harness_expect_error(c, "UNAVAILABLE");
	harness_status(c, "a", &st);
	assert_true(st.held);
	assert_int_equal(st.fence, a.fence);
	assert_true(st.ttl_ms <= 3000);
	harness_send(c, "RENEW a %s lease=60000\n", a.handle);   /* commit 3 */
	snprintf(want, sizeof(want), "RENEWED a fence=%llu lease=60000",
	    (unsigned long long)a.fence);
	harness_expect_line(c, want);
	harness_status(c, "a", &st);
	assert_true(st.ttl_ms > 3000);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		HARNESS_TEST(
		    test_faults_crash_before_a_commit_tells_nothing_and_keeps_nothing),
		HARNESS_TEST(
		    test_faults_crash_after_a_commit_keeps_the_untold_grant),
		HARNESS_TEST(
		    test_faults_crash_between_the_replies_of_a_pass_keeps_what_was_told),
		HARNESS_TEST(
		    test_faults_failed_commit_answers_unavailable_and_service_goes_on),
		HARNESS_TEST(
		    test_faults_failed_commit_of_a_renewal_keeps_the_old_lease),
	};

	crash_init(argv[0]);
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests_name("crash_faults", tests, NULL, NULL);
}
