/*
 * test_store.c - the LMDB store (daemon/store_lmdb.c) and store batches, on
 * a real LMDB environment in a fresh temporary directory: atomic commits,
 * reload, the data-directory lock, and a full map answered as an error that
 * leaves the store usable - also through the service, where a full map
 * becomes ERR UNAVAILABLE and loses nothing.
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

#include "daemon/format.h"
#include "daemon/service.h"
#include "daemon/store.h"

static char dir[64];

static int
setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/lockd-test-store-XXXXXX");
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

struct seen {
	int count;
	char names[8][32];
};

static int
remember(void *ctx, const char *name, size_t len, const void *val,
    size_t val_len)
{
	struct seen *s = ctx;

	(void)val;
	assert_int_equal(val_len, 3);
	snprintf(s->names[s->count++], 32, "%.*s", (int)len, name);
	return 0;
}

static void
test_store_batch_walks_back_what_was_added(void **state)
{
	struct store_batch b;
	struct store_batch_op op;
	size_t pos = 0;

	(void)state;
	store_batch_init(&b);
	assert_int_equal(store_batch_add(&b, STORE_PUT, "a", 1, "xyz", 3), 0);
	assert_int_equal(store_batch_add(&b, STORE_DEL, "bb", 2, NULL, 0), 0);
	assert_int_equal(store_batch_add(&b, STORE_PUT, "", 0, NULL, 0), -1);
	assert_int_equal(b.count, 2);
	assert_true(store_batch_next(&b, &pos, &op));
	assert_int_equal(op.op, STORE_PUT);
	assert_memory_equal(op.name, "a", 1);
	assert_memory_equal(op.val, "xyz", 3);
	assert_true(store_batch_next(&b, &pos, &op));
	assert_int_equal(op.op, STORE_DEL);
	assert_int_equal(op.name_len, 2);
	assert_false(store_batch_next(&b, &pos, &op));
	store_batch_free(&b);
}

/* A settled mark is the one delete's it was given, and a batch used
 * again starts with none, however many it had. */
static void
test_store_batch_marks_only_the_deletes_it_settles(void **state)
{
	struct store_batch b;
	char name[16];
	size_t i;

	(void)state;
	store_batch_init(&b);
	assert_false(store_batch_settled(&b, 0));
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "n%zu", i);
		assert_int_equal(store_batch_add(&b, STORE_DEL, name,
		    strlen(name), NULL, 0), 0);
		if (i % 3 == 1)
			store_batch_settle(&b);
	}
	for (i = 0; i < 1000; i++)
		assert_int_equal(store_batch_settled(&b, i), i % 3 == 1);
	assert_false(store_batch_settled(&b, 1000));
	store_batch_reset(&b);
	for (i = 0; i < 1000; i++)
		assert_int_equal(store_batch_add(&b, STORE_DEL, "x", 1, NULL,
		    0), 0);
	for (i = 0; i < 1000; i++)
		assert_false(store_batch_settled(&b, i));
	store_batch_free(&b);
}

static void
test_store_lmdb_commits_reload_after_reopen(void **state)
{
	char err[256];
	struct store *s = store_lmdb_open(dir, 1 << 20, err, sizeof(err));
	struct store_batch b;
	struct seen seen;
	unsigned char val[STORE_VALUE_MAX];
	size_t len;
	uint64_t hwm = 0;

	(void)state;
	assert_non_null(s);
	store_batch_init(&b);
	store_batch_add(&b, STORE_PUT, "a", 1, "one", 3);
	store_batch_add(&b, STORE_PUT, "b", 1, "two", 3);
	b.has_hwm = true;
	b.hwm = 41;
	assert_int_equal(s->ops->commit(s, &b), 0);
	store_batch_reset(&b);
	store_batch_add(&b, STORE_DEL, "a", 1, NULL, 0);
	store_batch_add(&b, STORE_DEL, "never", 5, NULL, 0);
	assert_int_equal(s->ops->commit(s, &b), 0);
	s->ops->close(s);

	s = store_lmdb_open(dir, 1 << 20, err, sizeof(err));
	assert_non_null(s);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(s->ops->load(s, remember, &seen, &hwm), 0);
	assert_int_equal(seen.count, 1);
	assert_string_equal(seen.names[0], "b");
	assert_int_equal(hwm, 41);
	assert_int_equal(s->ops->get(s, "b", 1, val, &len), 1);
	assert_memory_equal(val, "two", 3);
	assert_int_equal(s->ops->get(s, "a", 1, val, &len), 0);
	s->ops->close(s);
	store_batch_free(&b);
}

struct keys_seen {
	int count;
	size_t len[8];
	char key[8][FORMAT_KEY_MAX];
};

static int
remember_key(void *ctx, const char *key, size_t len, const void *val,
    size_t val_len)
{
	struct keys_seen *s = ctx;

	(void)val;
	(void)val_len;
	assert_true(s->count < 8);
	memcpy(s->key[s->count], key, len);
	s->len[s->count++] = len;
	return 0;
}

/*
 * LMDB takes holder keys of up to 264 bytes (the longest name's), gets
 * them back, and loads in key order: a name, its holders by fence (the
 * big-endian fence puts 256 after 2), then a name it begins.
 */
static void
test_store_lmdb_takes_holder_keys_and_loads_in_key_order(void **state)
{
	char err[256], name[CORE_NAME_MAX], keys[5][FORMAT_KEY_MAX];
	size_t lens[5], len;
	unsigned char val[STORE_VALUE_MAX];
	struct store *s = store_lmdb_open(dir, 1 << 20, err, sizeof(err));
	struct keys_seen seen;
	struct store_batch b;
	uint64_t hwm;
	int i;

	(void)state;
	assert_non_null(s);
	memset(name, 'n', sizeof(name));
	lens[0] = format_key(name, sizeof(name), 0, keys[0]);
	lens[1] = format_key(name, sizeof(name), 2, keys[1]);
	lens[2] = format_key(name, sizeof(name), 256, keys[2]);
	lens[3] = format_key(name, sizeof(name), CORE_FENCE_MAX, keys[3]);
	memcpy(keys[4], name, sizeof(name) - 1);
	keys[4][sizeof(name) - 1] = 'o';   /* sorts after the n...n name */
	lens[4] = sizeof(name);
	assert_int_equal(lens[3], 264);
	store_batch_init(&b);
	for (i = 4; i >= 0; i--)
		assert_int_equal(store_batch_add(&b, STORE_PUT, keys[i],
		    lens[i], "val", 3), 0);
	assert_int_equal(s->ops->commit(s, &b), 0);
	s->ops->close(s);
	s = store_lmdb_open(dir, 1 << 20, err, sizeof(err));
	assert_non_null(s);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(s->ops->load(s, remember_key, &seen, &hwm), 0);
	assert_int_equal(seen.count, 5);
	for (i = 0; i < 5; i++) {
		assert_int_equal(seen.len[i], lens[i]);
		assert_memory_equal(seen.key[i], keys[i], lens[i]);
		assert_int_equal(s->ops->get(s, keys[i], lens[i], val, &len),
		    1);
	}
	s->ops->close(s);
	store_batch_free(&b);
}

static void
test_store_lmdb_count_is_the_number_of_records(void **state)
{
	char err[256];
	struct store *s = store_lmdb_open(dir, 1 << 20, err, sizeof(err));
	struct store_batch b;
	size_t count = 99;

	(void)state;
	assert_non_null(s);
	assert_non_null(s->ops->count);
	assert_int_equal(s->ops->count(s, &count), 0);
	assert_int_equal(count, 0);
	store_batch_init(&b);
	store_batch_add(&b, STORE_PUT, "a", 1, "one", 3);
	store_batch_add(&b, STORE_PUT, "b", 1, "two", 3);
	store_batch_add(&b, STORE_PUT, "c", 1, "six", 3);
	/* The high-water mark is not a record. */
	b.has_hwm = true;
	b.hwm = 7;
	assert_int_equal(s->ops->commit(s, &b), 0);
	store_batch_reset(&b);
	store_batch_add(&b, STORE_DEL, "b", 1, NULL, 0);
	assert_int_equal(s->ops->commit(s, &b), 0);
	assert_int_equal(s->ops->count(s, &count), 0);
	assert_int_equal(count, 2);
	s->ops->close(s);
	store_batch_free(&b);
}

static void
test_store_lmdb_second_opener_of_a_directory_is_refused(void **state)
{
	char err[256];
	struct store *s = store_lmdb_open(dir, 1 << 20, err, sizeof(err));

	(void)state;
	assert_non_null(s);
	assert_null(store_lmdb_open(dir, 1 << 20, err, sizeof(err)));
	assert_non_null(strstr(err, "in use by another lockd"));
	s->ops->close(s);
	s = store_lmdb_open(dir, 1 << 20, err, sizeof(err));
	assert_non_null(s);
	s->ops->close(s);
}

static void
test_store_lmdb_full_map_fails_the_batch_and_keeps_the_store(void **state)
{
	char err[256], name[32];
	char big[STORE_VALUE_MAX];
	struct store *s = store_lmdb_open(dir, 64 * 1024, err, sizeof(err));
	struct store_batch b;
	struct seen seen;
	uint64_t hwm;
	int i, rc = 0;

	(void)state;
	assert_non_null(s);
	memset(big, 'v', sizeof(big));
	store_batch_init(&b);
	store_batch_add(&b, STORE_PUT, "keep", 4, "abc", 3);
	assert_int_equal(s->ops->commit(s, &b), 0);
	store_batch_reset(&b);
	for (i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "name-%06d", i);
		store_batch_add(&b, STORE_PUT, name, strlen(name), big,
		    sizeof(big));
	}
	rc = s->ops->commit(s, &b);
	assert_true(rc < 0);
	assert_non_null(strstr(s->error, "MDB_MAP_FULL"));
	/* Nothing of the failed batch is there; the store still works. */
	memset(&seen, 0, sizeof(seen));
	store_batch_reset(&b);
	store_batch_add(&b, STORE_DEL, "keep", 4, NULL, 0);
	store_batch_add(&b, STORE_PUT, "next", 4, "xyz", 3);
	assert_int_equal(s->ops->commit(s, &b), 0);
	assert_int_equal(s->ops->load(s, remember, &seen, &hwm), 0);
	assert_int_equal(seen.count, 1);
	assert_string_equal(seen.names[0], "next");
	s->ops->close(s);
	store_batch_free(&b);
}

static core_time fake_now = 1000;
static core_time
mono(void *ctx)
{
	(void)ctx;
	return fake_now;
}
static int64_t
wall(void *ctx)
{
	(void)ctx;
	return 1700000000000;
}

static void
test_store_full_map_is_unavailable_loses_nothing_and_recovers(void **state)
{
	char err[256], req[64];
	struct store *s = store_lmdb_open(dir, 64 * 1024, err, sizeof(err));
	struct service_config cfg;
	struct service_clock clock = { mono, wall, NULL, NULL, { 1 } };
	struct service *svc = calloc(1, sizeof(*svc));
	struct service_conn conn;
	int i, granted = 0, unavailable = 0;

	(void)state;
	assert_non_null(s);
	service_config_defaults(&cfg);
	cfg.max_output = 1 << 24;
	assert_int_equal(service_open(svc, &cfg, s, &clock, NULL), 0);
	service_conn_open(svc, &conn);
	/* One grant per commit until the map is full. */
	for (i = 0; i < 3000 && unavailable == 0; i++) {
		snprintf(req, sizeof(req), "ACQUIRE lock-%05d\n", i);
		service_conn_feed(svc, &conn, req, strlen(req));
		service_commit(svc);
		if (memmem(conn.out.data, conn.out.len, "GRANTED", 7) != NULL)
			granted++;
		else if (memmem(conn.out.data, conn.out.len, "ERR UNAVAILABLE", 15) != NULL)
			unavailable++;
		service_conn_written(&conn, conn.out.len);
	}
	assert_int_equal(unavailable, 1);
	assert_true(granted > 10);
	assert_int_equal(svc->table.stats.held, (uint64_t)granted);
	/* Space returns (leases end); service resumes. */
	fake_now += 10 * 60 * 1000;
	service_tick(svc);
	assert_int_equal(service_commit(svc), 0);
	service_conn_feed(svc, &conn, "ACQUIRE again\n", 14);
	assert_int_equal(service_commit(svc), 0);
	assert_non_null(memmem(conn.out.data, conn.out.len, "GRANTED again", 13));
	service_close(svc);
	s->ops->close(s);
	free(svc);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_store_batch_walks_back_what_was_added),
		cmocka_unit_test(
		    test_store_batch_marks_only_the_deletes_it_settles),
		cmocka_unit_test_setup_teardown(
		    test_store_lmdb_commits_reload_after_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_store_lmdb_takes_holder_keys_and_loads_in_key_order,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_store_lmdb_count_is_the_number_of_records, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    test_store_lmdb_second_opener_of_a_directory_is_refused,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_store_lmdb_full_map_fails_the_batch_and_keeps_the_store,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_store_full_map_is_unavailable_loses_nothing_and_recovers,
		    setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
