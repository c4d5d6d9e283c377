/*
 * etcd.h - a client of etcd's v3 JSON gateway (HTTP/1.1 POSTs of JSON to
 * /v3/...), for the etcd store (store_etcd.c) and leadership.  Requests
 * run on the libuv loop through libcurl's multi interface: the loop polls
 * curl's sockets and runs its timer, so there is no thread of its own.  A
 * synchronous call beside it serves the few places that must have the
 * answer before they go on (the load at start, a read after a failed
 * commit); it blocks the loop for at most its timeout.
 *
 * etcd's bytes (keys, values) cross the gateway in base64, its 64-bit
 * integers as decimal strings; the helpers below do both.
 */
#ifndef LOCKD_ETCD_H
#define LOCKD_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <uv.h>

#define ETCD_URLS_MAX 8            /* endpoints in one --etcd */
#define ETCD_URL_MAX 256
#define ETCD_USER_MAX 128          /* --etcd-user */
#define ETCD_PASSWORD_MAX 256      /* what --etcd-password-file holds */
#define ETCD_TOKEN_MAX 2048        /* etcd's token (simple or JWT) */
/* After a failed authentication the next waits this long: a wrong
 * password costs etcd one bcrypt a second, not a busy loop. */
#define ETCD_AUTH_RETRY_MS 1000

/*
 * What a request came to.  ETCD_OK: HTTP 200 and a JSON object.
 * ETCD_REFUSED: etcd answered and refused (HTTP 4xx): nothing was done.
 * ETCD_UNKNOWN: no answer, or etcd's own "request timed out" (HTTP 5xx):
 * a write may or may not have been applied.  Also a request that etcd
 * refused for lockd's credentials, or that could not go out for want of
 * a token (etcd_auth_error says why): nothing was done, but nothing can
 * be read either, so the caller must not count on reading where it
 * stands.
 */
enum etcd_result { ETCD_OK = 0, ETCD_REFUSED = -1, ETCD_UNKNOWN = -2 };

/* Called on the loop when a request ends, never from etcd_request itself.
 * reply is the parsed body (NULL unless ETCD_OK), borrowed for the call;
 * error says why when not ETCD_OK. */
typedef void (*etcd_done_fn)(void *ctx, enum etcd_result result,
    json_t *reply, const char *error);

struct etcd;

/*
 * A client of the comma-separated endpoints in urls ("http://host:port").
 * Requests go to one endpoint until it fails to answer; then the next one
 * is tried for the next request.  loop may be NULL for a client that makes
 * synchronous calls only.  On failure returns NULL and writes why to err.
 */
struct etcd *etcd_open(uv_loop_t *loop, const char *urls, char *err,
    size_t err_len);

/*
 * Ends every request in flight (their callbacks are not called) and frees
 * the client once libuv has closed its handles; the loop must run for that.
 */
void etcd_close(struct etcd *etcd);
/*
 * Takes the client off the loop: requests in flight end (uncalled) and
 * its handles close, but the synchronous call still works, until
 * etcd_close.  For a daemon whose loop is ending while its store still
 * commits its last batch.
 */
void etcd_detach(struct etcd *etcd);

/*
 * POSTs body (taken: freed whatever happens) to path ("/v3/kv/txn") with a
 * deadline of timeout_ms, and calls done when it ends.  Returns 0, or -1
 * when it could not even start (then done is never called).
 */
int etcd_request(struct etcd *etcd, const char *path, json_t *body,
    long timeout_ms, etcd_done_fn done, void *ctx);

/*
 * The same, blocking: returns the result, with the reply in *reply on
 * ETCD_OK (the caller's to json_decref) and why in err otherwise.  On
 * ETCD_UNKNOWN every endpoint has been tried once.
 */
enum etcd_result etcd_request_sync(struct etcd *etcd, const char *path,
    json_t *body, long timeout_ms, json_t **reply, char *err, size_t err_len);

/*
 * Both, with the body already JSON text (malloc'd, taken: freed whatever
 * happens; NULL fails as out of memory): for a caller that writes its
 * JSON straight rather than through a jansson tree (a batch's
 * transaction, store_etcd.c).
 */
int etcd_request_text(struct etcd *etcd, const char *path, char *body,
    long timeout_ms, etcd_done_fn done, void *ctx);
enum etcd_result etcd_request_sync_text(struct etcd *etcd, const char *path,
    char *body, long timeout_ms, json_t **reply, char *err, size_t err_len);

/*
 * TLS and etcd's user/password auth (docs/security.md).  Files and names
 * are "" (or NULL) when not used.  ca_file: the CA that signs etcd's
 * server certificate (else the system's CAs); cert_file and key_file: a
 * client certificate for etcd's --client-cert-auth.  The server's name or
 * IP is always checked against its certificate.  user and password_file:
 * lockd authenticates as user (/v3/auth/authenticate) and sends the token
 * with every request; when etcd says the token is invalid or expired it
 * authenticates again and sends the request once more (nothing was done
 * with it: etcd checks the token before it proposes anything).
 */
struct etcd_security {
	const char *ca_file, *cert_file, *key_file;
	const char *user, *password_file;
};

/*
 * Applies sec to a client just opened, before its first request: reads
 * the password file (etcd_password_read) and, with a loop, re-reads it on
 * SIGHUP (a changed password drops the token).  The certificate files are
 * read by curl for each new connection.  Returns 0, or -1 with why.
 */
int etcd_secure(struct etcd *etcd, const struct etcd_security *sec,
    char *err, size_t err_len);

/*
 * Why the last authentication (or a request, for lack of permission)
 * failed, while nothing has succeeded since; NULL when all is well.
 */
const char *etcd_auth_error(const struct etcd *etcd);
/*
 * True while etcd_auth_error is set by etcd's own answer: it refused the
 * user, its password, or the user's permissions.  False when the trouble
 * is that no answer came (a TLS handshake that failed, say).
 */
bool etcd_auth_refused(const struct etcd *etcd);

/*
 * Checks --etcd's comma-separated URLs: each http:// or https://, all of
 * one scheme (a mix is refused), at most ETCD_URLS_MAX.  0 with *tls set
 * when they are https://, or -1 with a one-line why.  Pure.
 */
int etcd_urls_check(const char *urls, bool *tls, char *err, size_t err_len);

/*
 * Reads a secret from path into out (cap bytes with its NUL): one
 * trailing newline (LF or CRLF) is dropped; an unreadable, empty, too long
 * file, or one with a NUL or another line break, is refused with a
 * one-line why.  0 or -1.
 */
int etcd_password_read(const char *path, char *out, size_t cap, char *err,
    size_t err_len);

/* Bytes as etcd's JSON wants them: a base64 string (NULL without memory). */
json_t *etcd_bytes(const void *data, size_t len);
/* The characters of len bytes in base64, without the NUL. */
#define ETCD_BASE64_LEN(len) (4 * (((size_t)(len) + 2) / 3))
/* The same bytes' base64 written to out (ETCD_BASE64_LEN(len) + 1 bytes,
 * NUL included); returns its length. */
size_t etcd_base64(const void *data, size_t len, char *out);
/* A base64 field of obj decoded into buf (cap bytes); 0 and its length, or
 * -1 when missing, not base64 or too long.  A missing field is empty when
 * empty_ok (etcd leaves out empty values). */
int etcd_field_bytes(const json_t *obj, const char *field, bool empty_ok,
    void *buf, size_t cap, size_t *len);
/* A 64-bit integer field (etcd writes them as strings); 0 when absent. */
int64_t etcd_field_int(const json_t *obj, const char *field);
/* The key after every key that starts with prefix (a range's end). */
size_t etcd_prefix_end(const char *prefix, size_t len, char *out);

#endif
