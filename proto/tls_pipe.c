/*
 * tls_pipe.c - OpenSSL behind memory BIOs (tls_pipe.h).  It holds no
 * socket and no timer: the caller moves the bytes and bounds the
 * handshake in time.
 */
#include <stdio.h>
#include <limits.h>
#include <string.h>

#include <openssl/err.h>

#include "proto/tls_pipe.h"

/* Plaintext handed to SSL_write at a time (its length is an int). */
#define TLS_PIPE_WRITE_CHUNK 65536

int
tls_pipe_init(struct tls_pipe *t, SSL_CTX *ctx, enum tls_pipe_role role)
{
	BIO *in = NULL, *out = NULL;

	memset(t, 0, sizeof(*t));
	if ((t->ssl = SSL_new(ctx)) == NULL ||
	    (in = BIO_new(BIO_s_mem())) == NULL ||
	    (out = BIO_new(BIO_s_mem())) == NULL) {
		BIO_free(in);
		SSL_free(t->ssl);
		ERR_clear_error();
		memset(t, 0, sizeof(*t));
		return -1;
	}
	/* An empty input BIO means "wait for more", not end of file. */
	BIO_set_mem_eof_return(in, -1);
	SSL_set_bio(t->ssl, in, out);   /* the SSL owns both */
	if (role == TLS_PIPE_SERVER)
		SSL_set_accept_state(t->ssl);
	else
		SSL_set_connect_state(t->ssl);
	return 0;
}

void
tls_pipe_free(struct tls_pipe *t)
{
	SSL_free(t->ssl);
	memset(t, 0, sizeof(*t));
}

/* Keeps why the call that returned rc failed, and empties the queue. */
static int
fail(struct tls_pipe *t, int rc)
{
	t->failed = true;
	t->ssl_error = SSL_get_error(t->ssl, rc);
	t->reason = ERR_peek_last_error();
	ERR_clear_error();
	return -1;
}

/* True when the call that returned rc only waits for more bytes. */
static bool
wants_more(const struct tls_pipe *t, int rc)
{
	int e = SSL_get_error(t->ssl, rc);

	return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE;
}

int
tls_pipe_put(struct tls_pipe *t, const char *data, size_t len)
{
	if (t->failed)
		return -1;
	if (len > 0 && BIO_write(SSL_get_rbio(t->ssl), data, (int)len) !=
	    (int)len) {
		ERR_clear_error();
		t->failed = true;
		t->out_of_memory = true;
		return -1;
	}
	return 0;
}

int
tls_pipe_handshake(struct tls_pipe *t)
{
	int rc;

	if (t->failed)
		return -1;
	if (t->ready)
		return 1;
	ERR_clear_error();
	if ((rc = SSL_do_handshake(t->ssl)) == 1) {
		t->ready = true;
		return 1;
	}
	if (wants_more(t, rc)) {
		ERR_clear_error();
		return 0;
	}
	return fail(t, rc);
}

int
tls_pipe_read(struct tls_pipe *t, char *buf, size_t cap)
{
	int rc;

	if (t->failed)
		return -1;
	if (!t->ready || cap == 0)
		return 0;
	ERR_clear_error();
	rc = SSL_read(t->ssl, buf, cap > INT_MAX ? INT_MAX : (int)cap);
	if (rc > 0)
		return rc;
	if (wants_more(t, rc)) {
		ERR_clear_error();
		return 0;
	}
	return fail(t, rc);
}

int
tls_pipe_write(struct tls_pipe *t, const char *p, size_t n)
{
	size_t done = 0;
	int rc;

	if (!t->ready || t->failed)
		return -1;
	while (done < n) {
		/* A memory BIO takes everything: no WANT_WRITE here. */
		ERR_clear_error();
		rc = SSL_write(t->ssl, p + done, (int)(n - done >
		    TLS_PIPE_WRITE_CHUNK ? TLS_PIPE_WRITE_CHUNK : n - done));
		if (rc <= 0)
			return fail(t, rc);
		done += (size_t)rc;
	}
	return 0;
}

void
tls_pipe_shutdown(struct tls_pipe *t)
{
	if (t->ready && !t->failed)
		SSL_shutdown(t->ssl);
	ERR_clear_error();
}

size_t
tls_pipe_pending(const struct tls_pipe *t)
{
	return t->ssl != NULL ? BIO_ctrl_pending(SSL_get_wbio(t->ssl)) : 0;
}

size_t
tls_pipe_take(struct tls_pipe *t, char *buf, size_t cap)
{
	int n = BIO_read(SSL_get_wbio(t->ssl), buf,
	    cap > INT_MAX ? INT_MAX : (int)cap);

	ERR_clear_error();
	return n > 0 ? (size_t)n : 0;
}

const char *
tls_pipe_why(const struct tls_pipe *t, char *buf, size_t size)
{
	if (t->out_of_memory)
		snprintf(buf, size, "out of memory");
	else if (t->ssl_error == SSL_ERROR_ZERO_RETURN)
		snprintf(buf, size, "closed by peer");
	else if (t->ssl_error == SSL_ERROR_SSL && t->reason != 0)
		ERR_error_string_n(t->reason, buf, size);
	else
		snprintf(buf, size, "protocol error");
	return buf;
}
