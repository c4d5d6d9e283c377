/*
 * test_memory.c - what one lock costs the table in memory, and that the
 * parts moved out of line to keep a plain lock small still work.
 *
 * make bench measures bytes of resident memory per held plain lock with a
 * million of them (docs/performance.md); most of it is the lock's
 * core_entry.  These tests pin the allocations behind it through the
 * table's allocation seam: a held plain lock is one allocation that fits
 * glibc's 144-byte chunk with names of up to 16 bytes (the bench's 11, or
 * 16 with MEM_NAME_LEN=16); the owner label, rid, lock-delay,
 * onclose=release binding, waiter queue and holder set are paid for, out
 * of line, only by the names and holds that use them, and those still
 * behave as before.  Sizes, not times: nothing here is timed.
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

#define LEASE 1000
#define MAX_ALLOCS 16
#define MAX_REPLIES 64

/* The bench's names are "held/N" for N below a million: 11 bytes at most;
 * with MEM_NAME_LEN=16, "held/00000123456", the 16 of issue 30's target. */
#define BENCH_NAME "held/123456"
#define BENCH_NAME_16 "held/00000123456"
/* glibc's chunk for a plain lock's entry with such names, at most. */
#define ENTRY_CHUNK_MAX 144

struct fixture {
	struct core_table table;
	struct core_config config;
	struct core_session a, b;
	struct core_reply replies[MAX_REPLIES];
	size_t nreplies;
	uint64_t secrets;
};

/* ---- seams ------------------------------------------------------------ */

/* The sizes of the allocations made while `recording`. */
static bool recording;
static size_t alloc_sizes[MAX_ALLOCS];
static size_t nallocs;

static void *
seam_realloc(void *p, size_t size)
{
	if (recording) {
		assert_true(nallocs < MAX_ALLOCS);
		alloc_sizes[nallocs++] = size;
	}
	return realloc(p, size);
}

static uint64_t
seam_secret(void *ctx)
{
	struct fixture *f = ctx;

	return 0x5ec0000000000000ULL + ++f->secrets;
}

static void
sink_record(void *ctx, const struct core_reply *r)
{
	struct fixture *f = ctx;

	assert_true(f->nreplies < MAX_REPLIES);
	f->replies[f->nreplies] = *r;
	f->replies[f->nreplies].name = NULL;
	f->replies[f->nreplies].status = NULL;
	f->nreplies++;
}

/* What glibc's malloc takes for a request of n bytes: n plus its 8-byte
 * header, rounded up to 16, and never less than 32. */
static size_t
malloc_chunk(size_t n)
{
	size_t chunk = (n + 8 + 15) & ~(size_t)15;

	return chunk < 32 ? 32 : chunk;
}

static void
record_start(void)
{
	nallocs = 0;
	recording = true;
}

static void
record_stop(void)
{
	recording = false;
}

/* ---- fixture ---------------------------------------------------------- */

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct core_sink sink = { sink_record, f };

	if (f == NULL)
		return -1;
	core_config_defaults(&f->config);
	f->config.secret = seam_secret;
	f->config.secret_ctx = f;
	f->config.realloc = seam_realloc;
	f->config.hash_key[0] = 0x0123456789abcdefULL;
	f->config.hash_key[1] = 0xfedcba9876543210ULL;
	assert_int_equal(core_table_init(&f->table, &f->config,
	    &core_rules_std, sink), CORE_OK);
	/* Room made now, so that a lock's own allocations stand alone. */
	assert_int_equal(core_table_reserve(&f->table, 64), CORE_OK);
	core_session_init(&f->a, 1);
	core_session_init(&f->b, 2);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	record_stop();
	core_disconnect(&f->table, &f->a, 0);
	core_disconnect(&f->table, &f->b, 0);
	core_table_destroy(&f->table);
	free(f);
	return 0;
}

static void
drain_record(void *ctx, const char *name, size_t name_len,
    uint64_t key_fence, const struct core_record *rec)
{
	(void)ctx;
	(void)name;
	(void)name_len;
	(void)key_fence;
	(void)rec;
}

/* Commits whatever changed, as the daemon does after each batch. */
static void
drain(struct fixture *f)
{
	bool hwm_changed;

	(void)core_table_changes(&f->table, drain_record, NULL, &hwm_changed);
}

/* ACQUIRE name for session s with args; the reply must be `kind`. */
static struct core_reply
acquire(struct fixture *f, struct core_session *s, const char *name,
    const struct core_acquire_args *args, enum core_reply_kind kind,
    core_time now)
{
	f->nreplies = 0;
	(void)core_acquire(&f->table, s, name, strlen(name), args, 7, now);
	assert_int_equal(f->nreplies, 1);
	assert_int_equal(f->replies[0].kind, kind);
	return f->replies[0];
}

static bool
held(struct fixture *f, const char *name, core_time now)
{
	struct core_lock_status st;

	core_status(&f->table, name, strlen(name), now, &st);
	return st.held;
}

/* Commits, then closes session s: its bound hold of name, and only that,
 * is released by the close. */
static void
close_releases(struct fixture *f, struct core_session *s, const char *name,
    core_time now)
{
	drain(f);
	f->nreplies = 0;
	core_disconnect(&f->table, s, now);
	assert_int_equal(f->nreplies, 1);
	assert_int_equal(f->replies[0].kind, CORE_EVENT_RELEASED_ONCLOSE);
	assert_false(held(f, name, now));
}

/* ---- tests ------------------------------------------------------------ */

/* A held plain lock is its entry and nothing else, in a 144-byte chunk
 * with a name of 11 or 16 bytes. */
static void
test_memory_plain_held_lock_is_one_entry_in_a_144_byte_chunk(void **state)
{
	static const char *const names[] = { BENCH_NAME, BENCH_NAME_16 };
	struct fixture *f = *state;
	struct core_acquire_args args = { .lease_ms = LEASE };
	const struct core_entry *e;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		record_start();
		acquire(f, &f->a, names[i], &args, CORE_REPLY_GRANTED, 0);
		record_stop();
		assert_int_equal(nallocs, 1);
		assert_int_equal(alloc_sizes[0],
		    offsetof(struct core_entry, name) + strlen(names[i]));
		assert_in_range(malloc_chunk(alloc_sizes[0]), 32,
		    ENTRY_CHUNK_MAX);
		e = core_table_find(&f->table, names[i], strlen(names[i]));
		assert_non_null(e);
		assert_null(e->lock.tags);
		assert_null(e->multi);
		assert_null(core_entry_owner(e));
		assert_int_equal(core_entry_delay_until(e), 0);
		assert_int_equal(core_entry_queue_len(e), 0);
	}
}

/*
 * onclose=release puts the binding's link in the hold's tags: a bound
 * plain lock pays one small allocation more, and its connection's close
 * still releases it (and only its own).
 */
static void
test_memory_onclose_release_binds_through_the_tags(void **state)
{
	struct fixture *f = *state;
	struct core_acquire_args bound = { .lease_ms = LEASE,
	    .onclose_release = true };
	struct core_acquire_args plain = { .lease_ms = LEASE };
	const struct core_entry *e;

	record_start();
	acquire(f, &f->a, "x", &bound, CORE_REPLY_GRANTED, 0);
	record_stop();
	assert_int_equal(nallocs, 2);
	assert_in_range(malloc_chunk(alloc_sizes[1]), 32, 48);
	e = core_table_find(&f->table, "x", 1);
	assert_ptr_equal(core_entry_owner(e), &f->a);
	assert_non_null(core_tags_bond(e->lock.tags));
	acquire(f, &f->a, "y", &plain, CORE_REPLY_GRANTED, 0);
	acquire(f, &f->b, "z", &bound, CORE_REPLY_GRANTED, 0);
	close_releases(f, &f->a, "x", 10);
	assert_true(held(f, "y", 10));   /* onclose=keep */
	assert_true(held(f, "z", 10));   /* another session's */
	close_releases(f, &f->b, "z", 20);
}

/* A waiter granted later is bound as it asked, through its tags. */
static void
test_memory_onclose_release_waiter_is_bound_when_granted(void **state)
{
	struct fixture *f = *state;
	struct core_acquire_args plain = { .lease_ms = LEASE };
	struct core_acquire_args bound = { .lease_ms = LEASE,
	    .wait_ms = CORE_WAIT_FOREVER, .onclose_release = true };
	struct core_reply r;
	struct core_handle h;

	r = acquire(f, &f->a, "x", &plain, CORE_REPLY_GRANTED, 0);
	h.fence = r.fence;
	h.secret = r.secret;
	f->nreplies = 0;
	(void)core_acquire(&f->table, &f->b, "x", 1, &bound, 8, 1);
	assert_int_equal(f->nreplies, 0);   /* queued */
	f->nreplies = 0;
	(void)core_release(&f->table, &f->a, "x", 1, h, 9, 2);
	assert_int_equal(f->nreplies, 2);
	assert_int_equal(f->replies[1].kind, CORE_REPLY_GRANTED);
	assert_ptr_equal(core_entry_owner(core_table_find(&f->table, "x", 1)), &f->b);
	close_releases(f, &f->b, "x", 3);
}

/* A rid repeat from another connection moves the binding there. */
static void
test_memory_bound_hold_follows_its_rid_repeat(void **state)
{
	struct fixture *f = *state;
	struct core_acquire_args bound = { .lease_ms = LEASE,
	    .onclose_release = true, .rid = "r-1", .rid_len = 3 };
	struct core_reply first, again;

	first = acquire(f, &f->a, "x", &bound, CORE_REPLY_GRANTED, 0);
	drain(f);
	again = acquire(f, &f->b, "x", &bound, CORE_REPLY_GRANTED, 1);
	assert_true(again.repeat);
	assert_true(again.fence == first.fence);
	drain(f);
	core_disconnect(&f->table, &f->a, 2);
	assert_true(held(f, "x", 2));
	close_releases(f, &f->b, "x", 3);
}

/* The hold's lock-delay lives in its tags, the name's delay in its
 * core_multi, made with the grant; and it still holds the name back. */
static void
test_memory_lock_delay_is_kept_in_the_tags_and_still_delays(void **state)
{
	struct fixture *f = *state;
	struct core_acquire_args delayed = { .lease_ms = LEASE,
	    .delay_ms = 500 };
	struct core_acquire_args plain = { .lease_ms = LEASE };
	struct core_lock_status st;
	const struct core_entry *e;

	record_start();
	acquire(f, &f->a, "x", &delayed, CORE_REPLY_GRANTED, 0);
	record_stop();
	assert_int_equal(nallocs, 3);   /* entry, tags, the name's multi */
	assert_int_equal(alloc_sizes[1],
	    offsetof(struct core_tags, bytes) + sizeof(int64_t));
	assert_int_equal(alloc_sizes[2], sizeof(struct core_multi));
	e = core_table_find(&f->table, "x", 1);
	assert_int_equal(core_tags_delay(e->lock.tags), 500);
	assert_null(core_tags_bond(e->lock.tags));
	assert_non_null(e->multi);
	assert_int_equal(core_entry_delay_until(e), 0);
	drain(f);

	/* The lease runs out at 1000: the name is delayed until 1500. */
	(void)core_tick(&f->table, LEASE);
	core_status(&f->table, "x", 1, LEASE + 100, &st);
	assert_false(st.held);
	assert_int_equal(st.delay_ms, 400);
	assert_int_equal(core_entry_delay_until(e), LEASE + 500);
	f->nreplies = 0;
	(void)core_try(&f->table, &f->b, "x", 1, &plain, 9, LEASE + 100);
	assert_int_equal(f->replies[0].kind, CORE_REPLY_HELD);
	acquire(f, &f->b, "x", &plain, CORE_REPLY_TIMEOUT, LEASE + 100);
	drain(f);
	acquire(f, &f->b, "x", &plain, CORE_REPLY_GRANTED, LEASE + 500);
}

/*
 * A waiting ACQUIRE is one 128-byte chunk, its lock-delay in its tags
 * only when it asked for one; the tags go over to its hold, whose end
 * then starts the delay.  The first waiter of a name also makes the
 * name's core_multi, where its queue is, once: a plain lock that nobody
 * waits for has none.
 */
static void
test_memory_waiter_is_one_128_byte_chunk_and_keeps_its_delay(void **state)
{
	struct fixture *f = *state;
	struct core_acquire_args plain = { .lease_ms = LEASE };
	struct core_acquire_args waits = { .lease_ms = LEASE,
	    .wait_ms = CORE_WAIT_FOREVER };
	struct core_acquire_args delayed = { .lease_ms = LEASE,
	    .wait_ms = CORE_WAIT_FOREVER, .delay_ms = 300 };
	struct core_lock_status st;
	struct core_reply r;
	struct core_handle h;

	r = acquire(f, &f->a, "x", &plain, CORE_REPLY_GRANTED, 0);
	h.fence = r.fence;
	h.secret = r.secret;
	record_start();
	(void)core_acquire(&f->table, &f->b, "x", 1, &waits, 8, 1);
	record_stop();
	assert_int_equal(nallocs, 2);   /* the queue's multi, the waiter */
	assert_int_equal(alloc_sizes[0], sizeof(struct core_multi));
	assert_in_range(malloc_chunk(alloc_sizes[0]), 32, 80);
	assert_int_equal(alloc_sizes[1], sizeof(struct core_waiter));
	assert_in_range(malloc_chunk(alloc_sizes[1]), 32, 128);
	record_start();
	(void)core_acquire(&f->table, &f->b, "x", 1, &delayed, 9, 1);
	record_stop();
	assert_int_equal(nallocs, 2);   /* its tags, then the waiter */

	/* The first waiter is granted, then releases; the delayed one
	 * holds until its lease runs out at 1 + 1 + LEASE. */
	f->nreplies = 0;
	(void)core_release(&f->table, &f->a, "x", 1, h, 10, 1);
	assert_int_equal(f->replies[1].kind, CORE_REPLY_GRANTED);
	h.fence = f->replies[1].fence;
	h.secret = f->replies[1].secret;
	f->nreplies = 0;
	(void)core_release(&f->table, &f->b, "x", 1, h, 11, 2);
	assert_int_equal(f->replies[1].kind, CORE_REPLY_GRANTED);
	assert_int_equal(core_tags_delay(
	    core_table_find(&f->table, "x", 1)->lock.tags), 300);
	drain(f);
	(void)core_tick(&f->table, 2 + LEASE);
	core_status(&f->table, "x", 1, 2 + LEASE, &st);
	assert_false(st.held);
	assert_int_equal(st.delay_ms, 300);
}

/* A rid costs its tags 3 bytes beside its own: the same glibc chunk as
 * with the 2-byte header they had before the lock-delay and the binding
 * moved in (liblockd sends a 32-byte rid with every ACQUIRE when it may
 * fail over). */
static void
test_memory_rid_tags_cost_three_bytes_beside_the_rid(void **state)
{
	struct fixture *f = *state;
	static const char rid[] = "0123456789abcdef0123456789abcdef";
	struct core_acquire_args args = { .lease_ms = LEASE, .rid = rid,
	    .rid_len = sizeof(rid) - 1 };

	record_start();
	acquire(f, &f->a, "x", &args, CORE_REPLY_GRANTED, 0);
	record_stop();
	assert_int_equal(nallocs, 2);
	assert_int_equal(alloc_sizes[1],
	    offsetof(struct core_tags, bytes) + sizeof(rid) - 1);
	assert_int_equal(offsetof(struct core_tags, bytes), 3);
	assert_true(malloc_chunk(alloc_sizes[1]) <=
	    malloc_chunk(2 + sizeof(rid) - 1));
}

/* A record restored with onclose=release and its session still there is
 * bound again, through tags made for it. */
static void
test_memory_restored_bound_hold_is_released_by_its_close(void **state)
{
	struct fixture *f = *state;
	struct core_record rec;

	memset(&rec, 0, sizeof(rec));
	rec.fence = 5;
	rec.secret = 77;
	rec.expiry = LEASE;
	rec.lease_ms = LEASE;
	rec.delay_ms = 250;
	rec.onclose_release = true;
	rec.owner_id = f->a.id;
	rec.owner = &f->a;
	assert_int_equal(core_table_restore(&f->table, "x", 1, &rec, 0),
	    CORE_OK);
	assert_ptr_equal(core_entry_owner(core_table_find(&f->table, "x", 1)), &f->a);
	assert_int_equal(core_tags_delay(
	    core_table_find(&f->table, "x", 1)->lock.tags), 250);
	close_releases(f, &f->a, "x", 10);
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_memory_plain_held_lock_is_one_entry_in_a_144_byte_chunk),
		T(test_memory_onclose_release_binds_through_the_tags),
		T(test_memory_onclose_release_waiter_is_bound_when_granted),
		T(test_memory_bound_hold_follows_its_rid_repeat),
		T(test_memory_lock_delay_is_kept_in_the_tags_and_still_delays),
		T(test_memory_waiter_is_one_128_byte_chunk_and_keeps_its_delay),
		T(test_memory_rid_tags_cost_three_bytes_beside_the_rid),
		T(test_memory_restored_bound_hold_is_released_by_its_close),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
