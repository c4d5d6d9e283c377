/*
 * endpoint.c - lockd_options made concrete (endpoint.h): URLs, TLS
 * contexts and names, tokens and AUTH's reply.  No sockets here.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "client/endpoint.h"
#include "proto/proto.h"

static char *
dup_or_null(const char *s, bool *oom)
{
	char *d;

	if (s == NULL)
		return NULL;
	if ((d = strdup(s)) == NULL)
		*oom = true;
	return d;
}

__attribute__((format(printf, 2, 3)))
static int
invalid(char *errstr, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errstr, LOCKD_ERRSTR_SIZE, fmt, ap);
	va_end(ap);
	return LOCKD_ERR_INVALID;
}

/*
 * "lockd://HOST[:PORT]", "lockds://HOST[:PORT]" or "lockd:///PATH" into
 * e's host, port, unix_path and tls.
 */
static int
parse_url(struct lockd__endpoint *e, const char *url, char *errstr)
{
	const char *rest, *host, *host_end, *colon = NULL;
	char *end;
	long port = LOCKD_DEFAULT_PORT;
	size_t len;

	if (strncmp(url, "lockds://", 9) == 0) {
		e->tls = true;
		rest = url + 9;
	} else if (strncmp(url, "lockd://", 8) == 0) {
		rest = url + 8;
	} else {
		return invalid(errstr, "bad URL '%.40s': lockd://HOST[:PORT], "
		    "lockds://HOST[:PORT] or lockd:///PATH", url);
	}
	if (rest[0] == '/') {
		if (e->tls)
			return invalid(errstr, "bad URL '%.40s': TLS is for "
			    "TCP, not a Unix socket", url);
		if ((e->unix_path = strdup(rest)) == NULL)
			return LOCKD_ERR_OOM;
		return LOCKD_OK;
	}
	if (rest[0] == '[') {
		host = rest + 1;
		if ((host_end = strchr(host, ']')) == NULL)
			return invalid(errstr, "bad URL '%.40s': no ']'", url);
		if (host_end[1] == ':')
			colon = host_end + 1;
		else if (host_end[1] != '\0')
			return invalid(errstr, "bad URL '%.40s'", url);
	} else {
		host = rest;
		colon = strchr(rest, ':');
		host_end = colon != NULL ? colon : rest + strlen(rest);
	}
	if (host_end == host || strchr(host, '/') != NULL)
		return invalid(errstr, "bad URL '%.40s': a host, and no path",
		    url);
	if (colon != NULL) {
		errno = 0;
		port = strtol(colon + 1, &end, 10);
		if (colon[1] == '\0' || *end != '\0' || errno != 0 ||
		    port < 1 || port > 65535)
			return invalid(errstr, "bad URL '%.40s': port 1-65535",
			    url);
	}
	len = (size_t)(host_end - host);
	if ((e->host = malloc(len + 1)) == NULL)
		return LOCKD_ERR_OOM;
	memcpy(e->host, host, len);
	e->host[len] = '\0';
	e->port = (int)port;
	return LOCKD_OK;
}

static int
tls_context(struct lockd__endpoint *e, const lockd_options *o, char *errstr)
{
	unsigned long code;

	if ((e->tls_ctx = SSL_CTX_new(TLS_client_method())) == NULL)
		return LOCKD_ERR_OOM;
	SSL_CTX_set_min_proto_version(e->tls_ctx, TLS1_2_VERSION);
	/* A peer gone without close_notify is an end, not an error. */
	SSL_CTX_set_options(e->tls_ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
	SSL_CTX_set_mode(e->tls_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_verify(e->tls_ctx, SSL_VERIFY_PEER, NULL);
	if (o->tls_ca_file != NULL ?
	    SSL_CTX_load_verify_locations(e->tls_ctx, o->tls_ca_file,
	    NULL) != 1 : SSL_CTX_set_default_verify_paths(e->tls_ctx) != 1) {
		ERR_clear_error();
		return invalid(errstr, "cannot load CA file %.40s",
		    o->tls_ca_file != NULL ? o->tls_ca_file : "(system)");
	}
	if ((o->tls_cert_file != NULL) != (o->tls_key_file != NULL))
		return invalid(errstr, "%s", "a client certificate needs "
		    "its key, and a key its certificate");
	if (o->tls_cert_file != NULL &&
	    (SSL_CTX_use_certificate_chain_file(e->tls_ctx,
	    o->tls_cert_file) != 1 ||
	    SSL_CTX_use_PrivateKey_file(e->tls_ctx, o->tls_key_file,
	    SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(e->tls_ctx) != 1)) {
		code = ERR_peek_last_error();
		ERR_clear_error();
		snprintf(errstr, LOCKD_ERRSTR_SIZE, "client certificate "
		    "%.30s / key %.30s: %.30s", o->tls_cert_file,
		    o->tls_key_file, code != 0 ?
		    ERR_reason_error_string(code) : "unusable");
		return LOCKD_ERR_INVALID;
	}
	return LOCKD_OK;
}

int
lockd__endpoint_init(struct lockd__endpoint *e, const lockd_options *o,
    char *errstr)
{
	static const lockd_options defaults;
	bool oom = false;
	int rc;

	memset(e, 0, sizeof(*e));
	if (o == NULL)
		o = &defaults;
	if (o->url != NULL) {
		if ((rc = parse_url(e, o->url, errstr)) != LOCKD_OK)
			return rc;
	} else {
		if (o->port < 0 || o->port > 65535) {
			snprintf(errstr, LOCKD_ERRSTR_SIZE, "bad port %d",
			    o->port);
			return LOCKD_ERR_INVALID;
		}
		e->port = o->port > 0 ? o->port : LOCKD_DEFAULT_PORT;
		e->unix_path = dup_or_null(o->unix_path, &oom);
		if (o->unix_path == NULL)
			e->host = dup_or_null(o->host != NULL ? o->host :
			    LOCKD_DEFAULT_HOST, &oom);
	}
	if (o->tls || o->tls_ca_file != NULL || o->tls_cert_file != NULL ||
	    o->tls_key_file != NULL || o->tls_server_name != NULL)
		e->tls = true;
	e->token = dup_or_null(o->token, &oom);
	e->token_file = dup_or_null(o->token_file, &oom);
	if (oom)
		return LOCKD_ERR_OOM;
	if (!e->tls)
		return LOCKD_OK;
	if (e->unix_path != NULL)
		return invalid(errstr, "%s", "TLS is for TCP, not a Unix "
		    "socket");
	if ((e->server_name = strdup(o->tls_server_name != NULL ?
	    o->tls_server_name : e->host)) == NULL)
		return LOCKD_ERR_OOM;
	return tls_context(e, o, errstr);
}

void
lockd__endpoint_free(struct lockd__endpoint *e)
{
	free(e->host);
	free(e->unix_path);
	free(e->server_name);
	if (e->token != NULL) {
		/* Not left behind in freed memory. */
		OPENSSL_cleanse(e->token, strlen(e->token));
		free(e->token);
	}
	free(e->token_file);
	if (e->tls_ctx != NULL)
		SSL_CTX_free(e->tls_ctx);
	memset(e, 0, sizeof(*e));
}

bool
lockd__endpoint_tls_name(const struct lockd__endpoint *e, SSL *ssl)
{
	unsigned char addr[16];

	if (inet_pton(AF_INET, e->server_name, addr) == 1 ||
	    inet_pton(AF_INET6, e->server_name, addr) == 1)
		return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl),
		    e->server_name) == 1;
	return SSL_set_tlsext_host_name(ssl, e->server_name) == 1 &&
	    SSL_set1_host(ssl, e->server_name) == 1;
}

void
lockd__tls_why(SSL *ssl, char *buf, size_t size)
{
	long verify = SSL_get_verify_result(ssl);
	unsigned long code = ERR_peek_last_error();

	if (verify != X509_V_OK)
		snprintf(buf, size, "certificate: %s",
		    X509_verify_cert_error_string(verify));
	else if (code != 0)
		snprintf(buf, size, "%s", ERR_reason_error_string(code) ?
		    ERR_reason_error_string(code) : "TLS error");
	else
		snprintf(buf, size, "the server closed the connection");
	ERR_clear_error();
}

/* The token's first line from path, without its line end. */
static int
read_token_file(const char *path, char *token, char *errstr)
{
	FILE *f = fopen(path, "r");
	size_t len;

	if (f == NULL) {
		snprintf(errstr, LOCKD_ERRSTR_SIZE, "token file %.40s: %s",
		    path, strerror(errno));
		return LOCKD_ERR_INVALID;
	}
	if (fgets(token, LOCKD__TOKEN_MAX + 2, f) == NULL)
		token[0] = '\0';
	fclose(f);
	len = strcspn(token, "\r\n");
	if (len > LOCKD__TOKEN_MAX) {
		OPENSSL_cleanse(token, LOCKD__TOKEN_MAX + 2);
		return invalid(errstr, "token file %.40s: the token is "
		    "longer than 255 bytes", path);
	}
	token[len] = '\0';
	return LOCKD_OK;
}

int
lockd__endpoint_auth_line(const struct lockd__endpoint *e, char *line,
    char *errstr)
{
	char token[LOCKD__TOKEN_MAX + 2];
	size_t len;
	int rc;

	if (e->token == NULL && e->token_file == NULL)
		return 0;
	if (e->token != NULL) {
		if ((len = strlen(e->token)) > LOCKD__TOKEN_MAX)
			return invalid(errstr, "%s", "the token is longer "
			    "than 255 bytes");
		memcpy(token, e->token, len + 1);
	} else if ((rc = read_token_file(e->token_file, token, errstr)) !=
	    LOCKD_OK) {
		return rc;
	}
	len = strlen(token);
	if (len == 0 || !proto_valid_name(token, len)) {
		OPENSSL_cleanse(token, sizeof(token));
		return invalid(errstr, "%s", "the token is empty or holds "
		    "a blank or a control character");
	}
	snprintf(line, LOCKD__TOKEN_MAX + 8, "AUTH %s\r\n", token);
	OPENSSL_cleanse(token, sizeof(token));
	return (int)(len + 7);
}

int
lockd__auth_reply(const char *buf, size_t len, size_t *consumed,
    char *errstr)
{
	struct proto_reply r;
	struct proto_error err;

	switch (proto_parse_reply(buf, len, PROTO_REPLY_MAX, &r, consumed,
	    &err)) {
	case PROTO_PARTIAL:
		return LOCKD_AGAIN;
	case PROTO_DONE:
		break;
	default:
		snprintf(errstr, LOCKD_ERRSTR_SIZE, "garbled reply to AUTH");
		return LOCKD_ERR_PROTOCOL;
	}
	if (r.kind == PROTO_REPLY_AUTHED)
		return LOCKD_OK;
	if (r.kind != PROTO_REPLY_ERROR) {
		snprintf(errstr, LOCKD_ERRSTR_SIZE, "unexpected reply to AUTH");
		return LOCKD_ERR_PROTOCOL;
	}
	snprintf(errstr, LOCKD_ERRSTR_SIZE, "AUTH refused: %.*s",
	    (int)(r.text_len > 100 ? 100 : r.text_len), r.text);
	switch (r.error) {
	case PROTO_ERR_DENIED: return LOCKD_ERR_DENIED;
	case PROTO_ERR_LIMIT: return LOCKD_ERR_LIMIT;
	case PROTO_ERR_BADREQ: return LOCKD_ERR_BADREQ;
	case PROTO_ERR_SHUTDOWN: return LOCKD_ERR_SHUTDOWN;
	default: return LOCKD_ERR_PROTOCOL;
	}
}
