/*
 * test_core.c - the truth tables of the rules in core_rules_std: fences,
 * expiry, decide, grant, holder checks, renew, release, reclaim and the
 * effective lease.  Each rule is a pure function over one struct core_lock,
 * so every case here builds a lock by hand, calls the rule and compares the
 * whole lock afterwards; nothing here touches the lock table.  The table's
 * own behaviour is in test_table.c, and the properties over interleavings
 * are in tests/model/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/core.h"

/* A held lock: fence 7, secret 0x5ec, lease 100 ms ending at 1000. */
static struct core_lock
held_lock(void)
{
	struct core_lock lock;

	memset(&lock, 0, sizeof(lock));
	lock.fence = 7;
	lock.secret = 0x5ec;
	lock.expiry = 1000;
	lock.lease_ms = 100;
	return lock;
}

static struct core_lock
free_lock(void)
{
	struct core_lock lock;

	memset(&lock, 0, sizeof(lock));
	return lock;
}

static void
assert_lock_equal(const struct core_lock *a, const struct core_lock *b)
{
	assert_int_equal(a->fence, b->fence);
	assert_int_equal(a->secret, b->secret);
	assert_int_equal(a->expiry, b->expiry);
	assert_int_equal(a->lease_ms, b->lease_ms);
}

static void
assert_lock_free(const struct core_lock *lock)
{
	struct core_lock empty = free_lock();

	assert_lock_equal(lock, &empty);
}

/* ---- fences ----------------------------------------------------------- */

static void
test_core_fence_next_is_the_strict_successor(void **state)
{
	static const uint64_t lasts[] = { 0, 1, 2, 41, 1ULL << 32,
	    CORE_FENCE_MAX - 2, CORE_FENCE_MAX - 1 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(lasts) / sizeof(lasts[0]); i++) {
		uint64_t next = 0;

		assert_int_equal(core_rule_fence_next(lasts[i], &next),
		    CORE_OK);
		assert_true(next == lasts[i] + 1);
	}
}

static void
test_core_fence_next_overflows_at_the_maximum_and_leaves_the_output_untouched(
    void **state)
{
	static const uint64_t lasts[] = { CORE_FENCE_MAX,
	    CORE_FENCE_MAX + 1, UINT64_MAX };
	size_t i;

	(void)state;
	assert_true(CORE_FENCE_MAX == (1ULL << 63) - 1);
	for (i = 0; i < sizeof(lasts) / sizeof(lasts[0]); i++) {
		uint64_t next = 0xfeedULL;

		assert_int_equal(core_rule_fence_next(lasts[i], &next),
		    CORE_ERR_OVERFLOW);
		assert_true(next == 0xfeedULL);
	}
}

static void
test_core_first_fence_granted_is_one(void **state)
{
	struct core_lock lock = free_lock();
	uint64_t hwm = 0;

	(void)state;
	assert_int_equal(core_rule_grant(&lock, &hwm, 0, 10, 99), CORE_OK);
	assert_int_equal(lock.fence, 1);
	assert_int_equal(hwm, 1);
}

/* ---- expiry ----------------------------------------------------------- */

static void
test_core_lease_expires_inclusively_at_the_boundary(void **state)
{
	struct core_lock lock = held_lock();

	(void)state;
	assert_false(core_rule_lease_expired(&lock, INT64_MIN));
	assert_false(core_rule_lease_expired(&lock, 0));
	assert_false(core_rule_lease_expired(&lock, lock.expiry - 1));
	assert_true(core_rule_lease_expired(&lock, lock.expiry));
	assert_true(core_rule_lease_expired(&lock, lock.expiry + 1));
	assert_true(core_rule_lease_expired(&lock, CORE_NEVER));
}

static void
test_core_free_lock_is_never_expired(void **state)
{
	struct core_lock lock = free_lock();

	(void)state;
	assert_false(core_rule_lease_expired(&lock, 0));
	assert_false(core_rule_lease_expired(&lock, 1000));
	assert_false(core_rule_lease_expired(&lock, CORE_NEVER));
	/* Whatever stale fields a free lock carries. */
	lock.expiry = 5;
	lock.secret = 3;
	assert_false(core_rule_lease_expired(&lock, 10));
}

/* ---- decide ----------------------------------------------------------- */

static void
test_core_decide_grants_a_free_lock(void **state)
{
	struct core_lock lock = free_lock();

	(void)state;
	assert_true(core_rule_decide(&lock, 0));
	assert_true(core_rule_decide(&lock, CORE_NEVER));
}

static void
test_core_decide_refuses_a_held_live_lease(void **state)
{
	struct core_lock lock = held_lock();

	(void)state;
	assert_false(core_rule_decide(&lock, 0));
	assert_false(core_rule_decide(&lock, lock.expiry - 1));
}

static void
test_core_decide_grants_a_held_expired_lease(void **state)
{
	struct core_lock lock = held_lock();

	(void)state;
	assert_true(core_rule_decide(&lock, lock.expiry));
	assert_true(core_rule_decide(&lock, lock.expiry + 1000));
}

/* ---- grant ------------------------------------------------------------ */

static void
test_core_grant_mints_hwm_plus_one_and_sets_the_new_holder(void **state)
{
	struct core_lock lock = free_lock();
	uint64_t hwm = 41;

	(void)state;
	assert_int_equal(core_rule_grant(&lock, &hwm, 500, 250, 0xabc),
	    CORE_OK);
	assert_int_equal(lock.fence, 42);
	assert_int_equal(hwm, 42);
	assert_int_equal(lock.secret, 0xabc);
	assert_int_equal(lock.lease_ms, 250);
	assert_int_equal(lock.expiry, 750);
}

static void
test_core_grant_of_an_expired_lease_replaces_the_holder(void **state)
{
	struct core_lock lock = held_lock();
	uint64_t hwm = 9;

	(void)state;
	assert_int_equal(core_rule_grant(&lock, &hwm, lock.expiry, 10, 1),
	    CORE_OK);
	assert_int_equal(lock.fence, 10);
	assert_int_equal(hwm, 10);
	assert_int_equal(lock.secret, 1);
	assert_int_equal(lock.expiry, 1010);
}

static void
test_core_grant_refuses_a_live_lease_and_changes_nothing(void **state)
{
	struct core_lock lock = held_lock(), before = lock;
	uint64_t hwm = 7;

	(void)state;
	assert_int_equal(core_rule_grant(&lock, &hwm, lock.expiry - 1, 10, 1),
	    CORE_ERR_CONFLICT);
	assert_lock_equal(&lock, &before);
	assert_int_equal(hwm, 7);
}

static void
test_core_grant_at_the_last_fence_overflows_and_changes_nothing(
    void **state)
{
	struct core_lock lock = free_lock(), before = lock;
	uint64_t hwm = CORE_FENCE_MAX;

	(void)state;
	assert_int_equal(core_rule_grant(&lock, &hwm, 0, 10, 1),
	    CORE_ERR_OVERFLOW);
	assert_lock_equal(&lock, &before);
	assert_true(hwm == CORE_FENCE_MAX);

	/* The fence just below the maximum is still granted, once. */
	hwm = CORE_FENCE_MAX - 1;
	assert_int_equal(core_rule_grant(&lock, &hwm, 0, 10, 1), CORE_OK);
	assert_true(lock.fence == CORE_FENCE_MAX);
}

static void
test_core_grant_expiry_saturates_at_the_end_of_time(void **state)
{
	struct core_lock lock = free_lock();
	uint64_t hwm = 0;

	(void)state;
	assert_int_equal(core_rule_grant(&lock, &hwm, CORE_NEVER - 5, 10, 1),
	    CORE_OK);
	assert_true(lock.expiry == CORE_NEVER - 1);
}

/* ---- is_holder -------------------------------------------------------- */

static void
test_core_is_holder_requires_fence_and_secret_of_a_held_lock(void **state)
{
	struct core_lock lock = held_lock(), freed = free_lock();
	struct core_handle right = { 7, 0x5ec };
	struct core_handle wrong_fence = { 8, 0x5ec };
	struct core_handle wrong_secret = { 7, 0x5ed };
	struct core_handle wrong_both = { 6, 0 };
	struct core_handle zero = { 0, 0 };

	(void)state;
	assert_true(core_rule_is_holder(&lock, right));
	assert_false(core_rule_is_holder(&lock, wrong_fence));
	assert_false(core_rule_is_holder(&lock, wrong_secret));
	assert_false(core_rule_is_holder(&lock, wrong_both));
	assert_false(core_rule_is_holder(&lock, zero));
	/* A free lock has no holder, not even one with the zero handle. */
	assert_false(core_rule_is_holder(&freed, zero));
	assert_false(core_rule_is_holder(&freed, right));
}

static void
test_core_is_holder_does_not_look_at_expiry(void **state)
{
	struct core_lock lock = held_lock();
	struct core_handle right = { 7, 0x5ec };

	(void)state;
	/* Expiry is the table's business: it reclaims before asking. */
	lock.expiry = 0;
	assert_true(core_rule_is_holder(&lock, right));
}

/* ---- renew ------------------------------------------------------------ */

static void
test_core_renew_extends_the_holders_lease_from_now(void **state)
{
	struct core_lock lock = held_lock();
	struct core_handle right = { 7, 0x5ec };

	(void)state;
	assert_int_equal(core_rule_renew(&lock, right, 990, 500), CORE_OK);
	assert_int_equal(lock.fence, 7);
	assert_int_equal(lock.secret, 0x5ec);
	assert_int_equal(lock.lease_ms, 500);
	assert_int_equal(lock.expiry, 1490);
	/* A shorter lease shortens it: the lease is now + lease_ms. */
	assert_int_equal(core_rule_renew(&lock, right, 1000, 1), CORE_OK);
	assert_int_equal(lock.expiry, 1001);
}

static void
test_core_stale_renew_is_conflict_and_changes_nothing(void **state)
{
	struct core_handle stale[] = { { 6, 0x5ec }, { 7, 0x5ed },
	    { 8, 0x5ec }, { 0, 0 } };
	struct core_lock freed = free_lock(), freed_before = freed;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(stale) / sizeof(stale[0]); i++) {
		struct core_lock lock = held_lock(), before = lock;

		assert_int_equal(core_rule_renew(&lock, stale[i], 990, 500),
		    CORE_ERR_CONFLICT);
		assert_lock_equal(&lock, &before);
		assert_int_equal(core_rule_renew(&freed, stale[i], 990, 500),
		    CORE_ERR_CONFLICT);
		assert_lock_equal(&freed, &freed_before);
	}
}

/* ---- release ---------------------------------------------------------- */

static void
test_core_release_by_the_holder_frees_the_lock(void **state)
{
	struct core_lock lock = held_lock();
	struct core_handle right = { 7, 0x5ec };

	(void)state;
	assert_true(core_rule_release(&lock, right));
	assert_lock_free(&lock);
}

static void
test_core_stale_release_is_a_no_op_and_idempotent(void **state)
{
	struct core_handle stale[] = { { 6, 0x5ec }, { 7, 0x5ed },
	    { 8, 0x5ec }, { 0, 0 } };
	struct core_handle right = { 7, 0x5ec };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(stale) / sizeof(stale[0]); i++) {
		struct core_lock lock = held_lock(), before = lock;

		assert_false(core_rule_release(&lock, stale[i]));
		assert_false(core_rule_release(&lock, stale[i]));
		assert_lock_equal(&lock, &before);
	}

	/* The holder's own release, once done, is stale the second time. */
	{
		struct core_lock lock = held_lock();

		assert_true(core_rule_release(&lock, right));
		assert_false(core_rule_release(&lock, right));
		assert_lock_free(&lock);
	}
}

/* ---- reclaim ---------------------------------------------------------- */

static void
test_core_reclaim_frees_an_expired_lease_and_keeps_the_counter(void **state)
{
	struct core_lock lock = held_lock();
	uint64_t hwm = 7;

	(void)state;
	assert_true(core_rule_reclaim_if_expired(&lock, lock.expiry));
	assert_lock_free(&lock);
	assert_int_equal(hwm, 7);
	/* The next grant continues above the high-water mark. */
	assert_int_equal(core_rule_grant(&lock, &hwm, 1000, 10, 2), CORE_OK);
	assert_int_equal(lock.fence, 8);
	assert_int_equal(hwm, 8);
}

static void
test_core_reclaim_leaves_a_live_lease_and_a_free_lock_alone(void **state)
{
	struct core_lock lock = held_lock(), before = lock;
	struct core_lock freed = free_lock(), freed_before = freed;

	(void)state;
	assert_false(core_rule_reclaim_if_expired(&lock, lock.expiry - 1));
	assert_lock_equal(&lock, &before);
	assert_false(core_rule_reclaim_if_expired(&freed, CORE_NEVER));
	assert_lock_equal(&freed, &freed_before);
}

/* ---- effective lease -------------------------------------------------- */

static void
test_core_lease_effective_defaults_caps_and_refuses_negative(void **state)
{
	struct core_config config;
	int64_t lease = -7;

	(void)state;
	core_config_defaults(&config);
	assert_int_equal(config.default_lease_ms, 30000);
	assert_int_equal(config.max_lease_ms, 300000);

	assert_int_equal(core_lease_effective(&config, 0, &lease), CORE_OK);
	assert_int_equal(lease, 30000);
	assert_int_equal(core_lease_effective(&config, 1, &lease), CORE_OK);
	assert_int_equal(lease, 1);
	assert_int_equal(core_lease_effective(&config, 300000, &lease),
	    CORE_OK);
	assert_int_equal(lease, 300000);
	assert_int_equal(core_lease_effective(&config, 300001, &lease),
	    CORE_OK);
	assert_int_equal(lease, 300000);
	assert_int_equal(core_lease_effective(&config, INT64_MAX, &lease),
	    CORE_OK);
	assert_int_equal(lease, 300000);

	lease = -7;
	assert_int_equal(core_lease_effective(&config, -1, &lease),
	    CORE_ERR_BADARG);
	assert_int_equal(core_lease_effective(&config, INT64_MIN, &lease),
	    CORE_ERR_BADARG);
	assert_int_equal(lease, -7);
}

/* ---- the table of rules ----------------------------------------------- */

static void
test_core_rules_std_is_made_of_the_documented_rules(void **state)
{
	(void)state;
	assert_true(core_rules_std.fence_next == core_rule_fence_next);
	assert_true(core_rules_std.lease_expired == core_rule_lease_expired);
	assert_true(core_rules_std.decide == core_rule_decide);
	assert_true(core_rules_std.grant == core_rule_grant);
	assert_true(core_rules_std.is_holder == core_rule_is_holder);
	assert_true(core_rules_std.renew == core_rule_renew);
	assert_true(core_rules_std.release == core_rule_release);
	assert_true(core_rules_std.reclaim_if_expired ==
	    core_rule_reclaim_if_expired);
	assert_non_null(core_rules_std.next_waiter);
	assert_true(core_rules_std.restore_limit == core_rule_restore_limit);
	assert_true(core_rules_std.restore_refuses ==
	    core_rule_restore_refuses);
}

/* A fall-back keeps the waiters' limit only for a name idle but for them:
 * no record, or only an ended lock-delay's; any other record tells it. */
static void
test_core_restore_limit_keeps_the_waiters_of_an_idle_name(void **state)
{
	(void)state;
	/* No record, limit-2 waiters: 2, not 1. */
	assert_int_equal(core_rule_restore_limit(1, 2, 0, false, false), 2);
	/* Only an ended lock-delay of limit 2, plain waiters: 1. */
	assert_int_equal(core_rule_restore_limit(2, 1, 1, false, false), 1);
	/* A holder, or a lock-delay still running: the records. */
	assert_int_equal(core_rule_restore_limit(2, 1, 1, true, false), 2);
	assert_int_equal(core_rule_restore_limit(2, 1, 1, false, true), 2);
	/* Nobody waits: the records. */
	assert_int_equal(core_rule_restore_limit(3, 0, 1, false, false), 3);
	assert_int_equal(core_rule_restore_limit(1, 0, 0, false, false), 1);
	/* The waiters are refused exactly when the limits differ. */
	assert_true(core_rule_restore_refuses(2, 1));
	assert_true(core_rule_restore_refuses(1, 2));
	assert_false(core_rule_restore_refuses(2, 2));
	assert_false(core_rule_restore_refuses(1, 0));
}

static void
test_core_next_waiter_is_the_head_of_the_queue(void **state)
{
	struct core_entry *e = calloc(1, sizeof(*e) + 2);
	struct core_multi multi;
	struct core_link *q = &multi.queue;
	struct core_waiter w1, w2;

	(void)state;
	assert_non_null(e);
	memset(&multi, 0, sizeof(multi));
	memset(&w1, 0, sizeof(w1));
	memset(&w2, 0, sizeof(w2));
	/* Nobody has waited: no queue at all. */
	assert_null(core_rules_std.next_waiter(e));
	e->multi = &multi;
	q->prev = q->next = q;
	assert_null(core_rules_std.next_waiter(e));

	/* queue: w1, w2 */
	q->next = &w1.queue_link;
	w1.queue_link.prev = q;
	w1.queue_link.next = &w2.queue_link;
	w2.queue_link.prev = &w1.queue_link;
	w2.queue_link.next = q;
	q->prev = &w2.queue_link;
	assert_ptr_equal(core_rules_std.next_waiter(e), &w1);
	free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_core_fence_next_is_the_strict_successor),
		cmocka_unit_test(
		    test_core_fence_next_overflows_at_the_maximum_and_leaves_the_output_untouched),
		cmocka_unit_test(test_core_first_fence_granted_is_one),
		cmocka_unit_test(
		    test_core_lease_expires_inclusively_at_the_boundary),
		cmocka_unit_test(test_core_free_lock_is_never_expired),
		cmocka_unit_test(test_core_decide_grants_a_free_lock),
		cmocka_unit_test(test_core_decide_refuses_a_held_live_lease),
		cmocka_unit_test(test_core_decide_grants_a_held_expired_lease),
		cmocka_unit_test(
		    test_core_grant_mints_hwm_plus_one_and_sets_the_new_holder),
		cmocka_unit_test(
		    test_core_grant_of_an_expired_lease_replaces_the_holder),
		cmocka_unit_test(
		    test_core_grant_refuses_a_live_lease_and_changes_nothing),
		cmocka_unit_test(
		    test_core_grant_at_the_last_fence_overflows_and_changes_nothing),
		cmocka_unit_test(
		    test_core_grant_expiry_saturates_at_the_end_of_time),
		cmocka_unit_test(
		    test_core_is_holder_requires_fence_and_secret_of_a_held_lock),
		cmocka_unit_test(test_core_is_holder_does_not_look_at_expiry),
		cmocka_unit_test(
		    test_core_renew_extends_the_holders_lease_from_now),
		cmocka_unit_test(
		    test_core_stale_renew_is_conflict_and_changes_nothing),
		cmocka_unit_test(
		    test_core_release_by_the_holder_frees_the_lock),
		cmocka_unit_test(
		    test_core_stale_release_is_a_no_op_and_idempotent),
		cmocka_unit_test(
		    test_core_reclaim_frees_an_expired_lease_and_keeps_the_counter),
		cmocka_unit_test(
		    test_core_reclaim_leaves_a_live_lease_and_a_free_lock_alone),
		cmocka_unit_test(
		    test_core_lease_effective_defaults_caps_and_refuses_negative),
		cmocka_unit_test(
		    test_core_rules_std_is_made_of_the_documented_rules),
		cmocka_unit_test(test_core_next_waiter_is_the_head_of_the_queue),
		cmocka_unit_test(
		    test_core_restore_limit_keeps_the_waiters_of_an_idle_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
