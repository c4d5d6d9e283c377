/*
 * tls_pipe.h - TLS over OpenSSL memory BIOs, for both ends of the wire:
 * the daemon's connections (server.c, http.c) and liblockd's libuv client
 * (client/uv.c).  The owner of the socket hands ciphertext in, takes
 * plaintext out, hands plaintext in and writes the ciphertext that comes
 * out; nothing here blocks, touches a socket, reads a clock or a file,
 * and a handshake advances only as its bytes arrive.
 *
 * It lives in proto/ because that is the one layer the daemon and the
 * client both link.  It is the only part of proto/ that uses a library
 * (OpenSSL); the parser and the formatters in proto.h use none.
 *
 * Every call leaves OpenSSL's per-thread error queue empty: a failure is
 * kept in the pipe itself (ssl_error, reason), where the caller reads it
 * and tls_pipe_why() describes it.  A pipe is used by one thread at a time.
 */
#ifndef LOCKD_TLS_PIPE_H
#define LOCKD_TLS_PIPE_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

struct tls_pipe {
	SSL *ssl;             /* owns both memory BIOs */
	bool ready;           /* the handshake is done */
	bool failed;          /* a fatal error or the peer's close_notify */
	bool out_of_memory;   /* the failure: a memory BIO refused bytes */
	int ssl_error;        /* SSL_get_error() of the failure, or 0 */
	unsigned long reason; /* OpenSSL's last queued error then, or 0 */
};

enum tls_pipe_role { TLS_PIPE_SERVER, TLS_PIPE_CLIENT };

/* 0, or -1 when OpenSSL cannot allocate.  The pipe takes a reference on
 * ctx, which may then be freed or replaced.  A client sets its server
 * name on t->ssl before the first tls_pipe_handshake. */
int tls_pipe_init(struct tls_pipe *t, SSL_CTX *ctx, enum tls_pipe_role role);
void tls_pipe_free(struct tls_pipe *t);

/* Ciphertext from the socket, for OpenSSL.  0, or -1 (failed, out of
 * memory). */
int tls_pipe_put(struct tls_pipe *t, const char *data, size_t len);

/*
 * Steps the handshake on with what has been put.  1 when it is done (now
 * or before), 0 while it waits for more bytes, -1 when it failed: what is
 * pending (an alert) should be written, then the connection closed.
 */
int tls_pipe_handshake(struct tls_pipe *t);

/*
 * Once ready: decrypts into buf[0..cap) from the records received.  The
 * number of bytes (> 0), 0 when no whole record is left, -1 when it
 * failed or the peer closed (ssl_error is SSL_ERROR_ZERO_RETURN then).
 */
int tls_pipe_read(struct tls_pipe *t, char *buf, size_t cap);

/* Encrypts p[0..n) for the peer (only once ready); 0 or -1. */
int tls_pipe_write(struct tls_pipe *t, const char *p, size_t n);

/* Adds a close_notify alert to what is pending (only once ready). */
void tls_pipe_shutdown(struct tls_pipe *t);

/* Ciphertext waiting to be written; tls_pipe_take moves up to cap of it. */
size_t tls_pipe_pending(const struct tls_pipe *t);
size_t tls_pipe_take(struct tls_pipe *t, char *buf, size_t cap);

/* The failure in words, for a log line: "closed by peer", OpenSSL's
 * error string, "out of memory" or "protocol error".  Returns buf. */
const char *tls_pipe_why(const struct tls_pipe *t, char *buf, size_t size);

#endif
