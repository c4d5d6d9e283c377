/*
 * test_table.c - the lock table: entries, FIFO queues, deadlines, sessions,
 * limits, the allocation seam, the changed-records drain, recovery and
 * rollback, and the deadline heap underneath.  Every test drives the table
 * with explicit times and records what it reports through a small sink
 * (tests/lib/table_fixture.c, shared with test_holders.c), so each
 * expectation names the exact reply, in order.  The rules themselves
 * are in test_core.c; the properties over every interleaving are in
 * tests/model/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/core.h"
#include "core/heap.h"
#include "tests/lib/rng.h"
#include "tests/lib/table_fixture.h"

#define SESSIONS TABLE_FIXTURE_SESSIONS
#define LEASE 1000

/* ---- helpers ---------------------------------------------------------- */

static enum core_status
acquire(struct table_fixture *f, int s, const char *name, int64_t lease,
    int64_t wait, bool onclose, uint64_t tag, core_time now)
{
	struct core_acquire_args args = { .lease_ms = lease, .wait_ms = wait,
	    .onclose_release = onclose };

	return core_acquire(&f->table, &f->s[s], name, strlen(name), &args,
	    tag, now);
}

static enum core_status
try_lock(struct table_fixture *f, int s, const char *name, int64_t lease,
    uint64_t tag, core_time now)
{
	struct core_acquire_args args = { .lease_ms = lease };

	return core_try(&f->table, &f->s[s], name, strlen(name), &args, tag,
	    now);
}

static enum core_status
renew(struct table_fixture *f, int s, const char *name, struct core_handle h,
    int64_t lease, uint64_t tag, core_time now)
{
	return core_renew(&f->table, &f->s[s], name, strlen(name), h, lease,
	    tag, now);
}

static enum core_status
release(struct table_fixture *f, int s, const char *name, struct core_handle h,
    uint64_t tag, core_time now)
{
	return core_release(&f->table, &f->s[s], name, strlen(name), h, tag,
	    now);
}

static const struct core_entry *
find(struct table_fixture *f, const char *name)
{
	return core_table_find(&f->table, name, strlen(name));
}

/* Drains the changed records into f->changes and returns their count.
 * Plain locks only here: every record is under <name>. */
static size_t
drain(struct table_fixture *f)
{
	size_t i, n = table_fixture_drain(f);

	for (i = 0; i < n; i++)
		assert_int_equal(f->changes[i].key_fence, 0);
	return n;
}

static const struct table_fixture_change *
change_of(struct table_fixture *f, const char *name)
{
	size_t i;

	for (i = 0; i < f->nchanges; i++)
		if (strcmp(f->changes[i].name, name) == 0)
			return &f->changes[i];
	fail_msg("no change reported for %s", name);
	return NULL;
}

/* Checks reply i and returns it. */
static const struct table_fixture_reply *
expect(struct table_fixture *f, size_t i, enum core_reply_kind kind, int s,
    uint64_t tag, const char *name)
{
	const struct table_fixture_reply *g;

	if (i >= f->ngot)
		fail_msg("reply %zu expected, only %zu made", i, f->ngot);
	g = &f->got[i];
	if (g->r.kind != kind)
		fail_msg("reply %zu: kind %d, expected %d", i, (int)g->r.kind,
		    (int)kind);
	if (s < 0)
		assert_null(g->r.session);
	else
		assert_ptr_equal(g->r.session, &f->s[s]);
	assert_int_equal(g->r.tag, tag);
	if (name != NULL)
		assert_string_equal(g->name, name);
	return g;
}

static struct core_handle
handle_of(const struct table_fixture_reply *g)
{
	struct core_handle h = { g->r.fence, g->r.secret };

	assert_int_equal(g->r.kind, CORE_REPLY_GRANTED);
	return h;
}

/* Checks that the stats agree with what is in memory. */
static void
assert_books_balance(struct table_fixture *f)
{
	const struct core_table *t = &f->table;
	uint64_t locks = 0, held = 0, waiters = 0;
	uint32_t per_session[SESSIONS];
	size_t i;

	memset(per_session, 0, sizeof(per_session));
	for (i = 0; i < t->bucket_count; i++) {
		const struct core_entry *e;
		for (e = t->buckets[i]; e != NULL; e = e->hash_next) {
			const struct core_link *l;
			uint32_t q = 0;

			locks++;
			if (e->lock.fence != 0) {
				held++;
				assert_true(e->timer.slot != UINT32_MAX);
				assert_true(e->timer.when == e->lock.expiry);
			} else {
				assert_true(e->timer.slot == UINT32_MAX);
				assert_null(core_entry_owner(e));
			}
			for (l = core_entry_queue_first(e); l != core_entry_queue(e); l = l->next) {
				const struct core_waiter *w = (const void *)
				    ((const char *)l -
				    offsetof(struct core_waiter, queue_link));
				assert_ptr_equal(w->entry, e);
				if (w->session >= &f->s[0] &&
				    w->session < &f->s[SESSIONS])
					per_session[w->session - &f->s[0]]++;
				q++;
			}
			assert_int_equal(q, core_entry_queue_len(e));
			waiters += q;
		}
	}
	assert_int_equal(t->stats.locks, locks);
	assert_int_equal(t->stats.held, held);
	assert_int_equal(t->stats.waiters, waiters);
	for (i = 0; i < SESSIONS; i++)
		assert_int_equal(f->s[i].waiter_count, per_session[i]);
	/* The heap is ordered and every slot points back at itself. */
	for (i = 0; i < t->heap_len; i++) {
		assert_int_equal(t->heap[i]->slot, i);
		if (i > 0)
			assert_true(t->heap[(i - 1) / 2]->when <=
			    t->heap[i]->when);
	}
}

/* ---- acquiring -------------------------------------------------------- */

static void
test_table_acquire_of_a_free_lock_is_granted_at_once(void **state)
{
	struct table_fixture *f = *state;
	const struct table_fixture_reply *g;

	assert_int_equal(acquire(f, 0, "inventory/sku-42", 0, -1, false, 11,
	    500), CORE_OK);
	assert_int_equal(f->ngot, 1);
	g = expect(f, 0, CORE_REPLY_GRANTED, 0, 11, "inventory/sku-42");
	assert_int_equal(g->r.fence, 1);
	assert_true(g->r.secret == TABLE_FIXTURE_SECRET(1));
	assert_int_equal(g->r.lease_ms, 30000);
	assert_int_equal(g->r.waited_ms, 0);
	assert_non_null(find(f, "inventory/sku-42"));
	assert_int_equal(find(f, "inventory/sku-42")->lock.expiry, 30500);
	assert_int_equal(f->table.stats.held, 1);
	assert_int_equal(f->table.stats.granted, 1);
	assert_int_equal(core_next_deadline(&f->table), 30500);
	assert_books_balance(f);
}

static void
test_table_bad_arguments_are_badarg_and_make_no_entry(void **state)
{
	struct table_fixture *f = *state;
	struct core_acquire_args args = { .lease_ms = 10, .wait_ms = -1 };
	struct core_handle h = { 1, 1 };
	char long_name[CORE_NAME_MAX + 2];
	size_t i;

	memset(long_name, 'x', sizeof(long_name));
	assert_int_equal(acquire(f, 0, "a", -1, -1, false, 1, 0),
	    CORE_ERR_BADARG);
	assert_int_equal(acquire(f, 0, "a", 10, -2, false, 2, 0),
	    CORE_ERR_BADARG);
	assert_int_equal(core_acquire(&f->table, &f->s[0], "", 0, &args, 3, 0),
	    CORE_ERR_BADARG);
	assert_int_equal(core_acquire(&f->table, &f->s[0], long_name,
	    CORE_NAME_MAX + 1, &args, 4, 0), CORE_ERR_BADARG);
	assert_int_equal(try_lock(f, 0, "a", -1, 5, 0), CORE_ERR_BADARG);
	assert_int_equal(renew(f, 0, "a", h, -1, 6, 0), CORE_ERR_BADARG);
	assert_int_equal(core_release(&f->table, &f->s[0], "", 0, h, 7, 0),
	    CORE_ERR_BADARG);
	assert_int_equal(f->ngot, 7);
	for (i = 0; i < 7; i++)
		expect(f, i, CORE_REPLY_BADARG, 0, i + 1, NULL);
	assert_int_equal(f->table.stats.locks, 0);

	/* The longest name is fine. */
	assert_int_equal(core_acquire(&f->table, &f->s[0], long_name,
	    CORE_NAME_MAX, &args, 8, 0), CORE_OK);
	expect(f, 7, CORE_REPLY_GRANTED, 0, 8, NULL);
	assert_int_equal(strlen(f->got[7].name), CORE_NAME_MAX);
}

static void
test_table_acquire_defaults_and_caps_the_lease(void **state)
{
	struct table_fixture *f = *state;

	acquire(f, 0, "a", 0, -1, false, 1, 0);
	acquire(f, 0, "b", 1000000000, -1, false, 2, 0);
	acquire(f, 1, "b", 1000000000, -1, false, 3, 0);
	assert_int_equal(f->got[0].r.lease_ms, 30000);
	assert_int_equal(f->got[1].r.lease_ms, 300000);
	assert_int_equal(find(f, "b")->lock.expiry, 300000);
	/* The waiter's lease is capped too when it is finally granted. */
	core_tick(&f->table, 300000);
	expect(f, 2, CORE_EVENT_RECLAIMED, -1, 0, "a");
	expect(f, 3, CORE_EVENT_RECLAIMED, -1, 0, "b");
	expect(f, 4, CORE_REPLY_GRANTED, 1, 3, "b");
	assert_int_equal(f->got[4].r.lease_ms, 300000);
	assert_int_equal(f->got[4].r.waited_ms, 300000);
}

static void
test_table_waiters_are_granted_in_strict_fifo_order(void **state)
{
	struct table_fixture *f = *state;
	struct core_handle h;
	size_t i, next = 1;
	int holder = 0;
	const int waiters = 50;

	acquire(f, 0, "q", LEASE, -1, false, 1000, 0);
	h = handle_of(&f->got[0]);
	/* 50 waiters from every session, mixed finite and forever waits. */
	for (i = 0; i < (size_t)waiters; i++)
		assert_int_equal(acquire(f, (int)(i % SESSIONS), "q", LEASE,
		    i % 2 ? 100000 : -1, false, 1 + i, (core_time)i), CORE_OK);
	assert_int_equal(f->ngot, 1);
	assert_int_equal(core_entry_queue_len(find(f, "q")), waiters);
	assert_int_equal(f->table.stats.waiters, waiters);
	assert_books_balance(f);

	/* Each release hands the lock to the head, and only to the head. */
	for (i = 0; i < (size_t)waiters; i++) {
		const struct table_fixture_reply *g;
		size_t before = f->ngot;

		release(f, holder, "q", h, 2000 + i, 100 + (core_time)i);
		assert_int_equal(f->ngot, before + 2);
		expect(f, next++, CORE_REPLY_RELEASED, holder, 2000 + i, "q");
		holder = (int)(i % SESSIONS);
		g = expect(f, next++, CORE_REPLY_GRANTED, holder, 1 + i, "q");
		assert_int_equal(g->r.fence, 2 + i);
		assert_int_equal(g->r.waited_ms, 100);
		assert_int_equal(core_entry_queue_len(find(f, "q")), waiters - 1 - i);
		h = handle_of(g);
	}
	release(f, holder, "q", h, 0, 1000);
	assert_int_equal(f->table.stats.held, 0);
	assert_int_equal(f->table.stats.waiters, 0);
	drain(f);
	assert_int_equal(f->table.stats.locks, 0);
}

static void
test_table_release_hands_the_lock_to_the_next_waiter_at_once(void **state)
{
	struct table_fixture *f = *state;
	const struct table_fixture_reply *g;

	acquire(f, 0, "a", LEASE, -1, false, 1, 0);
	acquire(f, 1, "a", 500, -1, false, 2, 10);
	assert_int_equal(release(f, 0, "a", handle_of(&f->got[0]), 3, 20),
	    CORE_OK);
	g = expect(f, 1, CORE_REPLY_RELEASED, 0, 3, "a");
	assert_int_equal(g->r.fence, 1);
	assert_int_equal(g->r.held_ms, 20);
	g = expect(f, 2, CORE_REPLY_GRANTED, 1, 2, "a");
	assert_int_equal(g->r.fence, 2);
	assert_int_equal(g->r.waited_ms, 10);
	assert_int_equal(find(f, "a")->lock.expiry, 520);
	assert_int_equal(f->table.stats.released, 1);
}

/* ---- deadlines -------------------------------------------------------- */

static void
test_table_waiter_times_out_and_leaves_the_queue(void **state)
{
	struct table_fixture *f = *state;

	acquire(f, 0, "a", LEASE, -1, false, 1, 0);
	acquire(f, 1, "a", LEASE, 100, false, 2, 0);
	acquire(f, 2, "a", LEASE, -1, false, 3, 10);
	assert_int_equal(core_tick(&f->table, 50), 100);
	assert_int_equal(f->ngot, 1);
	assert_int_equal(core_tick(&f->table, 99), 100);
	assert_int_equal(core_tick(&f->table, 100), LEASE);
	assert_int_equal(f->ngot, 2);
	expect(f, 1, CORE_REPLY_TIMEOUT, 1, 2, "a");
	assert_int_equal(core_entry_queue_len(find(f, "a")), 1);
	assert_int_equal(f->table.stats.timeouts, 1);
	assert_int_equal(f->s[1].waiter_count, 0);
	assert_books_balance(f);

	/* The one who left is never granted; the next in line is. */
	release(f, 0, "a", handle_of(&f->got[0]), 4, 200);
	expect(f, 2, CORE_REPLY_RELEASED, 0, 4, "a");
	expect(f, 3, CORE_REPLY_GRANTED, 2, 3, "a");
	assert_int_equal(f->ngot, 4);
	assert_int_equal(core_tick(&f->table, 10000), CORE_NEVER);
	expect(f, 4, CORE_EVENT_RECLAIMED, -1, 0, "a");
	assert_int_equal(f->ngot, 5);
}

static void
test_table_tick_returns_the_earliest_pending_deadline(void **state)
{
	struct table_fixture *f = *state;

	assert_int_equal(core_tick(&f->table, 0), CORE_NEVER);
	assert_int_equal(core_next_deadline(&f->table), CORE_NEVER);
	acquire(f, 0, "a", 700, -1, false, 1, 0);     /* lease to 700 */
	acquire(f, 0, "b", 400, -1, false, 2, 0);     /* lease to 400 */
	acquire(f, 1, "a", LEASE, 300, false, 3, 0);  /* wait to 300 */
	acquire(f, 2, "b", LEASE, 50, false, 4, 200); /* wait to 250 */
	acquire(f, 3, "b", LEASE, -1, false, 5, 0);   /* no deadline */
	assert_int_equal(core_next_deadline(&f->table), 250);
	assert_int_equal(core_tick(&f->table, 249), 250);
	assert_int_equal(core_tick(&f->table, 250), 300);
	assert_int_equal(core_tick(&f->table, 300), 400);
	/* At 400 "b" passes to session 3 with a lease to 1400. */
	assert_int_equal(core_tick(&f->table, 400), 700);
	assert_int_equal(core_tick(&f->table, 700), 1400);
	assert_int_equal(core_tick(&f->table, 1400), CORE_NEVER);
	assert_books_balance(f);
}

static void
test_table_wait_zero_fails_at_once_when_held(void **state)
{
	struct table_fixture *f = *state;

	acquire(f, 0, "a", LEASE, -1, false, 1, 0);
	assert_int_equal(acquire(f, 1, "a", LEASE, 0, false, 2, 5), CORE_OK);
	expect(f, 1, CORE_REPLY_TIMEOUT, 1, 2, "a");
	assert_int_equal(core_entry_queue_len(find(f, "a")), 0);
	assert_int_equal(f->table.stats.timeouts, 1);
	assert_int_equal(f->table.stats.waiters, 0);
}

static void
test_table_wait_zero_succeeds_when_free_or_expired(void **state)
{
	struct table_fixture *f = *state;

	acquire(f, 0, "a", LEASE, 0, false, 1, 0);
	expect(f, 0, CORE_REPLY_GRANTED, 0, 1, "a");
	/* At the expiry instant the lease is over: reclaimed, then granted. */
	acquire(f, 1, "a", LEASE, 0, false, 2, LEASE);
	expect(f, 1, CORE_EVENT_RECLAIMED, -1, 0, "a");
	expect(f, 2, CORE_REPLY_GRANTED, 1, 2, "a");
	assert_int_equal(f->got[2].r.fence, 2);
}

static void
test_table_waiter_timeout_after_its_grant_does_not_disturb_the_holder(
    void **state)
{
	struct table_fixture *f = *state;

	acquire(f, 0, "a", 100, -1, false, 1, 0);
	acquire(f, 1, "a", LEASE, 500, false, 2, 0);
	release(f, 0, "a", handle_of(&f->got[0]), 3, 50);
	expect(f, 2, CORE_REPLY_GRANTED, 1, 2, "a");
	/* The wait limit (500) is gone with the waiter; the lease is next. */
	assert_int_equal(core_tick(&f->table, 500), 1050);
	assert_int_equal(core_tick(&f->table, 600), 1050);
	assert_int_equal(f->ngot, 3);
	assert_int_equal(find(f, "a")->lock.fence, 2);
	assert_int_equal(renew(f, 1, "a", handle_of(&f->got[2]), LEASE, 4,
	    700), CORE_OK);
}

static void
test_table_expiry_hands_off_to_the_next_waiter_at_exactly_the_expiry_instant(
    void **state)
{
	struct table_fixture *f = *state;
	const struct table_fixture_reply *g;

	acquire(f, 0, "a", 100, -1, false, 1, 0);
	acquire(f, 1, "a", LEASE, -1, false, 2, 0);
	assert_int_equal(core_tick(&f->table, 99), 100);
	assert_int_equal(f->ngot, 1);
	assert_int_equal(core_tick(&f->table, 100), 1100);
	g = expect(f, 1, CORE_EVENT_RECLAIMED, -1, 0, "a");
	assert_int_equal(g->r.fence, 1);
	assert_int_equal(g->r.held_ms, 100);
	g = expect(f, 2, CORE_REPLY_GRANTED, 1, 2, "a");
	assert_int_equal(g->r.fence, 2);
	assert_int_equal(g->r.waited_ms, 100);
	assert_int_equal(f->table.stats.reclaimed, 1);
	assert_int_equal(f->ngot, 3);
}

static void
test_table_expiry_and_a_wait_limit_at_the_same_instant_grant_the_waiter(
    void **state)
{
	struct table_fixture *f = *state;

	acquire(f, 0, "a", 100, -1, false, 1, 0);
	acquire(f, 1, "a", LEASE, 100, false, 2, 0);
	core_tick(&f->table, 100);
	expect(f, 1, CORE_EVENT_RECLAIMED, -1, 0, "a");
	expect(f, 2, CORE_REPLY_GRANTED, 1, 2, "a");
	assert_int_equal(f->ngot, 3);
	assert_int_equal(f->table.stats.timeouts, 0);
}

static void
test_table_hand_off_times_out_a_waiter_whose_wait_elapsed_before_its_tick(
    void **state)
{
	struct table_fixture *f = *state;

	acquire(f, 0, "a", LEASE, -1, false, 1, 0);
	acquire(f, 1, "a", LEASE, 50, false, 2, 0);   /* waits until 50 */
	acquire(f, 2, "a", LEASE, -1, false, 3, 0);
	/* No tick ran at 50; the lock comes free at 60. */
	release(f, 0, "a", handle_of(&f->got[0]), 4, 60);
	expect(f, 1, CORE_REPLY_RELEASED, 0, 4, "a");
	expect(f, 2, CORE_REPLY_TIMEOUT, 1, 2, "a");
	expect(f, 3, CORE_REPLY_GRANTED, 2, 3, "a");
	assert_int_equal(f->ngot, 4);
	assert_int_equal(f->table.stats.timeouts, 1);
	assert_int_equal(core_tick(&f->table, 60), 60 + LEASE);
	assert_int_equal(f->ngot, 4);
	assert_books_balance(f);
}

static void
test_table_hand_off_at_the_wait_deadline_instant_still_grants(void **state)
{
	struct table_fixture *f = *state;

	/* As at a lease expiry, the instant of the deadline grants first. */
	acquire(f, 0, "a", LEASE, -1, false, 1, 0);
	acquire(f, 1, "a", LEASE, 50, false, 2, 0);
	release(f, 0, "a", handle_of(&f->got[0]), 3, 50);
	expect(f, 1, CORE_REPLY_RELEASED, 0, 3, "a");
	expect(f, 2, CORE_REPLY_GRANTED, 1, 2, "a");
	assert_int_equal(f->table.stats.timeouts, 0);
}

/* ---- TRY -------------------------------------------------------------- */

static void
test_table_try_never_queues(void **state)
{
	struct table_fixture *f = *state;

	try_lock(f, 0, "a", LEASE, 1, 0);
	expect(f, 0, CORE_REPLY_GRANTED, 0, 1, "a");
	assert_int_equal(try_lock(f, 1, "a", LEASE, 2, 10), CORE_OK);
	expect(f, 1, CORE_REPLY_HELD, 1, 2, "a");
	assert_int_equal(core_entry_queue_len(find(f, "a")), 0);
	assert_int_equal(f->table.stats.waiters, 0);
	assert_int_equal(f->table.stats.unavailable, 1);
	/* Once the lease is over TRY gets it, with a fresh fence. */
	try_lock(f, 1, "a", LEASE, 3, LEASE);
	expect(f, 2, CORE_EVENT_RECLAIMED, -1, 0, "a");
	expect(f, 3, CORE_REPLY_GRANTED, 1, 3, "a");
	assert_int_equal(f->got[3].r.fence, 2);
}

static void
test_table_try_says_held_when_anyone_waits_even_if_the_lease_expired(
    void **state)
{
	struct table_fixture *f = *state;

	acquire(f, 0, "a", 100, -1, false, 1, 0);
	acquire(f, 1, "a", LEASE, -1, false, 2, 0);
	/* The lease has expired but nobody ticked: the waiter comes first. */
	try_lock(f, 2, "a", LEASE, 3, 150);
	expect(f, 1, CORE_EVENT_RECLAIMED, -1, 0, "a");
	expect(f, 2, CORE_REPLY_GRANTED, 1, 2, "a");
	expect(f, 3, CORE_REPLY_HELD, 2, 3, "a");
	assert_int_equal(f->ngot, 4);

	/* A queue behind a live lease: HELD, and the queue is unchanged. */
	acquire(f, 3, "a", LEASE, -1, false, 4, 200);
	try_lock(f, 2, "a", LEASE, 5, 200);
	expect(f, 4, CORE_REPLY_HELD, 2, 5, "a");
	assert_int_equal(core_entry_queue_len(find(f, "a")), 1);
}

/* ---- renew and release ------------------------------------------------ */

static void
test_table_renew_extends_the_lease_and_keeps_the_fence(void **state)
{
	struct table_fixture *f = *state;
	struct core_handle h;
	const struct table_fixture_reply *g;

	acquire(f, 0, "a", 100, -1, false, 1, 0);
	h = handle_of(&f->got[0]);
	drain(f);
	assert_int_equal(renew(f, 3, "a", h, 500, 2, 90), CORE_OK);
	g = expect(f, 1, CORE_REPLY_RENEWED, 3, 2, "a");
	assert_int_equal(g->r.fence, 1);
	assert_int_equal(g->r.lease_ms, 500);
	assert_int_equal(find(f, "a")->lock.expiry, 590);
	assert_int_equal(core_tick(&f->table, 100), 590);
	assert_int_equal(f->ngot, 2);
	assert_int_equal(drain(f), 1);
	assert_int_equal(change_of(f, "a")->rec.expiry, 590);
	assert_false(f->hwm_changed);
	assert_int_equal(f->table.stats.renewed, 1);
}

static void
test_table_renew_with_a_stale_handle_is_conflict_and_changes_nothing(
    void **state)
{
	struct table_fixture *f = *state;
	struct core_handle h, forged, old;
	struct core_lock before;

	acquire(f, 0, "a", 100, -1, false, 1, 0);
	h = handle_of(&f->got[0]);
	drain(f);
	before = find(f, "a")->lock;

	forged = h;
	forged.secret ^= 1;
	assert_int_equal(renew(f, 1, "a", forged, 500, 2, 10),
	    CORE_ERR_CONFLICT);
	expect(f, 1, CORE_REPLY_CONFLICT, 1, 2, "a");
	forged = h;
	forged.fence++;
	assert_int_equal(renew(f, 1, "a", forged, 500, 3, 10),
	    CORE_ERR_CONFLICT);
	expect(f, 2, CORE_REPLY_CONFLICT, 1, 3, "a");
	assert_memory_equal(&find(f, "a")->lock, &before, sizeof(before));
	assert_int_equal(drain(f), 0);
	assert_int_equal(f->table.stats.conflicts, 2);

	/* At the expiry instant the holder's own handle is stale. */
	assert_int_equal(renew(f, 0, "a", h, 500, 4, 100), CORE_ERR_CONFLICT);
	expect(f, 3, CORE_EVENT_RECLAIMED, -1, 0, "a");
	expect(f, 4, CORE_REPLY_CONFLICT, 0, 4, "a");
	assert_int_equal(find(f, "a")->lock.fence, 0);

	/* Reclaimed and granted again: the old handle stays stale. */
	old = h;
	acquire(f, 1, "a", 100, -1, false, 5, 100);
	h = handle_of(&f->got[5]);
	before = find(f, "a")->lock;
	assert_int_equal(renew(f, 0, "a", old, 500, 6, 110),
	    CORE_ERR_CONFLICT);
	expect(f, 6, CORE_REPLY_CONFLICT, 0, 6, "a");
	assert_memory_equal(&find(f, "a")->lock, &before, sizeof(before));

	/* A lock nobody holds has no entry, and renewing makes none. */
	drain(f);
	assert_int_equal(renew(f, 0, "nobody", old, 500, 7, 110),
	    CORE_ERR_CONFLICT);
	expect(f, 7, CORE_REPLY_CONFLICT, 0, 7, "nobody");
	assert_null(find(f, "nobody"));
}

static void
test_table_release_with_a_stale_handle_is_notheld_and_disturbs_nobody(
    void **state)
{
	struct table_fixture *f = *state;
	struct core_handle a, b, forged;
	struct core_lock before;

	acquire(f, 0, "a", 100, -1, false, 1, 0);
	a = handle_of(&f->got[0]);
	acquire(f, 1, "a", LEASE, -1, false, 2, 0);
	core_tick(&f->table, 100);
	b = handle_of(expect(f, 2, CORE_REPLY_GRANTED, 1, 2, "a"));
	drain(f);
	before = find(f, "a")->lock;

	/* The old holder's release, twice, and a forged one. */
	assert_int_equal(release(f, 0, "a", a, 3, 110), CORE_OK);
	assert_int_equal(release(f, 0, "a", a, 4, 111), CORE_OK);
	forged = b;
	forged.secret ^= 0xff;
	assert_int_equal(release(f, 2, "a", forged, 5, 112), CORE_OK);
	expect(f, 3, CORE_REPLY_NOTHELD, 0, 3, "a");
	expect(f, 4, CORE_REPLY_NOTHELD, 0, 4, "a");
	expect(f, 5, CORE_REPLY_NOTHELD, 2, 5, "a");
	assert_memory_equal(&find(f, "a")->lock, &before, sizeof(before));
	assert_int_equal(drain(f), 0);
	assert_int_equal(f->table.stats.released, 0);

	/* The holder's release works once, then it is stale too. */
	release(f, 1, "a", b, 6, 120);
	expect(f, 6, CORE_REPLY_RELEASED, 1, 6, "a");
	release(f, 1, "a", b, 7, 121);
	expect(f, 7, CORE_REPLY_NOTHELD, 1, 7, "a");
	assert_int_equal(drain(f), 1);
	assert_false(change_of(f, "a")->present);
	assert_null(find(f, "a"));
	/* No entry: still NOTHELD, named, and no entry is made. */
	release(f, 1, "a", b, 8, 122);
	expect(f, 8, CORE_REPLY_NOTHELD, 1, 8, "a");
	assert_null(find(f, "a"));
}

/* ---- sessions --------------------------------------------------------- */

static void
test_table_disconnect_releases_onclose_leases_and_hands_them_on(void **state)
{
	struct table_fixture *f = *state;
	const struct table_fixture_reply *g;

	acquire(f, 0, "a", LEASE, -1, true, 1, 0);
	acquire(f, 0, "b", LEASE, -1, true, 2, 0);
	acquire(f, 0, "c", LEASE, -1, false, 3, 0);
	acquire(f, 1, "a", LEASE, -1, false, 4, 0);
	drain(f);
	assert_true(change_of(f, "a")->rec.onclose_release);
	assert_false(change_of(f, "c")->rec.onclose_release);

	core_disconnect(&f->table, &f->s[0], 50);
	assert_int_equal(f->ngot, 6);
	/* Each lease is released as by RELEASE, and "a" goes to its waiter. */
	g = expect(f, 3, CORE_EVENT_RELEASED_ONCLOSE, -1, 0, "a");
	assert_int_equal(g->r.fence, 1);
	assert_int_equal(g->r.held_ms, 50);
	g = expect(f, 4, CORE_REPLY_GRANTED, 1, 4, "a");
	assert_int_equal(g->r.fence, 4);
	g = expect(f, 5, CORE_EVENT_RELEASED_ONCLOSE, -1, 0, "b");
	assert_int_equal(g->r.fence, 2);
	/* onclose=keep outlives the connection. */
	assert_int_equal(find(f, "c")->lock.fence, 3);
	assert_int_equal(f->table.stats.released_onclose, 2);
	assert_int_equal(drain(f), 2);
	assert_int_equal(change_of(f, "a")->rec.fence, 4);
	assert_false(change_of(f, "b")->present);
	assert_null(find(f, "b"));
	assert_books_balance(f);
}

static void
test_table_disconnect_reclaims_an_expired_onclose_lease_as_reclaimed(
    void **state)
{
	struct table_fixture *f = *state;

	acquire(f, 0, "a", 100, -1, true, 1, 0);
	core_disconnect(&f->table, &f->s[0], 100);
	expect(f, 1, CORE_EVENT_RECLAIMED, -1, 0, "a");
	assert_int_equal(f->ngot, 2);
	assert_int_equal(f->table.stats.reclaimed, 1);
	assert_int_equal(f->table.stats.released_onclose, 0);
}

static void
test_table_release_by_handle_unbinds_an_onclose_lease(void **state)
{
	struct table_fixture *f = *state;

	acquire(f, 0, "a", LEASE, -1, true, 1, 0);
	release(f, 0, "a", handle_of(&f->got[0]), 2, 10);
	acquire(f, 1, "a", LEASE, -1, false, 3, 20);
	/* The old holder's session closing must not touch the new lease. */
	core_disconnect(&f->table, &f->s[0], 30);
	assert_int_equal(f->ngot, 3);
	assert_int_equal(find(f, "a")->lock.fence, 2);
}

static void
test_table_disconnect_removes_waiters_without_reply_and_they_are_never_granted(
    void **state)
{
	struct table_fixture *f = *state;

	acquire(f, 0, "a", LEASE, -1, false, 1, 0);
	acquire(f, 1, "a", LEASE, -1, false, 2, 0);
	acquire(f, 1, "b", LEASE, -1, false, 3, 0);
	acquire(f, 0, "b", LEASE, -1, false, 4, 0);  /* waits behind 1 */
	acquire(f, 2, "a", LEASE, 300, false, 5, 0);
	assert_int_equal(f->table.stats.waiters, 3);
	core_disconnect(&f->table, &f->s[1], 10);
	/* Session 1's waiter leaves silently; its "b" lease is keep. */
	assert_int_equal(f->ngot, 2);
	assert_int_equal(f->table.stats.waiters, 2);
	assert_int_equal(f->s[1].waiter_count, 0);
	assert_int_equal(core_entry_queue_len(find(f, "a")), 1);
	release(f, 0, "a", handle_of(&f->got[0]), 6, 20);
	expect(f, 2, CORE_REPLY_RELEASED, 0, 6, "a");
	expect(f, 3, CORE_REPLY_GRANTED, 2, 5, "a");
	/* "b" expires at 1000 and passes to session 0's waiter. */
	assert_int_equal(core_tick(&f->table, 100000), 101000);
	assert_int_equal(core_tick(&f->table, 101000), CORE_NEVER);
	/* Nothing was addressed to the session after it disconnected. */
	{
		size_t i;
		for (i = 2; i < f->ngot; i++)
			assert_true(f->got[i].r.session != &f->s[1]);
	}
	assert_books_balance(f);
}

static void
test_table_cancel_waiters_answers_shutdown(void **state)
{
	struct table_fixture *f = *state;

	acquire(f, 0, "a", LEASE, -1, false, 1, 0);
	acquire(f, 1, "a", LEASE, -1, false, 2, 0);
	acquire(f, 1, "a", LEASE, 500, false, 3, 0);
	acquire(f, 2, "a", LEASE, -1, false, 4, 0);
	core_cancel_waiters(&f->table, &f->s[1], CORE_REPLY_SHUTDOWN);
	assert_int_equal(f->ngot, 3);
	expect(f, 1, CORE_REPLY_SHUTDOWN, 1, 2, "a");
	expect(f, 2, CORE_REPLY_SHUTDOWN, 1, 3, "a");
	assert_int_equal(core_entry_queue_len(find(f, "a")), 1);
	assert_int_equal(core_next_deadline(&f->table), LEASE);
	release(f, 0, "a", handle_of(&f->got[0]), 5, 10);
	expect(f, 4, CORE_REPLY_GRANTED, 2, 4, "a");
	assert_books_balance(f);
}

/* ---- limits ----------------------------------------------------------- */

static void
test_table_limits_answer_limit(void **state)
{
	struct table_fixture *f = *state;
	const struct table_fixture_reply *g;

	f->config.max_held = 1;
	f->config.max_waiters = 2;
	f->config.max_waiters_per_session = 1;
	table_fixture_restart(f);

	acquire(f, 0, "a", LEASE, -1, false, 1, 0);
	assert_int_equal(acquire(f, 0, "b", LEASE, -1, false, 2, 0),
	    CORE_ERR_LIMIT);
	g = expect(f, 1, CORE_REPLY_LIMIT, 0, 2, "b");
	assert_int_equal(g->r.limit, CORE_LIMIT_HELD);
	assert_int_equal(try_lock(f, 0, "b", LEASE, 3, 0), CORE_ERR_LIMIT);
	assert_int_equal(expect(f, 2, CORE_REPLY_LIMIT, 0, 3, "b")->r.limit,
	    CORE_LIMIT_HELD);

	assert_int_equal(acquire(f, 1, "a", LEASE, -1, false, 4, 0), CORE_OK);
	assert_int_equal(acquire(f, 1, "a", LEASE, -1, false, 5, 0),
	    CORE_ERR_LIMIT);
	assert_int_equal(expect(f, 3, CORE_REPLY_LIMIT, 1, 5, "a")->r.limit,
	    CORE_LIMIT_SESSION_WAITERS);
	assert_int_equal(acquire(f, 2, "a", LEASE, -1, false, 6, 0), CORE_OK);
	assert_int_equal(acquire(f, 3, "a", LEASE, -1, false, 7, 0),
	    CORE_ERR_LIMIT);
	assert_int_equal(expect(f, 4, CORE_REPLY_LIMIT, 3, 7, "a")->r.limit,
	    CORE_LIMIT_WAITERS);
	assert_int_equal(f->table.stats.limit_hits, 4);
	assert_int_equal(f->table.stats.waiters, 2);

	/* A hand-off is not a new held lock: the limit does not apply. */
	release(f, 0, "a", handle_of(&f->got[0]), 8, 10);
	expect(f, 6, CORE_REPLY_GRANTED, 1, 4, "a");
	/* A released lock makes room. */
	release(f, 1, "a", handle_of(&f->got[6]), 9, 20);
	expect(f, 8, CORE_REPLY_GRANTED, 2, 6, "a");
	release(f, 2, "a", handle_of(&f->got[8]), 10, 30);
	acquire(f, 0, "b", LEASE, -1, false, 11, 40);
	expect(f, 10, CORE_REPLY_GRANTED, 0, 11, "b");
	assert_books_balance(f);
}

/* ---- allocation failure ----------------------------------------------- */

static void
test_table_init_answers_nomem_when_allocation_fails(void **state)
{
	struct table_fixture *f = *state;
	struct core_table t;
	struct core_sink sink = table_fixture_sink(f);

	table_fixture_alloc_budget = 0;
	assert_int_equal(core_table_init(&t, &f->config, &core_rules_std,
	    sink), CORE_ERR_NOMEM);
	table_fixture_alloc_budget = -1;
	core_table_destroy(&t);
}

/*
 * Runs a fixed workload (75 names, so the buckets grow and the heap's first
 * 64 slots overflow; waiters; releases) with the allocator failing after
 * `budget` allocations, then checks that every operation was answered, that
 * NOMEM changed nothing, and that the table is whole afterwards.
 */
static void
nomem_workload(struct table_fixture *f, long budget)
{
	struct core_handle held[80];
	bool have[80];
	char name[16];
	size_t i, granted = 0, base;
	const size_t names = 75;

	memset(have, 0, sizeof(have));
	table_fixture_restart(f);
	table_fixture_alloc_budget = budget;
	for (i = 0; i < names; i++) {
		snprintf(name, sizeof(name), "n%zu", i);
		base = f->ngot;
		acquire(f, 0, name, LEASE, -1, false, i, 0);
		assert_int_equal(f->ngot, base + 1);
		if (f->got[base].r.kind == CORE_REPLY_NOMEM) {
			assert_null(find(f, name));
			continue;
		}
		expect(f, base, CORE_REPLY_GRANTED, 0, i, name);
		held[i] = handle_of(&f->got[base]);
		have[i] = true;
		granted++;
		/* A waiter on every third name. */
		if (i % 3 == 0) {
			size_t q = core_entry_queue_len(find(f, name));

			acquire(f, 1, name, LEASE, 5000, false, 1000 + i, 0);
			if (f->ngot == base + 2) {
				expect(f, base + 1, CORE_REPLY_NOMEM, 1,
				    1000 + i, name);
				assert_int_equal(core_entry_queue_len(find(f, name)), q);
			} else
				assert_int_equal(core_entry_queue_len(find(f, name)),
				    q + 1);
		}
		assert_books_balance(f);
	}
	table_fixture_alloc_budget = -1;
	assert_books_balance(f);
	assert_int_equal(f->table.stats.held, granted);

	/* Everything still works: release all, hand-offs included. */
	for (i = 0; i < names; i++) {
		if (!have[i])
			continue;
		snprintf(name, sizeof(name), "n%zu", i);
		base = f->ngot;
		release(f, 0, name, held[i], 0, 10);
		expect(f, base, CORE_REPLY_RELEASED, 0, 0, name);
		if (f->ngot == base + 2) {
			const struct table_fixture_reply *g;

			g = expect(f, base + 1, CORE_REPLY_GRANTED, 1,
			    1000 + i, name);
			release(f, 1, name, handle_of(g), 0, 20);
		}
	}
	assert_int_equal(core_tick(&f->table, 100000), CORE_NEVER);
	drain(f);
	assert_int_equal(f->table.stats.locks, 0);
	assert_int_equal(f->table.stats.held, 0);
	assert_int_equal(f->table.stats.waiters, 0);
	assert_int_equal(f->table.heap_len, 0);
	assert_books_balance(f);
}

static void
test_table_allocation_failure_answers_nomem_and_keeps_the_table_whole(
    void **state)
{
	struct table_fixture *f = *state;
	long budget;
	unsigned long failures = table_fixture_alloc_failures;

	for (budget = 0; budget < 130; budget++)
		nomem_workload(f, budget);
	assert_true(table_fixture_alloc_failures > failures);
}

static void
test_table_waiter_allocation_failure_leaves_the_holder_alone(void **state)
{
	struct table_fixture *f = *state;

	acquire(f, 0, "a", LEASE, -1, false, 1, 0);
	table_fixture_alloc_budget = 0;
	assert_int_equal(acquire(f, 1, "a", LEASE, -1, false, 2, 0),
	    CORE_ERR_NOMEM);
	table_fixture_alloc_budget = -1;
	expect(f, 1, CORE_REPLY_NOMEM, 1, 2, "a");
	assert_int_equal(core_entry_queue_len(find(f, "a")), 0);
	assert_int_equal(find(f, "a")->lock.fence, 1);
	/* A new name fails before anything exists. */
	table_fixture_alloc_budget = 0;
	assert_int_equal(acquire(f, 1, "b", LEASE, -1, false, 3, 0),
	    CORE_ERR_NOMEM);
	assert_int_equal(try_lock(f, 1, "b", LEASE, 4, 0), CORE_ERR_NOMEM);
	table_fixture_alloc_budget = -1;
	expect(f, 2, CORE_REPLY_NOMEM, 1, 3, NULL);
	expect(f, 3, CORE_REPLY_NOMEM, 1, 4, NULL);
	assert_null(find(f, "b"));
	assert_int_equal(f->table.stats.locks, 1);
	assert_books_balance(f);
}

/* ---- the changed records ---------------------------------------------- */

static void
test_table_idle_entries_are_dropped_at_changes(void **state)
{
	struct table_fixture *f = *state;

	acquire(f, 0, "a", LEASE, -1, false, 1, 0);
	acquire(f, 1, "a", LEASE, 0, false, 2, 0);   /* TIMEOUT at once */
	acquire(f, 1, "a", LEASE, 100, false, 3, 0); /* waits, times out */
	try_lock(f, 2, "a", LEASE, 4, 0);
	acquire(f, 2, "b", LEASE, -1, false, 5, 0);
	assert_int_equal(f->table.stats.locks, 2);
	drain(f);
	assert_int_equal(f->table.stats.locks, 2);
	core_tick(&f->table, 100);
	drain(f);
	assert_int_equal(f->table.stats.locks, 2);
	release(f, 0, "a", handle_of(&f->got[0]), 6, 200);
	assert_int_equal(f->table.stats.locks, 2);
	drain(f);
	assert_int_equal(f->table.stats.locks, 1);
	assert_null(find(f, "a"));
	core_tick(&f->table, LEASE);  /* "b" expires */
	drain(f);
	assert_int_equal(f->table.stats.locks, 0);
	assert_null(find(f, "b"));
	assert_books_balance(f);
}

static void
test_table_changes_reports_exactly_the_changed_records(void **state)
{
	struct table_fixture *f = *state;
	struct core_handle a, b;
	const struct table_fixture_change *c;

	acquire(f, 0, "a", 100, -1, true, 1, 0);
	acquire(f, 1, "b", 200, -1, false, 2, 0);
	a = handle_of(&f->got[0]);
	b = handle_of(&f->got[1]);
	assert_int_equal(drain(f), 2);
	assert_true(f->hwm_changed);
	c = change_of(f, "a");
	assert_true(c->present);
	assert_int_equal(c->rec.fence, 1);
	assert_int_equal(c->rec.secret, a.secret);
	assert_int_equal(c->rec.expiry, 100);
	assert_int_equal(c->rec.lease_ms, 100);
	assert_true(c->rec.onclose_release);
	c = change_of(f, "b");
	assert_int_equal(c->rec.fence, 2);
	assert_int_equal(c->rec.expiry, 200);
	assert_false(c->rec.onclose_release);

	/* Nothing changed, nothing reported. */
	assert_int_equal(drain(f), 0);
	assert_false(f->hwm_changed);

	/* Waiting, stale handles, TRY refused, STATUS: nothing durable. */
	acquire(f, 2, "a", LEASE, -1, false, 3, 10);
	release(f, 2, "a", b, 4, 10);
	renew(f, 2, "b", a, LEASE, 5, 10);
	try_lock(f, 2, "b", LEASE, 6, 10);
	{
		struct core_lock_status st;
		core_status(&f->table, "b", 1, 10, &st);
	}
	assert_int_equal(drain(f), 0);
	assert_false(f->hwm_changed);

	/* Renewal: a put with the new expiry; the counter did not move. */
	renew(f, 1, "b", b, 300, 7, 20);
	assert_int_equal(drain(f), 1);
	assert_int_equal(change_of(f, "b")->rec.expiry, 320);
	assert_false(f->hwm_changed);

	/* Release with a waiter: one put, the new holder, and a new fence. */
	release(f, 0, "a", a, 8, 30);
	assert_int_equal(drain(f), 1);
	c = change_of(f, "a");
	assert_true(c->present);
	assert_int_equal(c->rec.fence, 3);
	assert_false(c->rec.onclose_release);
	assert_true(f->hwm_changed);

	/* Release with nobody waiting: a delete. */
	release(f, 1, "b", b, 9, 40);
	assert_int_equal(drain(f), 1);
	assert_false(change_of(f, "b")->present);
	assert_false(f->hwm_changed);

	/* Granted and released between two drains: a delete, new hwm. */
	acquire(f, 3, "c", LEASE, -1, false, 10, 50);
	release(f, 3, "c", handle_of(&f->got[f->ngot - 1]), 11, 50);
	assert_int_equal(drain(f), 1);
	assert_false(change_of(f, "c")->present);
	assert_true(f->hwm_changed);
	assert_int_equal(f->table.hwm, 4);

	/* Reclaimed by a tick with nobody waiting: a delete. */
	core_tick(&f->table, 30 + LEASE);
	assert_int_equal(drain(f), 1);
	assert_false(change_of(f, "a")->present);
	assert_int_equal(f->table.stats.locks, 0);
}

/* ---- recovery and rollback -------------------------------------------- */

/* The durable record of a lock as a test builds it by hand. */
static struct core_record
record(uint64_t fence, uint64_t secret, core_time expiry, int64_t lease,
    bool onclose)
{
	struct core_record rec;

	memset(&rec, 0, sizeof(rec));
	rec.fence = fence;
	rec.secret = secret;
	rec.expiry = expiry;
	rec.lease_ms = lease;
	rec.onclose_release = onclose;
	return rec;
}

static void
test_table_recovery_resumes_the_holder_and_continues_the_counter(
    void **state)
{
	struct table_fixture *f = *state;
	struct core_record rec = record(41, 0x8c1f0e9b2a7d4c35ULL, 5000,
	    5000, false);
	struct core_handle h = { 41, 0x8c1f0e9b2a7d4c35ULL };
	const struct table_fixture_reply *g;

	core_table_restore_hwm(&f->table, 57);
	assert_int_equal(core_table_restore(&f->table, "a", 1, &rec, 1000),
	    CORE_OK);
	assert_int_equal(f->ngot, 0);
	assert_int_equal(f->table.hwm, 57);
	assert_int_equal(f->table.stats.held, 1);
	/* Restoring is not a change. */
	assert_int_equal(drain(f), 0);
	assert_false(f->hwm_changed);
	assert_int_equal(core_next_deadline(&f->table), 5000);

	/* Its handle still renews, and it still excludes others. */
	assert_int_equal(renew(f, 0, "a", h, 2000, 1, 1500), CORE_OK);
	expect(f, 0, CORE_REPLY_RENEWED, 0, 1, "a");
	try_lock(f, 1, "a", LEASE, 2, 1600);
	expect(f, 1, CORE_REPLY_HELD, 1, 2, "a");

	/* The counter continues above the durable high-water mark. */
	acquire(f, 1, "b", LEASE, -1, false, 3, 1600);
	g = expect(f, 2, CORE_REPLY_GRANTED, 1, 3, "b");
	assert_int_equal(g->r.fence, 58);
	acquire(f, 2, "a", LEASE, -1, false, 4, 1600);
	release(f, 0, "a", h, 5, 1700);
	expect(f, 3, CORE_REPLY_RELEASED, 0, 5, "a");
	g = expect(f, 4, CORE_REPLY_GRANTED, 2, 4, "a");
	assert_int_equal(g->r.fence, 59);

	/* restore_hwm never lowers the counter. */
	core_table_restore_hwm(&f->table, 3);
	assert_int_equal(f->table.hwm, 59);
}

static void
test_table_recovery_raises_the_counter_to_a_restored_fence(void **state)
{
	struct table_fixture *f = *state;
	struct core_record rec = record(90, 1, 5000, 5000, false);

	core_table_restore_hwm(&f->table, 10);
	core_table_restore(&f->table, "a", 1, &rec, 0);
	assert_int_equal(f->table.hwm, 90);
	acquire(f, 0, "b", LEASE, -1, false, 1, 0);
	assert_int_equal(f->got[0].r.fence, 91);
}

static void
test_table_recovery_reclaims_an_expired_record_by_tick_and_hands_it_on(
    void **state)
{
	struct table_fixture *f = *state;
	struct core_record rec = record(5, 77, 3000, 3000, false);
	const struct table_fixture_reply *g;

	core_table_restore_hwm(&f->table, 5);
	core_table_restore(&f->table, "a", 1, &rec, 1000);
	acquire(f, 1, "a", LEASE, -1, false, 1, 1000);
	assert_int_equal(f->ngot, 0);
	assert_int_equal(core_tick(&f->table, 2999), 3000);
	assert_int_equal(core_tick(&f->table, 3000), 3000 + LEASE);
	g = expect(f, 0, CORE_EVENT_RECLAIMED, -1, 0, "a");
	assert_int_equal(g->r.fence, 5);
	g = expect(f, 1, CORE_REPLY_GRANTED, 1, 1, "a");
	assert_int_equal(g->r.fence, 6);
	assert_int_equal(drain(f), 1);
	assert_int_equal(change_of(f, "a")->rec.fence, 6);
	assert_true(f->hwm_changed);
}

static void
test_table_recovery_of_a_record_that_expired_while_down_reclaims_it_at_once(
    void **state)
{
	struct table_fixture *f = *state;
	struct core_record rec = record(5, 77, 3000, 3000, false);

	core_table_restore_hwm(&f->table, 5);
	core_table_restore(&f->table, "a", 1, &rec, 3000);
	expect(f, 0, CORE_EVENT_RECLAIMED, -1, 0, "a");
	assert_int_equal(f->table.stats.held, 0);
	/* The reclaim is a change to commit: a delete. */
	assert_int_equal(drain(f), 1);
	assert_false(change_of(f, "a")->present);
	assert_int_equal(f->table.stats.locks, 0);
}

static void
test_table_restore_of_an_onclose_record_releases_it(void **state)
{
	struct table_fixture *f = *state;
	struct core_record rec = record(5, 77, 3000, 3000, true);
	const struct table_fixture_reply *g;

	core_table_restore_hwm(&f->table, 5);
	core_table_restore(&f->table, "a", 1, &rec, 1000);
	g = expect(f, 0, CORE_EVENT_RELEASED_ONCLOSE, -1, 0, "a");
	assert_int_equal(g->r.fence, 5);
	assert_int_equal(f->ngot, 1);
	assert_int_equal(f->table.stats.held, 0);
	assert_int_equal(core_next_deadline(&f->table), CORE_NEVER);
	assert_int_equal(drain(f), 1);
	assert_false(change_of(f, "a")->present);
	assert_int_equal(f->table.stats.locks, 0);
	/* The next grant is above the released fence. */
	acquire(f, 0, "a", LEASE, -1, false, 1, 1000);
	assert_int_equal(f->got[1].r.fence, 6);
}

static void
test_table_restore_of_an_onclose_record_binds_it_to_a_given_session(
    void **state)
{
	struct table_fixture *f = *state;
	struct core_record rec = record(5, 77, 3000, 3000, true);

	rec.owner = &f->s[2];
	core_table_restore_hwm(&f->table, 5);
	core_table_restore(&f->table, "a", 1, &rec, 1000);
	assert_int_equal(f->ngot, 0);
	assert_int_equal(f->table.stats.held, 1);
	/* Bound: it reports as onclose, and the session's close ends it. */
	drain(f);
	core_disconnect(&f->table, &f->s[2], 1500);
	expect(f, 0, CORE_EVENT_RELEASED_ONCLOSE, -1, 0, "a");
	assert_int_equal(f->table.stats.held, 0);
}

static void
test_table_restore_forgets_what_the_caller_noted_on_the_entry(void **state)
{
	struct table_fixture *f = *state;
	struct core_record rec = record(1, 77, 3000, 3000, false);
	struct core_entry *e;

	acquire(f, 0, "a", LEASE, -1, false, 1, 0);
	drain(f);
	e = (struct core_entry *)core_table_find(&f->table, "a", 1);
	assert_non_null(e);
	e->user = 7;
	core_table_restore(&f->table, "a", 1, &rec, 100);
	assert_int_equal(core_table_find(&f->table, "a", 1)->user, 0);
}

static void
test_table_rollback_after_a_grant_reverts_the_grant(void **state)
{
	struct table_fixture *f = *state;

	/* The grant is drained for commit, and the commit fails. */
	acquire(f, 0, "a", LEASE, -1, true, 1, 0);
	assert_int_equal(drain(f), 1);
	assert_int_equal(core_table_restore(&f->table, "a", 1, NULL, 0),
	    CORE_OK);
	assert_int_equal(find(f, "a")->lock.fence, 0);
	assert_int_equal(f->table.stats.held, 0);
	assert_int_equal(core_next_deadline(&f->table), CORE_NEVER);
	assert_int_equal(f->ngot, 1);
	/* Nothing left to commit, and the idle entry goes away. */
	assert_int_equal(drain(f), 0);
	assert_null(find(f, "a"));
	assert_int_equal(f->table.stats.locks, 0);
	/* The session closing touches nothing. */
	core_disconnect(&f->table, &f->s[0], 10);
	assert_int_equal(f->ngot, 1);
	/* The fence is never minted twice. */
	acquire(f, 1, "a", LEASE, -1, false, 2, 20);
	assert_int_equal(f->got[1].r.fence, 2);
	assert_books_balance(f);
}

static void
test_table_rollback_of_a_hand_off_restores_the_old_holder(void **state)
{
	struct table_fixture *f = *state;
	struct core_record old;
	struct core_handle a;

	acquire(f, 0, "a", LEASE, -1, false, 1, 0);
	a = handle_of(&f->got[0]);
	drain(f);
	old = f->changes[0].rec;
	acquire(f, 1, "a", LEASE, -1, false, 2, 0);
	release(f, 0, "a", a, 3, 10);
	expect(f, 2, CORE_REPLY_GRANTED, 1, 2, "a");
	assert_int_equal(drain(f), 1);
	/* The commit failed: back to the durable truth. */
	core_table_restore(&f->table, "a", 1, &old, 10);
	assert_int_equal(find(f, "a")->lock.fence, 1);
	assert_int_equal(find(f, "a")->lock.secret, a.secret);
	assert_int_equal(f->table.stats.held, 1);
	assert_int_equal(f->table.hwm, 2);
	assert_int_equal(drain(f), 0);
	assert_int_equal(renew(f, 0, "a", a, LEASE, 4, 20), CORE_OK);
	acquire(f, 2, "b", LEASE, -1, false, 5, 20);
	assert_int_equal(f->got[f->ngot - 1].r.fence, 3);
	assert_books_balance(f);
}

static void
test_table_rollback_of_a_renewal_keeps_the_holder_and_its_binding(
    void **state)
{
	struct table_fixture *f = *state;
	struct core_record old;
	struct core_handle a;

	acquire(f, 0, "a", 100, -1, true, 1, 0);
	a = handle_of(&f->got[0]);
	drain(f);
	old = f->changes[0].rec;
	renew(f, 0, "a", a, 500, 2, 50);
	drain(f);
	core_table_restore(&f->table, "a", 1, &old, 50);
	assert_int_equal(find(f, "a")->lock.expiry, 100);
	assert_int_equal(core_next_deadline(&f->table), 100);
	assert_int_equal(drain(f), 0);
	/* Still bound to its session: closing it releases the lease. */
	core_disconnect(&f->table, &f->s[0], 60);
	expect(f, 2, CORE_EVENT_RELEASED_ONCLOSE, -1, 0, "a");
	assert_int_equal(f->table.stats.held, 0);
}

/* ---- the counter's end ------------------------------------------------ */

static void
test_table_fence_overflow_answers_overflow_and_grants_nothing(void **state)
{
	struct table_fixture *f = *state;
	const struct table_fixture_reply *g;

	core_table_restore_hwm(&f->table, CORE_FENCE_MAX - 1);
	acquire(f, 0, "a", LEASE, -1, false, 1, 0);
	g = expect(f, 0, CORE_REPLY_GRANTED, 0, 1, "a");
	assert_true(g->r.fence == CORE_FENCE_MAX);
	acquire(f, 1, "a", LEASE, -1, false, 2, 0);
	acquire(f, 2, "a", LEASE, 100, false, 3, 0);
	assert_int_equal(acquire(f, 3, "b", LEASE, -1, false, 4, 0),
	    CORE_ERR_OVERFLOW);
	expect(f, 1, CORE_REPLY_OVERFLOW, 3, 4, "b");
	assert_int_equal(try_lock(f, 3, "c", LEASE, 5, 0), CORE_ERR_OVERFLOW);
	expect(f, 2, CORE_REPLY_OVERFLOW, 3, 5, "c");
	/* On release each waiter in turn is answered OVERFLOW. */
	release(f, 0, "a", handle_of(&f->got[0]), 6, 10);
	expect(f, 3, CORE_REPLY_RELEASED, 0, 6, "a");
	expect(f, 4, CORE_REPLY_OVERFLOW, 1, 2, "a");
	expect(f, 5, CORE_REPLY_OVERFLOW, 2, 3, "a");
	assert_int_equal(f->ngot, 6);
	assert_true(f->table.hwm == CORE_FENCE_MAX);
	assert_int_equal(f->table.stats.held, 0);
	assert_int_equal(f->table.stats.waiters, 0);
	drain(f);
	assert_int_equal(f->table.stats.locks, 0);
	assert_books_balance(f);
}

/* ---- status and size -------------------------------------------------- */

static void
test_table_status_reports_the_holder_ttl_and_queue(void **state)
{
	struct table_fixture *f = *state;
	struct core_lock_status st;

	core_status(&f->table, "a", 1, 0, &st);
	assert_false(st.held);
	assert_int_equal(st.fence, 0);
	assert_null(find(f, "a"));
	acquire(f, 0, "a", 100, -1, false, 1, 0);
	acquire(f, 1, "a", LEASE, -1, false, 2, 0);
	core_status(&f->table, "a", 1, 40, &st);
	assert_true(st.held);
	assert_int_equal(st.fence, 1);
	assert_int_equal(st.ttl_ms, 60);
	assert_int_equal(st.queue, 1);
	/* STATUS reclaims an expired lease first, like every operation. */
	core_status(&f->table, "a", 1, 100, &st);
	expect(f, 1, CORE_EVENT_RECLAIMED, -1, 0, "a");
	expect(f, 2, CORE_REPLY_GRANTED, 1, 2, "a");
	assert_int_equal(st.fence, 2);
	assert_int_equal(st.ttl_ms, LEASE);
	assert_int_equal(st.queue, 0);
}

static void
test_table_many_names_grow_the_buckets_and_stay_found(void **state)
{
	struct table_fixture *f = *state;
	char name[32];
	size_t i;
	const size_t names = 1000;

	for (i = 0; i < names; i++) {
		snprintf(name, sizeof(name), "lock/%zu", i);
		acquire(f, (int)(i % SESSIONS), name, 10 + (int64_t)i, -1,
		    false, i, 0);
	}
	assert_true(f->table.bucket_count >= names);
	assert_int_equal(f->table.stats.held, names);
	for (i = 0; i < names; i++) {
		const struct core_entry *e;

		snprintf(name, sizeof(name), "lock/%zu", i);
		e = find(f, name);
		assert_non_null(e);
		assert_int_equal(e->lock.fence, i + 1);
	}
	assert_books_balance(f);
	/* They expire in order of their leases. */
	assert_int_equal(core_tick(&f->table, 10 + 499), 10 + 500);
	assert_int_equal(f->table.stats.held, 500);
	assert_int_equal(core_tick(&f->table, CORE_NEVER - 1), CORE_NEVER);
	drain(f);
	assert_int_equal(f->table.stats.locks, 0);
	assert_books_balance(f);
}

/* ---- making room ahead ------------------------------------------------ */

static void
test_table_reserve_makes_room_so_that_recovery_never_grows_the_table(
    void **state)
{
	struct table_fixture *f = *state;
	struct core_entry **buckets;
	struct core_timer **heap;
	size_t i, count, cap;
	char name[32];
	const size_t names = 1000;

	assert_int_equal(core_table_reserve(&f->table, names), CORE_OK);
	assert_true(f->table.bucket_count >= names);
	assert_true(f->table.heap_cap >= names);
	buckets = f->table.buckets;
	count = f->table.bucket_count;
	heap = f->table.heap;
	cap = f->table.heap_cap;
	for (i = 0; i < names; i++) {
		struct core_record rec = record(i + 1, i, 5000 + (core_time)i,
		    5000, false);

		snprintf(name, sizeof(name), "lock/%zu", i);
		assert_int_equal(core_table_restore(&f->table, name,
		    strlen(name), &rec, 0), CORE_OK);
	}
	/* Nothing was grown: the same buckets and the same heap. */
	assert_ptr_equal(f->table.buckets, buckets);
	assert_int_equal(f->table.bucket_count, count);
	assert_ptr_equal(f->table.heap, heap);
	assert_int_equal(f->table.heap_cap, cap);
	assert_int_equal(f->table.stats.held, names);
	assert_int_equal(f->table.hwm, names);
	for (i = 0; i < names; i++) {
		snprintf(name, sizeof(name), "lock/%zu", i);
		assert_non_null(find(f, name));
		assert_int_equal(find(f, name)->lock.fence, i + 1);
	}
	assert_books_balance(f);
	assert_int_equal(drain(f), 0);
	assert_int_equal(core_next_deadline(&f->table), 5000);
}

static void
test_table_reserve_keeps_entries_already_in_and_never_shrinks(void **state)
{
	struct table_fixture *f = *state;
	char name[32];
	size_t i, count;

	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "lock/%zu", i);
		acquire(f, 0, name, LEASE, -1, false, i, 0);
	}
	assert_int_equal(core_table_reserve(&f->table, 5000), CORE_OK);
	count = f->table.bucket_count;
	assert_true(count >= 5000);
	assert_true(f->table.heap_cap >= 5000);
	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "lock/%zu", i);
		assert_non_null(find(f, name));
	}
	assert_books_balance(f);
	assert_int_equal(core_table_reserve(&f->table, 10), CORE_OK);
	assert_int_equal(f->table.bucket_count, count);
	assert_true(f->table.heap_cap >= 5000);
}

static void
test_table_reserve_failure_answers_nomem_and_keeps_the_table_whole(
    void **state)
{
	struct table_fixture *f = *state;
	struct core_entry **buckets = f->table.buckets;
	size_t count = f->table.bucket_count;

	acquire(f, 0, "a", LEASE, -1, false, 1, 0);
	table_fixture_alloc_budget = 0;
	assert_int_equal(core_table_reserve(&f->table, 100000),
	    CORE_ERR_NOMEM);
	assert_true(table_fixture_alloc_failures > 0);
	table_fixture_alloc_budget = -1;
	assert_ptr_equal(f->table.buckets, buckets);
	assert_int_equal(f->table.bucket_count, count);
	assert_non_null(find(f, "a"));
	acquire(f, 1, "b", LEASE, -1, false, 2, 0);
	expect(f, 1, CORE_REPLY_GRANTED, 1, 2, "b");
	assert_books_balance(f);
	/* Buckets made, heap slots refused: still NOMEM, still whole. */
	table_fixture_alloc_budget = 1;
	assert_int_equal(core_table_reserve(&f->table, 100000),
	    CORE_ERR_NOMEM);
	table_fixture_alloc_budget = -1;
	assert_true(f->table.bucket_count >= 100000);
	assert_non_null(find(f, "a"));
	assert_non_null(find(f, "b"));
	assert_books_balance(f);
	/* An absurd count is refused before anything is allocated. */
	assert_int_equal(core_table_reserve(&f->table, SIZE_MAX),
	    CORE_ERR_NOMEM);
	assert_books_balance(f);
}

static void
test_table_expected_locks_makes_the_room_at_init(void **state)
{
	struct table_fixture *f = *state;

	f->config.expected_locks = 3000;
	table_fixture_restart(f);
	assert_true(f->table.bucket_count >= 3000);
	assert_true(f->table.heap_cap >= 3000);
	/* Only a hint: when the room cannot be had, init still succeeds
	 * with the small table. */
	table_fixture_stop(f);
	table_fixture_alloc_budget = 1;
	table_fixture_start(f);
	table_fixture_alloc_budget = -1;
	assert_true(f->table.bucket_count < 3000);
	acquire(f, 0, "a", LEASE, -1, false, 1, 0);
	expect(f, 0, CORE_REPLY_GRANTED, 0, 1, "a");
	assert_books_balance(f);
}

/* ---- restoring in batches --------------------------------------------- */

#define BATCH_ITEMS 300

/*
 * A recovery over a table that already has holders and waiters (as after a
 * failed commit): held records, free ones, onclose ones, expired ones, and
 * names listed twice, restored with core_table_restore_batch or one by one.
 * Leaves every reply and the drained changes in the fixture.
 */
static enum core_status
restore_workload(struct table_fixture *f, bool batch, size_t *done)
{
	static struct core_restore items[BATCH_ITEMS];
	static char names[BATCH_ITEMS][32];
	enum core_status st = CORE_OK;
	size_t i;

	acquire(f, 0, "w/0", LEASE, -1, false, 1, 0);
	acquire(f, 1, "w/0", LEASE, -1, false, 2, 0);
	acquire(f, 2, "w/1", LEASE, -1, true, 3, 0);
	acquire(f, 3, "w/1", LEASE, -1, false, 4, 0);
	drain(f);
	for (i = 0; i < BATCH_ITEMS; i++) {
		struct core_restore *it = &items[i];

		/* Every seventh name again, and the waited-on locks. */
		if (i % 7 == 6)
			snprintf(names[i], sizeof(names[i]), "r/%zu",
			    i - 3);
		else if (i == 100 || i == 200)
			snprintf(names[i], sizeof(names[i]), "w/%d",
			    i == 100 ? 0 : 1);
		else
			snprintf(names[i], sizeof(names[i]), "r/%zu", i);
		it->name = names[i];
		it->name_len = strlen(names[i]);
		memset(&it->rec, 0, sizeof(it->rec));
		/* Every fifth free, some expired, some onclose. */
		if (i % 5 != 4)
			it->rec = record(1000 + i, 0xabc0 + i, i % 11 == 3 ?
			    50 : 2000 + (core_time)(i * 37 % 500), 2000,
			    i % 13 == 5);
	}
	core_table_restore_hwm(&f->table, 900);
	if (batch) {
		st = core_table_restore_batch(&f->table, items, BATCH_ITEMS,
		    100, done);
	} else {
		for (i = 0; i < BATCH_ITEMS && st == CORE_OK; i++)
			st = core_table_restore(&f->table, items[i].name,
			    items[i].name_len, &items[i].rec, 100);
		*done = st == CORE_OK ? i : i - 1;
	}
	core_tick(&f->table, 100);
	return st;
}

static void
test_table_restore_batch_is_the_same_as_restoring_one_by_one(void **state)
{
	struct table_fixture *f = *state;
	struct table_fixture_reply *one;
	struct table_fixture_change *changes;
	size_t ngot, nchanges, i, done;
	uint64_t hwm, held, locks;
	core_time next;

	assert_int_equal(restore_workload(f, false, &done), CORE_OK);
	assert_int_equal(done, BATCH_ITEMS);
	ngot = f->ngot;
	one = malloc(ngot * sizeof(*one));
	assert_non_null(one);
	memcpy(one, f->got, ngot * sizeof(*one));
	hwm = f->table.hwm;
	held = f->table.stats.held;
	next = core_next_deadline(&f->table);
	nchanges = drain(f);
	locks = f->table.stats.locks;
	changes = malloc(nchanges * sizeof(*changes));
	assert_non_null(changes);
	memcpy(changes, f->changes, nchanges * sizeof(*changes));
	/* The workload makes every kind of outcome. */
	assert_true(nchanges > 0 && ngot > 0 && held > 0);

	table_fixture_restart(f);
	f->secrets = 0;   /* the same secrets for the same grants */
	assert_int_equal(restore_workload(f, true, &done), CORE_OK);
	assert_int_equal(done, BATCH_ITEMS);
	assert_int_equal(f->ngot, ngot);
	for (i = 0; i < ngot; i++) {
		assert_int_equal(f->got[i].r.kind, one[i].r.kind);
		assert_ptr_equal(f->got[i].r.session, one[i].r.session);
		assert_int_equal(f->got[i].r.tag, one[i].r.tag);
		assert_int_equal(f->got[i].r.fence, one[i].r.fence);
		assert_string_equal(f->got[i].name, one[i].name);
	}
	assert_int_equal(f->table.hwm, hwm);
	assert_int_equal(f->table.stats.held, held);
	assert_int_equal(core_next_deadline(&f->table), next);
	assert_books_balance(f);
	assert_int_equal(drain(f), nchanges);
	for (i = 0; i < nchanges; i++) {
		assert_string_equal(f->changes[i].name, changes[i].name);
		assert_int_equal(f->changes[i].present, changes[i].present);
		assert_memory_equal(&f->changes[i].rec, &changes[i].rec,
		    sizeof(changes[i].rec));
	}
	assert_int_equal(f->table.stats.locks, locks);
	free(one);
	free(changes);
}

static void
test_table_restore_batch_stops_at_the_first_error_and_says_where(
    void **state)
{
	struct table_fixture *f = *state;
	struct core_restore items[40];
	char names[40][16];
	size_t i, done = 99;

	memset(items, 0, sizeof(items));
	for (i = 0; i < 40; i++) {
		snprintf(names[i], sizeof(names[i]), "n/%zu", i);
		items[i].name = names[i];
		items[i].name_len = strlen(names[i]);
		items[i].rec = record(i + 1, i, 5000, 5000, false);
	}
	items[35].name_len = 0;
	assert_int_equal(core_table_restore_batch(&f->table, items, 40, 0,
	    &done), CORE_ERR_BADARG);
	assert_int_equal(done, 35);
	assert_int_equal(f->table.stats.held, 35);
	assert_non_null(find(f, "n/34"));
	assert_null(find(f, "n/36"));
	assert_books_balance(f);

	/* Out of memory on the third new entry. */
	items[35].name_len = strlen(names[35]);
	table_fixture_restart(f);
	table_fixture_alloc_budget = 2;
	assert_int_equal(core_table_restore_batch(&f->table, items, 40, 0,
	    &done), CORE_ERR_NOMEM);
	table_fixture_alloc_budget = -1;
	assert_true(done < 3);
	assert_int_equal(f->table.stats.held, done);
	assert_books_balance(f);

	/* Nothing to do is done at once. */
	table_fixture_restart(f);
	assert_int_equal(core_table_restore_batch(&f->table, items, 0, 0,
	    &done), CORE_OK);
	assert_int_equal(done, 0);
	assert_int_equal(f->table.stats.locks, 0);
}

/* ---- the name hash ---------------------------------------------------- */

#define REF_ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static void
ref_sipround(uint64_t v[4])
{
	v[0] += v[1]; v[1] = REF_ROTL(v[1], 13); v[1] ^= v[0];
	v[0] = REF_ROTL(v[0], 32);
	v[2] += v[3]; v[3] = REF_ROTL(v[3], 16); v[3] ^= v[2];
	v[0] += v[3]; v[3] = REF_ROTL(v[3], 21); v[3] ^= v[0];
	v[2] += v[1]; v[1] = REF_ROTL(v[1], 17); v[1] ^= v[2];
	v[2] = REF_ROTL(v[2], 32);
}

/* SipHash-1-3 as the paper gives it, a byte at a time. */
static uint64_t
ref_siphash13(const uint64_t key[2], const unsigned char *in, size_t len)
{
	uint64_t v[4] = {
		0x736f6d6570736575ULL ^ key[0], 0x646f72616e646f6dULL ^ key[1],
		0x6c7967656e657261ULL ^ key[0], 0x7465646279746573ULL ^ key[1]
	};
	uint64_t m;
	size_t i, j;

	for (i = 0; i + 8 <= len; i += 8) {
		for (m = 0, j = 0; j < 8; j++)
			m |= (uint64_t)in[i + j] << (8 * j);
		v[3] ^= m;
		ref_sipround(v);
		v[0] ^= m;
	}
	for (m = (uint64_t)len << 56, j = 0; i + j < len; j++)
		m |= (uint64_t)in[i + j] << (8 * j);
	v[3] ^= m;
	ref_sipround(v);
	v[0] ^= m;
	v[2] ^= 0xff;
	for (j = 0; j < 3; j++)
		ref_sipround(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

static void
test_table_name_hash_is_siphash_1_3_at_every_length_and_alignment(
    void **state)
{
	unsigned char buf[CORE_NAME_MAX + 8];
	uint64_t key[2];
	struct rng x;
	size_t len, off, i;

	(void)state;
	rng_seed(&x, 1);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)rng_next(&x);
	for (len = 0; len <= CORE_NAME_MAX; len++)
		for (off = 0; off < 8; off++) {
			key[0] = rng_next(&x);
			key[1] = rng_next(&x);
			assert_true(core_name_hash(key, (const char *)buf +
			    off, len) == ref_siphash13(key, buf + off, len));
		}
}

/* ---- the heap --------------------------------------------------------- */

static void
test_table_heap_keeps_the_earliest_deadline_first(void **state)
{
	enum { N = 300 };
	struct core_timer timers[N], *heap[N];
	bool in[N];
	size_t len = 0, i, round;
	struct rng x;

	(void)state;
	rng_seed(&x, 88172645463325252ULL);
	memset(in, 0, sizeof(in));
	for (i = 0; i < N; i++) {
		timers[i].slot = CORE__HEAP_OUT;
		timers[i].kind = (uint8_t)(i % 2);
	}
	for (round = 0; round < 20000; round++) {
		size_t k = rng_next(&x) % N, j;
		core_time min = CORE_NEVER;

		switch (rng_next(&x) % 3) {
		case 0:
			if (!in[k]) {
				timers[k].when = (core_time)(rng_next(&x) %
				    1000);
				core__heap_push(heap, &len, &timers[k]);
				in[k] = true;
			}
			break;
		case 1:
			core__heap_remove(heap, &len, &timers[k]);
			in[k] = false;
			assert_true(timers[k].slot == CORE__HEAP_OUT);
			break;
		default:
			if (in[k]) {
				timers[k].when = (core_time)(rng_next(&x) %
				    1000);
				core__heap_update(heap, len, &timers[k]);
			}
			break;
		}
		for (i = 0, j = 0; i < N; i++)
			if (in[i]) {
				j++;
				if (timers[i].when < min)
					min = timers[i].when;
				assert_ptr_equal(heap[timers[i].slot],
				    &timers[i]);
			}
		assert_int_equal(j, len);
		if (len > 0)
			assert_int_equal(heap[0]->when, min);
		for (i = 1; i < len; i++) {
			const struct core_timer *p = heap[(i - 1) / 2];
			assert_true(p->when < heap[i]->when ||
			    (p->when == heap[i]->when &&
			    p->kind <= heap[i]->kind));
		}
	}
}

/* ---- rid= ------------------------------------------------------------- */

static enum core_status
acquire_rid(struct table_fixture *f, int s, const char *name, const char *rid,
    int64_t wait, bool onclose, uint64_t tag, core_time now)
{
	struct core_acquire_args args = { .lease_ms = LEASE, .wait_ms = wait,
	    .onclose_release = onclose, .rid = rid,
	    .rid_len = rid != NULL ? strlen(rid) : 0 };

	return core_acquire(&f->table, &f->s[s], name, strlen(name), &args,
	    tag, now);
}

static enum core_status
try_rid(struct table_fixture *f, int s, const char *name, const char *rid,
    uint64_t tag, core_time now)
{
	struct core_acquire_args args = { .lease_ms = LEASE, .rid = rid,
	    .rid_len = strlen(rid) };

	return core_try(&f->table, &f->s[s], name, strlen(name), &args, tag,
	    now);
}

static void
test_table_rid_repeat_returns_the_live_grant_and_changes_nothing(
    void **state)
{
	struct table_fixture *f = *state;
	struct core_handle h;
	const struct table_fixture_reply *g;

	acquire_rid(f, 0, "a", "r-1", CORE_WAIT_FOREVER, false, 1, 0);
	h = handle_of(expect(f, 0, CORE_REPLY_GRANTED, 0, 1, "a"));
	assert_int_equal(drain(f), 1);
	assert_int_equal(change_of(f, "a")->rec.rid_len, 3);
	assert_memory_equal(change_of(f, "a")->rec.rid, "r-1", 3);
	/* The repeat, from another connection, 400 ms later: the same
	 * grant with what is left of its lease; nothing to commit. */
	assert_int_equal(acquire_rid(f, 1, "a", "r-1", CORE_WAIT_FOREVER,
	    false, 2, 400), CORE_OK);
	g = expect(f, 1, CORE_REPLY_GRANTED, 1, 2, "a");
	assert_true(g->r.repeat);
	assert_true(g->r.fence == h.fence && g->r.secret == h.secret);
	assert_int_equal(g->r.lease_ms, LEASE - 400);
	/* TRY with the rid finds it too. */
	assert_int_equal(try_rid(f, 2, "a", "r-1", 3, 500), CORE_OK);
	g = expect(f, 2, CORE_REPLY_GRANTED, 2, 3, "a");
	assert_true(g->r.fence == h.fence && g->r.secret == h.secret &&
	    g->r.lease_ms == LEASE - 500);
	assert_int_equal(drain(f), 0);
	assert_false(f->hwm_changed);
	assert_int_equal(f->table.hwm, 1);
	assert_int_equal(f->table.stats.granted, 1);
	assert_int_equal(find(f, "a")->lock.expiry, LEASE);
	assert_int_equal(core_entry_queue_len(find(f, "a")), 0);
	/* Another rid, or a prefix of this one, is another request. */
	try_rid(f, 2, "a", "r-", 4, 500);
	expect(f, 3, CORE_REPLY_HELD, 2, 4, "a");
	try_rid(f, 2, "a", "r-12", 5, 500);
	expect(f, 4, CORE_REPLY_HELD, 2, 5, "a");
	assert_books_balance(f);
}

static void
test_table_rid_is_forgotten_when_the_hold_ends(void **state)
{
	struct table_fixture *f = *state;
	struct core_handle h;

	acquire_rid(f, 0, "a", "r", CORE_WAIT_FOREVER, false, 1, 0);
	h = handle_of(expect(f, 0, CORE_REPLY_GRANTED, 0, 1, "a"));
	/* At its expiry the lease is over: a repeat is a new request. */
	acquire_rid(f, 0, "a", "r", CORE_WAIT_FOREVER, false, 2, LEASE);
	expect(f, 1, CORE_EVENT_RECLAIMED, -1, 0, "a");
	h = handle_of(expect(f, 2, CORE_REPLY_GRANTED, 0, 2, "a"));
	assert_int_equal(h.fence, 2);
	/* After RELEASE too. */
	release(f, 0, "a", h, 3, LEASE + 1);
	expect(f, 3, CORE_REPLY_RELEASED, 0, 3, "a");
	assert_null(find(f, "a")->lock.tags);
	acquire_rid(f, 0, "a", "r", CORE_WAIT_FOREVER, false, 4, LEASE + 2);
	h = handle_of(expect(f, 4, CORE_REPLY_GRANTED, 0, 4, "a"));
	assert_int_equal(h.fence, 3);
	assert_books_balance(f);
}

/*
 * A repeat of a request still in the queue takes its place - its turn,
 * not the tail - and the request it repeats is answered SUPERSEDED: one
 * rid never waits twice, nor is granted twice.
 */
static void
test_table_rid_repeat_of_a_waiter_takes_its_place(void **state)
{
	struct table_fixture *f = *state;
	struct core_handle h;

	acquire(f, 0, "a", LEASE, CORE_WAIT_FOREVER, false, 1, 0);
	h = handle_of(expect(f, 0, CORE_REPLY_GRANTED, 0, 1, "a"));
	acquire_rid(f, 1, "a", "w", CORE_WAIT_FOREVER, false, 2, 10);
	acquire_rid(f, 2, "a", NULL, CORE_WAIT_FOREVER, false, 3, 20);
	assert_int_equal(f->ngot, 1);
	acquire_rid(f, 3, "a", "w", 5000, false, 4, 30);
	expect(f, 1, CORE_REPLY_SUPERSEDED, 1, 2, "a");
	assert_int_equal(core_entry_queue_len(find(f, "a")), 2);
	assert_int_equal(f->table.stats.waiters, 2);
	assert_books_balance(f);
	/* The repeat is at the head, where the request it repeats was. */
	release(f, 0, "a", h, 5, 100);
	expect(f, 2, CORE_REPLY_RELEASED, 0, 5, "a");
	h = handle_of(expect(f, 3, CORE_REPLY_GRANTED, 3, 4, "a"));
	assert_int_equal(f->got[3].r.waited_ms, 100 - 10);
	/* And now it holds: one more repeat gets the grant, not a place. */
	acquire_rid(f, 4, "a", "w", CORE_WAIT_FOREVER, false, 6, 150);
	assert_true(expect(f, 4, CORE_REPLY_GRANTED, 4, 6, "a")->r.fence ==
	    h.fence);
	assert_int_equal(core_entry_queue_len(find(f, "a")), 1);
	release(f, 3, "a", h, 7, 200);
	expect(f, 5, CORE_REPLY_RELEASED, 3, 7, "a");
	expect(f, 6, CORE_REPLY_GRANTED, 2, 3, "a");
	assert_int_equal(f->ngot, 7);
	assert_books_balance(f);
}

/* A TRY never queues: it leaves a waiting request with its rid alone. */
static void
test_table_rid_try_leaves_a_waiter_with_its_rid(void **state)
{
	struct table_fixture *f = *state;

	acquire(f, 0, "a", LEASE, CORE_WAIT_FOREVER, false, 1, 0);
	acquire_rid(f, 1, "a", "w", CORE_WAIT_FOREVER, false, 2, 10);
	try_rid(f, 2, "a", "w", 3, 20);
	expect(f, 1, CORE_REPLY_HELD, 2, 3, "a");
	assert_int_equal(core_entry_queue_len(find(f, "a")), 1);
	assert_books_balance(f);
}

/* A hold bound by onclose=release follows the connection that repeated
 * its request: the closing of the one it had is then no release. */
static void
test_table_rid_repeat_moves_an_onclose_binding(void **state)
{
	struct table_fixture *f = *state;

	acquire_rid(f, 0, "a", "r", CORE_WAIT_FOREVER, true, 1, 0);
	handle_of(expect(f, 0, CORE_REPLY_GRANTED, 0, 1, "a"));
	assert_int_equal(drain(f), 1);
	acquire_rid(f, 1, "a", "r", CORE_WAIT_FOREVER, false, 2, 10);
	expect(f, 1, CORE_REPLY_GRANTED, 1, 2, "a");
	assert_int_equal(drain(f), 1);
	assert_true(change_of(f, "a")->rec.onclose_release);
	assert_int_equal(change_of(f, "a")->rec.owner_id, f->s[1].id);
	core_disconnect(&f->table, &f->s[0], 20);
	assert_int_equal(f->ngot, 2);
	assert_int_equal(find(f, "a")->lock.fence, 1);
	core_disconnect(&f->table, &f->s[1], 30);
	expect(f, 2, CORE_EVENT_RELEASED_ONCLOSE, -1, 0, "a");
	assert_books_balance(f);
}

/* The rid is durable with the grant: a restored hold still knows it. */
static void
test_table_rid_survives_a_restore(void **state)
{
	struct table_fixture *f = *state;
	struct core_record rec;
	struct core_handle h;
	const struct table_fixture_reply *g;

	acquire_rid(f, 0, "a", "client-7/req-42", CORE_WAIT_FOREVER, false, 1,
	    0);
	h = handle_of(expect(f, 0, CORE_REPLY_GRANTED, 0, 1, "a"));
	drain(f);
	rec = change_of(f, "a")->rec;
	table_fixture_restart(f);
	core_table_restore_hwm(&f->table, 1);
	assert_int_equal(core_table_restore(&f->table, "a", 1, &rec, 200),
	    CORE_OK);
	drain(f);
	acquire_rid(f, 2, "a", "client-7/req-42", CORE_WAIT_FOREVER, false,
	    2, 300);
	g = expect(f, 0, CORE_REPLY_GRANTED, 2, 2, "a");
	assert_true(g->r.fence == h.fence && g->r.secret == h.secret &&
	    g->r.lease_ms == LEASE - 300);
	assert_int_equal(drain(f), 0);
}

/*
 * The owner label and the rid live out of line, made only when given: a
 * plain lock has none; a waiter's go over to its hold at the hand-off; a
 * grant whose tags cannot be made is NOMEM and changes nothing.
 */
static void
test_table_tags_are_made_only_when_given_and_follow_the_hand_off(
    void **state)
{
	struct table_fixture *f = *state;
	struct core_acquire_args args = { .lease_ms = LEASE,
	    .wait_ms = CORE_WAIT_FOREVER, .label = "web-1", .label_len = 5,
	    .rid = "r9", .rid_len = 2 };
	struct core_lock_status st;
	const char *p;
	struct core_handle h;

	acquire(f, 0, "a", LEASE, CORE_WAIT_FOREVER, false, 1, 0);
	h = handle_of(expect(f, 0, CORE_REPLY_GRANTED, 0, 1, "a"));
	assert_null(find(f, "a")->lock.tags);
	core_acquire(&f->table, &f->s[1], "a", 1, &args, 2, 10);
	release(f, 0, "a", h, 3, 20);
	expect(f, 2, CORE_REPLY_GRANTED, 1, 2, "a");
	assert_int_equal(core_tags_label(find(f, "a")->lock.tags, &p), 5);
	assert_memory_equal(p, "web-1", 5);
	assert_int_equal(core_tags_rid(find(f, "a")->lock.tags, &p), 2);
	assert_memory_equal(p, "r9", 2);
	core_status(&f->table, "a", 1, 30, &st);
	assert_int_equal(st.label_len, 5);
	assert_memory_equal(st.label, "web-1", 5);
	drain(f);
	assert_int_equal(change_of(f, "a")->rec.label_len, 5);
	assert_int_equal(change_of(f, "a")->rec.rid_len, 2);
	/* No memory for the tags of an immediate grant (the entry is
	 * made, its tags are not): NOMEM, no grant. */
	table_fixture_alloc_budget = 1;
	core_try(&f->table, &f->s[2], "b", 1, &args, 4, 40);
	table_fixture_alloc_budget = -1;
	expect(f, 3, CORE_REPLY_NOMEM, 2, 4, "b");
	assert_null(find(f, "b")->lock.tags);
	assert_int_equal(f->table.stats.held, 1);
	assert_int_equal(f->table.hwm, 2);
	assert_books_balance(f);
}

static void
test_table_rid_longer_than_64_bytes_is_badarg(void **state)
{
	struct table_fixture *f = *state;
	char rid[CORE_RID_MAX + 2];

	memset(rid, 'x', sizeof(rid) - 1);
	rid[sizeof(rid) - 1] = '\0';
	acquire_rid(f, 0, "a", rid, CORE_WAIT_FOREVER, false, 1, 0);
	expect(f, 0, CORE_REPLY_BADARG, 0, 1, NULL);
	rid[CORE_RID_MAX] = '\0';
	acquire_rid(f, 0, "a", rid, CORE_WAIT_FOREVER, false, 2, 0);
	expect(f, 1, CORE_REPLY_GRANTED, 0, 2, "a");
}

int
main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, table_fixture_setup, \
	table_fixture_teardown)
	const struct CMUnitTest tests[] = {
		T(test_table_acquire_of_a_free_lock_is_granted_at_once),
		T(test_table_bad_arguments_are_badarg_and_make_no_entry),
		T(test_table_acquire_defaults_and_caps_the_lease),
		T(test_table_waiters_are_granted_in_strict_fifo_order),
		T(test_table_release_hands_the_lock_to_the_next_waiter_at_once),
		T(test_table_waiter_times_out_and_leaves_the_queue),
		T(test_table_tick_returns_the_earliest_pending_deadline),
		T(test_table_wait_zero_fails_at_once_when_held),
		T(test_table_wait_zero_succeeds_when_free_or_expired),
		T(test_table_waiter_timeout_after_its_grant_does_not_disturb_the_holder),
		T(test_table_expiry_hands_off_to_the_next_waiter_at_exactly_the_expiry_instant),
		T(test_table_expiry_and_a_wait_limit_at_the_same_instant_grant_the_waiter),
		T(test_table_hand_off_times_out_a_waiter_whose_wait_elapsed_before_its_tick),
		T(test_table_hand_off_at_the_wait_deadline_instant_still_grants),
		T(test_table_try_never_queues),
		T(test_table_try_says_held_when_anyone_waits_even_if_the_lease_expired),
		T(test_table_renew_extends_the_lease_and_keeps_the_fence),
		T(test_table_renew_with_a_stale_handle_is_conflict_and_changes_nothing),
		T(test_table_release_with_a_stale_handle_is_notheld_and_disturbs_nobody),
		T(test_table_disconnect_releases_onclose_leases_and_hands_them_on),
		T(test_table_disconnect_reclaims_an_expired_onclose_lease_as_reclaimed),
		T(test_table_release_by_handle_unbinds_an_onclose_lease),
		T(test_table_disconnect_removes_waiters_without_reply_and_they_are_never_granted),
		T(test_table_cancel_waiters_answers_shutdown),
		T(test_table_limits_answer_limit),
		T(test_table_init_answers_nomem_when_allocation_fails),
		T(test_table_allocation_failure_answers_nomem_and_keeps_the_table_whole),
		T(test_table_waiter_allocation_failure_leaves_the_holder_alone),
		T(test_table_idle_entries_are_dropped_at_changes),
		T(test_table_changes_reports_exactly_the_changed_records),
		T(test_table_recovery_resumes_the_holder_and_continues_the_counter),
		T(test_table_recovery_raises_the_counter_to_a_restored_fence),
		T(test_table_recovery_reclaims_an_expired_record_by_tick_and_hands_it_on),
		T(test_table_recovery_of_a_record_that_expired_while_down_reclaims_it_at_once),
		T(test_table_restore_of_an_onclose_record_releases_it),
		T(test_table_restore_of_an_onclose_record_binds_it_to_a_given_session),
		T(test_table_restore_forgets_what_the_caller_noted_on_the_entry),
		T(test_table_rollback_after_a_grant_reverts_the_grant),
		T(test_table_rollback_of_a_hand_off_restores_the_old_holder),
		T(test_table_rollback_of_a_renewal_keeps_the_holder_and_its_binding),
		T(test_table_fence_overflow_answers_overflow_and_grants_nothing),
		T(test_table_status_reports_the_holder_ttl_and_queue),
		T(test_table_many_names_grow_the_buckets_and_stay_found),
		T(test_table_reserve_makes_room_so_that_recovery_never_grows_the_table),
		T(test_table_reserve_keeps_entries_already_in_and_never_shrinks),
		T(test_table_reserve_failure_answers_nomem_and_keeps_the_table_whole),
		T(test_table_expected_locks_makes_the_room_at_init),
		T(test_table_restore_batch_is_the_same_as_restoring_one_by_one),
		T(test_table_restore_batch_stops_at_the_first_error_and_says_where),
		T(test_table_name_hash_is_siphash_1_3_at_every_length_and_alignment),
		T(test_table_heap_keeps_the_earliest_deadline_first),
			T(test_table_rid_repeat_returns_the_live_grant_and_changes_nothing),
		T(test_table_rid_is_forgotten_when_the_hold_ends),
		T(test_table_rid_repeat_of_a_waiter_takes_its_place),
		T(test_table_rid_try_leaves_a_waiter_with_its_rid),
		T(test_table_rid_repeat_moves_an_onclose_binding),
		T(test_table_rid_survives_a_restore),
		T(test_table_rid_longer_than_64_bytes_is_badarg),
		T(test_table_tags_are_made_only_when_given_and_follow_the_hand_off),
};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
