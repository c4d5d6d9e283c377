/*
 * tls.h - TLS for lockd's TCP connections, through OpenSSL memory BIOs so
 * that the loop stays in charge of the sockets: the server hands a
 * connection's ciphertext in, takes its plaintext to the service, hands
 * the service's replies back, and writes the ciphertext that comes out.
 * Nothing here blocks or touches a socket; a handshake advances only as
 * its bytes arrive.
 */
#ifndef LOCKD_TLS_H
#define LOCKD_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

/* Bytes of a CN kept for the principal (a principal is at most 64). */
#define TLS_CN_MAX 64
/* --tls-handshake-timeout's default: a client that has not finished its
 * handshake by then is closed. */
#define TLS_HANDSHAKE_TIMEOUT_DEFAULT_MS ((int64_t)10 * 1000)

/*
 * A server context from PEM files: TLS 1.2 and later, the system's
 * default ciphers; with client_ca (may be NULL or ""), a client
 * certificate signed by it is required.  NULL with a one-line reason.
 */
SSL_CTX *tls_context_new(const char *cert, const char *key,
    const char *client_ca, char *err, size_t err_len);

struct tls_conn {
	SSL *ssl;
	BIO *net_in;     /* ciphertext read from the socket, for OpenSSL */
	BIO *net_out;    /* ciphertext from OpenSSL, to write to the socket */
	bool ready;      /* the handshake is done */
	bool failed;     /* a fatal error: close after sending what is out */
};

/* 0, or -1 when OpenSSL cannot allocate.  The connection takes a
 * reference on ctx, which may then be freed or replaced. */
int tls_conn_init(struct tls_conn *t, SSL_CTX *ctx);
void tls_conn_free(struct tls_conn *t);

/*
 * Takes ciphertext from the socket and advances the handshake.  Returns
 * 1 when the handshake finished during this call (set the principal
 * now, before any plaintext is read), 0 otherwise, -1 on a fatal error
 * (why says what, for the log): what is in net_out (an alert) should be
 * written, then the connection closed.
 */
int tls_conn_receive(struct tls_conn *t, const char *data, size_t len,
    const char **why);

/*
 * Once ready: decrypts every whole record received and passes its
 * plaintext to on_plain (called as often as needed).  0, or -1 on a
 * fatal error as above.
 */
int tls_conn_read(struct tls_conn *t,
    void (*on_plain)(void *ctx, const char *p, size_t n), void *ctx,
    const char **why);

/* Encrypts p[0..n) into net_out (only once ready); 0 or -1. */
int tls_conn_send(struct tls_conn *t, const char *p, size_t n);

/* Adds a close_notify alert to net_out. */
void tls_conn_shutdown(struct tls_conn *t);

/* Ciphertext waiting in net_out; tls_conn_take moves up to cap of it. */
size_t tls_conn_pending(const struct tls_conn *t);
size_t tls_conn_take(struct tls_conn *t, char *buf, size_t cap);

/* The peer certificate's subject CN, when it sent one; false otherwise. */
bool tls_conn_peer_cn(const struct tls_conn *t, char cn[TLS_CN_MAX + 1]);

#endif
