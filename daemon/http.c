/*
 * http.c - the metrics endpoint: just enough HTTP/1.x to answer
 * `GET /metrics` with the Prometheus text format on the lock service's own
 * event loop, and the health checks of load balancers and watchdogs:
 * `/healthz` (200 while the loop answers) and `/readyz` (200 while locks
 * are served - recovery done - else 503).  One request per connection (Connection: close).  Any other
 * path is 404, any other method 405; a malformed request, one larger than
 * HTTP_MAX_REQUEST or one not complete within HTTP_TIMEOUT_MS is answered
 * 400 (or dropped) and closed.  Nothing here touches the lock table but
 * to read its counters.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "core/list.h"
#include "daemon/config.h"
#include "daemon/http.h"
#include "daemon/log.h"

#define HTTP_MAX_REQUEST 8192
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
};

static void
on_handle_closed(uv_handle_t *h)
{
	struct http_conn *c = h->data;

	if (--c->closing == 0) {
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
respond(struct http_conn *c, int code, const char *reason,
    const char *type, const char *body, size_t body_len)
{
	char head[256];
	uv_buf_t buf;
	int n;

	c->answered = true;
	uv_read_stop((uv_stream_t *)&c->tcp);
	n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\n"
	    "Content-Type: %s\r\nContent-Length: %zu\r\n"
	    "Connection: close\r\n\r\n", code, reason, type, body_len);
	if ((c->out = malloc((size_t)n + body_len)) == NULL) {
		http_close(c);
		return;
	}
	memcpy(c->out, head, (size_t)n);
	memcpy(c->out + n, body, body_len);
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
	respond(c, code, reason, "text/plain; charset=utf-8", text,
	    strlen(text));
}

/* Is the request target [target, target + len) this path, with or
 * without a query? */
static bool
path_is(const char *target, size_t len, const char *path)
{
	size_t n = strlen(path);

	return len >= n && memcmp(target, path, n) == 0 &&
	    (len == n || target[n] == '?');
}

/* Looks at a complete request head: request line, then headers. */
static void
handle(struct http_conn *c, size_t head_len)
{
	const char *p = c->in, *end = c->in + head_len, *sp1, *sp2, *eol;
	struct metrics_text t = { NULL, 0, 0, 0 };
	size_t i;

	for (i = 0; i < head_len; i++) {
		unsigned char ch = (unsigned char)p[i];
		if ((ch < 0x20 && ch != '\r' && ch != '\n' && ch != '\t') ||
		    ch == 0x7f) {
			respond_text(c, 400, "Bad Request", "bad request\n");
			return;
		}
	}
	eol = memchr(p, '\n', (size_t)(end - p));
	sp1 = memchr(p, ' ', (size_t)(eol - p));
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (sp1 == NULL || sp2 == NULL || sp1 == p || sp2 == sp1 + 1 ||
	    (size_t)(eol - sp2) < 9 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0) {
		respond_text(c, 400, "Bad Request", "bad request\n");
		return;
	}
	if (!((sp1 - p == 3 && memcmp(p, "GET", 3) == 0) ||
	    (sp1 - p == 4 && memcmp(p, "HEAD", 4) == 0))) {
		respond_text(c, 405, "Method Not Allowed", "only GET\n");
		return;
	}
	if (path_is(sp1 + 1, (size_t)(sp2 - sp1 - 1), "/healthz")) {
		respond_text(c, 200, "OK", p[0] == 'H' ? "" : "ok\n");
		return;
	}
	if (path_is(sp1 + 1, (size_t)(sp2 - sp1 - 1), "/readyz")) {
		if (service_ready(c->http->svc))
			respond_text(c, 200, "OK", p[0] == 'H' ? "" :
			    "ready\n");
		else
			respond_text(c, 503, "Service Unavailable",
			    p[0] == 'H' ? "" : "not serving locks\n");
		return;
	}
	if (!(sp2 - sp1 - 1 == 8 && memcmp(sp1 + 1, "/metrics", 8) == 0) &&
	    !(sp2 - sp1 - 1 > 8 && memcmp(sp1 + 1, "/metrics?", 9) == 0)) {
		respond_text(c, 404, "Not Found",
		    "not found; try /metrics, /healthz or /readyz\n");
		return;
	}
	service_render_metrics(c->http->svc, &t);
	if (t.failed) {
		free(t.data);
		respond_text(c, 500, "Internal Server Error", "out of memory\n");
		return;
	}
	respond(c, 200, "OK", "text/plain; version=0.0.4; charset=utf-8",
	    t.data, p[0] == 'H' ? 0 : t.len);
	free(t.data);
}

static void
on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct http_conn *c = h->data;

	(void)hint;
	*buf = uv_buf_init(c->in + c->in_len,
	    (unsigned int)(sizeof(c->in) - c->in_len));
}

static void
on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct http_conn *c = stream->data;
	const char *end;

	(void)buf;
	if (nread < 0) {
		http_close(c);
		return;
	}
	c->in_len += (size_t)nread;
	end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
	if (end != NULL) {
		handle(c, (size_t)(end - c->in) + 4);
		return;
	}
	if ((end = memmem(c->in, c->in_len, "\n\n", 2)) != NULL) {
		handle(c, (size_t)(end - c->in) + 2);
		return;
	}
	if (c->in_len == sizeof(c->in))
		respond_text(c, 400, "Bad Request", "request too large\n");
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
	uv_timer_start(&c->timer, on_timeout, HTTP_TIMEOUT_MS, 0);
	uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

int
http_listen(struct http_server *http, uv_loop_t *loop, const char *hostport,
    struct service *svc)
{
	struct sockaddr_storage addr;
	char shown[300], host[256], err[300];
	socklen_t alen;
	int rc, port, len = sizeof(addr);

	http->svc = svc;
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
	    "http://%s/metrics\"", shown, shown);
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
