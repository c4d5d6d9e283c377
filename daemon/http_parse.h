/*
 * http_parse.h - the request head of the metrics endpoint's HTTP (http.c),
 * parsed by a pure function over (buf, len), as proto/ parses the lock
 * protocol: no I/O, no allocation, the result pointing into the caller's
 * buffer.  Just what http.c answers: the method, the target and a bearer
 * token; the rest of the head is only checked for bytes no header has.
 */
#ifndef LOCKD_HTTP_PARSE_H
#define LOCKD_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>

enum http_parse_result {
	HTTP_PARSE_PARTIAL,   /* no end of head yet: read more */
	HTTP_PARSE_DONE,      /* *req describes the head */
	HTTP_PARSE_BAD        /* not a request head http.c takes: 400 */
};

enum http_method {
	HTTP_METHOD_GET,
	HTTP_METHOD_HEAD,
	HTTP_METHOD_OTHER     /* well formed, another method: 405 */
};

struct http_request {
	enum http_method method;
	const char *target;       /* the request target, target_len bytes */
	size_t target_len;
	/* An "Authorization: Bearer <token>" header's token; NULL: none. */
	const char *token;
	size_t token_len;
	size_t head_len;          /* DONE or BAD: the head's bytes, its
	                           * empty line too */
};

/*
 * Parses the request head at the start of buf[0..len): its end is its
 * first empty line (CRLF CRLF or LF LF, whichever comes first).  A head is BAD with a control
 * byte other than CR, LF and tab, or a request line that is not
 * "METHOD SP TARGET SP HTTP/1.x".  The caller says when a PARTIAL head has
 * grown too large.
 */
enum http_parse_result http_parse_request(const char *buf, size_t len,
    struct http_request *req);

/* Is req's target this path, with or without a query? */
bool http_target_is(const struct http_request *req, const char *path);

#endif
