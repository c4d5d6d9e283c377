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

/*
 * The alerts a server sends when it will not take this client's
 * certificate, or its lack of one, as a sentence that says so.  With TLS
 * 1.3 the client's handshake is over before the server has looked at its
 * certificate, so the alert comes with the first read after it.  A
 * handshake failure is what TLS 1.2 sends for a missing certificate, but
 * for other reasons too (no common cipher): "may".
 */
static bool
tls_refusal(SSL *ssl, unsigned long code, char *buf, size_t size)
{
	bool has_cert = SSL_get_certificate(ssl) != NULL;

	if (ERR_GET_LIB(code) != ERR_LIB_SSL)
		return false;
	switch (ERR_GET_REASON(code)) {
	case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
		snprintf(buf, size, "the server requires a client certificate "
		    "and key (TLS alert: certificate required)");
		return true;
	case SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE:
		if (has_cert)
			return false;
		snprintf(buf, size, "the server refused the handshake (TLS "
		    "alert: handshake failure): it may require a client "
		    "certificate");
		return true;
	case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
	case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
	case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
		if (!has_cert)
			return false;
		snprintf(buf, size, "the server refused the client certificate "
		    "(%s)", ERR_reason_error_string(code) != NULL ?
		    ERR_reason_error_string(code) : "TLS alert");
		return true;
	default:
		return false;
	}
}

void
lockd__tls_why(SSL *ssl, unsigned long code, char *buf, size_t size)
{
	long verify = SSL_get_verify_result(ssl);

	if (verify != X509_V_OK)
		snprintf(buf, size, "certificate: %s",
		    X509_verify_cert_error_string(verify));
	else if (code != 0 && tls_refusal(ssl, code, buf, size))
		;
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

/*
 * Endpoint lists.  A cluster's nodes are named in the fields that name one
 * server, comma-separated, so that lockd_options keeps its size and an
 * older program's options mean what they meant: no valid host or URL held
 * a comma before.
 */

/* Splits "HOST[:PORT]" / "[V6][:PORT]" / "V6" of len bytes into host and
 * port (0: none given); false when it is not one of those. */
static bool
split_host_port(const char *item, size_t len, char *host, size_t size,
    int *port)
{
	const char *colon = NULL, *end = item + len, *h = item, *h_end;
	char digits[8];
	long p;
	char *stop;

	*port = 0;
	if (len > 0 && item[0] == '[') {
		h = item + 1;
		if ((h_end = memchr(h, ']', len - 1)) == NULL)
			return false;
		if (h_end + 1 < end) {
			if (h_end[1] != ':')
				return false;
			colon = h_end + 1;
		}
	} else {
		h_end = memchr(item, ':', len);
		/* Two colons or more: a bare IPv6 address, no port. */
		if (h_end != NULL && memchr(h_end + 1, ':',
		    (size_t)(end - h_end - 1)) == NULL)
			colon = h_end;
		else
			h_end = end;
	}
	if (h_end == h || (size_t)(h_end - h) >= size)
		return false;
	memcpy(host, h, (size_t)(h_end - h));
	host[h_end - h] = '\0';
	if (colon == NULL)
		return true;
	if ((size_t)(end - colon - 1) == 0 ||
	    (size_t)(end - colon - 1) >= sizeof(digits))
		return false;
	memcpy(digits, colon + 1, (size_t)(end - colon - 1));
	digits[end - colon - 1] = '\0';
	p = strtol(digits, &stop, 10);
	if (*stop != '\0' || p < 1 || p > 65535 || !isdigit(
	    (unsigned char)digits[0]))
		return false;
	*port = (int)p;
	return true;
}

int
lockd__endpoints_init(struct lockd__endpoint **list, size_t *count,
    const lockd_options *o, char *errstr)
{
	static const lockd_options defaults;
	const char *all, *item, *comma;
	char one[300];
	lockd_options each;
	size_t n = 0, len;
	int rc, port;

	if (o == NULL)
		o = &defaults;
	*count = 0;
	if ((*list = calloc(LOCKD__ENDPOINTS_MAX, sizeof(**list))) == NULL)
		return LOCKD_ERR_OOM;
	/* At least one, zeroed until filled: a bad list leaves a context
	 * that says why at every call, and frees nothing it did not make. */
	*count = 1;
	all = o->url != NULL ? o->url : o->unix_path == NULL ? o->host : NULL;
	if (all == NULL || strchr(all, ',') == NULL) {
		if (all != NULL && o->url == NULL && strchr(all, ':') != NULL &&
		    strchr(strchr(all, ':') + 1, ':') == NULL) {
			/* "-H host:port": one item of a list. */
		} else {
			*count = 1;
			return lockd__endpoint_init(&(*list)[0], o, errstr);
		}
	}
	for (item = all; ; item = comma + 1) {
		comma = strchr(item, ',');
		len = comma != NULL ? (size_t)(comma - item) : strlen(item);
		if (n == LOCKD__ENDPOINTS_MAX)
			return invalid(errstr, "more than %d endpoints",
			    LOCKD__ENDPOINTS_MAX);
		if (len == 0 || len >= sizeof(one))
			return invalid(errstr, "bad endpoint list '%.40s'",
			    all);
		memcpy(one, item, len);
		one[len] = '\0';
		each = *o;
		if (o->url != NULL) {
			each.url = one;
		} else {
			if (!split_host_port(item, len, one, sizeof(one),
			    &port))
				return invalid(errstr, "bad endpoint '%.*s': "
				    "HOST, HOST:PORT or [IPV6]:PORT",
				    (int)(len > 60 ? 60 : len), item);
			each.host = one;
			if (port != 0)
				each.port = port;
		}
		*count = ++n;
		if ((rc = lockd__endpoint_init(&(*list)[n - 1], &each,
		    errstr)) != LOCKD_OK)
			return rc;
		if (comma == NULL)
			return LOCKD_OK;
	}
}

void
lockd__endpoints_free(struct lockd__endpoint *list, size_t count)
{
	size_t i;

	if (list == NULL)
		return;
	for (i = 0; i < count; i++)
		lockd__endpoint_free(&list[i]);
	free(list);
}

int
lockd__endpoints_find(const struct lockd__endpoint *list, size_t count,
    const char *hostport, size_t len)
{
	char host[300];
	size_t i;
	int port;

	if (!split_host_port(hostport, len, host, sizeof(host), &port) ||
	    port == 0)
		return -1;
	for (i = 0; i < count; i++)
		if (list[i].host != NULL && list[i].port == port &&
		    strcmp(list[i].host, host) == 0)
			return (int)i;
	return -1;
}

bool
lockd__notleader_hint(const char *errstr, char *hint, size_t size)
{
	static const char prefix[] = "NOTLEADER: leader=";
	size_t len;

	if (strncmp(errstr, prefix, sizeof(prefix) - 1) != 0)
		return false;
	errstr += sizeof(prefix) - 1;
	len = strcspn(errstr, " ");
	if (len == 0 || len >= size)
		return false;
	memcpy(hint, errstr, len);
	hint[len] = '\0';
	return true;
}

size_t
lockd__endpoints_next(const struct lockd__endpoint *list, size_t count,
    size_t current, const char *errstr, bool *hinted)
{
	char hint[300];
	int at = -1;

	if (lockd__notleader_hint(errstr, hint, sizeof(hint)))
		at = lockd__endpoints_find(list, count, hint, strlen(hint));
	*hinted = at >= 0 && (size_t)at != current;
	if (*hinted)
		return (size_t)at;
	return count > 1 ? (current + 1) % count : current;
}
