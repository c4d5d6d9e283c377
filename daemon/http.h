/*
 * http.h - the Prometheus metrics endpoint (--metrics-listen).  With
 * --tls-cert it speaks TLS with the lock port's certificate (and client
 * CA); with --auth a scrape needs a principal with admin on some prefix,
 * as STATS does: from a client certificate or "Authorization: Bearer".
 */
#ifndef LOCKD_HTTP_H
#define LOCKD_HTTP_H

#include <stdbool.h>
#include <uv.h>

#include <openssl/ssl.h>

#include "core/core.h"
#include "daemon/service.h"

struct http_server {
	uv_tcp_t tcp;
	struct service *svc;
	/* The server's current TLS context (replaced on SIGHUP), read at
	 * each accept; NULL or *tls NULL: plain HTTP. */
	SSL_CTX *const *tls;
	struct core_link conns;    /* every open http_conn */
	int port;
	bool active;
};

/* Listens on HOST:PORT (port 0 picks one); returns 0 or a libuv error. */
int http_listen(struct http_server *http, uv_loop_t *loop,
    const char *hostport, struct service *svc, SSL_CTX *const *tls);
/* A stop: closes the listener and every connection at once, answered or
 * not, so that nothing of the endpoint outlives the stop. */
void http_stop(struct http_server *http);

#endif
