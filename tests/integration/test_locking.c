/*
 * test_locking.c - integration tests of the lock semantics of
 * protocol-v1.md against a real lockd: FIFO queues, wait limits, lease
 * expiry and hand-off, stale and forged handles, onclose, disconnecting
 * waiters, and the default and maximum lease.
 *
 * Every test starts its own lockd (tests/lib/harness.c) and speaks the raw
 * protocol.
 * Leases and waits are a few hundred milliseconds; timing checks hold a
 * strict lower bound (nothing is granted before a lease ends, nothing times
 * out before its wait) and a loose upper bound, since the machine is shared.
 * This file tests behaviour seen on the wire only: it includes nothing of
 * daemon/ or core/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tests/lib/harness.h"

/* How late a deadline may fire on a loaded machine and still pass. */
#define LATE_MS 1500

static void
test_locking_waiters_are_granted_in_arrival_order(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *holder = harness_connect(s);
	struct harness_conn *w[3];
	struct harness_grant held, next;
	int i;

	(void)state;
	harness_try(holder, "fifo", 10000, &held);
	for (i = 0; i < 3; i++) {
		w[i] = harness_connect(s);
		harness_send(w[i], "ACQUIRE fifo lease=10000\n");
		/* The next one is sent only once this one is queued, so the
		 * arrival order is known. */
		harness_await_queue(holder, "fifo", (uint64_t)i + 1);
	}
	for (i = 0; i < 3; i++)
		harness_expect_silence(w[i], 50);

	harness_send(holder, "RELEASE fifo %s\n", held.handle);
	harness_expect_line(holder, "RELEASED fifo");
	for (i = 0; i < 3; i++) {
		harness_expect_granted(w[i], "fifo", &next);
		assert_true(next.fence > held.fence);
		if (i + 1 < 3)
			harness_expect_silence(w[i + 1], 100);
		if (i + 2 < 3)
			harness_expect_silence(w[i + 2], 0);
		held = next;
		harness_send(w[i], "RELEASE fifo %s\n", held.handle);
		harness_expect_line(w[i], "RELEASED fifo");
	}
}

static void
test_locking_acquire_times_out_after_its_wait_and_leaves_the_queue(
    void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *holder = harness_connect(s);
	struct harness_conn *waiter = harness_connect(s);
	struct harness_grant held;
	struct harness_status st;
	int64_t start, elapsed;

	(void)state;
	harness_try(holder, "wait", 10000, &held);
	start = harness_now_ms();
	harness_send(waiter, "ACQUIRE wait wait=300\n");
	harness_await_queue(holder, "wait", 1);
	harness_expect_error(waiter, "TIMEOUT");
	elapsed = harness_now_ms() - start;
	assert_in_range(elapsed, 300 - HARNESS_CLOCK_SLACK_MS,
	    300 + LATE_MS);

	/* Gone from the queue; the holder undisturbed. */
	harness_status(holder, "wait", &st);
	assert_true(st.held);
	assert_int_equal(st.fence, held.fence);
	assert_int_equal(st.queue, 0);
	/* And the connection is usable. */
	harness_send(waiter, "PING\n");
	harness_expect_line(waiter, "PONG");
}

static void
test_locking_wait_zero_fails_at_once_when_held_and_grants_when_free(
    void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *holder = harness_connect(s);
	struct harness_conn *other = harness_connect(s);
	struct harness_status st;
	int64_t start;

	(void)state;
	harness_try(holder, "zero", 10000, NULL);
	start = harness_now_ms();
	harness_send(other, "ACQUIRE zero wait=0\n");
	harness_expect_error(other, "TIMEOUT");
	assert_true(harness_now_ms() - start < 1000);
	harness_status(other, "zero", &st);
	assert_int_equal(st.queue, 0);

	harness_send(other, "ACQUIRE zero-free wait=0 lease=1000\n");
	harness_expect_granted(other, "zero-free", NULL);
}

static void
test_locking_acquire_granted_within_its_wait_is_granted(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *holder = harness_connect(s);
	struct harness_conn *waiter = harness_connect(s);
	struct harness_grant held, got;

	(void)state;
	harness_try(holder, "in-time", 10000, &held);
	harness_send(waiter, "ACQUIRE in-time wait=5s lease=1000\n");
	harness_await_queue(holder, "in-time", 1);
	harness_send(holder, "RELEASE in-time %s\n", held.handle);
	harness_expect_line(holder, "RELEASED in-time");
	harness_expect_granted_within(waiter, "in-time", 1000, &got);
	assert_true(got.fence > held.fence);
	/* And its wait no longer runs: no TIMEOUT comes later. */
	harness_expect_silence(waiter, 200);
}

static void
test_locking_try_never_queues(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *holder = harness_connect(s);
	struct harness_conn *other = harness_connect(s);
	struct harness_grant held, got;
	struct harness_status st;

	(void)state;
	harness_send(holder, "TRY busy lease=300\n");
	harness_expect_granted(holder, "busy", &held);
	harness_send(other, "TRY busy\n");
	harness_expect_line(other, "HELD busy");
	harness_status(other, "busy", &st);
	assert_int_equal(st.queue, 0);
	assert_int_equal(st.fence, held.fence);
	/* Once the lease is over and nobody waits, TRY takes it. */
	harness_sleep_ms(400);
	harness_send(other, "TRY busy\n");
	harness_expect_granted(other, "busy", &got);
	assert_true(got.fence > held.fence);
}

static void
test_locking_expired_lease_passes_to_a_waiter_nobody_touches(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *first = harness_connect(s);
	struct harness_conn *second = harness_connect(s);
	struct harness_grant a, b;
	int64_t start, elapsed;

	(void)state;
	start = harness_now_ms();
	harness_send(first, "ACQUIRE expiry lease=300\n");
	harness_expect_granted(first, "expiry", &a);
	assert_int_equal(a.lease_ms, 300);
	/* From here on nobody sends lockd anything: its timer must act. */
	harness_send(second, "ACQUIRE expiry lease=5000\n");
	harness_expect_granted_within(second, "expiry", 300 + LATE_MS + 1000,
	    &b);
	elapsed = harness_now_ms() - start;
	assert_in_range(elapsed, 300 - HARNESS_CLOCK_SLACK_MS,
	    300 + LATE_MS);
	assert_true(b.fence > a.fence);
	assert_int_equal(b.lease_ms, 5000);
}

static void
test_locking_renew_and_release_after_expiry_are_stale(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *first = harness_connect(s);
	struct harness_conn *second = harness_connect(s);
	struct harness_grant a, b, c;
	struct harness_status st;
	char want[128];

	(void)state;
	/* Expired and taken over by a waiter. */
	harness_send(first, "ACQUIRE stale lease=200\n");
	harness_expect_granted(first, "stale", &a);
	harness_send(second, "ACQUIRE stale lease=10000\n");
	harness_expect_granted(second, "stale", &b);
	harness_send(first, "RENEW stale %s lease=10000\n", a.handle);
	harness_expect_error(first, "CONFLICT");
	harness_send(first, "RELEASE stale %s\n", a.handle);
	harness_expect_line(first, "NOTHELD stale");
	harness_status(first, "stale", &st);
	assert_true(st.held);
	assert_int_equal(st.fence, b.fence);
	harness_send(second, "RENEW stale %s lease=10000\n", b.handle);
	snprintf(want, sizeof(want), "RENEWED stale fence=%llu lease=10000",
	    (unsigned long long)b.fence);
	harness_expect_line(second, want);

	/* Expired with nobody waiting: the lock is free, the handle dead. */
	harness_send(first, "ACQUIRE stale-free lease=150\n");
	harness_expect_granted(first, "stale-free", &c);
	harness_sleep_ms(400);
	harness_status(second, "stale-free", &st);
	assert_false(st.held);
	harness_send(first, "RENEW stale-free %s\n", c.handle);
	harness_expect_error(first, "CONFLICT");
	harness_send(first, "RELEASE stale-free %s\n", c.handle);
	harness_expect_line(first, "NOTHELD stale-free");
	harness_status(second, "stale-free", &st);
	assert_false(st.held);
}

static void
test_locking_right_fence_with_a_wrong_secret_is_refused(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *holder = harness_connect(s);
	struct harness_conn *thief = harness_connect(s);
	struct harness_grant g;
	struct harness_status st;
	char forged[64], want[128];
	size_t last;

	(void)state;
	harness_try(holder, "secret", 10000, &g);
	/* The fence is public (STATUS shows it); the secret is not. */
	snprintf(forged, sizeof(forged), "%s", g.handle);
	last = strlen(forged) - 1;
	forged[last] = forged[last] == '0' ? '1' : '0';

	harness_send(thief, "RENEW secret %s lease=60000\n", forged);
	harness_expect_error(thief, "CONFLICT");
	harness_send(thief, "RELEASE secret %s\n", forged);
	harness_expect_line(thief, "NOTHELD secret");
	harness_status(thief, "secret", &st);
	assert_true(st.held);
	assert_int_equal(st.fence, g.fence);
	assert_true(st.ttl_ms <= 10000);

	harness_send(holder, "RENEW secret %s lease=10000\n", g.handle);
	snprintf(want, sizeof(want), "RENEWED secret fence=%llu lease=10000",
	    (unsigned long long)g.fence);
	harness_expect_line(holder, want);
}

static void
test_locking_any_connection_with_the_handle_renews_and_releases(
    void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *owner = harness_connect(s);
	struct harness_conn *other = harness_connect(s);
	struct harness_grant g;
	struct harness_status st;
	char want[128];

	(void)state;
	harness_try(owner, "shared", 1000, &g);
	harness_send(other, "RENEW shared %s lease=5000\n", g.handle);
	snprintf(want, sizeof(want), "RENEWED shared fence=%llu lease=5000",
	    (unsigned long long)g.fence);
	harness_expect_line(other, want);
	harness_status(other, "shared", &st);
	assert_true(st.held);
	assert_int_equal(st.fence, g.fence);
	assert_true(st.ttl_ms > 1000 && st.ttl_ms <= 5000);

	harness_send(other, "RELEASE shared %s\n", g.handle);
	harness_expect_line(other, "RELEASED shared");
	harness_send(owner, "STATUS shared\n");
	harness_expect_line(owner,
	    "STATUS shared held=0 fence=0 ttl=0 queue=0");
	harness_send(owner, "RENEW shared %s\n", g.handle);
	harness_expect_error(owner, "CONFLICT");
}

static void
test_locking_onclose_release_frees_the_lock_on_disconnect(
    void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *holder = harness_connect(s);
	struct harness_conn *waiter = harness_connect(s);
	struct harness_conn *watcher = harness_connect(s);
	struct harness_grant a, b;
	int64_t start;

	(void)state;
	harness_send(holder, "ACQUIRE bound lease=20000 onclose=release\n");
	harness_expect_granted(holder, "bound", &a);
	harness_send(waiter, "ACQUIRE bound\n");
	harness_await_queue(watcher, "bound", 1);
	start = harness_now_ms();
	harness_close(holder);
	harness_expect_granted(waiter, "bound", &b);
	/* At once: long before the 20 s lease would have ended. */
	assert_true(harness_now_ms() - start < 2000);
	assert_true(b.fence > a.fence);
}

static void
test_locking_default_onclose_keeps_the_lease_after_disconnect(
    void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *holder = harness_connect(s);
	struct harness_conn *waiter = harness_connect(s);
	struct harness_conn *watcher = harness_connect(s);
	struct harness_grant a, b;
	struct harness_status st;
	int64_t start, elapsed;

	(void)state;
	start = harness_now_ms();
	harness_send(holder, "ACQUIRE kept lease=600\n");
	harness_expect_granted(holder, "kept", &a);
	harness_close(holder);
	harness_sleep_ms(100);
	harness_status(watcher, "kept", &st);
	assert_true(st.held);
	assert_int_equal(st.fence, a.fence);

	harness_send(waiter, "ACQUIRE kept\n");
	harness_expect_granted_within(waiter, "kept", 600 + LATE_MS + 1000, &b);
	elapsed = harness_now_ms() - start;
	assert_in_range(elapsed, 600 - HARNESS_CLOCK_SLACK_MS,
	    600 + LATE_MS);
	assert_true(b.fence > a.fence);
}

static void
test_locking_a_waiter_that_disconnects_is_never_granted(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *holder = harness_connect(s);
	struct harness_conn *gone = harness_connect(s);
	struct harness_conn *next = harness_connect(s);
	struct harness_grant a, c;
	struct harness_status st;

	(void)state;
	harness_try(holder, "leaver", 10000, &a);
	harness_send(gone, "ACQUIRE leaver\n");
	harness_await_queue(holder, "leaver", 1);
	harness_send(next, "ACQUIRE leaver\n");
	harness_await_queue(holder, "leaver", 2);
	harness_close(gone);
	harness_await_queue(holder, "leaver", 1);

	harness_send(holder, "RELEASE leaver %s\n", a.handle);
	harness_expect_line(holder, "RELEASED leaver");
	harness_expect_granted(next, "leaver", &c);
	assert_true(c.fence > a.fence);
	harness_status(holder, "leaver", &st);
	assert_true(st.held);
	assert_int_equal(st.fence, c.fence);
	assert_int_equal(st.queue, 0);
	assert_int_equal(harness_stat(holder, "waiters"), 0);
}

static void
test_locking_lease_is_defaulted_to_30s_and_capped_at_5m(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_grant g;
	struct harness_status st;
	char want[128];

	(void)state;
	harness_send(c, "ACQUIRE cap-a\n");
	harness_expect_granted(c, "cap-a", &g);
	assert_int_equal(g.lease_ms, 30000);
	harness_send(c, "ACQUIRE cap-b lease=0\n");
	harness_expect_granted(c, "cap-b", &g);
	assert_int_equal(g.lease_ms, 30000);
	harness_send(c, "ACQUIRE cap-c lease=10m\n");
	harness_expect_granted(c, "cap-c", &g);
	assert_int_equal(g.lease_ms, 300000);
	harness_status(c, "cap-c", &st);
	assert_true(st.ttl_ms > 290000 && st.ttl_ms <= 300000);
	harness_send(c, "TRY cap-d lease=0\n");
	harness_expect_granted(c, "cap-d", &g);
	assert_int_equal(g.lease_ms, 30000);
	harness_send(c, "TRY cap-e lease=1h\n");
	harness_expect_granted(c, "cap-e", &g);
	assert_int_equal(g.lease_ms, 300000);
	harness_send(c, "TRY cap-g lease=1500ms\n");
	harness_expect_granted(c, "cap-g", &g);
	assert_int_equal(g.lease_ms, 1500);
	harness_send(c, "TRY cap-h lease=2s\n");
	harness_expect_granted(c, "cap-h", &g);
	assert_int_equal(g.lease_ms, 2000);
	harness_send(c, "TRY cap-i lease=1m\n");
	harness_expect_granted(c, "cap-i", &g);
	assert_int_equal(g.lease_ms, 60000);
	harness_send(c, "TRY cap-f lease=5m\n");
	harness_expect_granted(c, "cap-f", &g);
	assert_int_equal(g.lease_ms, 300000);

	/* RENEW takes the same default and cap. */
	harness_send(c, "RENEW cap-f %s lease=0\n", g.handle);
	snprintf(want, sizeof(want), "RENEWED cap-f fence=%llu lease=30000",
	    (unsigned long long)g.fence);
	harness_expect_line(c, want);
	harness_send(c, "RENEW cap-f %s\n", g.handle);
	harness_expect_line(c, want);
	harness_send(c, "RENEW cap-f %s lease=365d\n", g.handle);
	harness_expect_error(c, "BADARG");
	harness_send(c, "RENEW cap-f %s lease=8760h\n", g.handle);
	snprintf(want, sizeof(want), "RENEWED cap-f fence=%llu lease=300000",
	    (unsigned long long)g.fence);
	harness_expect_line(c, want);
}

static void
test_locking_lease_flags_set_the_default_and_the_cap(void **state)
{
	struct harness_server *s = harness_start("--max-lease", "2s",
	    "--default-lease", "1s", NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_grant g;
	char want[128];

	(void)state;
	harness_send(c, "ACQUIRE flag-a\n");
	harness_expect_granted(c, "flag-a", &g);
	assert_int_equal(g.lease_ms, 1000);
	harness_send(c, "ACQUIRE flag-b lease=0\n");
	harness_expect_granted(c, "flag-b", &g);
	assert_int_equal(g.lease_ms, 1000);
	harness_send(c, "ACQUIRE flag-c lease=5s\n");
	harness_expect_granted(c, "flag-c", &g);
	assert_int_equal(g.lease_ms, 2000);
	harness_send(c, "TRY flag-d lease=1500\n");
	harness_expect_granted(c, "flag-d", &g);
	assert_int_equal(g.lease_ms, 1500);
	harness_send(c, "RENEW flag-d %s lease=1h\n", g.handle);
	snprintf(want, sizeof(want), "RENEWED flag-d fence=%llu lease=2000",
	    (unsigned long long)g.fence);
	harness_expect_line(c, want);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		HARNESS_TEST(test_locking_waiters_are_granted_in_arrival_order),
		HARNESS_TEST(
		    test_locking_acquire_times_out_after_its_wait_and_leaves_the_queue),
		HARNESS_TEST(
		    test_locking_wait_zero_fails_at_once_when_held_and_grants_when_free),
		HARNESS_TEST(
		    test_locking_acquire_granted_within_its_wait_is_granted),
		HARNESS_TEST(test_locking_try_never_queues),
		HARNESS_TEST(
		    test_locking_expired_lease_passes_to_a_waiter_nobody_touches),
		HARNESS_TEST(
		    test_locking_renew_and_release_after_expiry_are_stale),
		HARNESS_TEST(
		    test_locking_right_fence_with_a_wrong_secret_is_refused),
		HARNESS_TEST(
		    test_locking_any_connection_with_the_handle_renews_and_releases),
		HARNESS_TEST(
		    test_locking_onclose_release_frees_the_lock_on_disconnect),
		HARNESS_TEST(
		    test_locking_default_onclose_keeps_the_lease_after_disconnect),
		HARNESS_TEST(
		    test_locking_a_waiter_that_disconnects_is_never_granted),
		HARNESS_TEST(
		    test_locking_lease_is_defaulted_to_30s_and_capped_at_5m),
		HARNESS_TEST(
		    test_locking_lease_flags_set_the_default_and_the_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
