/*
 * test_takeover.c - the take-over rule of cluster mode (core/takeover.c),
 * alone: what it keeps and changes of a record, and the promise it exists
 * for, checked over every combination of a small grid: two machines whose
 * clocks disagree by any offset, a lease granted or renewed at any time
 * before the old leader stops, a take-over at any time after - no lease
 * ends, in real time, earlier than the old leader would have ended it.
 * The guard: a rule that keeps the stored expiry (a clock reading from
 * the other machine) must break that promise somewhere on the grid.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/takeover.h"

#define LEADER_LEASE 3000
#define MAX_DELAY 60000

static void
broken_keep_expiry(struct core_record *rec, core_time now, int64_t ll,
    int64_t max_delay)
{
	(void)now;
	(void)ll;
	(void)max_delay;
	rec->onclose_release = false;
}

typedef void (*rule_fn)(struct core_record *, core_time, int64_t, int64_t);

/*
 * Real time r; the old leader's clock reads r + old_off, the new one's
 * r + new_off.  The old leader renews a lease of `lease` at real time
 * `renew`, with its last keep-alive sent at real time `keepalive`
 * (>= renew: a leader serves only then); it serves until keepalive +
 * LEADER_LEASE at the latest, so the new leader, which can win only
 * after etcd let the old lease go, takes over at real time `takeover` >=
 * that.  Returns how many points of the grid break the promise.
 */
static int
violations(rule_fn rule)
{
	static const int64_t offsets[] = { -100000, -5000, 0, 5000, 100000 };
	static const int64_t leases[] = { 1, 1000, 30000 };
	int bad = 0;
	size_t a, b, c;
	int64_t renew, gap, late;

	for (a = 0; a < 5; a++)
		for (b = 0; b < 5; b++)
			for (c = 0; c < 3; c++)
				for (renew = 0; renew <= 4000; renew += 1000)
					for (gap = 0; gap <= 3000;
					    gap += 1500)
						for (late = 0; late <= 6000;
						    late += 3000) {
		int64_t old_off = offsets[a], new_off = offsets[b];
		int64_t lease = leases[c];
		int64_t keepalive = renew + gap;
		int64_t takeover = keepalive + LEADER_LEASE + late;
		int64_t old_end = renew + lease;   /* real time */
		struct core_record rec;

		memset(&rec, 0, sizeof(rec));
		rec.fence = 9;
		rec.lease_ms = lease;
		rec.expiry = renew + old_off + lease;  /* old clock */
		rule(&rec, takeover + new_off, LEADER_LEASE, MAX_DELAY);
		if (rec.expiry - new_off < old_end)
			bad++;
	}
	return bad;
}

static void
test_takeover_no_lease_ends_earlier_than_on_the_old_leader(void **state)
{
	(void)state;
	assert_int_equal(violations(core_takeover_record), 0);
}

static void
test_takeover_guard_keeping_the_stored_expiry_is_caught(void **state)
{
	(void)state;
	assert_true(violations(broken_keep_expiry) > 0);
}

/* A running lock-delay is a clock reading of the old leader: it runs again
 * from now, for the longest delay there can be plus the leader lease. */
static void
test_takeover_restarts_a_running_lock_delay_in_full(void **state)
{
	struct core_record rec;

	(void)state;
	memset(&rec, 0, sizeof(rec));
	rec.delay_until = 5;      /* a free name in lock-delay */
	core_takeover_record(&rec, 10000, LEADER_LEASE, MAX_DELAY);
	assert_int_equal(rec.fence, 0);
	assert_int_equal(rec.expiry, 0);
	assert_int_equal(rec.delay_until, 10000 + MAX_DELAY + LEADER_LEASE);
	rec.fence = 3;            /* a holder while a delay runs */
	rec.lease_ms = 1000;
	rec.delay_until = 99999999;
	core_takeover_record(&rec, 20000, LEADER_LEASE, MAX_DELAY);
	assert_int_equal(rec.expiry, 20000 + 1000 + LEADER_LEASE);
	assert_int_equal(rec.delay_until, 20000 + MAX_DELAY + LEADER_LEASE);
	memset(&rec, 0, sizeof(rec));
	rec.fence = 4;            /* no delay: none is made up */
	rec.lease_ms = 1000;
	core_takeover_record(&rec, 20000, LEADER_LEASE, MAX_DELAY);
	assert_int_equal(rec.delay_until, 0);
}

static void
test_takeover_keeps_the_handle_and_ends_onclose(void **state)
{
	struct core_session s;
	struct core_record rec;

	(void)state;
	memset(&rec, 0, sizeof(rec));
	rec.fence = 41;
	rec.secret = 0xabcdef;
	rec.lease_ms = 2000;
	rec.expiry = 123;
	rec.onclose_release = true;
	rec.owner_id = 7;
	rec.owner = &s;
	core_takeover_record(&rec, 10000, LEADER_LEASE, MAX_DELAY);
	assert_int_equal(rec.fence, 41);
	assert_int_equal(rec.secret, 0xabcdef);
	assert_int_equal(rec.lease_ms, 2000);
	assert_int_equal(rec.expiry, 10000 + 2000 + LEADER_LEASE);
	assert_false(rec.onclose_release);
	assert_int_equal(rec.owner_id, 0);
	assert_null(rec.owner);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    test_takeover_no_lease_ends_earlier_than_on_the_old_leader),
		cmocka_unit_test(
		    test_takeover_guard_keeping_the_stored_expiry_is_caught),
		cmocka_unit_test(
		    test_takeover_keeps_the_handle_and_ends_onclose),
		cmocka_unit_test(
		    test_takeover_restarts_a_running_lock_delay_in_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
