/*
 * test_order.c - the lock table's name-ordered index (core/order.c), which
 * LIST walks: it stays in bytewise order as entries come and go, a prefix
 * is one run of it, and it stays shallow, so a LIST of a prefix visits the
 * depth of a tree and the names it shows, not every lock.
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
#include "core/order.h"

#define NAMES 5000
#define LEASE 1000

static void
sink_drop(void *ctx, const struct core_reply *r)
{
	(void)ctx;
	(void)r;
}

static void
table_open(struct core_table *t, struct core_session *s)
{
	struct core_config config;
	struct core_sink sink = { sink_drop, NULL };

	core_config_defaults(&config);
	config.hash_key[0] = 0x0123456789abcdefULL;
	config.hash_key[1] = 0xfedcba9876543210ULL;
	assert_int_equal(core_table_init(t, &config, &core_rules_std, sink),
	    CORE_OK);
	core_session_init(s, 1);
}

static void
acquire(struct core_table *t, struct core_session *s, const char *name)
{
	struct core_acquire_args args = { .lease_ms = LEASE, .wait_ms = 0 };

	core_acquire(t, s, name, strlen(name), &args, 1, 0);
}

static size_t
depth(const struct core_entry *e)
{
	size_t l, r;

	if (e == NULL)
		return 0;
	l = depth(e->order_left);
	r = depth(e->order_right);
	return 1 + (l > r ? l : r);
}

/* Names arriving in sorted order (the worst case of a plain search tree)
 * and then half of them leaving: the walk is complete and sorted, and the
 * tree's depth stays within a small multiple of log2(n). */
static void
test_order_walk_is_sorted_and_the_tree_stays_shallow(void **state)
{
	struct core_table t;
	struct core_session s;
	const struct core_entry *e;
	char name[32], prev[32] = "";
	size_t n = 0;

	(void)state;
	table_open(&t, &s);
	for (int i = 0; i < NAMES; i++) {
		snprintf(name, sizeof(name), "n/%06d", i);
		acquire(&t, &s, name);
	}
	core_table_changes(&t, NULL, NULL, NULL);
	/* 2 * log2(5000) is about 25; a degenerate list would be 5000. */
	assert_true(depth(t.order_root) < 40);
	/* Every odd one ends (its lease runs out; nothing else changes). */
	for (int i = 1; i < NAMES; i += 2) {
		struct core_lock_status st;

		snprintf(name, sizeof(name), "n/%06d", i);
		core_status(&t, name, strlen(name), LEASE, &st);
	}
	core_table_changes(&t, NULL, NULL, NULL);
	assert_int_equal(t.stats.locks, NAMES / 2);
	for (e = core_list_first(&t, "", 0, NULL, 0); e != NULL;
	    e = core_list_next(&t, e, "", 0)) {
		snprintf(name, sizeof(name), "%.*s", (int)e->name_len,
		    e->name);
		assert_true(strcmp(prev, name) < 0);
		assert_int_equal(atoi(name + 2) % 2, 0);
		memcpy(prev, name, sizeof(prev));
		n++;
	}
	assert_int_equal(n, NAMES / 2);
	assert_true(depth(t.order_root) < 40);
	core_table_destroy(&t);
}

/* A prefix is one run; after= is exclusive and may lie outside it. */
static void
test_order_prefix_and_after_bound_the_walk(void **state)
{
	static const char *const names[] = {
		"a", "ab", "ab/1", "ab/2", "abc", "b", "\xff", "ab/\xff",
	};
	struct core_table t;
	struct core_session s;
	const struct core_entry *e;
	char got[256];
	size_t len = 0;

	(void)state;
	table_open(&t, &s);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		acquire(&t, &s, names[i]);
	for (e = core_list_first(&t, "ab/", 3, NULL, 0); e != NULL;
	    e = core_list_next(&t, e, "ab/", 3))
		len += (size_t)snprintf(got + len, sizeof(got) - len, "%.*s,",
		    (int)e->name_len, e->name);
	assert_string_equal(got, "ab/1,ab/2,ab/\xff,");
	e = core_list_first(&t, "ab", 2, "ab/1", 4);
	assert_non_null(e);
	assert_memory_equal(e->name, "ab/2", 4);
	e = core_list_first(&t, "ab", 2, "a", 1);
	assert_memory_equal(e->name, "ab", 2);
	assert_null(core_list_first(&t, "ab", 2, "ac", 2));
	e = core_list_first(&t, "", 0, "b", 1);
	assert_memory_equal(e->name, "\xff", 1);
	assert_null(core_list_next(&t, e, "", 0));
	assert_true(core__order_compare("ab", 2, "ab/", 3) < 0);
	assert_true(core__order_compare("\xff", 1, "a", 1) > 0);
	core_table_destroy(&t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    test_order_walk_is_sorted_and_the_tree_stays_shallow),
		cmocka_unit_test(test_order_prefix_and_after_bound_the_walk),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
