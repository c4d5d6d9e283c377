/*
 * endpoint.h - where and how liblockd connects, shared by the blocking
 * client (lockd.c) and the libuv one (uv.c): lockd:// and lockds:// URLs,
 * the TLS context made from lockd_options, the server name a certificate
 * must carry, and the AUTH sent at every connect.  Internal: lockd__.
 */
#ifndef LOCKD_CLIENT_ENDPOINT_H
#define LOCKD_CLIENT_ENDPOINT_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

#include "client/lockd.h"

/* Bytes of a token (a lock name's limit: AUTH carries it as a name). */
#define LOCKD__TOKEN_MAX 255

/* Owned copies of what lockd_options says, with the URL resolved. */
struct lockd__endpoint {
	char *host;                /* TCP: the host; NULL with unix_path */
	int port;
	char *unix_path;
	bool tls;
	SSL_CTX *tls_ctx;          /* made once, for every (re)connect */
	char *server_name;         /* what the certificate must name */
	char *token;               /* NULL: token_file, or no AUTH */
	char *token_file;
};

/*
 * Fills e from o (NULL: all defaults).  Returns LOCKD_OK, LOCKD_ERR_OOM,
 * or LOCKD_ERR_INVALID (a bad URL, port, file or combination) with a
 * sentence in errstr (LOCKD_ERRSTR_SIZE bytes).  e is then freed with
 * lockd__endpoint_free whatever it returned.
 */
int lockd__endpoint_init(struct lockd__endpoint *e, const lockd_options *o,
    char *errstr);
void lockd__endpoint_free(struct lockd__endpoint *e);

/* The most endpoints one set of options may name. */
#define LOCKD__ENDPOINTS_MAX 16

/*
 * Every endpoint o names, in order: o->url and o->host may each be a
 * comma-separated list ("lockd://a:7420,lockds://b", "a:7420,b,[::1]:7421";
 * a host item without its own port takes o->port).  One endpoint when
 * they name one.  Returns what lockd__endpoint_init returns; *list (count
 * entries, at least one allocated even on failure) is freed with
 * lockd__endpoints_free whatever it returned.
 */
int lockd__endpoints_init(struct lockd__endpoint **list, size_t *count,
    const lockd_options *o, char *errstr);
void lockd__endpoints_free(struct lockd__endpoint *list, size_t count);

/*
 * The index in list of the endpoint "host:port" ("[v6]:port" too) names,
 * compared as text (no name is resolved), or -1.
 */
int lockd__endpoints_find(const struct lockd__endpoint *list, size_t count,
    const char *hostport, size_t len);

/*
 * The leader a "NOTLEADER: leader=<host:port> ..." sentence (a server
 * error as request.c words it) names, into hint (size bytes); false when
 * it names none.
 */
bool lockd__notleader_hint(const char *errstr, char *hint, size_t size);

/*
 * Where a client on endpoint `current` of list connects next after a
 * NOTLEADER whose sentence is errstr: the leader it names, when that is
 * one of ours and not `current` (a node never names itself, but one that
 * did would be asked again and again), else the endpoint after current.
 * *hinted says which.
 */
size_t lockd__endpoints_next(const struct lockd__endpoint *list, size_t count,
    size_t current, const char *errstr, bool *hinted);

/* Sets up ssl (a new client SSL) to verify the server's name and send
 * it as SNI; false when OpenSSL refuses the name. */
bool lockd__endpoint_tls_name(const struct lockd__endpoint *e, SSL *ssl);

/* A sentence for a failed handshake or a TLS read or write that failed
 * (the verify result, a server refusing the client's certificate or its
 * lack of one, or OpenSSL's error reason, 0 for none), in buf; clears
 * OpenSSL's errors. */
void lockd__tls_why(SSL *ssl, unsigned long reason, char *buf, size_t size);

/*
 * Formats "AUTH <token>\r\n" into line (LOCKD__TOKEN_MAX + 8 bytes) from
 * the token or its file; returns its length, 0 when no AUTH is to be
 * sent, or a negative LOCKD_ERR_* with errstr set.
 */
int lockd__endpoint_auth_line(const struct lockd__endpoint *e, char *line,
    char *errstr);

/*
 * Judges the reply line to AUTH in buf[0..len): LOCKD_AGAIN (no whole
 * line yet), LOCKD_OK (AUTHED; *consumed set), a server error
 * (LOCKD_ERR_DENIED...) with errstr, or LOCKD_ERR_PROTOCOL.
 */
int lockd__auth_reply(const char *buf, size_t len, size_t *consumed,
    char *errstr);

#endif
