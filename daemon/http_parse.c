/*
 * http_parse.c - the metrics endpoint's request head, parsed (see
 * http_parse.h).  Pure: no I/O, no allocation, no state.
 */
#include <string.h>
#include <strings.h>

#include "daemon/http_parse.h"

/*
 * Where the head ends (just after its first empty line, CRLF or LF) in
 * buf[0..len), or 0.  The first of the two, so that the head is the same
 * however the bytes were split into reads.
 */
static size_t
head_end(const char *buf, size_t len)
{
	const char *crlf = memmem(buf, len, "\r\n\r\n", 4);
	const char *lf = memmem(buf, len, "\n\n", 2);

	if (crlf != NULL && (lf == NULL || crlf < lf))
		return (size_t)(crlf - buf) + 4;
	if (lf != NULL)
		return (size_t)(lf - buf) + 2;
	return 0;
}

/*
 * The token of an "Authorization: Bearer <token>" header in the head
 * p[0..len), or NULL; *token_len gets its length.
 */
static const char *
bearer_token(const char *p, size_t len, size_t *token_len)
{
	static const char name[] = "authorization:";
	const char *end = p + len, *line, *eol, *v;

	for (line = p; line < end; line = eol + 1) {
		if ((eol = memchr(line, '\n', (size_t)(end - line))) == NULL)
			return NULL;
		if ((size_t)(eol - line) < sizeof(name) - 1 ||
		    strncasecmp(line, name, sizeof(name) - 1) != 0)
			continue;
		/* The blanks stop at the line's LF at the latest. */
		v = line + sizeof(name) - 1;
		v += strspn(v, " \t");
		if ((size_t)(eol - v) < 7 || strncasecmp(v, "bearer ", 7) != 0)
			return NULL;
		v += 7;
		while (v < eol && *v == ' ')
			v++;
		*token_len = (size_t)(eol - v);
		while (*token_len > 0 && (v[*token_len - 1] == '\r' ||
		    v[*token_len - 1] == ' ' || v[*token_len - 1] == '\t'))
			(*token_len)--;
		return *token_len > 0 ? v : NULL;
	}
	return NULL;
}

enum http_parse_result
http_parse_request(const char *buf, size_t len, struct http_request *req)
{
	const char *p = buf, *end, *sp1, *sp2, *eol;
	size_t head_len = head_end(buf, len), i;

	memset(req, 0, sizeof(*req));
	if (head_len == 0)
		return HTTP_PARSE_PARTIAL;
	req->head_len = head_len;
	end = p + head_len;
	for (i = 0; i < head_len; i++) {
		unsigned char ch = (unsigned char)p[i];
		if ((ch < 0x20 && ch != '\r' && ch != '\n' && ch != '\t') ||
		    ch == 0x7f)
			return HTTP_PARSE_BAD;
	}
	/* The head ends in an LF, so the request line has one. */
	eol = memchr(p, '\n', (size_t)(end - p));
	sp1 = memchr(p, ' ', (size_t)(eol - p));
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (sp1 == NULL || sp2 == NULL || sp1 == p || sp2 == sp1 + 1 ||
	    (size_t)(eol - sp2) < 9 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0)
		return HTTP_PARSE_BAD;
	if (sp1 - p == 3 && memcmp(p, "GET", 3) == 0)
		req->method = HTTP_METHOD_GET;
	else if (sp1 - p == 4 && memcmp(p, "HEAD", 4) == 0)
		req->method = HTTP_METHOD_HEAD;
	else
		req->method = HTTP_METHOD_OTHER;
	req->target = sp1 + 1;
	req->target_len = (size_t)(sp2 - sp1 - 1);
	req->token = bearer_token(p, head_len, &req->token_len);
	if (req->token == NULL)
		req->token_len = 0;
	return HTTP_PARSE_DONE;
}

bool
http_target_is(const struct http_request *req, const char *path)
{
	size_t n = strlen(path);

	return req->target_len >= n && memcmp(req->target, path, n) == 0 &&
	    (req->target_len == n || req->target[n] == '?');
}
