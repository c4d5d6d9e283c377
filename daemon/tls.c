/*
 * tls.c - OpenSSL behind memory BIOs (tls.h).  It holds no socket and no
 * timer: server.c moves the bytes and bounds the handshake in time.
 */
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509.h>

#include "daemon/tls.h"

/* Plaintext taken from OpenSSL at a time. */
#define TLS_PLAIN_CHUNK 16384

static void
last_error(char *err, size_t err_len, const char *what, const char *file)
{
	unsigned long e = ERR_get_error();
	char why[256];

	ERR_error_string_n(e, why, sizeof(why));
	ERR_clear_error();
	snprintf(err, err_len, "%s %s: %s", what, file, e ? why : "failed");
}

SSL_CTX *
tls_context_new(const char *cert, const char *key, const char *client_ca,
    char *err, size_t err_len)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	if (ctx == NULL) {
		snprintf(err, err_len, "cannot create a TLS context");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	/* No session tickets to keep keys for: each connection is a full
	 * handshake, and a rotated certificate applies at once. */
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
		last_error(err, err_len, "--tls-cert", cert);
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
		last_error(err, err_len, "--tls-key", key);
		goto fail;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		snprintf(err, err_len, "--tls-key %s does not match --tls-cert "
		    "%s", key, cert);
		ERR_clear_error();
		goto fail;
	}
	if (client_ca != NULL && client_ca[0] != '\0') {
		STACK_OF(X509_NAME) *names;

		if (SSL_CTX_load_verify_locations(ctx, client_ca, NULL) != 1 ||
		    (names = SSL_load_client_CA_file(client_ca)) == NULL) {
			last_error(err, err_len, "--tls-client-ca", client_ca);
			goto fail;
		}
		SSL_CTX_set_client_CA_list(ctx, names);
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER |
		    SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	}
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

int
tls_conn_init(struct tls_conn *t, SSL_CTX *ctx)
{
	memset(t, 0, sizeof(*t));
	if ((t->ssl = SSL_new(ctx)) == NULL)
		return -1;
	t->net_in = BIO_new(BIO_s_mem());
	t->net_out = BIO_new(BIO_s_mem());
	if (t->net_in == NULL || t->net_out == NULL) {
		BIO_free(t->net_in);
		BIO_free(t->net_out);
		SSL_free(t->ssl);
		memset(t, 0, sizeof(*t));
		return -1;
	}
	/* An empty input BIO means "wait for more", not end of file. */
	BIO_set_mem_eof_return(t->net_in, -1);
	SSL_set_bio(t->ssl, t->net_in, t->net_out);   /* SSL owns both */
	SSL_set_accept_state(t->ssl);
	return 0;
}

void
tls_conn_free(struct tls_conn *t)
{
	if (t->ssl != NULL)
		SSL_free(t->ssl);
	memset(t, 0, sizeof(*t));
}

static const char *
describe(struct tls_conn *t, int rc)
{
	static char why[256];
	unsigned long e;

	switch (SSL_get_error(t->ssl, rc)) {
	case SSL_ERROR_ZERO_RETURN:
		return "closed by peer";
	case SSL_ERROR_SSL:
		e = ERR_peek_error();
		ERR_error_string_n(e, why, sizeof(why));
		ERR_clear_error();
		return e ? why : "protocol error";
	default:
		ERR_clear_error();
		return "protocol error";
	}
}

int
tls_conn_receive(struct tls_conn *t, const char *data, size_t len,
    const char **why)
{
	int rc, e;

	*why = NULL;
	if (t->failed)
		return -1;
	if (len > 0 && BIO_write(t->net_in, data, (int)len) != (int)len) {
		t->failed = true;
		*why = "out of memory";
		return -1;
	}
	if (t->ready)
		return 0;
	rc = SSL_do_handshake(t->ssl);
	if (rc == 1) {
		t->ready = true;
		return 1;
	}
	e = SSL_get_error(t->ssl, rc);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
		return 0;
	t->failed = true;
	*why = describe(t, rc);
	return -1;
}

int
tls_conn_read(struct tls_conn *t,
    void (*on_plain)(void *ctx, const char *p, size_t n), void *ctx,
    const char **why)
{
	static char plain[TLS_PLAIN_CHUNK];
	int rc, e;

	*why = NULL;
	if (t->failed)
		return -1;
	if (!t->ready)
		return 0;
	for (;;) {
		rc = SSL_read(t->ssl, plain, sizeof(plain));
		if (rc > 0) {
			on_plain(ctx, plain, (size_t)rc);
			continue;
		}
		e = SSL_get_error(t->ssl, rc);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
			return 0;
		t->failed = true;
		*why = describe(t, rc);
		return -1;
	}
}

int
tls_conn_send(struct tls_conn *t, const char *p, size_t n)
{
	size_t done = 0;
	int rc;

	if (!t->ready || t->failed)
		return -1;
	while (done < n) {
		/* A memory BIO takes everything: no WANT_WRITE here. */
		rc = SSL_write(t->ssl, p + done, (int)(n - done > 65536 ?
		    65536 : n - done));
		if (rc <= 0) {
			t->failed = true;
			ERR_clear_error();
			return -1;
		}
		done += (size_t)rc;
	}
	return 0;
}

void
tls_conn_shutdown(struct tls_conn *t)
{
	if (t->ready && !t->failed)
		SSL_shutdown(t->ssl);
	ERR_clear_error();
}

size_t
tls_conn_pending(const struct tls_conn *t)
{
	return t->net_out != NULL ? BIO_ctrl_pending(t->net_out) : 0;
}

size_t
tls_conn_take(struct tls_conn *t, char *buf, size_t cap)
{
	int n = BIO_read(t->net_out, buf, (int)cap);

	return n > 0 ? (size_t)n : 0;
}

bool
tls_conn_peer_cn(const struct tls_conn *t, char cn[TLS_CN_MAX + 1])
{
	X509 *cert = SSL_get0_peer_certificate(t->ssl);
	char whole[1024];
	int n;

	/* Read whole, so that a long CN is refused, never cut down to
	 * another principal's name. */
	if (cert == NULL)
		return false;
	n = X509_NAME_get_text_by_NID(X509_get_subject_name(cert),
	    NID_commonName, whole, sizeof(whole));
	if (n <= 0 || n > TLS_CN_MAX || strlen(whole) != (size_t)n)
		return false;
	memcpy(cn, whole, (size_t)n + 1);
	return true;
}
