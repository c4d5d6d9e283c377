/*
 * test_http_parse.c - the metrics endpoint's request head parser
 * (daemon/http_parse.c): what it takes, what it refuses, the bearer token,
 * and the same answer however the bytes are split into reads - each test
 * parses every prefix of its input too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/http_parse.h"

/* Parses text, requiring every shorter prefix that does not hold the
 * whole head to be PARTIAL and every longer one to parse the same. */
static enum http_parse_result
parse(const char *text, struct http_request *req)
{
	size_t len = strlen(text), n;
	enum http_parse_result rc = http_parse_request(text, len, req);
	struct http_request part;

	for (n = 0; n < len; n++) {
		enum http_parse_result prc = http_parse_request(text, n,
		    &part);

		if (rc == HTTP_PARSE_PARTIAL || n < req->head_len)
			assert_int_equal(prc, HTTP_PARSE_PARTIAL);
		else
			assert_int_equal(prc, rc);
	}
	return rc;
}

static void
test_http_parse_takes_get_and_head_with_their_target(void **state)
{
	struct http_request r;

	(void)state;
	assert_int_equal(parse("GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n",
	    &r), HTTP_PARSE_DONE);
	assert_int_equal(r.method, HTTP_METHOD_GET);
	assert_int_equal(r.target_len, 8);
	assert_memory_equal(r.target, "/metrics", 8);
	assert_int_equal(r.head_len, 34);
	assert_null(r.token);
	assert_true(http_target_is(&r, "/metrics"));
	assert_false(http_target_is(&r, "/metric"));
	assert_int_equal(parse("HEAD /readyz?x=1 HTTP/1.0\n\n", &r),
	    HTTP_PARSE_DONE);
	assert_int_equal(r.method, HTTP_METHOD_HEAD);
	assert_true(http_target_is(&r, "/readyz"));
	assert_int_equal(parse("DELETE / HTTP/1.1\r\n\r\n", &r),
	    HTTP_PARSE_DONE);
	assert_int_equal(r.method, HTTP_METHOD_OTHER);
}

static void
test_http_parse_refuses_a_bad_request_line_or_a_control_byte(void **state)
{
	static const char *const bad[] = {
		"GET /metrics\r\n\r\n",
		"GET  HTTP/1.1\r\n\r\n",
		" /metrics HTTP/1.1\r\n\r\n",
		"GET /metrics HTTP/2.0\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nX: \001\r\n\r\n",
		"GET /metr\177ics HTTP/1.1\r\n\r\n",
	};
	struct http_request r;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(parse(bad[i], &r), HTTP_PARSE_BAD);
	assert_int_equal(parse("GET /metrics HTTP/1.1\r\nHost: a\r\n", &r),
	    HTTP_PARSE_PARTIAL);
}

static void
test_http_parse_finds_a_bearer_token_in_any_case(void **state)
{
	struct http_request r;

	(void)state;
	assert_int_equal(parse("GET /metrics HTTP/1.1\r\nHost: a\r\n"
	    "AUTHORIZATION:  bearer  s3cret \t\r\n\r\n", &r),
	    HTTP_PARSE_DONE);
	assert_int_equal(r.token_len, 6);
	assert_memory_equal(r.token, "s3cret", 6);
	assert_int_equal(parse("GET /metrics HTTP/1.1\r\n"
	    "Authorization: Basic eDp5\r\n\r\n", &r), HTTP_PARSE_DONE);
	assert_null(r.token);
	assert_int_equal(parse("GET /metrics HTTP/1.1\r\n"
	    "Authorization: Bearer \r\n\r\n", &r), HTTP_PARSE_DONE);
	assert_null(r.token);
}

/* The head ends at its first empty line, CRLF or LF, so that it is the
 * same however the bytes came: the fuzzer found an LF LF before a CRLF
 * CRLF taken for the end only when the read stopped between them. */
static void
test_http_parse_ends_the_head_at_its_first_empty_line(void **state)
{
	struct http_request r;

	(void)state;
	assert_int_equal(parse("GET /healthz HTTP/1.1\n\nX: y\r\n\r\n", &r),
	    HTTP_PARSE_DONE);
	assert_int_equal(r.head_len, 23);
	assert_int_equal(parse("GET /healthz HTTP/1.1\r\n\r\nX\n\n", &r),
	    HTTP_PARSE_DONE);
	assert_int_equal(r.head_len, 25);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    test_http_parse_takes_get_and_head_with_their_target),
		cmocka_unit_test(
		    test_http_parse_refuses_a_bad_request_line_or_a_control_byte),
		cmocka_unit_test(
		    test_http_parse_finds_a_bearer_token_in_any_case),
		cmocka_unit_test(
		    test_http_parse_ends_the_head_at_its_first_empty_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
