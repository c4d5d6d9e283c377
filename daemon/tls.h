/*
 * tls.h - the daemon's side of TLS: the server context made from the
 * configured PEM files, and the principal a client certificate names.
 * Each connection's bytes go through a tls_pipe (proto/tls_pipe.h), the
 * memory-BIO glue liblockd's libuv client uses too, so the loop stays in
 * charge of the sockets.
 */
#ifndef LOCKD_TLS_H
#define LOCKD_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

#include "proto/tls_pipe.h"

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

/* The peer certificate's subject CN, when it sent one; false otherwise. */
bool tls_peer_cn(const struct tls_pipe *t, char cn[TLS_CN_MAX + 1]);

#endif
