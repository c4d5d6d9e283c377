/*
 * test_quota.c - the per-principal counts (daemon/quota.c): principals
 * made and freed as their counts reach zero, and the fence map kept whole
 * through thousands of grants and ungrants in random order, checked
 * against a plain array.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/quota.h"
#include "tests/lib/rng.h"

static void
test_quota_principal_lives_while_something_counts_on_it(void **state)
{
	struct quota q;
	struct quota_entry *a, *b;

	(void)state;
	quota_init(&q, NULL);
	a = quota_get(&q, "alice");
	assert_non_null(a);
	assert_ptr_equal(quota_get(&q, "alice"), a);
	b = quota_get(&q, "bob");
	assert_ptr_not_equal(a, b);
	assert_int_equal(q.entries, 2);
	a->connections = 1;
	assert_int_equal(quota_grant(&q, a, 7), 0);
	a->connections = 0;
	quota_put(&q, a);            /* still holds fence 7 */
	assert_int_equal(q.entries, 2);
	quota_ungrant(&q, 99);       /* never granted: ignored */
	assert_int_equal(a->held, 1);
	quota_ungrant(&q, 7);        /* the last count: alice goes */
	assert_int_equal(q.entries, 1);
	quota_put(&q, b);
	assert_int_equal(q.entries, 0);
	quota_free(&q);
}

#define FENCES 5000
#define PRINCIPALS 7

static void
test_quota_fence_map_survives_random_grants_and_ungrants(void **state)
{
	static uint64_t held[FENCES];
	static unsigned owner[FENCES];
	struct quota q;
	struct quota_entry *e[PRINCIPALS];
	uint32_t want[PRINCIPALS] = { 0 };
	struct rng rng;
	uint64_t next = 1;
	size_t n = 0, step, i;
	char name[16];

	(void)state;
	rng_seed(&rng, 18);
	quota_init(&q, NULL);
	for (i = 0; i < PRINCIPALS; i++) {
		snprintf(name, sizeof(name), "p%zu", i);
		e[i] = quota_get(&q, name);
		e[i]->connections = 1;    /* keep it while the test runs */
	}
	for (step = 0; step < 40000; step++) {
		if (n < FENCES && (n == 0 || rng_below(&rng, 3) != 0)) {
			unsigned p = (unsigned)rng_below(&rng, PRINCIPALS);
			/* Fences rise with gaps, as shared grants make them. */
			next += 1 + rng_below(&rng, 4);
			assert_int_equal(quota_grant(&q, e[p], next), 0);
			held[n] = next;
			owner[n++] = p;
			want[p]++;
		} else {
			size_t k = rng_below(&rng, n);
			quota_ungrant(&q, held[k]);
			want[owner[k]]--;
			held[k] = held[n - 1];
			owner[k] = owner[--n];
		}
		if (step % 997 == 0)
			for (i = 0; i < PRINCIPALS; i++)
				assert_int_equal(e[i]->held, want[i]);
	}
	assert_int_equal(q.grants, n);
	while (n > 0) {
		quota_ungrant(&q, held[--n]);
		want[owner[n]]--;
	}
	for (i = 0; i < PRINCIPALS; i++)
		assert_int_equal(e[i]->held, 0);
	assert_int_equal(q.grants, 0);
	quota_free(&q);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    test_quota_principal_lives_while_something_counts_on_it),
		cmocka_unit_test(
		    test_quota_fence_map_survives_random_grants_and_ungrants),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
