/*
 * http.h - the Prometheus metrics endpoint (--metrics-listen).
 */
#ifndef LOCKD_HTTP_H
#define LOCKD_HTTP_H

#include <stdbool.h>
#include <uv.h>

#include "core/core.h"
#include "daemon/service.h"

struct http_server {
	uv_tcp_t tcp;
	struct service *svc;
	struct core_link conns;    /* every open http_conn */
	int port;
	bool active;
};

/* Listens on HOST:PORT (port 0 picks one); returns 0 or a libuv error. */
int http_listen(struct http_server *http, uv_loop_t *loop,
    const char *hostport, struct service *svc);
/* A stop: closes the listener and every connection at once, answered or
 * not, so that nothing of the endpoint outlives the stop. */
void http_stop(struct http_server *http);

#endif
