/*
 * test_recovery.c - daemon/recovery.c, from a store's keys to one call per
 * name with all its records: a name's holder keys gathered with it, old
 * records (versions 1, 2, 3) read as before, and every key or record that
 * does not fit refused with a clear error rather than guessed at.  Then
 * the service's load over it (service_open on the tests' in-memory
 * store): plain names restored as before, and a name with holder keys -
 * records no writer on this branch makes yet - refused as a newer
 * lockd's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/bytes.h"
#include "daemon/format.h"
#include "daemon/recovery.h"
#include "daemon/service.h"
#include "tests/lib/store_mem.h"

static const uint8_t boot[16] = "boot-recovery";

#define NOW 100000
#define WALL 1700000000000LL

/* What the calls handed on: names, their record counts and fences. */
struct got {
	int names;
	char name[8][CORE_NAME_MAX + 1];
	size_t n[8], holders[8];
	uint64_t fence[8][4];
	bool other_boot[8];
	int64_t wall_end[8];     /* its first record's wall-clock end */
	int stop_at;        /* name_fn returns 7 for this name (1-based) */
};

static int
got_name(void *ctx, struct recovery_name *name)
{
	struct got *g = ctx;
	size_t i;

	assert_true(g->names < 8);
	memcpy(g->name[g->names], name->name, name->name_len);
	g->name[g->names][name->name_len] = '\0';
	g->n[g->names] = name->n;
	g->holders[g->names] = name->holders;
	g->other_boot[g->names] = name->other_boot;
	g->wall_end[g->names] = name->walls[0][0];
	for (i = 0; i < name->n && i < 4; i++)
		g->fence[g->names][i] = name->recs[i].fence;
	return ++g->names == g->stop_at ? 7 : 0;
}

static void
start(struct recovery *r, struct got *g)
{
	memset(r, 0, sizeof(*r));
	memset(g, 0, sizeof(*g));
	recovery_init(r);
	r->boot_id = boot;
	r->max_lease_ms = 300000;
	r->now = NOW;
	r->wall_now = WALL;
	r->name_fn = got_name;
	r->ctx = g;
}

/* A version-3 record of fence (0: a free name in lock-delay). */
static size_t
record(uint64_t fence, uint16_t limit, bool shared,
    unsigned char out[FORMAT_RECORD_SIZE])
{
	struct core_record rec = { .fence = fence, .secret = 9,
	    .lease_ms = 30000, .expiry = NOW + 30000, .limit = limit,
	    .shared = shared };

	if (fence == 0)
		rec.delay_until = NOW + 5000;
	return format_record_encode(&rec, boot, NOW, WALL, out);
}

/* Hands (name, key_fence) with a record of rec_fence to recovery_key. */
static int
feed(struct recovery *r, const char *name, uint64_t key_fence,
    uint64_t rec_fence, uint16_t limit, bool shared)
{
	unsigned char val[FORMAT_RECORD_SIZE];
	char key[FORMAT_KEY_MAX];
	size_t klen = format_key(name, strlen(name), key_fence, key);
	size_t vlen = record(rec_fence, limit, shared, val);

	return recovery_key(r, key, klen, val, vlen);
}

/* A name's holders come with it, one call per name, in key order; a
 * plain name alone; a free name in lock-delay as a record of fence 0. */
static void
test_recovery_gathers_a_names_holders_into_one_call(void **state)
{
	struct recovery r;
	struct got g;

	(void)state;
	start(&r, &g);
	assert_int_equal(feed(&r, "a", 0, 4, 0, false), 0);
	assert_int_equal(feed(&r, "ab", 5, 5, 3, false), 0);
	assert_int_equal(feed(&r, "ab", 6, 6, 3, false), 0);
	assert_int_equal(feed(&r, "ab", 300, 300, 3, false), 0);
	assert_int_equal(g.names, 1);     /* "ab" is still being gathered */
	assert_int_equal(feed(&r, "ab\x01", 0, 0, 0, false), 0);
	assert_int_equal(feed(&r, "b", 7, 7, 0, true), 0);
	assert_int_equal(recovery_finish(&r), 0);
	assert_int_equal(g.names, 4);
	assert_string_equal(g.name[0], "a");
	assert_true(g.n[0] == 1 && g.holders[0] == 0 && g.fence[0][0] == 4);
	assert_string_equal(g.name[1], "ab");
	assert_true(g.n[1] == 3 && g.holders[1] == 3);
	assert_true(g.fence[1][0] == 5 && g.fence[1][1] == 6 &&
	    g.fence[1][2] == 300);
	assert_string_equal(g.name[2], "ab\x01");
	assert_true(g.n[2] == 1 && g.holders[2] == 0 && g.fence[2][0] == 0);
	assert_string_equal(g.name[3], "b");
	assert_true(g.n[3] == 1 && g.holders[3] == 1);
	/* Nothing more to hand on. */
	assert_int_equal(recovery_finish(&r), 0);
	assert_int_equal(g.names, 4);
	recovery_free(&r);

	/* The longest name's holders (264-byte keys), and what name_fn
	 * says stops the load. */
	{
		char name[CORE_NAME_MAX + 1];
		memset(name, 'n', CORE_NAME_MAX);
		name[CORE_NAME_MAX] = '\0';
		start(&r, &g);
		g.stop_at = 1;
		assert_int_equal(feed(&r, name, 1, 1, 2, false), 0);
		assert_int_equal(feed(&r, name, 2, 2, 2, false), 0);
		assert_int_equal(feed(&r, "z", 0, 3, 0, false), 7);
		assert_true(g.names == 1 && g.n[0] == 2);
		recovery_free(&r);
	}
}

/* Records of versions 1 and 2, as older lockds wrote them, come through
 * as plain names. */
/* A name with a record of another boot is marked so (the service writes
 * it again for this boot), with each record's wall-clock readings; the
 * mark is the name's, not carried to the next. */
static void
test_recovery_marks_a_name_with_a_record_of_another_boot(void **state)
{
	const uint8_t other[16] = "boot-before";
	struct core_record rec = { .fence = 6, .secret = 9, .lease_ms = 30000,
	    .expiry = 7000, .limit = 3 };
	unsigned char val[FORMAT_RECORD_SIZE];
	char key[FORMAT_KEY_MAX];
	struct recovery r;
	struct got g;
	size_t klen, vlen;

	(void)state;
	start(&r, &g);
	assert_int_equal(feed(&r, "a", 0, 4, 0, false), 0);
	assert_int_equal(feed(&r, "b", 5, 5, 3, false), 0);
	klen = format_key("b", 1, 6, key);
	vlen = format_record_encode(&rec, other, 1000, WALL - 5000, val);
	assert_int_equal(recovery_key(&r, key, klen, val, vlen), 0);
	assert_int_equal(feed(&r, "c", 0, 8, 0, false), 0);
	assert_int_equal(recovery_finish(&r), 0);
	assert_int_equal(g.names, 3);
	assert_true(!g.other_boot[0] && g.other_boot[1] && !g.other_boot[2]);
	assert_true(g.wall_end[0] == WALL + 30000 &&
	    g.wall_end[2] == WALL + 30000);
	recovery_free(&r);
}

static void
test_recovery_reads_old_records_as_plain_names(void **state)
{
	unsigned char v1[FORMAT_RECORD_V1_SIZE], v2[FORMAT_RECORD_V2_SIZE];
	struct recovery r;
	struct got g;

	(void)state;
	memset(v1, 0, sizeof(v1));
	v1[0] = 1;
	bytes_put_le64(v1 + 8, 41);
	bytes_put_le64(v1 + 24, 30000);
	bytes_put_le64(v1 + 32, NOW + 1000);
	memcpy(v1 + 48, boot, 16);
	memcpy(v2, v1, sizeof(v1));
	memset(v2 + 64, 0, sizeof(v2) - 64);
	v2[0] = 2;
	bytes_put_le64(v2 + 8, 42);
	start(&r, &g);
	assert_int_equal(recovery_key(&r, "v1", 2, v1, sizeof(v1)), 0);
	assert_int_equal(recovery_key(&r, "v2", 2, v2, sizeof(v2)), 0);
	assert_int_equal(feed(&r, "v3", 0, 43, 0, false), 0);
	assert_int_equal(recovery_finish(&r), 0);
	assert_int_equal(g.names, 3);
	assert_true(g.fence[0][0] == 41 && g.fence[1][0] == 42 &&
	    g.fence[2][0] == 43);
	assert_true(g.holders[0] == 0 && g.holders[1] == 0 &&
	    g.holders[2] == 0);
	recovery_free(&r);
}

/* Feeds the keys of one case and expects the load to stop at the last
 * with an error that says `why`. */
static void
refused(const char *why, int (*keys)(struct recovery *r))
{
	struct recovery r;
	struct got g;

	start(&r, &g);
	assert_int_equal(keys(&r), -1);
	if (strstr(r.error, why) == NULL)
		fail_msg("error \"%s\" lacks \"%s\"", r.error, why);
	recovery_free(&r);
}

static int
holder_of_another_fence(struct recovery *r)
{
	return feed(r, "sem", 5, 6, 3, false);
}

static int
holder_of_a_plain_record(struct recovery *r)
{
	return feed(r, "sem", 5, 5, 1, false);
}

static int
holder_of_a_delay_record(struct recovery *r)
{
	return feed(r, "sem", 5, 0, 0, false);
}

static int
multi_under_a_name(struct recovery *r)
{
	return feed(r, "sem", 0, 5, 3, false);
}

static int
shared_under_a_name(struct recovery *r)
{
	return feed(r, "sem", 0, 5, 1, true);
}

static int
plain_and_holders(struct recovery *r)
{
	if (feed(r, "sem", 0, 4, 0, false) != 0)
		return 0;
	return feed(r, "sem", 5, 5, 3, false);
}

static int
delay_and_holders(struct recovery *r)
{
	if (feed(r, "sem", 0, 0, 0, false) != 0)
		return 0;
	return feed(r, "sem", 5, 5, 3, false);
}

static int
out_of_order(struct recovery *r)
{
	if (feed(r, "b", 0, 4, 0, false) != 0)
		return 0;
	return feed(r, "a", 0, 5, 0, false);
}

static int
a_key_twice(struct recovery *r)
{
	if (feed(r, "a", 5, 5, 2, false) != 0)
		return 0;
	return feed(r, "a", 5, 5, 2, false);
}

static int
holders_apart(struct recovery *r)
{
	if (feed(r, "a", 5, 5, 2, false) != 0 ||
	    feed(r, "a\x01", 0, 6, 0, false) != 0)
		return 0;
	return feed(r, "a", 7, 7, 2, false);
}

static int
bad_suffix(struct recovery *r)
{
	unsigned char val[FORMAT_RECORD_SIZE];
	size_t vlen = record(5, 3, false, val);

	/* A NUL and 7 bytes: not name + NUL + fence. */
	return recovery_key(r, "sem\0\0\0\0\0\0\0\x05", 11, val, vlen);
}

static int
holder_fence_zero(struct recovery *r)
{
	unsigned char val[FORMAT_RECORD_SIZE];
	size_t vlen = record(5, 3, false, val);

	return recovery_key(r, "sem\0\0\0\0\0\0\0\0\0", 12, val, vlen);
}

static int
unreadable_record(struct recovery *r)
{
	unsigned char val[FORMAT_RECORD_SIZE];
	size_t vlen = record(5, 0, false, val);

	return recovery_key(r, "a", 1, val, vlen - 1);
}

/* Every key or record that does not fit stops the load, saying why. */
static void
test_recovery_refuses_keys_and_records_that_do_not_fit(void **state)
{
	(void)state;
	refused("holder key's record is not of that holder",
	    holder_of_another_fence);
	refused("holder key's record is not of that holder",
	    holder_of_a_plain_record);
	refused("holder key's record is not of that holder",
	    holder_of_a_delay_record);
	refused("a name's record is a semaphore's or shared lock's holder",
	    multi_under_a_name);
	refused("a name's record is a semaphore's or shared lock's holder",
	    shared_under_a_name);
	refused("a plain hold and a semaphore's or shared lock's holders",
	    plain_and_holders);
	refused("a free name's lock-delay and holders of it on one name",
	    delay_and_holders);
	refused("out of order", out_of_order);
	refused("out of order", a_key_twice);
	refused("out of order", holders_apart);
	refused("unreadable key", bad_suffix);
	refused("unreadable key", holder_fence_zero);
	refused("unreadable record: key a", unreadable_record);
}

/* ---- the service's load ------------------------------------------------ */

static core_time
fake_mono(void *ctx)
{
	(void)ctx;
	return NOW;
}

static int64_t
fake_wall(void *ctx)
{
	(void)ctx;
	return WALL;
}

static void
store_put(struct store_mem *m, const char *name, uint64_t key_fence,
    uint64_t fence, uint16_t limit)
{
	unsigned char val[FORMAT_RECORD_SIZE];
	char key[FORMAT_KEY_MAX];
	struct store_batch b;

	store_batch_init(&b);
	assert_int_equal(store_batch_add(&b, STORE_PUT, key,
	    format_key(name, strlen(name), key_fence, key), val,
	    record(fence, limit, false, val)), 0);
	b.has_hwm = true;
	b.hwm = 1000;
	assert_int_equal(m->base.ops->commit(&m->base, &b), 0);
	store_batch_free(&b);
}

/*
 * service_open over a store: plain names restore as before, whatever the
 * order the store was written in (it loads in key order); a name with
 * holder keys comes back with every holder (a semaphore's, between plain
 * names on both sides of it in key order).
 */
static void
test_recovery_service_restores_plain_names_and_holders(void **state)
{
	struct service_clock clock = { .mono = fake_mono, .wall = fake_wall };
	struct service_config config;
	struct service_recovery rec;
	struct store_mem m;
	struct service svc;

	(void)state;
	memcpy(clock.boot_id, boot, 16);
	service_config_defaults(&config);
	store_mem_init(&m);
	store_put(&m, "zeta", 0, 3, 0);
	store_put(&m, "alpha", 0, 4, 0);
	store_put(&m, "mid", 0, 5, 0);
	{
		/* Records of versions 1 and 2, as older lockds wrote them. */
		unsigned char v[FORMAT_RECORD_V2_SIZE];
		struct store_batch b;

		memset(v, 0, sizeof(v));
		v[0] = 1;
		bytes_put_le64(v + 8, 6);
		bytes_put_le64(v + 24, 30000);
		bytes_put_le64(v + 32, NOW + 30000);
		memcpy(v + 48, boot, 16);
		store_batch_init(&b);
		assert_int_equal(store_batch_add(&b, STORE_PUT, "old1", 4, v,
		    FORMAT_RECORD_V1_SIZE), 0);
		v[0] = 2;
		bytes_put_le64(v + 8, 7);
		assert_int_equal(store_batch_add(&b, STORE_PUT, "old2", 4, v,
		    FORMAT_RECORD_V2_SIZE), 0);
		assert_int_equal(m.base.ops->commit(&m.base, &b), 0);
		store_batch_free(&b);
	}
	assert_int_equal(service_open(&svc, &config, &m.base, &clock, &rec),
	    0);
	assert_int_equal(rec.leases, 5);
	assert_non_null(core_table_find(&svc.table, "alpha", 5));
	assert_non_null(core_table_find(&svc.table, "zeta", 4));
	assert_true(core_table_find(&svc.table, "old1", 4)->lock.fence == 6);
	assert_true(core_table_find(&svc.table, "old2", 4)->lock.fence == 7);
	service_close(&svc);

	store_put(&m, "mid2", 7, 7, 4);
	store_put(&m, "mid2", 8, 8, 4);
	store_put(&m, "mid2", 9, 9, 4);
	memset(&svc, 0, sizeof(svc));
	assert_int_equal(service_open(&svc, &config, &m.base, &clock, &rec),
	    0);
	assert_int_equal(rec.leases, 8);
	{
		const struct core_entry *e = core_table_find(&svc.table,
		    "mid2", 4);
		struct core_lock_status st;
		int64_t ttl;

		assert_non_null(e);
		core_status(&svc.table, "mid2", 4, NOW, &st);
		assert_true(st.held);
		assert_int_equal(st.holders, 3);
		assert_int_equal(st.limit, 4);
		assert_true(st.fence == 9);
		assert_true(core_check(&svc.table, "mid2", 4, 7, NOW, &ttl));
		assert_true(core_check(&svc.table, "mid2", 4, 8, NOW, &ttl));
	}
	assert_non_null(core_table_find(&svc.table, "mid", 3));
	assert_non_null(core_table_find(&svc.table, "old1", 4));
	service_close(&svc);
	store_mem_free(&m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    test_recovery_gathers_a_names_holders_into_one_call),
		cmocka_unit_test(
		    test_recovery_marks_a_name_with_a_record_of_another_boot),
		cmocka_unit_test(test_recovery_reads_old_records_as_plain_names),
		cmocka_unit_test(
		    test_recovery_refuses_keys_and_records_that_do_not_fit),
		cmocka_unit_test(
		    test_recovery_service_restores_plain_names_and_holders),
	};

	return cmocka_run_group_tests_name("recovery", tests, NULL, NULL);
}
