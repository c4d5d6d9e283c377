/*
 * test_etcd.c - lockd's etcd client (daemon/etcd.c) against a real etcd:
 * one member started by the test on free loopback ports
 * (tests/lib/etcd_harness.c).  Requests on the libuv loop and blocking
 * ones; a refusal, an endpoint that does not answer, a failed compare, a
 * close with a request in flight; etcd's base64 both ways.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/etcd.h"
#include "tests/lib/etcd_harness.h"

#define TIMEOUT_MS 3000L

static struct etcd_cluster cluster;

static int
group_setup(void **state)
{
	(void)state;
	return etcd_cluster_start(&cluster, 1);
}

static int
group_teardown(void **state)
{
	(void)state;
	etcd_cluster_stop(&cluster);
	return 0;
}

struct outcome {
	bool done;
	enum etcd_result result;
	json_t *reply;
	char error[512];
};

static void
on_done(void *ctx, enum etcd_result result, json_t *reply, const char *error)
{
	struct outcome *o = ctx;

	o->done = true;
	o->result = result;
	o->reply = json_incref(reply);
	snprintf(o->error, sizeof(o->error), "%s", error);
}

/* Runs the loop until o is done (bounded: the requests have deadlines). */
static void
run_until(uv_loop_t *loop, struct outcome *o)
{
	int passes;

	for (passes = 0; !o->done && passes < 100000; passes++)
		uv_run(loop, UV_RUN_ONCE);
	assert_true(o->done);
}

static json_t *
put_body(const char *key, const char *value)
{
	return json_pack("{s:o,s:o}", "key", etcd_bytes(key, strlen(key)),
	    "value", etcd_bytes(value, strlen(value)));
}

static json_t *
range_body(const char *key)
{
	return json_pack("{s:o}", "key", etcd_bytes(key, strlen(key)));
}

/* The value of the first kv of a range reply, as a string. */
static void
first_value(json_t *reply, char *out, size_t cap)
{
	json_t *kv = json_array_get(json_object_get(reply, "kvs"), 0);
	size_t len = 0;

	assert_non_null(kv);
	assert_int_equal(etcd_field_bytes(kv, "value", true, out, cap - 1,
	    &len), 0);
	out[len] = '\0';
}

static void
test_etcd_bytes_round_trip_every_length(void **state)
{
	unsigned char data[40], back[40];
	size_t len, n, i;

	(void)state;
	for (i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 37 + 200);
	for (n = 0; n <= sizeof(data); n++) {
		json_t *obj = json_pack("{s:o}", "v", etcd_bytes(data, n));
		assert_int_equal(etcd_field_bytes(obj, "v", false, back,
		    sizeof(back), &len), 0);
		assert_int_equal(len, n);
		assert_memory_equal(back, data, n);
		/* One byte too little room is refused, not overrun. */
		if (n > 0)
			assert_int_equal(etcd_field_bytes(obj, "v", false,
			    back, n - 1, &len), -1);
		json_decref(obj);
	}
}

static void
test_etcd_bytes_refuses_what_is_not_base64(void **state)
{
	json_t *obj = json_pack("{s:s,s:i}", "v", "abc", "n", 5);
	unsigned char buf[8];
	size_t len;

	(void)state;
	assert_int_equal(etcd_field_bytes(obj, "v", false, buf, sizeof(buf),
	    &len), -1);
	assert_int_equal(etcd_field_bytes(obj, "missing", false, buf,
	    sizeof(buf), &len), -1);
	assert_int_equal(etcd_field_bytes(obj, "missing", true, buf,
	    sizeof(buf), &len), 0);
	assert_int_equal(len, 0);
	assert_int_equal(etcd_field_int(obj, "n"), 5);
	json_decref(obj);
}

static void
test_etcd_request_on_the_loop_puts_and_reads_back(void **state)
{
	uv_loop_t loop;
	struct outcome put = { 0 }, get = { 0 };
	char err[256], value[64];
	struct etcd *etcd;

	(void)state;
	uv_loop_init(&loop);
	etcd = etcd_open(&loop, cluster.urls, err, sizeof(err));
	assert_non_null(etcd);
	assert_int_equal(etcd_request(etcd, "/v3/kv/put",
	    put_body("t/loop", "on the loop \x01\xff"), TIMEOUT_MS, on_done,
	    &put), 0);
	/* Nothing is called back from etcd_request itself. */
	assert_false(put.done);
	run_until(&loop, &put);
	assert_int_equal(put.result, ETCD_OK);
	assert_true(etcd_field_int(json_object_get(put.reply, "header"),
	    "revision") > 0);
	assert_int_equal(etcd_request(etcd, "/v3/kv/range",
	    range_body("t/loop"), TIMEOUT_MS, on_done, &get), 0);
	run_until(&loop, &get);
	assert_int_equal(get.result, ETCD_OK);
	first_value(get.reply, value, sizeof(value));
	assert_string_equal(value, "on the loop \x01\xff");
	json_decref(put.reply);
	json_decref(get.reply);
	etcd_close(etcd);
	/* The close frees everything once the loop has run its handles. */
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

static void
test_etcd_requests_in_parallel_all_end(void **state)
{
	uv_loop_t loop;
	struct outcome o[16];
	char err[256], key[32];
	struct etcd *etcd;
	int i;

	(void)state;
	memset(o, 0, sizeof(o));
	uv_loop_init(&loop);
	etcd = etcd_open(&loop, cluster.urls, err, sizeof(err));
	assert_non_null(etcd);
	for (i = 0; i < 16; i++) {
		snprintf(key, sizeof(key), "t/par/%d", i);
		assert_int_equal(etcd_request(etcd, "/v3/kv/put",
		    put_body(key, "x"), TIMEOUT_MS, on_done, &o[i]), 0);
	}
	for (i = 0; i < 16; i++) {
		run_until(&loop, &o[i]);
		assert_int_equal(o[i].result, ETCD_OK);
		json_decref(o[i].reply);
	}
	etcd_close(etcd);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

static void
test_etcd_sync_request_moves_past_a_dead_endpoint(void **state)
{
	char urls[600], err[256], value[64];
	struct etcd *etcd;
	json_t *reply;

	(void)state;
	/* Port 1 on loopback: nobody listens, the connect is refused. */
	snprintf(urls, sizeof(urls), "http://127.0.0.1:1,%s", cluster.urls);
	etcd = etcd_open(NULL, urls, err, sizeof(err));
	assert_non_null(etcd);
	assert_int_equal(etcd_request_sync(etcd, "/v3/kv/put",
	    put_body("t/sync", "blocking"), TIMEOUT_MS, &reply, err,
	    sizeof(err)), ETCD_OK);
	json_decref(reply);
	assert_int_equal(etcd_request_sync(etcd, "/v3/kv/range",
	    range_body("t/sync"), TIMEOUT_MS, &reply, err, sizeof(err)),
	    ETCD_OK);
	first_value(reply, value, sizeof(value));
	assert_string_equal(value, "blocking");
	json_decref(reply);
	etcd_close(etcd);
}

static void
test_etcd_no_endpoint_answering_is_unknown(void **state)
{
	uv_loop_t loop;
	struct outcome o = { 0 };
	char err[256];
	struct etcd *etcd;
	json_t *reply;

	(void)state;
	uv_loop_init(&loop);
	etcd = etcd_open(&loop, "http://127.0.0.1:1", err, sizeof(err));
	assert_non_null(etcd);
	assert_int_equal(etcd_request_sync(etcd, "/v3/kv/put",
	    put_body("t/x", "y"), TIMEOUT_MS, &reply, err, sizeof(err)),
	    ETCD_UNKNOWN);
	assert_null(reply);
	assert_int_equal(etcd_request(etcd, "/v3/kv/put", put_body("t/x", "y"),
	    TIMEOUT_MS, on_done, &o), 0);
	run_until(&loop, &o);
	assert_int_equal(o.result, ETCD_UNKNOWN);
	assert_null(o.reply);
	assert_true(strlen(o.error) > 0);
	etcd_close(etcd);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

static void
test_etcd_too_many_operations_is_refused(void **state)
{
	json_t *txn = json_object(), *ops = json_array(), *reply;
	char err[512], key[32];
	struct etcd *etcd;
	int i;

	(void)state;
	etcd = etcd_open(NULL, cluster.urls, err, sizeof(err));
	assert_non_null(etcd);
	for (i = 0; i < 129; i++) {
		snprintf(key, sizeof(key), "t/many/%d", i);
		json_array_append_new(ops, json_pack("{s:o}", "request_put",
		    put_body(key, "v")));
	}
	json_object_set_new(txn, "success", ops);
	assert_int_equal(etcd_request_sync(etcd, "/v3/kv/txn", txn,
	    TIMEOUT_MS, &reply, err, sizeof(err)), ETCD_REFUSED);
	assert_non_null(strstr(err, "too many operations"));
	etcd_close(etcd);
}

static void
test_etcd_failed_compare_is_ok_without_succeeded(void **state)
{
	char err[512];
	struct etcd *etcd;
	json_t *reply, *txn;

	(void)state;
	etcd = etcd_open(NULL, cluster.urls, err, sizeof(err));
	assert_non_null(etcd);
	txn = json_pack("{s:[{s:o,s:s,s:s,s:s}],s:[{s:o}]}",
	    "compare", "key", etcd_bytes("t/none", 6), "target", "CREATE",
	    "result", "EQUAL", "create_revision", "12345",
	    "success", "request_put", put_body("t/none", "no"));
	assert_int_equal(etcd_request_sync(etcd, "/v3/kv/txn", txn,
	    TIMEOUT_MS, &reply, err, sizeof(err)), ETCD_OK);
	assert_false(json_is_true(json_object_get(reply, "succeeded")));
	json_decref(reply);
	etcd_close(etcd);
}

static void
test_etcd_close_with_a_request_in_flight_calls_nothing(void **state)
{
	uv_loop_t loop;
	struct outcome o = { 0 };
	char err[256];
	struct etcd *etcd;

	(void)state;
	uv_loop_init(&loop);
	etcd = etcd_open(&loop, cluster.urls, err, sizeof(err));
	assert_non_null(etcd);
	assert_int_equal(etcd_request(etcd, "/v3/kv/put", put_body("t/c", "c"),
	    TIMEOUT_MS, on_done, &o), 0);
	uv_run(&loop, UV_RUN_NOWAIT);
	etcd_close(etcd);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_false(o.done);
	assert_int_equal(uv_loop_close(&loop), 0);
}

static void
test_etcd_open_refuses_what_is_not_a_url(void **state)
{
	char err[256];

	(void)state;
	assert_null(etcd_open(NULL, "127.0.0.1:2379", err, sizeof(err)));
	assert_non_null(strstr(err, "--etcd"));
	assert_null(etcd_open(NULL, "", err, sizeof(err)));
	assert_null(etcd_open(NULL, "http://a:1,,http://b:2", err,
	    sizeof(err)));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_etcd_bytes_round_trip_every_length),
		cmocka_unit_test(test_etcd_bytes_refuses_what_is_not_base64),
		cmocka_unit_test(
		    test_etcd_request_on_the_loop_puts_and_reads_back),
		cmocka_unit_test(test_etcd_requests_in_parallel_all_end),
		cmocka_unit_test(
		    test_etcd_sync_request_moves_past_a_dead_endpoint),
		cmocka_unit_test(test_etcd_no_endpoint_answering_is_unknown),
		cmocka_unit_test(test_etcd_too_many_operations_is_refused),
		cmocka_unit_test(
		    test_etcd_failed_compare_is_ok_without_succeeded),
		cmocka_unit_test(
		    test_etcd_close_with_a_request_in_flight_calls_nothing),
		cmocka_unit_test(test_etcd_open_refuses_what_is_not_a_url),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
