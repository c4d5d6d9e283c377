/*
 * http.c - the metrics endpoint: just enough HTTP/1.x to answer
 * `GET /metrics` with the Prometheus text format on the lock service's own
 * event loop, and the health checks of load balancers and watchdogs:
 * `/healthz` (200 while the loop answers) and `/readyz` (200 while locks
 * are served - recovery done - else 503).  One request per connection
 * (Connection: close).  The request head is parsed by http_parse.c, a pure
 * function over the bytes read; this file moves the bytes.  Any other
 * path is 404, any other method 405; a malformed request, one larger than
 * HTTP_MAX_REQUEST or one not complete within HTTP_TIMEOUT_MS is answered
 * 400 (or dropped) and closed.  Nothing here touches the lock table but
 * to read its counters.
 *
 * With TLS the bytes go through a tls_pipe (tls_pipe.h) as on the lock port;
 * every write is its own buffer, and the connection closes once the
 * response and its close_notify are written.  With --auth, /metrics asks
 * for a principal that may STATS (401 otherwise).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uv.h>

#include "core/list.h"
#include "daemon/auth.h"
#include "daemon/config.h"
#include "daemon/http.h"
#include "daemon/http_parse.h"
#include "daemon/log.h"
#include "daemon/tls.h"

#define HTTP_MAX_REQUEST 8192
#define HTTP_UNAUTHORIZED_TEXT "a token of a principal with admin is needed\n"
#define HTTP_TIMEOUT_MS 10000
/* A scraper or two, not a crowd: a short accept queue. */
#define HTTP_LISTEN_BACKLOG 128

struct http_conn {
	uv_tcp_t tcp;              /* first: libuv hands back this pointer */
	uv_timer_t timer;
	uv_write_t write_req;
	struct http_server *http;
	struct core_link link;     /* in http->conns */
	char in[HTTP_MAX_REQUEST];
	size_t in_len;
	char *out;
	bool answered;
	int closing;               /* handles still to close */
	bool is_tls;
	struct tls_pipe tls;
	char net[4096];            /* ciphertext as read */
	int writes;                /* TLS writes in flight */
	bool close_when_written;
};

/* One TLS write: the ciphertext follows the struct. */
struct http_write {
	uv_write_t req;
	struct http_conn *conn;
	char data[];
};

static void
on_handle_closed(uv_handle_t *h)
{
	struct http_conn *c = h->data;

	if (--c->closing == 0) {
		if (c->is_tls)
			tls_pipe_free(&c->tls);
		free(c->out);
		free(c);
	}
}

static void
http_close(struct http_conn *c)
{
	if (c->closing)
		return;
	c->closing = 2;
	link_remove(&c->link);
	uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
	uv_close((uv_handle_t *)&c->timer, on_handle_closed);
}

static void
on_written(uv_write_t *req, int status)
{
	(void)status;
	http_close(req->data);
}

static void
on_tls_written(uv_write_t *req, int status)
{
	struct http_write *w = container_of(req, struct http_write, req);
	struct http_conn *c = w->conn;

	free(w);
	c->writes--;
	if (status < 0 || (c->close_when_written && c->writes == 0))
		http_close(c);
}

/* Writes what OpenSSL has to send (handshake, records, an alert). */
static void
tls_flush(struct http_conn *c)
{
	size_t n = tls_pipe_pending(&c->tls);
	struct http_write *w;
	uv_buf_t buf;

	if (n > 0 && !c->closing) {
		if ((w = malloc(sizeof(*w) + n)) == NULL) {
			http_close(c);
			return;
		}
		w->conn = c;
		n = tls_pipe_take(&c->tls, w->data, n);
		buf = uv_buf_init(w->data, (unsigned int)n);
		if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &buf, 1,
		    on_tls_written) != 0) {
			free(w);
			http_close(c);
			return;
		}
		c->writes++;
	}
	if (c->close_when_written && c->writes == 0)
		http_close(c);
}

static void
respond(struct http_conn *c, int code, const char *reason,
    const char *type, const char *extra_headers, const char *body,
    size_t body_len)
{
	char head[512];
	uv_buf_t buf;
	int n;

	c->answered = true;
	if (!c->is_tls)
		uv_read_stop((uv_stream_t *)&c->tcp);
	n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\n"
	    "Content-Type: %s\r\nContent-Length: %zu\r\n%s"
	    "Connection: close\r\n\r\n", code, reason, type, body_len,
	    extra_headers);
	if ((c->out = malloc((size_t)n + body_len)) == NULL) {
		http_close(c);
		return;
	}
	memcpy(c->out, head, (size_t)n);
	memcpy(c->out + n, body, body_len);
	if (c->is_tls) {
		c->close_when_written = true;
		if (tls_pipe_write(&c->tls, c->out, (size_t)n + body_len) != 0) {
			http_close(c);
			return;
		}
		tls_pipe_shutdown(&c->tls);
		tls_flush(c);
		return;
	}
	buf = uv_buf_init(c->out, (unsigned int)((size_t)n + body_len));
	c->write_req.data = c;
	if (uv_write(&c->write_req, (uv_stream_t *)&c->tcp, &buf, 1,
	    on_written) != 0)
		http_close(c);
}

static void
respond_text(struct http_conn *c, int code, const char *reason,
    const char *text)
{
	respond(c, code, reason, "text/plain; charset=utf-8", "", text,
	    strlen(text));
}

/*
 * With --auth: may this scrape read the counters?  Yes for a principal
 * with admin on some prefix (what STATS needs), from a bearer token or
 * else the client certificate.
 */
static bool
scrape_allowed(struct http_conn *c, const struct http_request *req)
{
	const struct auth_rules *rules = c->http->svc->auth;
	const char *principal = NULL;
	char cn[TLS_CN_MAX + 1];

	if (rules == NULL)
		return true;
	if (req->token != NULL) {
		if ((principal = auth_token_principal(rules, req->token,
		    req->token_len)) == NULL)
			c->http->svc->stats.auth_failures++;
	} else if (c->is_tls && tls_peer_cn(&c->tls, cn) &&
	    strncmp(cn, "uid:", 4) != 0) {
		principal = cn;
	}
	if (principal != NULL && auth_may_any(rules, principal,
	    AUTH_PERM_ADMIN))
		return true;
	c->http->svc->stats.denied++;
	return false;
}

/* Answers a complete request head, parsed. */
static void
handle(struct http_conn *c, const struct http_request *req)
{
	struct metrics_text t = { NULL, 0, 0, 0 };
	bool head = req->method == HTTP_METHOD_HEAD;

	if (req->method == HTTP_METHOD_OTHER) {
		respond_text(c, 405, "Method Not Allowed", "only GET\n");
		return;
	}
	if (http_target_is(req, "/healthz")) {
		respond_text(c, 200, "OK", head ? "" : "ok\n");
		return;
	}
	if (http_target_is(req, "/readyz")) {
		if (service_ready(c->http->svc))
			respond_text(c, 200, "OK", head ? "" : "ready\n");
		else
			respond_text(c, 503, "Service Unavailable",
			    head ? "" : "not serving locks\n");
		return;
	}
	if (!http_target_is(req, "/metrics")) {
		respond_text(c, 404, "Not Found",
		    "not found; try /metrics, /healthz or /readyz\n");
		return;
	}
	if (!scrape_allowed(c, req)) {
		respond(c, 401, "Unauthorized", "text/plain; charset=utf-8",
		    "WWW-Authenticate: Bearer realm=\"lockd\"\r\n",
		    HTTP_UNAUTHORIZED_TEXT, strlen(HTTP_UNAUTHORIZED_TEXT));
		return;
	}
	service_render_metrics(c->http->svc, &t);
	if (t.failed) {
		free(t.data);
		respond_text(c, 500, "Internal Server Error", "out of memory\n");
		return;
	}
	respond(c, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", "",
	    t.data, head ? 0 : t.len);
	free(t.data);
}

static void
on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct http_conn *c = h->data;

	(void)hint;
	if (c->is_tls)
		*buf = uv_buf_init(c->net, sizeof(c->net));
	else
		*buf = uv_buf_init(c->in + c->in_len,
		    (unsigned int)(sizeof(c->in) - c->in_len));
}

/* A request head is complete, or too large: answer it. */
static void
examine(struct http_conn *c)
{
	struct http_request req;

	switch (http_parse_request(c->in, c->in_len, &req)) {
	case HTTP_PARSE_DONE:
		handle(c, &req);
		return;
	case HTTP_PARSE_BAD:
		respond_text(c, 400, "Bad Request", "bad request\n");
		return;
	case HTTP_PARSE_PARTIAL:
		if (c->in_len == sizeof(c->in))
			respond_text(c, 400, "Bad Request",
			    "request too large\n");
		return;
	}
}

static void
on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct http_conn *c = stream->data;
	int n;

	if (nread < 0) {
		http_close(c);
		return;
	}
	if (!c->is_tls) {
		(void)buf;
		c->in_len += (size_t)nread;
		examine(c);
		return;
	}
	/* Plaintext beyond in[] is left unread: a full in[] is answered
	 * as too large. */
	if (tls_pipe_put(&c->tls, buf->base, (size_t)nread) == 0 &&
	    tls_pipe_handshake(&c->tls) == 1) {
		while (c->in_len < sizeof(c->in) && (n = tls_pipe_read(&c->tls,
		    c->in + c->in_len, sizeof(c->in) - c->in_len)) > 0)
			c->in_len += (size_t)n;
	}
	if (c->tls.failed) {
		/* An alert, if OpenSSL has one, then the end. */
		c->close_when_written = true;
		tls_flush(c);
		return;
	}
	if (!c->answered && c->in_len > 0)
		examine(c);
	if (!c->answered)
		tls_flush(c);
}

static void
on_timeout(uv_timer_t *t)
{
	struct http_conn *c = t->data;

	if (!c->answered)
		http_close(c);
}

static void
on_connection(uv_stream_t *listener, int status)
{
	struct http_server *http = listener->data;
	struct http_conn *c;

	if (status < 0 || (c = calloc(1, sizeof(*c))) == NULL)
		return;
	c->http = http;
	link_append(&http->conns, &c->link);
	uv_tcp_init(listener->loop, &c->tcp);
	uv_timer_init(listener->loop, &c->timer);
	c->tcp.data = c->timer.data = c;
	if (uv_accept(listener, (uv_stream_t *)&c->tcp) != 0) {
		http_close(c);
		return;
	}
	if (http->tls != NULL && *http->tls != NULL) {
		if (tls_pipe_init(&c->tls, *http->tls, TLS_PIPE_SERVER) != 0) {
			http_close(c);
			return;
		}
		c->is_tls = true;
	}
	uv_timer_start(&c->timer, on_timeout, HTTP_TIMEOUT_MS, 0);
	uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

int
http_listen(struct http_server *http, uv_loop_t *loop, const char *hostport,
    struct service *svc, SSL_CTX *const *tls)
{
	struct sockaddr_storage addr;
	char shown[300], host[256], err[300];
	socklen_t alen;
	int rc, port, len = sizeof(addr);

	http->svc = svc;
	http->tls = tls;
	link_init(&http->conns);
	if (config_resolve(hostport, &addr, &alen, err, sizeof(err)) != 0 ||
	    config_split_hostport(hostport, host, sizeof(host), &port) != 0)
		return UV_EINVAL;
	if ((rc = uv_tcp_init(loop, &http->tcp)) != 0)
		return rc;
	http->tcp.data = http;
	http->active = true;
	if ((rc = uv_tcp_bind(&http->tcp, (struct sockaddr *)&addr, 0)) != 0 ||
	    (rc = uv_listen((uv_stream_t *)&http->tcp, HTTP_LISTEN_BACKLOG,
	    on_connection)) != 0)
		return rc;
	uv_tcp_getsockname(&http->tcp, (struct sockaddr *)&addr, &len);
	if (addr.ss_family == AF_INET6)
		http->port = ntohs(((struct sockaddr_in6 *)&addr)->sin6_port);
	else
		http->port = ntohs(((struct sockaddr_in *)&addr)->sin_port);
	snprintf(shown, sizeof(shown), strchr(host, ':') ? "[%s]:%d" :
	    "%s:%d", host, http->port);
	log_event(LOG_INFO, "listen", "metrics=%s msg=\"metrics on "
	    "%s://%s/metrics\"", shown, tls != NULL && *tls != NULL ?
	    "https" : "http", shown);
	return 0;
}

void
http_stop(struct http_server *http)
{
	if (!http->active)
		return;
	http->active = false;
	uv_close((uv_handle_t *)&http->tcp, NULL);
	/* A scrape half sent (or never sent: a health checker, a port scan)
	 * would otherwise hold the loop, and the stop, until its timeout. */
	while (!link_empty(&http->conns))
		http_close(container_of(http->conns.next, struct http_conn,
		    link));
}
