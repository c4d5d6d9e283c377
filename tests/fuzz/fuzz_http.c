/*
 * fuzz_http.c - libFuzzer target for the metrics endpoint's request head
 * parser (daemon/http_parse.c): whatever the bytes, the parse stays inside
 * them, a DONE head's target and token lie within its head, and the same
 * bytes fed as a growing buffer - as http.c reads them - are PARTIAL until
 * the head is whole and then parse exactly as the whole input did.
 *
 * A broken invariant calls __builtin_trap() so libFuzzer keeps the input;
 * reads past the input are ASan's to catch.  This file only drives the
 * parser: no file, no socket, no allocation of its own.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "daemon/http_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond) do {						\
	if (!(cond))							\
		__builtin_trap();					\
} while (0)

/* Does [p, p + n) lie within [base, base + len)? */
static bool
inside(const char *p, size_t n, const char *base, size_t len)
{
	return p >= base && n <= len && (size_t)(p - base) <= len - n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct http_request whole, part;
	enum http_parse_result rc, prc;
	size_t n;

	rc = http_parse_request(buf, size, &whole);
	if (rc == HTTP_PARSE_DONE) {
		FUZZ_CHECK(whole.head_len >= 2 && whole.head_len <= size);
		FUZZ_CHECK(whole.method <= HTTP_METHOD_OTHER);
		FUZZ_CHECK(whole.target_len > 0 && inside(whole.target,
		    whole.target_len, buf, whole.head_len));
		FUZZ_CHECK(whole.token == NULL || (whole.token_len > 0 &&
		    inside(whole.token, whole.token_len, buf,
		    whole.head_len)));
		FUZZ_CHECK(http_target_is(&whole, "/metrics") ==
		    ((whole.target_len == 8 || (whole.target_len > 8 &&
		    whole.target[8] == '?')) &&
		    memcmp(whole.target, "/metrics", 8) == 0));
	}
	/* As read: every prefix, the whole input last.  The parse never
	 * looks past the head's end, so a prefix that holds the head parses
	 * as the whole did. */
	for (n = 0; n <= size && size <= 4096; n++) {
		prc = http_parse_request(buf, n, &part);
		if (rc == HTTP_PARSE_PARTIAL) {
			FUZZ_CHECK(prc == HTTP_PARSE_PARTIAL);
			continue;
		}
		if (prc == HTTP_PARSE_PARTIAL)
			continue;
		FUZZ_CHECK(prc == rc);
		if (rc == HTTP_PARSE_DONE)
			FUZZ_CHECK(part.head_len == whole.head_len &&
			    part.method == whole.method &&
			    part.target == whole.target &&
			    part.target_len == whole.target_len &&
			    part.token == whole.token &&
			    part.token_len == whole.token_len);
	}
	return 0;
}
