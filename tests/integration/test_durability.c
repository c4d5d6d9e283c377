/*
 * test_durability.c - integration tests of the durability promises of
 * protocol-v1.md: what a GRANTED or RENEWED reply reports survives a clean
 * stop and a kill -9, fences never go back, a lease keeps its expiry across
 * a restart, a lease that ended while lockd was down is reclaimed after it,
 * and an onclose=release lease does not outlive its connection.
 *
 * Each test stops or kills its own lockd by PID and restarts it on the same
 * data directory.  Only replies the test actually received are taken as
 * promises; requests still in flight at a kill may or may not have happened.
 * This file tests behaviour seen on the wire only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/lib/harness.h"

#define LATE_MS 1500

static void
test_durability_held_lease_survives_a_clean_restart_unchanged(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_grant g, next;
	struct harness_status st;
	int64_t sent, granted, asked, answered, longest, shortest;
	int64_t lease = 3000 * harness_slow();   /* outlives the restart */
	char want[128];

	(void)state;
	sent = harness_now_ms();
	harness_send(c, "ACQUIRE durable lease=%lld\n", (long long)lease);
	harness_expect_granted(c, "durable", &g);
	granted = harness_now_ms();
	assert_int_equal(harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS, NULL),
	    0);
	harness_sleep_ms(300);
	harness_server_restart(s);

	c = harness_connect(s);
	asked = harness_now_ms();
	harness_status(c, "durable", &st);
	answered = harness_now_ms();
	assert_true(st.held);
	assert_int_equal(st.fence, g.fence);
	/* The lease began between `sent` and `granted` and was looked at
	 * between `asked` and `answered`: its expiry, kept across the
	 * restart (300 ms of which lockd was down), bounds the ttl. */
	longest = lease - (asked - granted) + HARNESS_CLOCK_SLACK_MS;
	shortest = lease - (answered - sent) - HARNESS_CLOCK_SLACK_MS;
	if (st.ttl_ms > longest || st.ttl_ms < shortest)
		fail_msg("ttl=%lld after a restart, expected %lld..%lld: the "
		    "restart moved the expiry", (long long)st.ttl_ms,
		    (long long)shortest, (long long)longest);

	/* The handle is still the holder's proof. */
	harness_send(c, "RENEW durable %s lease=2000\n", g.handle);
	snprintf(want, sizeof(want), "RENEWED durable fence=%llu lease=2000",
	    (unsigned long long)g.fence);
	harness_expect_line(c, want);
	harness_send(c, "RELEASE durable %s\n", g.handle);
	harness_expect_line(c, "RELEASED durable");
	harness_try(c, "durable", 1000, &next);
	assert_true(next.fence > g.fence);
}

/* What the test knows of one lock: only what the replies it read said. */
struct known {
	char name[32];
	bool held;
	bool in_flight;           /* RELEASE + TRY sent, replies not read */
	struct harness_grant grant;
	uint64_t max_fence;       /* the highest fence this name was given */
};

#define CRASH_NAMES 8
#define CRASH_ROUNDS 40
#define CRASH_CONNS 2

static void
test_durability_every_grant_seen_survives_kill_9(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c[CRASH_CONNS];
	struct known k[CRASH_NAMES];
	struct harness_status st;
	struct harness_grant g;
	int round, i;
	char want[4096];

	(void)state;
	memset(k, 0, sizeof(k));
	for (i = 0; i < CRASH_NAMES; i++)
		snprintf(k[i].name, sizeof(k[i].name), "crash/%d", i);
	for (i = 0; i < CRASH_CONNS; i++)
		c[i] = harness_connect(s);

	/* Rounds of pipelined RELEASE + TRY on every name, two connections
	 * at once, so that grants share group commits.  Every third round a
	 * name is left released. */
	for (round = 0; round < CRASH_ROUNDS; round++) {
		for (i = 0; i < CRASH_NAMES; i++) {
			struct harness_conn *to = c[i % CRASH_CONNS];
			if (k[i].held)
				harness_send(to, "RELEASE %s %s\n", k[i].name,
				    k[i].grant.handle);
			if ((round + i) % 3 != 0)
				harness_send(to, "TRY %s lease=60000\n",
				    k[i].name);
		}
		for (i = 0; i < CRASH_NAMES; i++) {
			struct harness_conn *from = c[i % CRASH_CONNS];
			if (k[i].held) {
				snprintf(want, sizeof(want), "RELEASED %s",
				    k[i].name);
				harness_expect_line(from, want);
				k[i].held = false;
			}
			if ((round + i) % 3 != 0) {
				harness_expect_granted(from, k[i].name,
				    &k[i].grant);
				assert_true(k[i].grant.fence > k[i].max_fence);
				k[i].max_fence = k[i].grant.fence;
				k[i].held = true;
			}
		}
	}
	/* Right behind the last replies read: more changes in flight on the
	 * first held names, then the kill. */
	for (i = 0; i < CRASH_NAMES / 2; i++) {
		if (!k[i].held)
			continue;
		harness_send(c[i % CRASH_CONNS], "RELEASE %s %s\nTRY %s "
		    "lease=500\n", k[i].name, k[i].grant.handle, k[i].name);
		k[i].in_flight = true;
	}
	harness_server_kill(s);

	harness_server_restart(s);
	c[0] = harness_connect(s);
	for (i = 0; i < CRASH_NAMES; i++) {
		harness_status(c[0], k[i].name, &st);
		if (k[i].in_flight &&
		    !(st.held && st.fence == k[i].grant.fence)) {
			/* The release happened; maybe a grant nobody saw. */
			if (st.held) {
				assert_true(st.fence > k[i].max_fence);
				k[i].max_fence = st.fence;
			}
			continue;
		}
		/* The spec promises GRANTED and RENEWED, not RELEASED: a
		 * release may be undone by a crash, bringing back the very
		 * lease that was released (and nothing else). */
		if (!k[i].held && st.held && st.fence == k[i].grant.fence &&
		    k[i].grant.fence != 0)
			k[i].held = true;
		if (st.held != k[i].held ||
		    (k[i].held && st.fence != k[i].grant.fence))
			fail_msg("%s after kill -9: held=%d fence=%llu, but "
			    "the last reply read said held=%d fence=%llu",
			    k[i].name, st.held, (unsigned long long)st.fence,
			    k[i].held, (unsigned long long)k[i].grant.fence);
		if (!k[i].held)
			continue;
		/* The handle's secret survived too. */
		harness_send(c[0], "RENEW %s %s lease=60000\n", k[i].name,
		    k[i].grant.handle);
		snprintf(want, sizeof(want), "RENEWED %s fence=%llu "
		    "lease=60000", k[i].name,
		    (unsigned long long)k[i].grant.fence);
		harness_expect_line(c[0], want);
		harness_send(c[0], "RELEASE %s %s\n", k[i].name,
		    k[i].grant.handle);
		snprintf(want, sizeof(want), "RELEASED %s", k[i].name);
		harness_expect_line(c[0], want);
	}
	/* Every new fence of a name is above every fence that name was ever
	 * given, including by grants in flight at the kill (whose 500 ms
	 * leases the ACQUIRE may have to wait out). */
	for (i = 0; i < CRASH_NAMES; i++) {
		harness_send(c[0], "ACQUIRE %s lease=1000 wait=3000\n",
		    k[i].name);
		harness_expect_granted(c[0], k[i].name, &g);
		if (g.fence <= k[i].max_fence)
			fail_msg("%s granted fence %llu after kill -9, but it "
			    "had been given %llu", k[i].name,
			    (unsigned long long)g.fence,
			    (unsigned long long)k[i].max_fence);
	}
}

/*
 * rid= over the wire and across kill -9: a repeat of the ACQUIRE, from
 * another connection and after the crash, is told the same grant with
 * the lease it has left; another rid is another request; a bad rid is
 * ERR BADARG.
 */
static void
test_durability_rid_repeat_finds_its_grant_after_kill_9(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_grant g, again;
	int64_t lease = 4000 * harness_slow();   /* outlives the kill */

	(void)state;
	harness_send(c, "ACQUIRE job lease=%lld rid=host-7:4242:1\n",
	    (long long)lease);
	harness_expect_granted(c, "job", &g);
	harness_send(c, "ACQUIRE job lease=%lld rid=host-7:4242:1\n",
	    (long long)lease);
	harness_expect_granted(c, "job", &again);
	assert_int_equal(again.fence, g.fence);
	assert_string_equal(again.handle, g.handle);
	assert_true(again.lease_ms <= lease);
	harness_send(c, "TRY job rid=host-7:4242:2\n");
	harness_expect_line(c, "HELD job");
	harness_send(c, "TRY job rid=\n");
	harness_expect_line(c, "ERR BADARG rid must be 1 to 64 bytes without "
	    "spaces or control bytes");

	harness_server_kill(s);
	harness_server_restart(s);
	c = harness_connect(s);
	harness_send(c, "ACQUIRE job lease=%lld wait=0 rid=host-7:4242:1\n",
	    (long long)lease);
	harness_expect_granted(c, "job", &again);
	assert_int_equal(again.fence, g.fence);
	assert_string_equal(again.handle, g.handle);
	assert_true(again.lease_ms > 0 && again.lease_ms < lease);
	/* The handle still holds; once released, the rid is forgotten. */
	harness_send(c, "RELEASE job %s\n", g.handle);
	harness_expect_line(c, "RELEASED job");
	harness_send(c, "ACQUIRE job wait=0 rid=host-7:4242:1\n");
	harness_expect_granted(c, "job", &again);
	assert_true(again.fence > g.fence);
}

static void
test_durability_fences_grow_across_restarts_for_released_locks(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_grant g1, g2, g3;
	struct harness_status st;

	(void)state;
	harness_try(c, "reuse", 60000, &g1);
	harness_send(c, "RELEASE reuse %s\n", g1.handle);
	harness_expect_line(c, "RELEASED reuse");
	assert_int_equal(harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS, NULL),
	    0);
	harness_server_restart(s);

	c = harness_connect(s);
	harness_try(c, "reuse", 60000, &g2);
	assert_true(g2.fence > g1.fence);
	harness_send(c, "RELEASE reuse %s\n", g2.handle);
	harness_expect_line(c, "RELEASED reuse");
	harness_server_kill(s);
	harness_server_restart(s);

	/* A clean stop commits the release; a kill may undo it (only
	 * GRANTED and RENEWED are promised), and then the released lease
	 * itself is back, to be released again with its handle. */
	c = harness_connect(s);
	harness_status(c, "reuse", &st);
	if (st.held) {
		assert_int_equal(st.fence, g2.fence);
		harness_send(c, "RELEASE reuse %s\n", g2.handle);
		harness_expect_line(c, "RELEASED reuse");
	}
	harness_try(c, "reuse", 60000, &g3);
	assert_true(g3.fence > g2.fence);
}

static void
test_durability_lease_expired_while_down_is_reclaimed_on_restart(
    void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_grant g, next;
	struct harness_status st;
	int64_t start;

	(void)state;
	start = harness_now_ms();
	harness_send(c, "ACQUIRE lapsed lease=300\n");
	harness_expect_granted(c, "lapsed", &g);
	assert_int_equal(harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS, NULL),
	    0);
	harness_sleep_ms(start + 600 - harness_now_ms());
	harness_server_restart(s);

	c = harness_connect(s);
	harness_status(c, "lapsed", &st);
	assert_false(st.held);
	assert_int_equal(st.queue, 0);
	harness_send(c, "ACQUIRE lapsed wait=0\n");
	harness_expect_granted(c, "lapsed", &next);
	assert_true(next.fence > g.fence);
}

static void
test_durability_restarted_lease_passes_to_a_waiter_at_its_expiry(
    void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_grant g, next;
	int64_t start, elapsed;

	(void)state;
	start = harness_now_ms();
	harness_send(c, "ACQUIRE across lease=1200\n");
	harness_expect_granted(c, "across", &g);
	harness_server_kill(s);
	harness_server_restart(s);

	/* Nobody touches the lock after this: the recovered expiry alone
	 * must hand it over. */
	c = harness_connect(s);
	harness_send(c, "ACQUIRE across\n");
	harness_expect_granted_within(c, "across", 1200 + LATE_MS + 1000,
	    &next);
	elapsed = harness_now_ms() - start;
	assert_in_range(elapsed, 1200 - HARNESS_CLOCK_SLACK_MS,
	    1200 + LATE_MS);
	assert_true(next.fence > g.fence);
}

static void
test_durability_onclose_release_lease_does_not_outlive_a_crash(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_grant bound, kept, next;
	struct harness_status st;

	(void)state;
	harness_send(c, "ACQUIRE bound lease=60000 onclose=release\n");
	harness_expect_granted(c, "bound", &bound);
	harness_send(c, "ACQUIRE kept lease=60000\n");
	harness_expect_granted(c, "kept", &kept);
	harness_server_kill(s);
	harness_server_restart(s);

	/* Its connection died with lockd, so the bound lease went with it;
	 * the kept one stays. */
	c = harness_connect(s);
	harness_status(c, "bound", &st);
	assert_false(st.held);
	harness_status(c, "kept", &st);
	assert_true(st.held);
	assert_int_equal(st.fence, kept.fence);
	harness_send(c, "ACQUIRE bound wait=0\n");
	harness_expect_granted(c, "bound", &next);
	assert_true(next.fence > bound.fence);
	assert_true(next.fence > kept.fence);
}

/*
 * A test that fills the map runs lockd-faulty (the real lockd, built in
 * tests/ beside lockd) with LOCKD_FAULT=map_unchecked: lockd itself refuses
 * to start with a --map-size too small for --max-held.
 */
static int
unchecked_map_setup(void **state)
{
	return harness_faulty_begin("map_unchecked") != 0 ? -1 :
	    harness_setup(state);
}

static int
unchecked_map_teardown(void **state)
{
	int rc = harness_teardown(state);

	harness_faulty_end();
	return rc;
}

/* Long names fill the store fast. */
#define FULL_NAME_PAD 200
#define FULL_MAX_TRIES 2000

static void
full_name(char *buf, size_t cap, int i)
{
	snprintf(buf, cap, "full/%0*d", FULL_NAME_PAD, i);
}

/*
 * The store is made to fail by giving LMDB a map too small for many records
 * (--map-size is lockd's own flag, not the spec's; lockd-faulty, since lockd
 * refuses a map too small for --max-held): a grant that cannot be
 * committed must be answered ERR UNAVAILABLE and leave nothing behind.
 */
static void
test_durability_store_failure_answers_unavailable_and_grants_nothing(
    void **state)
{
	static struct harness_grant held[FULL_MAX_TRIES];
	/* A small journal checkpoints every 1 KiB, so the map fills soon. */
	struct harness_server *s = harness_start("--map-size", "65536",
	    "--journal-size", "65536", NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_status st;
	char name[256];
	const char *line = NULL;
	int64_t deadline;
	int i, n;

	(void)state;
	for (n = 0; n < FULL_MAX_TRIES; n++) {
		full_name(name, sizeof(name), n);
		harness_send(c, "TRY %s lease=60000\n", name);
		line = harness_read_line(c, HARNESS_REPLY_TIMEOUT_MS);
		if (line == NULL || !harness_parse_granted(line, &held[n]))
			break;
	}
	if (n == FULL_MAX_TRIES || line == NULL ||
	    strncmp(line, "ERR UNAVAILABLE", 15) != 0)
		fail_msg("after %d grants: expected ERR UNAVAILABLE, got '%s'",
		    n, line ? line : "(nothing)");
	assert_true(n > 0);

	/* Nothing was granted; what was granted before stands. */
	harness_status(c, name, &st);
	assert_false(st.held);
	assert_int_equal(st.fence, 0);
	for (i = 0; i < n; i++) {
		char other[256];
		full_name(other, sizeof(other), i);
		harness_status(c, other, &st);
		assert_true(st.held);
		assert_int_equal(st.fence, held[i].fence);
	}

	/* With room made, the same grant goes through. */
	for (i = 0; i < n; i++) {
		char other[256];
		full_name(other, sizeof(other), i);
		harness_send(c, "RELEASE %s %s\n", other, held[i].handle);
		harness_expect_prefix(c, "RELEASED ");
	}
	deadline = harness_now_ms() + HARNESS_REPLY_TIMEOUT_MS;
	for (;;) {
		harness_send(c, "TRY %s lease=60000\n", name);
		line = harness_read_line(c, HARNESS_REPLY_TIMEOUT_MS);
		if (line != NULL && strncmp(line, "GRANTED ", 8) == 0)
			break;
		if (line == NULL || strncmp(line, "ERR UNAVAILABLE", 15) != 0 ||
		    harness_now_ms() > deadline)
			fail_msg("TRY after making room: '%s'",
			    line ? line : "(nothing)");
		harness_sleep_ms(20);
	}
}

/* The reproduction: 300 TRYs of 255-byte names, in one write. */
#define PIPELINED 300
#define LONG_NAME 255

static void
long_name(char *buf, int i)
{
	memset(buf, 'x', LONG_NAME);
	snprintf(buf, 16, "batch/%05d", i);
	buf[11] = 'x';       /* snprintf's NUL, covered again */
	buf[LONG_NAME] = '\0';
}

/*
 * With the smallest journal (--journal-size 65536), 300 pipelined TRYs of
 * 255-byte names sent in one write form one group commit larger than the
 * journal: every one is granted (the batch goes straight into LMDB), and
 * every grant survives kill -9.
 */
static void
test_durability_a_batch_larger_than_the_journal_is_granted_and_kept(
    void **state)
{
	static struct harness_grant g[PIPELINED];
	static char buf[PIPELINED * (LONG_NAME + 32)];
	struct harness_server *s = harness_start("--journal-size", "65536",
	    NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_status st;
	char name[LONG_NAME + 1];
	const char *line;
	size_t len = 0;
	int i;

	(void)state;
	for (i = 0; i < PIPELINED; i++) {
		long_name(name, i);
		len += (size_t)snprintf(buf + len, sizeof(buf) - len,
		    "TRY %s lease=60s\n", name);
	}
	assert_true(len > 65536);
	harness_send_bytes(c, buf, len);
	for (i = 0; i < PIPELINED; i++) {
		line = harness_read_line(c, HARNESS_REPLY_TIMEOUT_MS);
		if (line == NULL || !harness_parse_granted(line, &g[i]))
			fail_msg("TRY %d of %d: got '%s'", i + 1, PIPELINED,
			    line ? line : "(nothing)");
		long_name(name, i);
		assert_string_equal(g[i].name, name);
	}
	harness_server_kill(s);
	harness_server_restart(s);
	c = harness_connect(s);
	for (i = 0; i < PIPELINED; i++) {
		long_name(name, i);
		harness_status(c, name, &st);
		assert_true(st.held);
		assert_int_equal(st.fence, g[i].fence);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		HARNESS_TEST(
		    test_durability_held_lease_survives_a_clean_restart_unchanged),
		HARNESS_TEST(test_durability_every_grant_seen_survives_kill_9),
		HARNESS_TEST(
		    test_durability_rid_repeat_finds_its_grant_after_kill_9),
		HARNESS_TEST(
		    test_durability_fences_grow_across_restarts_for_released_locks),
		HARNESS_TEST(
		    test_durability_lease_expired_while_down_is_reclaimed_on_restart),
		HARNESS_TEST(
		    test_durability_restarted_lease_passes_to_a_waiter_at_its_expiry),
		HARNESS_TEST(
		    test_durability_onclose_release_lease_does_not_outlive_a_crash),
		cmocka_unit_test_setup_teardown(
		    test_durability_store_failure_answers_unavailable_and_grants_nothing,
		    unchecked_map_setup, unchecked_map_teardown),
		HARNESS_TEST(
		    test_durability_a_batch_larger_than_the_journal_is_granted_and_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
