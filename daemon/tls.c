/*
 * tls.c - the server's TLS context and a client certificate's CN (tls.h).
 * The connections' bytes go through proto/tls_pipe.c.
 */
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509.h>

#include "daemon/tls.h"

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

bool
tls_peer_cn(const struct tls_pipe *t, char cn[TLS_CN_MAX + 1])
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
