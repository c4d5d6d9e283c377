/*
 * uv.c - liblockd's libuv transport: lockd_uv.h's client and keep-alive.
 *
 * Requests are checked and formatted, replies matched and turned into
 * results by request.c, the code the blocking context runs; this file only
 * moves the bytes on the caller's loop (a uv stream, uv_getaddrinfo, one uv
 * timer for the connect and command timeouts) and calls the callbacks.
 *
 * Lifetimes follow libuv.  A client counts what may still call back into
 * it (its timer, each connection handle, a name resolution, each
 * keep-alive, its keep-alive connection) and is freed when it is closing
 * and that count reaches zero, always from a libuv callback, never while
 * one of its callbacks runs.  A connection handle lives in its own
 * allocation, freed in its close callback, so a client can drop a broken
 * connection (or a failed attempt at one address) and make another.
 *
 * TLS runs through a tls_pipe (proto/tls_pipe.h), the daemon's own
 * memory-BIO glue: what the stream reads is put into the pipe, and the
 * ciphertext the pipe has pending goes out in the next uv_write, so the
 * handshake never blocks the loop; it is bounded by the connect timeout
 * with the TCP connect and AUTH.  The TLS context, the server name to
 * verify and the token are endpoint.c's, the blocking client's.  Until
 * AUTH is answered the client is still connecting; requests wait.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>

#include "client/lockd_uv.h"
#include "client/endpoint.h"
#include "client/request.h"
#include "client/schedule.h"
#include "proto/proto.h"
#include "proto/tls_pipe.h"

#define LOCKD__UV_READ_CHUNK 4096

/* A keep-alive's first renewal, when neither the client's command timeout
 * nor the lease says how long it may take (keepalive.c's too). */
#define LOCKD__UV_FIRST_DEFAULT_MS 30000

enum lockd__uv_state {
	LOCKD__UV_CONNECTING,
	LOCKD__UV_READY,
	LOCKD__UV_DEAD
};

/* What connecting waits for. */
enum lockd__uv_phase {
	LOCKD__UV_PHASE_CONNECT,   /* the stream, an address at a time */
	LOCKD__UV_PHASE_TLS,       /* the handshake */
	LOCKD__UV_PHASE_AUTH       /* AUTH's reply */
};

struct lockd__uv_conn {
	union {
		uv_handle_t handle;
		uv_stream_t stream;
		uv_tcp_t tcp;
		uv_pipe_t pipe;
	} h;
	uv_connect_t connect;
	uv_write_t write;
	lockd_uv_client *client;
	struct tls_pipe tls;   /* TLS over this stream; tls.ssl NULL: plain */
	bool dropped;          /* closing; its callbacks are to be ignored */
	bool writing;
};

/* A queued request: the shared entry first, then our callback. */
struct lockd__uv_request {
	struct lockd__pending p;
	lockd_uv_reply_cb *cb;
	lockd_uv_status_cb *status_cb;  /* lockd_uv_status_holders: instead */
	void *arg;
	char *line;            /* fail-over on: the request, to send again */
	size_t len;
	bool repeatable;       /* safe to send again after a broken connection */
};

struct lockd_uv_client {
	uv_loop_t *loop;
	lockd_options options;      /* the timeouts; no pointers kept */
	struct lockd__endpoint *ats;  /* every endpoint: where, TLS, token */
	size_t n_ats;
	struct lockd__endpoint *at; /* the one connected or being tried */

	/* Fail-over (lockd_uv.h): a search for a node that serves, from a
	 * broken connection or a NOTLEADER to the next reply. */
	int64_t failover_ms;        /* 0: off */
	size_t next_at;             /* the endpoint the next attempt tries */
	int64_t failing_since;      /* this search's first failure; -1 */
	int64_t backoff;            /* the next pause, once each was tried */
	int64_t start_at;           /* when the next attempt begins */
	int64_t ready_at;           /* when this connection became ready */
	int attempts;               /* connections begun in this search */
	bool owns_ats;              /* false: the client's, for its renewer */
	bool ever_ready;            /* connect_cb has had its LOCKD_OK */
	bool resolve_stale;         /* the name lookup in flight is abandoned */
	char where[300];

	enum lockd__uv_state state;
	enum lockd__uv_phase phase;
	char auth_line[LOCKD__TOKEN_MAX + 8];
	size_t auth_len;            /* AUTH to send first; 0: none (left) */
	bool started;               /* connecting has begun */
	bool closing;
	int err;
	char errstr[LOCKD_ERRSTR_SIZE];
	lockd_uv_connect_cb *connect_cb;
	void *connect_arg;
	lockd_uv_close_cb *close_cb;
	void *close_arg;
	unsigned refs;              /* what may still call back into us */

	uv_timer_t timer;           /* connect, then command timeout */
	int64_t connect_deadline;   /* -1: none */
	int64_t head_deadline;      /* the head request's reply; -1: none */
	bool head_timed;
	uv_getaddrinfo_t resolve;
	bool resolving;
	struct addrinfo *addrs, *next_addr;
	struct lockd__uv_conn *conn;

	char *out;                  /* appended, not yet handed to a write */
	size_t out_len, out_cap;
	char *wbuf;                 /* the write in flight */
	size_t wbuf_cap;
	uint64_t appended, written;
	char *in;                   /* read (decrypted), not yet parsed */
	size_t in_len, in_cap;
	char *raw;                  /* TLS: records read, for the SSL */

	struct lockd__queue queue;  /* of struct lockd__uv_request */
	size_t sent;                /* queued requests handed to a write */

	lockd_uv_client *renewer;   /* the keep-alive connection */
	lockd_uv_keepalive *keepalives;
};

struct lockd_uv_keepalive {
	lockd_uv_client *client;
	lockd_uv_keepalive *prev, *next;
	uv_timer_t timer;
	lockd_lease lease;
	lockd_uv_lost_cb *lost_cb;
	void *arg;
	int64_t lost_at;
	int last;                   /* the last failed renewal's result */
	int64_t backoff;            /* lockd__retry_after's; 0 after success */
	char why[LOCKD_ERRSTR_SIZE];
	int lost;
	char errstr[LOCKD_ERRSTR_SIZE];
	unsigned refs;              /* timer open, renewal in flight */
	bool renewing, stopped;
};

static void lockd__uv_flush(lockd_uv_client *c);
static void lockd__uv_try_next(lockd_uv_client *c);
static void lockd__uv_arm(lockd_uv_client *c);
static bool lockd__uv_failover(lockd_uv_client *c, int code);

/* Fail-over's pause between attempts once each endpoint had one, as
 * lockd.c's. */
#define LOCKD__UV_BACKOFF_MS 50
#define LOCKD__UV_BACKOFF_MAX_MS 250

/* Frees the copies of the requests in q (before q goes). */
static void
lockd__uv_free_lines(struct lockd__queue *q)
{
	struct lockd__uv_request *r;
	size_t i;

	for (i = 0; i < q->count; i++) {
		r = lockd__queue_at(q, i);
		free(r->line);
		r->line = NULL;
	}
}

/*
 * Freeing.  Each reference is dropped by the callback that ends it; the
 * last one frees a closing client.
 */
static void
lockd__uv_unref(lockd_uv_client *c)
{
	lockd_uv_close_cb *cb;
	void *arg;

	if (--c->refs > 0 || !c->closing)
		return;
	cb = c->close_cb;
	arg = c->close_arg;
	if (c->addrs != NULL)
		uv_freeaddrinfo(c->addrs);
	lockd__uv_free_lines(&c->queue);
	lockd__queue_free(&c->queue);
	free(c->out);
	free(c->wbuf);
	free(c->in);
	free(c->raw);
	OPENSSL_cleanse(c->auth_line, sizeof(c->auth_line));
	if (c->owns_ats)
		lockd__endpoints_free(c->ats, c->n_ats);
	if (cb != NULL)
		cb(c, arg);
	free(c);
}

static void
lockd__uv_conn_closed(uv_handle_t *h)
{
	struct lockd__uv_conn *conn = h->data;
	lockd_uv_client *c = conn->client;

	if (conn->tls.ssl != NULL)
		tls_pipe_free(&conn->tls);
	free(conn);
	lockd__uv_unref(c);
}

static void
lockd__uv_drop_conn(lockd_uv_client *c)
{
	struct lockd__uv_conn *conn = c->conn;

	if (conn == NULL)
		return;
	c->conn = NULL;
	conn->dropped = true;
	uv_close(&conn->h.handle, lockd__uv_conn_closed);
}

static void
lockd__uv_timer_closed(uv_handle_t *h)
{
	lockd__uv_unref(h->data);
}

/*
 * Failing.  A fatal error (or closing) ends the connection and answers
 * every request due with the error, in order.  The queue is taken out of
 * the client first, so callbacks may issue requests (they fail at once) or
 * close the client.  With fail-over, an error that only ends this
 * connection (or a NOTLEADER) sends the requests on to another node
 * instead (lockd__uv_failover); errstr says why either way.
 */
/*
 * Calls r's callback with its result: the reply callback, or the status
 * callback with what info says (NULL: nothing, as for an error).
 */
static void
lockd__uv_answer(lockd_uv_client *c, const struct lockd__uv_request *r,
    int rc, const lockd_reply *reply, const struct lockd__info *info)
{
	struct lockd__info none;

	if (r->status_cb == NULL) {
		r->cb(c, rc, reply, r->arg);
		return;
	}
	if (info == NULL || rc != LOCKD_OK) {
		memset(&none, 0, sizeof(none));
		none.holders.size = sizeof(none.holders);
		none.holders.limit = 1;
		info = &none;
	}
	r->status_cb(c, rc, &info->lock, &info->holders, r->arg);
}

static void
lockd__uv_die(lockd_uv_client *c, int code)
{
	struct lockd__queue due;
	struct lockd__uv_request *r;
	lockd_reply reply;
	lockd_uv_connect_cb *connect_cb = c->ever_ready ? NULL : c->connect_cb;
	size_t i;

	c->err = code;
	c->state = LOCKD__UV_DEAD;
	uv_timer_stop(&c->timer);
	lockd__uv_drop_conn(c);
	if (c->resolving) {
		uv_cancel((uv_req_t *)&c->resolve);
		c->resolve_stale = true;
	}
	lockd__uv_free_lines(&c->queue);
	due = c->queue;
	lockd__queue_init(&c->queue, sizeof(struct lockd__uv_request));
	c->sent = 0;
	/* Once: a client revived later (lockd__uv_revive) says no more. */
	c->connect_cb = NULL;
	if (connect_cb != NULL)
		connect_cb(c, code, c->connect_arg);
	for (i = 0; i < due.count; i++) {
		r = lockd__queue_at(&due, i);
		memset(&reply, 0, sizeof(reply));
		reply.command = r->p.command;
		reply.result = code;
		lockd__uv_answer(c, r, code, &reply, NULL);
	}
	lockd__queue_free(&due);
}

__attribute__((format(printf, 3, 4)))
static void
lockd__uv_fail(lockd_uv_client *c, int code, const char *fmt, ...)
{
	va_list ap;

	if (c->state == LOCKD__UV_DEAD)
		return;
	va_start(ap, fmt);
	vsnprintf(c->errstr, sizeof(c->errstr), fmt, ap);
	va_end(ap);
	if (!lockd__uv_failover(c, code))
		lockd__uv_die(c, code);
}

/*
 * Connecting: a Unix socket, a numeric address, or each address a name
 * resolves to in turn, within the connect timeout.
 */

static void
lockd__uv_connected(uv_connect_t *req, int status);

static struct lockd__uv_conn *
lockd__uv_new_conn(lockd_uv_client *c)
{
	struct lockd__uv_conn *conn = calloc(1, sizeof(*conn));

	if (conn == NULL)
		return NULL;
	conn->client = c;
	conn->h.handle.data = conn;
	conn->connect.data = conn;
	conn->write.data = conn;
	return conn;
}

/* Room for a chunk more in c->in; false when out of memory. */
static bool
lockd__uv_in_room(lockd_uv_client *c)
{
	size_t cap;
	char *p;

	if (c->in_cap - c->in_len >= LOCKD__UV_READ_CHUNK)
		return true;
	cap = c->in_cap == 0 ? (size_t)2 * LOCKD__UV_READ_CHUNK :
	    c->in_cap * 2;
	if ((p = realloc(c->in, cap)) == NULL)
		return false;
	c->in = p;
	c->in_cap = cap;
	return true;
}

/* Plain bytes are read straight into c->in, TLS records into c->raw. */
static void
lockd__uv_read_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct lockd__uv_conn *conn = h->data;
	lockd_uv_client *c = conn->client;

	(void)suggested;
	buf->base = NULL;
	buf->len = 0;
	if (conn->tls.ssl != NULL) {
		if (c->raw == NULL &&
		    (c->raw = malloc(LOCKD__UV_READ_CHUNK)) == NULL)
			return;     /* libuv reports UV_ENOBUFS */
		buf->base = c->raw;
		buf->len = LOCKD__UV_READ_CHUNK;
		return;
	}
	if (!lockd__uv_in_room(c))
		return;
	buf->base = c->in + c->in_len;
	buf->len = c->in_cap - c->in_len;
}

/* Parses and delivers every whole reply read, in order. */
static void
lockd__uv_deliver(lockd_uv_client *c)
{
	struct lockd__uv_request *head, done;
	lockd_reply reply;
	struct lockd__info info;
	char why[LOCKD_ERRSTR_SIZE];
	size_t pos = 0, consumed;
	int rc;

	while (c->state == LOCKD__UV_READY && !c->closing &&
	    pos < c->in_len) {
		if (c->queue.count == 0 || c->sent == 0) {
			lockd__uv_fail(c, LOCKD_ERR_PROTOCOL,
			    "a reply to no request");
			return;
		}
		head = lockd__queue_at(&c->queue, 0);
		rc = lockd__reply_take_info(c->in + pos, c->in_len - pos,
		    &head->p, &reply, head->status_cb != NULL ? &info : NULL,
		    &consumed, c->errstr);
		if (rc == LOCKD_AGAIN)
			break;
		if (lockd_error_is_fatal(rc) || (rc == LOCKD_ERR_NOTLEADER &&
		    c->failover_ms > 0)) {
			/* NOTLEADER: this node did nothing; with fail-over the
			 * requests go to the leader it names, if it is ours. */
			snprintf(why, sizeof(why), "%s", c->errstr);
			lockd__uv_fail(c, rc, "%s", why);
			return;
		}
		/* A node served: a search for one is over. */
		c->failing_since = -1;
		c->attempts = 0;
		c->backoff = LOCKD__UV_BACKOFF_MS;
		pos += consumed;
		done = *head;
		free(head->line);
		lockd__queue_pop(&c->queue);
		c->sent--;
		c->head_timed = false;
		lockd__uv_answer(c, &done, rc, &reply, &info);
	}
	if (c->state != LOCKD__UV_READY)
		return;
	memmove(c->in, c->in + pos, c->in_len - pos);
	c->in_len -= pos;
	lockd__uv_arm(c);
	lockd__uv_flush(c);     /* the window may have opened */
}

/*
 * Connected: the stream is there; TLS, then AUTH, then requests.
 */

static void
lockd__uv_ready(lockd_uv_client *c)
{
	c->state = LOCKD__UV_READY;
	c->ready_at = lockd_now_ms();
	if (c->addrs != NULL) {
		uv_freeaddrinfo(c->addrs);
		c->addrs = c->next_addr = NULL;
	}
	/* Once: a reconnect after a fail-over is no news to the caller. */
	if (!c->ever_ready) {
		c->ever_ready = true;
		if (c->connect_cb != NULL)
			c->connect_cb(c, LOCKD_OK, c->connect_arg);
		if (c->state != LOCKD__UV_READY || c->closing)
			return;
	}
	lockd__uv_arm(c);
	lockd__uv_flush(c);
	if (c->in_len > 0)      /* a reply before any request: refused */
		lockd__uv_deliver(c);
}

/* AUTH with the token (read from its file now), before any request. */
static void
lockd__uv_authenticate(lockd_uv_client *c)
{
	char why[LOCKD_ERRSTR_SIZE];
	int rc;

	if ((rc = lockd__endpoint_auth_line(c->at, c->auth_line, why)) < 0) {
		lockd__uv_fail(c, rc, "%s", why);
		return;
	}
	if (rc == 0) {
		lockd__uv_ready(c);
		return;
	}
	c->auth_len = (size_t)rc;
	c->phase = LOCKD__UV_PHASE_AUTH;
	lockd__uv_flush(c);
}

/* AUTH's reply in c->in: AUTHED makes the client ready. */
static void
lockd__uv_auth_reply(lockd_uv_client *c)
{
	char why[LOCKD_ERRSTR_SIZE];
	size_t used;
	int rc;

	rc = lockd__auth_reply(c->in, c->in_len, &used, why);
	if (rc == LOCKD_AGAIN) {
		if (c->in_len > PROTO_REPLY_MAX)
			lockd__uv_fail(c, LOCKD_ERR_PROTOCOL,
			    "garbled reply to AUTH");
		return;
	}
	if (rc != LOCKD_OK) {
		lockd__uv_fail(c, rc, "%s", why);
		return;
	}
	memmove(c->in, c->in + used, c->in_len - used);
	c->in_len -= used;
	lockd__uv_ready(c);
}

/* Steps the handshake on; done, it goes on to AUTH. */
static void
lockd__uv_handshake(lockd_uv_client *c)
{
	struct lockd__uv_conn *conn = c->conn;
	char why[LOCKD_ERRSTR_SIZE];
	int rc;

	if ((rc = tls_pipe_handshake(&conn->tls)) < 0) {
		lockd__tls_why(conn->tls.ssl, conn->tls.reason, why,
		    sizeof(why));
		lockd__uv_fail(c, LOCKD_ERR_IO, "TLS with %.80s: %s", c->where,
		    why);
		return;
	}
	lockd__uv_flush(c);     /* its next flight, or the last */
	if (rc == 1 && c->state == LOCKD__UV_CONNECTING && c->conn == conn)
		lockd__uv_authenticate(c);
}

/* TLS over the connected stream, verifying the server's name. */
static void
lockd__uv_start_tls(lockd_uv_client *c)
{
	struct lockd__uv_conn *conn = c->conn;

	if (tls_pipe_init(&conn->tls, c->at->tls_ctx, TLS_PIPE_CLIENT) != 0 ||
	    !lockd__endpoint_tls_name(c->at, conn->tls.ssl)) {
		ERR_clear_error();
		lockd__uv_fail(c, LOCKD_ERR_OOM, "cannot set up TLS");
		return;
	}
	c->phase = LOCKD__UV_PHASE_TLS;
	lockd__uv_handshake(c);
}

/* The plaintext OpenSSL has for us, appended to c->in; false: failed. */
static bool
lockd__uv_decrypt(lockd_uv_client *c)
{
	struct tls_pipe *tls = &c->conn->tls;
	char why[LOCKD_ERRSTR_SIZE];
	int n;

	for (;;) {
		if (!lockd__uv_in_room(c)) {
			lockd__uv_fail(c, LOCKD_ERR_OOM, "out of memory");
			return false;
		}
		n = tls_pipe_read(tls, c->in + c->in_len,
		    c->in_cap - c->in_len);
		if (n > 0) {
			c->in_len += (size_t)n;
			continue;
		}
		if (n == 0)
			return true;
		if (tls->ssl_error == SSL_ERROR_ZERO_RETURN) {
			lockd__uv_fail(c, LOCKD_ERR_EOF,
			    "server closed the connection");
			return false;
		}
		lockd__tls_why(tls->ssl, tls->reason, why, sizeof(why));
		lockd__uv_fail(c, LOCKD_ERR_IO, "TLS with %.80s: %s", c->where,
		    why);
		return false;
	}
}

static void
lockd__uv_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct lockd__uv_conn *conn = stream->data;
	lockd_uv_client *c = conn->client;
	char why[LOCKD_ERRSTR_SIZE];

	(void)buf;
	if (conn->dropped || nread == 0)
		return;
	if (nread == UV_EOF && c->phase == LOCKD__UV_PHASE_TLS) {
		lockd__tls_why(conn->tls.ssl, conn->tls.reason, why,
		    sizeof(why));
		lockd__uv_fail(c, LOCKD_ERR_IO, "TLS with %.80s: %s",
		    c->where, why);
		return;
	}
	if (nread == UV_EOF) {
		lockd__uv_fail(c, LOCKD_ERR_EOF, "server closed the connection");
		return;
	}
	if (nread < 0) {
		lockd__uv_fail(c, nread == UV_ENOBUFS ? LOCKD_ERR_OOM :
		    LOCKD_ERR_IO, "read: %s", uv_strerror((int)nread));
		return;
	}
	if (conn->tls.ssl == NULL) {
		c->in_len += (size_t)nread;
	} else {
		if (tls_pipe_put(&conn->tls, c->raw, (size_t)nread) != 0) {
			lockd__uv_fail(c, LOCKD_ERR_OOM, "out of memory");
			return;
		}
		if (c->phase == LOCKD__UV_PHASE_TLS &&
		    c->state == LOCKD__UV_CONNECTING) {
			lockd__uv_handshake(c);
			/* Failed, closed, or waiting for more of the
			 * handshake: there is nothing to decrypt yet. */
			if (conn->dropped || c->state == LOCKD__UV_DEAD ||
			    c->closing ||
			    (c->state == LOCKD__UV_CONNECTING &&
			    c->phase == LOCKD__UV_PHASE_TLS))
				return;
		}
		if (!lockd__uv_decrypt(c))
			return;
		lockd__uv_flush(c);     /* what reading made OpenSSL say */
		if (conn->dropped)
			return;
	}
	if (c->state == LOCKD__UV_CONNECTING &&
	    c->phase == LOCKD__UV_PHASE_AUTH)
		lockd__uv_auth_reply(c);
	else if (c->state == LOCKD__UV_READY)
		lockd__uv_deliver(c);
}

static void
lockd__uv_connected(uv_connect_t *req, int status)
{
	struct lockd__uv_conn *conn = req->data;
	lockd_uv_client *c = conn->client;
	int rc;

	if (conn->dropped)
		return;
	if (status < 0) {
		snprintf(c->errstr, sizeof(c->errstr), "connect to %.80s: %s",
		    c->where, uv_strerror(status));
		lockd__uv_drop_conn(c);
		if (c->at->unix_path != NULL || c->next_addr == NULL)
			lockd__uv_fail(c, LOCKD_ERR_IO, "connect to %.80s: %s",
			    c->where, uv_strerror(status));
		else
			lockd__uv_try_next(c);
		return;
	}
	if ((rc = uv_read_start(&conn->h.stream, lockd__uv_read_alloc,
	    lockd__uv_read)) < 0) {
		lockd__uv_fail(c, LOCKD_ERR_IO, "read: %s", uv_strerror(rc));
		return;
	}
	if (c->at->tls)
		lockd__uv_start_tls(c);
	else
		lockd__uv_authenticate(c);
}

/* Connects to one address; false when it cannot even start. */
static bool
lockd__uv_connect_addr(lockd_uv_client *c, const struct sockaddr *addr)
{
	struct lockd__uv_conn *conn;
	int rc;

	if ((conn = lockd__uv_new_conn(c)) == NULL) {
		lockd__uv_fail(c, LOCKD_ERR_OOM, "out of memory");
		return true;
	}
	if ((rc = uv_tcp_init(c->loop, &conn->h.tcp)) < 0) {
		free(conn);
		lockd__uv_fail(c, LOCKD_ERR_IO, "socket: %s", uv_strerror(rc));
		return true;
	}
	c->refs++;
	c->conn = conn;
	/* One short line per request: do not wait for more. */
	uv_tcp_nodelay(&conn->h.tcp, 1);
	if ((rc = uv_tcp_connect(&conn->connect, &conn->h.tcp, addr,
	    lockd__uv_connected)) < 0) {
		snprintf(c->errstr, sizeof(c->errstr), "connect to %.80s: %s",
		    c->where, uv_strerror(rc));
		lockd__uv_drop_conn(c);
		return false;
	}
	return true;
}

static void
lockd__uv_try_next(lockd_uv_client *c)
{
	struct addrinfo *ai;

	while ((ai = c->next_addr) != NULL) {
		c->next_addr = ai->ai_next;
		if (lockd__uv_connect_addr(c, ai->ai_addr))
			return;
	}
	lockd__uv_fail(c, LOCKD_ERR_IO, "%s", c->errstr[0] != '\0' ?
	    c->errstr : "no address to connect to");
}

static void
lockd__uv_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	lockd_uv_client *c = req->data;

	c->resolving = false;
	if (c->resolve_stale || c->state != LOCKD__UV_CONNECTING ||
	    c->closing) {
		/* For a connection given up on (a fail-over moved on). */
		c->resolve_stale = false;
		if (res != NULL)
			uv_freeaddrinfo(res);
	} else if (status < 0) {
		lockd__uv_fail(c, LOCKD_ERR_IO, "resolve %.80s: %s",
		    c->at->host, uv_strerror(status));
	} else {
		c->addrs = c->next_addr = res;
		c->errstr[0] = '\0';
		lockd__uv_try_next(c);
	}
	lockd__uv_unref(c);
}

static void
lockd__uv_start_connect(lockd_uv_client *c)
{
	struct addrinfo hints;
	struct sockaddr_storage ss;
	struct lockd__uv_conn *conn;
	char port[16];
	int rc;

	if (c->at->unix_path != NULL) {
		snprintf(c->where, sizeof(c->where), "%s", c->at->unix_path);
		if ((conn = lockd__uv_new_conn(c)) == NULL) {
			lockd__uv_fail(c, LOCKD_ERR_OOM, "out of memory");
			return;
		}
		if ((rc = uv_pipe_init(c->loop, &conn->h.pipe, 0)) < 0) {
			free(conn);
			lockd__uv_fail(c, LOCKD_ERR_IO, "socket: %s",
			    uv_strerror(rc));
			return;
		}
		c->refs++;
		c->conn = conn;
		uv_pipe_connect(&conn->connect, &conn->h.pipe,
		    c->at->unix_path, lockd__uv_connected);
		return;
	}
	snprintf(c->where, sizeof(c->where), "%s:%d", c->at->host,
	    c->at->port);
	if (uv_ip4_addr(c->at->host, c->at->port,
	    (struct sockaddr_in *)&ss) == 0 ||
	    uv_ip6_addr(c->at->host, c->at->port,
	    (struct sockaddr_in6 *)&ss) == 0) {
		if (!lockd__uv_connect_addr(c, (struct sockaddr *)&ss))
			lockd__uv_fail(c, LOCKD_ERR_IO, "%s", c->errstr);
		return;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof(port), "%d", c->at->port);
	c->resolve.data = c;
	if ((rc = uv_getaddrinfo(c->loop, &c->resolve, lockd__uv_resolved,
	    c->at->host, port, &hints)) < 0) {
		lockd__uv_fail(c, LOCKD_ERR_IO, "resolve %.80s: %s",
		    c->at->host, uv_strerror(rc));
		return;
	}
	c->resolving = true;
	c->refs++;
}

/*
 * The timer: the connect deadline while connecting, then the deadline of
 * the reply at the head of the queue (replies come in order, so only the
 * head's own wait can hold it back).
 */
static void
lockd__uv_timeout(uv_timer_t *t)
{
	lockd_uv_client *c = t->data;
	int64_t now = lockd_now_ms();

	if (c->state == LOCKD__UV_CONNECTING && !c->started) {
		/* Connecting starts from the loop, so that even a failure
		 * found at once reaches the callback after lockd_uv_connect()
		 * has returned.  A name lookup given up on must end first:
		 * its request is reused. */
		if (now >= c->start_at && !c->resolving) {
			c->started = true;
			c->at = &c->ats[c->next_at];
			c->attempts++;
			c->connect_deadline = c->options.connect_timeout_ms > 0 ?
			    now + c->options.connect_timeout_ms : -1;
			lockd__uv_start_connect(c);
		} else if (c->resolving) {
			c->start_at = now + LOCKD__RETRY_MIN_MS;
		}
		lockd__uv_arm(c);
	} else if (c->state == LOCKD__UV_CONNECTING &&
	    c->connect_deadline >= 0 &&
	    now >= c->connect_deadline)
		lockd__uv_fail(c, LOCKD_ERR_TIMEOUT, "%s %.80s: timed out",
		    c->phase == LOCKD__UV_PHASE_CONNECT ? "connect to" :
		    c->phase == LOCKD__UV_PHASE_TLS ? "TLS with" :
		    "AUTH with", c->where);
	else if (c->state == LOCKD__UV_READY && c->head_timed &&
	    c->head_deadline >= 0 && now >= c->head_deadline)
		lockd__uv_fail(c, LOCKD_ERR_TIMEOUT,
		    "no reply within the command timeout");
	else
		lockd__uv_arm(c);
}

static void
lockd__uv_arm(lockd_uv_client *c)
{
	int64_t deadline = -1, now = lockd_now_ms();

	if (c->closing || c->state == LOCKD__UV_DEAD)
		return;
	if (c->state == LOCKD__UV_CONNECTING) {
		deadline = c->started ? c->connect_deadline : c->start_at;
	} else if (c->queue.count > 0 && c->sent > 0) {
		if (!c->head_timed) {
			c->head_deadline = lockd__reply_deadline(
			    lockd__queue_at(&c->queue, 0),
			    c->options.command_timeout_ms, now);
			c->head_timed = true;
		}
		deadline = c->head_deadline;
	}
	if (deadline < 0) {
		uv_timer_stop(&c->timer);
		return;
	}
	uv_timer_start(&c->timer, lockd__uv_timeout,
	    (uint64_t)(deadline > now ? deadline - now : 0), 0);
}

/*
 * Fail-over.  Called with the error that ended a connection or an attempt
 * at one (errstr says why), before anything is failed: true when the
 * requests due go on to another attempt, false when the client is to die
 * of the error (errstr then says why the search ended, if it did).
 * Without fail-over only the first connect moves on, to each endpoint
 * once, as lockd_connect does.
 */
static bool
lockd__uv_failover(lockd_uv_client *c, int code)
{
	struct lockd__uv_request *r;
	char last[LOCKD_ERRSTR_SIZE];
	int64_t now = lockd_now_ms(), delay = 0, left;
	size_t i, n = 0;
	bool hinted;
	char *out;

	if (c->closing || (code != LOCKD_ERR_IO && code != LOCKD_ERR_EOF &&
	    code != LOCKD_ERR_TIMEOUT && code != LOCKD_ERR_NOTLEADER))
		return false;
	snprintf(last, sizeof(last), "%s", c->errstr);
	if (c->failover_ms <= 0) {
		if (c->ever_ready || (size_t)c->attempts >= c->n_ats) {
			if (!c->ever_ready && c->n_ats > 1)
				snprintf(c->errstr, sizeof(c->errstr), "none "
				    "of %zu endpoints answered; last: %.60s",
				    c->n_ats, last);
			return false;
		}
	} else {
		for (i = 0; i < c->queue.count; i++) {
			r = lockd__queue_at(&c->queue, i);
			if (!r->repeatable || r->line == NULL)
				return false;
			n += r->len;
		}
		/* A connection that served longer than the fail-over time
		 * was healthy: the search starts anew from its end (not
		 * when it stalled: a reply that timed out counts). */
		if (c->failing_since < 0 || (c->ready_at >= 0 &&
		    code != LOCKD_ERR_TIMEOUT &&
		    now - c->ready_at > c->failover_ms)) {
			c->failing_since = now;
			c->attempts = c->state == LOCKD__UV_READY ? 0 :
			    c->attempts;
			c->backoff = LOCKD__UV_BACKOFF_MS;
		}
		left = c->failing_since + c->failover_ms - now;
		if (c->attempts >= LOCKD_FAILOVER_HOPS_MAX || left <= 0) {
			snprintf(c->errstr, sizeof(c->errstr), "no leader "
			    "answered in %d attempts over %lld ms; last: %.60s",
			    c->attempts, (long long)(now - c->failing_since),
			    last);
			return false;
		}
		/* Each endpoint once at once; then with a pause. */
		if (c->attempts >= (int)c->n_ats) {
			delay = c->backoff < left ? c->backoff : left;
			c->backoff *= 2;
			if (c->backoff > LOCKD__UV_BACKOFF_MAX_MS)
				c->backoff = LOCKD__UV_BACKOFF_MAX_MS;
		}
		/* Every request due goes out again, in order. */
		if (n > c->out_cap) {
			if ((out = realloc(c->out, n)) == NULL)
				return false;
			c->out = out;
			c->out_cap = n;
		}
		c->out_len = 0;
		for (i = 0; i < c->queue.count; i++) {
			r = lockd__queue_at(&c->queue, i);
			memcpy(c->out + c->out_len, r->line, r->len);
			c->out_len += r->len;
			r->p.end = c->out_len;
			r->p.sent_ms = -1;
		}
		c->appended = c->out_len;
		c->written = 0;
		c->sent = 0;
	}
	/* The leader a NOTLEADER names, when it is ours; else the next. */
	c->next_at = lockd__endpoints_next(c->ats, c->n_ats,
	    (size_t)(c->at - c->ats), code == LOCKD_ERR_NOTLEADER ? last : "",
	    &hinted);
	uv_timer_stop(&c->timer);
	lockd__uv_drop_conn(c);
	if (c->resolving) {
		uv_cancel((uv_req_t *)&c->resolve);
		c->resolve_stale = true;
	}
	if (c->addrs != NULL) {
		uv_freeaddrinfo(c->addrs);
		c->addrs = c->next_addr = NULL;
	}
	c->in_len = 0;
	c->auth_len = 0;
	OPENSSL_cleanse(c->auth_line, sizeof(c->auth_line));
	c->head_timed = false;
	c->state = LOCKD__UV_CONNECTING;
	c->phase = LOCKD__UV_PHASE_CONNECT;
	c->started = false;
	c->ready_at = -1;
	c->start_at = now + delay;
	lockd__uv_arm(c);
	return true;
}

/*
 * A client on loop to the n endpoints ats (taken when owned: freed here
 * on failure), with options' timeouts; NULL when out of memory.
 */
static lockd_uv_client *
lockd__uv_open(uv_loop_t *loop, const lockd_options *o,
    struct lockd__endpoint *ats, size_t n, bool owned,
    lockd_uv_connect_cb *cb, void *arg)
{
	lockd_uv_client *c;

	if ((c = calloc(1, sizeof(*c))) == NULL) {
		if (owned)
			lockd__endpoints_free(ats, n);
		return NULL;
	}
	c->ats = ats;
	c->n_ats = n;
	c->owns_ats = owned;
	c->at = &ats[0];
	c->failing_since = -1;
	c->ready_at = -1;
	c->backoff = LOCKD__UV_BACKOFF_MS;
	c->start_at = lockd_now_ms();
	/* Only the timeouts are read from here on: the caller's strings
	 * need not outlive this call. */
	memset(&c->options, 0, sizeof(c->options));
	c->options.connect_timeout_ms = o->connect_timeout_ms;
	c->options.command_timeout_ms = o->command_timeout_ms > 0 ?
	    o->command_timeout_ms : 0;
	c->loop = loop;
	c->connect_cb = cb;
	c->connect_arg = arg;
	c->state = LOCKD__UV_CONNECTING;
	c->phase = LOCKD__UV_PHASE_CONNECT;
	lockd__queue_init(&c->queue, sizeof(struct lockd__uv_request));
	uv_timer_init(loop, &c->timer);
	c->timer.data = c;
	c->refs = 1;
	c->connect_deadline = -1;
	lockd__uv_arm(c);
	return c;
}

lockd_uv_client *
lockd_uv_connect(uv_loop_t *loop, const lockd_options *options,
    lockd_uv_connect_cb *cb, void *arg)
{
	static const lockd_options defaults;
	const lockd_options *o = options != NULL ? options : &defaults;
	struct lockd__endpoint *ats;
	char errstr[LOCKD_ERRSTR_SIZE];
	lockd_uv_client *c;
	size_t n;

	if (loop == NULL)
		return NULL;
	/* The URLs are resolved, the TLS contexts made and the CA and client
	 * certificate loaded here, once for every connection. */
	if (lockd__endpoints_init(&ats, &n, o, errstr) != LOCKD_OK) {
		lockd__endpoints_free(ats, n);
		return NULL;
	}
	if ((c = lockd__uv_open(loop, o, ats, n, true, cb, arg)) != NULL)
		c->failover_ms = n > 1 ? LOCKD_FAILOVER_DEFAULT_MS : 0;
	return c;
}

int
lockd_uv_set_failover_timeout(lockd_uv_client *c, int64_t timeout_ms)
{
	if (c == NULL)
		return LOCKD_ERR_INVALID;
	if (timeout_ms < 0) {
		snprintf(c->errstr, sizeof(c->errstr),
		    "negative fail-over timeout");
		return LOCKD_ERR_INVALID;
	}
	/* Requests issued without fail-over kept no copy to send again. */
	if (c->queue.count > 0) {
		snprintf(c->errstr, sizeof(c->errstr), "requests are due");
		return LOCKD_ERR_INVALID;
	}
	c->failover_ms = timeout_ms;
	if (c->renewer != NULL && c->renewer->queue.count == 0)
		c->renewer->failover_ms = timeout_ms;
	return LOCKD_OK;
}

/*
 * Writing: whatever is appended goes out in one write at a time, at most
 * LOCKD__MAX_IN_FLIGHT requests ahead of their replies.
 */

static void
lockd__uv_written(uv_write_t *req, int status)
{
	struct lockd__uv_conn *conn = req->data;
	lockd_uv_client *c = conn->client;

	conn->writing = false;
	/* What went out while connecting may have been a plain AUTH. */
	if (c->state == LOCKD__UV_CONNECTING && c->wbuf != NULL)
		OPENSSL_cleanse(c->wbuf, c->wbuf_cap);
	if (conn->dropped)
		return;
	if (status < 0) {
		lockd__uv_fail(c, LOCKD_ERR_IO, "write: %s",
		    uv_strerror(status));
		return;
	}
	lockd__uv_flush(c);
}

/* Room for cap bytes in c->wbuf; false (and failed) when out of memory. */
static bool
lockd__uv_wbuf_room(lockd_uv_client *c, size_t cap)
{
	char *w;

	if (c->wbuf_cap >= cap)
		return true;
	if ((w = realloc(c->wbuf, cap)) == NULL) {
		lockd__uv_fail(c, LOCKD_ERR_OOM, "out of memory");
		return false;
	}
	c->wbuf = w;
	c->wbuf_cap = cap;
	return true;
}

/*
 * Plaintext to go out: with TLS encrypted into the pipe (which takes
 * everything), else copied to c->wbuf at *n.  false: failed.
 */
static bool
lockd__uv_stage(lockd_uv_client *c, const char *p, size_t len, size_t *n)
{
	struct tls_pipe *tls = &c->conn->tls;

	if (tls->ssl == NULL) {
		if (!lockd__uv_wbuf_room(c, *n + len))
			return false;
		memcpy(c->wbuf + *n, p, len);
		*n += len;
		return true;
	}
	if (tls_pipe_write(tls, p, len) != 0) {
		lockd__uv_fail(c, LOCKD_ERR_IO, "TLS with %.80s: cannot "
		    "encrypt", c->where);
		return false;
	}
	return true;
}

/*
 * One write at a time: AUTH's line first, then the requests appended (at
 * most LOCKD__MAX_IN_FLIGHT ahead of their replies) once ready; with TLS
 * whatever OpenSSL has to send, the handshake's records included.
 */
static void
lockd__uv_flush(lockd_uv_client *c)
{
	struct lockd__uv_conn *conn = c->conn;
	struct lockd__pending *p;
	uint64_t limit;
	size_t n = 0, m;
	int64_t now;
	uv_buf_t buf;
	int rc;

	if (c->state == LOCKD__UV_DEAD || c->closing || conn == NULL ||
	    conn->writing)
		return;
	if (c->auth_len > 0) {
		rc = lockd__uv_stage(c, c->auth_line, c->auth_len, &n);
		OPENSSL_cleanse(c->auth_line, sizeof(c->auth_line));
		c->auth_len = 0;
		if (!rc)
			return;
	}
	limit = lockd__send_limit(&c->queue, 0, c->appended);
	if (c->state == LOCKD__UV_READY && c->out_len > 0 &&
	    limit > c->written) {
		m = (size_t)(limit - c->written);
		if (m > c->out_len)
			m = c->out_len;
		if (!lockd__uv_stage(c, c->out, m, &n))
			return;
		memmove(c->out, c->out + m, c->out_len - m);
		c->out_len -= m;
		c->written += m;
		/* The server may act on the bytes at once: a lease runs
		 * from now. */
		now = lockd_now_ms();
		while (c->sent < c->queue.count &&
		    (p = lockd__queue_at(&c->queue, c->sent))->end <=
		    c->written) {
			p->sent_ms = now;
			c->sent++;
		}
	}
	if (conn->tls.ssl != NULL &&
	    (m = tls_pipe_pending(&conn->tls)) > 0) {
		if (!lockd__uv_wbuf_room(c, m))
			return;
		n = tls_pipe_take(&conn->tls, c->wbuf, m);
	}
	if (n == 0)
		return;
	buf = uv_buf_init(c->wbuf, (unsigned)n);
	conn->writing = true;
	rc = uv_write(&conn->write, &conn->h.stream, &buf, 1,
	    lockd__uv_written);
	if (rc < 0) {
		conn->writing = false;
		lockd__uv_fail(c, LOCKD_ERR_IO, "write: %s", uv_strerror(rc));
		return;
	}
	lockd__uv_arm(c);
}

/*
 * Requests: request.c formats one; it is queued with its callback and goes
 * out with the next write.
 */
static int
lockd__uv_issue_to(lockd_uv_client *c, const struct lockd__request *r,
    int rc, lockd_uv_reply_cb *cb, lockd_uv_status_cb *status_cb, void *arg)
{
	struct lockd__uv_request *q;
	char *out, *line = NULL;
	size_t cap;

	if (rc != LOCKD_OK)
		return rc;
	if (c->out_cap - c->out_len < r->len) {
		cap = c->out_cap == 0 ? 1024 : c->out_cap;
		while (cap - c->out_len < r->len)
			cap *= 2;
		if ((out = realloc(c->out, cap)) == NULL)
			goto oom;
		c->out = out;
		c->out_cap = cap;
	}
	/* Kept to send again after a fail-over. */
	if (c->failover_ms > 0 && (line = malloc(r->len)) == NULL)
		goto oom;
	if ((q = lockd__queue_push(&c->queue)) == NULL) {
		free(line);
		goto oom;
	}
	if (line != NULL) {
		memcpy(line, r->line, r->len);
		q->line = line;
		q->len = r->len;
	}
	q->repeatable = (r->pending.command != LOCKD_CMD_ACQUIRE &&
	    r->pending.command != LOCKD_CMD_TRY) ||
	    lockd__request_has_rid(r);
	memcpy(c->out + c->out_len, r->line, r->len);
	c->out_len += r->len;
	c->appended += r->len;
	q->p = r->pending;
	q->p.end = c->appended;
	q->cb = cb;
	q->status_cb = status_cb;
	q->arg = arg;
	lockd__uv_flush(c);
	return LOCKD_OK;
oom:
	snprintf(c->errstr, sizeof(c->errstr), "out of memory");
	return LOCKD_ERR_OOM;
}

static int
lockd__uv_issue(lockd_uv_client *c, const struct lockd__request *r, int rc,
    lockd_uv_reply_cb *cb, void *arg)
{
	return lockd__uv_issue_to(c, r, rc, cb, NULL, arg);
}

/*
 * With fail-over on, a client that died of a search that found no node
 * (or of a connection error) starts a new search for the next request,
 * as a dead blocking context reconnects at its next call.  Nothing of the
 * old connection is left: every request due was answered when it died.
 */
static bool
lockd__uv_revive(lockd_uv_client *c)
{
	if (c->failover_ms <= 0 || (c->err != LOCKD_ERR_IO &&
	    c->err != LOCKD_ERR_EOF && c->err != LOCKD_ERR_TIMEOUT &&
	    c->err != LOCKD_ERR_NOTLEADER))
		return false;
	c->err = 0;
	c->out_len = 0;
	c->appended = c->written = 0;
	c->sent = 0;
	c->in_len = 0;
	c->head_timed = false;
	c->failing_since = -1;
	c->attempts = 0;
	c->backoff = LOCKD__UV_BACKOFF_MS;
	c->ready_at = -1;
	if (c->n_ats > 1)
		c->next_at = ((size_t)(c->at - c->ats) + 1) % c->n_ats;
	c->state = LOCKD__UV_CONNECTING;
	c->phase = LOCKD__UV_PHASE_CONNECT;
	c->started = false;
	c->start_at = lockd_now_ms();
	lockd__uv_arm(c);
	return true;
}

/* The checks every request starts with. */
static int
lockd__uv_check(lockd_uv_client *c, bool has_cb)
{
	if (c == NULL)
		return LOCKD_ERR_INVALID;
	if (c->closing) {
		snprintf(c->errstr, sizeof(c->errstr), "the client is closing");
		return LOCKD_ERR_CLOSED;
	}
	if (c->state == LOCKD__UV_DEAD && has_cb && lockd__uv_revive(c))
		return LOCKD_OK;
	if (c->state == LOCKD__UV_DEAD)
		return c->err;
	if (!has_cb) {
		snprintf(c->errstr, sizeof(c->errstr), "no callback given");
		return LOCKD_ERR_INVALID;
	}
	return LOCKD_OK;
}

/*
 * ACQUIRE or TRY with every option and kind (NULL: a plain lock).  With
 * fail-over on, one without a rid gets one of its own, so that sending it
 * again after a broken connection finds the grant the first one may have
 * had instead of queueing behind it; the line sent again is this one, so
 * its rid, limit= and mode= go with it.
 */
static int
lockd__uv_acquire(lockd_uv_client *c, bool try_only, const char *name,
    const lockd_acquire_options *options, const lockd_kind *kind,
    const char *rid, lockd_uv_reply_cb *cb, void *arg)
{
	char own[LOCKD__RID_MAX + 1];
	struct lockd__request r;
	int rc;

	if ((rc = lockd__uv_check(c, cb != NULL)) != LOCKD_OK)
		return rc;
	if (rid == NULL && c->failover_ms > 0 && lockd__rid_new(own))
		rid = own;
	return lockd__uv_issue(c, &r, lockd__request_acquire_kind(&r,
	    try_only, name, options, kind, rid, c->errstr), cb, arg);
}

int
lockd_uv_acquire(lockd_uv_client *c, const char *name, int64_t lease_ms,
    int64_t wait_ms, int onclose, lockd_uv_reply_cb *cb, void *arg)
{
	lockd_acquire_options o = { lease_ms, wait_ms, onclose, NULL, 0 };
	struct lockd__request r;
	int rc;

	if (c != NULL && c->failover_ms > 0)
		return lockd__uv_acquire(c, false, name, &o, NULL, NULL, cb,
		    arg);
	if ((rc = lockd__uv_check(c, cb != NULL)) != LOCKD_OK)
		return rc;
	return lockd__uv_issue(c, &r, lockd__request_acquire(&r, name,
	    lease_ms, wait_ms, onclose, c->errstr), cb, arg);
}

int
lockd_uv_try(lockd_uv_client *c, const char *name, int64_t lease_ms,
    int onclose, lockd_uv_reply_cb *cb, void *arg)
{
	lockd_acquire_options o = { lease_ms, 0, onclose, NULL, 0 };
	struct lockd__request r;
	int rc;

	if (c != NULL && c->failover_ms > 0)
		return lockd__uv_acquire(c, true, name, &o, NULL, NULL, cb,
		    arg);
	if ((rc = lockd__uv_check(c, cb != NULL)) != LOCKD_OK)
		return rc;
	return lockd__uv_issue(c, &r, lockd__request_try(&r, name, lease_ms,
	    onclose, c->errstr), cb, arg);
}

int
lockd_uv_acquire_ex(lockd_uv_client *c, const char *name,
    const lockd_acquire_options *options, const char *rid,
    lockd_uv_reply_cb *cb, void *arg)
{
	return lockd__uv_acquire(c, false, name, options, NULL, rid, cb, arg);
}

int
lockd_uv_try_ex(lockd_uv_client *c, const char *name,
    const lockd_acquire_options *options, const char *rid,
    lockd_uv_reply_cb *cb, void *arg)
{
	return lockd__uv_acquire(c, true, name, options, NULL, rid, cb, arg);
}

int
lockd_uv_acquire_kind(lockd_uv_client *c, const char *name,
    const lockd_acquire_options *options, const lockd_kind *kind,
    const char *rid, lockd_uv_reply_cb *cb, void *arg)
{
	return lockd__uv_acquire(c, false, name, options, kind, rid, cb, arg);
}

int
lockd_uv_try_kind(lockd_uv_client *c, const char *name,
    const lockd_acquire_options *options, const lockd_kind *kind,
    const char *rid, lockd_uv_reply_cb *cb, void *arg)
{
	return lockd__uv_acquire(c, true, name, options, kind, rid, cb, arg);
}

int
lockd_uv_renew(lockd_uv_client *c, const lockd_lease *lease,
    int64_t lease_ms, lockd_uv_reply_cb *cb, void *arg)
{
	struct lockd__request r;
	int rc;

	if ((rc = lockd__uv_check(c, cb != NULL)) != LOCKD_OK)
		return rc;
	return lockd__uv_issue(c, &r, lockd__request_renew(&r, lease,
	    lease_ms, c->errstr), cb, arg);
}

int
lockd_uv_release(lockd_uv_client *c, const lockd_lease *lease,
    lockd_uv_reply_cb *cb, void *arg)
{
	struct lockd__request r;
	int rc;

	if ((rc = lockd__uv_check(c, cb != NULL)) != LOCKD_OK)
		return rc;
	return lockd__uv_issue(c, &r, lockd__request_release(&r, lease,
	    c->errstr), cb, arg);
}

int
lockd_uv_status(lockd_uv_client *c, const char *name, lockd_uv_reply_cb *cb,
    void *arg)
{
	struct lockd__request r;
	int rc;

	if ((rc = lockd__uv_check(c, cb != NULL)) != LOCKD_OK)
		return rc;
	return lockd__uv_issue(c, &r, lockd__request_status(&r, name,
	    c->errstr), cb, arg);
}

int
lockd_uv_status_holders(lockd_uv_client *c, const char *name,
    lockd_uv_status_cb *cb, void *arg)
{
	struct lockd__request r;
	int rc;

	if ((rc = lockd__uv_check(c, cb != NULL)) != LOCKD_OK)
		return rc;
	return lockd__uv_issue_to(c, &r, lockd__request_status(&r, name,
	    c->errstr), NULL, cb, arg);
}

int
lockd_uv_ping(lockd_uv_client *c, lockd_uv_reply_cb *cb, void *arg)
{
	struct lockd__request r;
	int rc;

	if ((rc = lockd__uv_check(c, cb != NULL)) != LOCKD_OK)
		return rc;
	return lockd__uv_issue(c, &r, lockd__request_ping(&r, c->errstr), cb,
	    arg);
}

int
lockd_uv_pending(const lockd_uv_client *c)
{
	return (int)c->queue.count;
}

int
lockd_uv_err(const lockd_uv_client *c)
{
	return c->state == LOCKD__UV_DEAD ? c->err : 0;
}

const char *
lockd_uv_errstr(const lockd_uv_client *c)
{
	return c->errstr;
}

/*
 * Keep-alive.
 */

static void lockd__uv_keepalive_fire(uv_timer_t *t);

static void
lockd__uv_renewer_closed(lockd_uv_client *renewer, void *arg)
{
	(void)renewer;
	lockd__uv_unref(arg);
}

/*
 * The client's keep-alive connection, made anew when it broke: to the
 * client's endpoints (which outlive it: it holds a reference on the
 * client), from the one the client is at, failing over as the client does.
 */
static lockd_uv_client *
lockd__uv_renewer(lockd_uv_client *c)
{
	if (c->renewer != NULL && c->renewer->state == LOCKD__UV_DEAD) {
		lockd_uv_close(c->renewer, lockd__uv_renewer_closed, c);
		c->renewer = NULL;
	}
	if (c->renewer == NULL) {
		c->renewer = lockd__uv_open(c->loop, &c->options, c->ats,
		    c->n_ats, false, NULL, NULL);
		if (c->renewer != NULL) {
			c->renewer->failover_ms = c->failover_ms;
			c->renewer->next_at = (size_t)(c->at - c->ats);
			c->refs++;
		}
	}
	return c->renewer;
}

static void
lockd__uv_keepalive_unref(lockd_uv_keepalive *k)
{
	lockd_uv_client *c = k->client;

	if (--k->refs > 0)
		return;
	free(k);
	lockd__uv_unref(c);
}

static void
lockd__uv_keepalive_timer_closed(uv_handle_t *h)
{
	lockd__uv_keepalive_unref(h->data);
}

static void
lockd__uv_keepalive_at(lockd_uv_keepalive *k, int64_t when)
{
	int64_t now = lockd_now_ms();

	uv_timer_start(&k->timer, lockd__uv_keepalive_fire,
	    (uint64_t)(when > now ? when - now : 0), 0);
}

/* Records the loss and tells the caller; k may be freed by the callback. */
static void
lockd__uv_keepalive_lose(lockd_uv_keepalive *k, int err, const char *why)
{
	k->lost = err;
	snprintf(k->errstr, sizeof(k->errstr), "%s", why);
	uv_timer_stop(&k->timer);
	if (k->lost_cb != NULL)
		k->lost_cb(k, err, k->errstr, k->arg);
}

/* The next renewal a third of the way into the lease as last granted. */
static void
lockd__uv_keepalive_schedule(lockd_uv_keepalive *k)
{
	lockd_lease *l = &k->lease;
	int64_t next = lockd__renew_at(l->deadline_ms, l->lease_ms);

	k->lost_at = lockd__lost_at(l->deadline_ms, l->lease_ms);
	lockd__uv_keepalive_at(k, next < k->lost_at ? next : k->lost_at);
}

/* A renewal the server answered with anything but these is refused. */
static bool
lockd__uv_retryable(int rc)
{
	return lockd_error_is_fatal(rc) || rc == LOCKD_ERR_UNAVAILABLE ||
	    rc == LOCKD_ERR_LIMIT || rc == LOCKD_ERR_SHUTDOWN ||
	    rc == LOCKD_ERR_OOM || rc == LOCKD_ERR_NOTLEADER;
}

static void
lockd__uv_keepalive_failed(lockd_uv_keepalive *k, int rc, const char *why)
{
	int64_t retry;

	snprintf(k->why, sizeof(k->why), "renewal failed: %.100s", why);
	if (!lockd__uv_retryable(rc)) {
		lockd__uv_keepalive_lose(k, rc, k->why);
		return;
	}
	/* Retry while another attempt could still succeed in time. */
	k->last = rc;
	retry = lockd__retry_after(k->lease.lease_ms, &k->backoff);
	if (lockd_now_ms() + retry >= k->lost_at) {
		lockd__uv_keepalive_lose(k, rc, k->why);
		return;
	}
	lockd__uv_keepalive_at(k, lockd_now_ms() + retry);
}

static void
lockd__uv_keepalive_renewed(lockd_uv_client *renewer, int rc,
    const lockd_reply *reply, void *arg)
{
	lockd_uv_keepalive *k = arg;

	k->renewing = false;
	if (k->stopped || k->lost != 0) {
		lockd__uv_keepalive_unref(k);
		return;
	}
	k->refs--;          /* the timer still holds k */
	if (rc == LOCKD_OK) {
		k->lease.lease_ms = reply->lease.lease_ms;
		k->lease.deadline_ms = reply->lease.deadline_ms;
		k->last = 0;
		k->backoff = 0;
		lockd__uv_keepalive_schedule(k);
		return;
	}
	lockd__uv_keepalive_failed(k, rc, lockd_uv_errstr(renewer));
}

static void
lockd__uv_keepalive_fire(uv_timer_t *t)
{
	lockd_uv_keepalive *k = t->data;
	lockd_uv_client *renewer;
	int rc;

	if (k->stopped || k->lost != 0)
		return;
	if (lockd_now_ms() >= k->lost_at) {
		if (k->last == 0)
			lockd__uv_keepalive_lose(k, LOCKD_ERR_TIMEOUT,
			    "the lease could end before a renewal");
		else
			lockd__uv_keepalive_lose(k, k->last, k->why);
		return;
	}
	if (k->renewing) {          /* still waiting: check again at lost_at */
		lockd__uv_keepalive_at(k, k->lost_at);
		return;
	}
	if ((renewer = lockd__uv_renewer(k->client)) == NULL) {
		lockd__uv_keepalive_failed(k, LOCKD_ERR_OOM, "out of memory");
		return;
	}
	rc = lockd_uv_renew(renewer, &k->lease, k->lease.lease_ms,
	    lockd__uv_keepalive_renewed, k);
	if (rc != LOCKD_OK) {
		lockd__uv_keepalive_failed(k, rc, lockd_uv_errstr(renewer));
		return;
	}
	k->renewing = true;
	k->refs++;
	/* The reply must come before the lease could end. */
	lockd__uv_keepalive_at(k, k->lost_at);
}

lockd_uv_keepalive *
lockd_uv_keepalive_start(lockd_uv_client *c, const lockd_lease *lease,
    lockd_uv_lost_cb *lost_cb, void *arg)
{
	lockd_uv_keepalive *k;
	struct lockd__request probe;
	int64_t now = lockd_now_ms(), first;

	if (c == NULL || c->closing || lease == NULL ||
	    lockd__request_renew(&probe, lease, lease->lease_ms, c->errstr) !=
	    LOCKD_OK)
		return NULL;
	if ((k = calloc(1, sizeof(*k))) == NULL)
		return NULL;
	k->client = c;
	k->lease = *lease;
	k->lost_cb = lost_cb;
	k->arg = arg;
	uv_timer_init(c->loop, &k->timer);
	k->timer.data = k;
	k->refs = 1;
	c->refs++;
	k->next = c->keepalives;
	if (k->next != NULL)
		k->next->prev = k;
	c->keepalives = k;
	if (lease->deadline_ms > 0 && lease->lease_ms > 0) {
		lockd__uv_keepalive_schedule(k);
	} else {
		/* A lease of unknown age: renew now, lose it if that fails
		 * for as long as the lease (or the command timeout) lasts. */
		first = c->options.command_timeout_ms > 0 ?
		    c->options.command_timeout_ms : lease->lease_ms > 0 ?
		    lease->lease_ms : LOCKD__UV_FIRST_DEFAULT_MS;
		k->lost_at = now + first;
		lockd__uv_keepalive_at(k, now);
	}
	return k;
}

void
lockd_uv_keepalive_lease(const lockd_uv_keepalive *k, lockd_lease *lease)
{
	*lease = k->lease;
}

int
lockd_uv_keepalive_lost(const lockd_uv_keepalive *k)
{
	return k->lost;
}

void
lockd_uv_keepalive_stop(lockd_uv_keepalive *k)
{
	lockd_uv_client *c;

	if (k == NULL || k->stopped)
		return;
	c = k->client;
	k->stopped = true;
	if (k->prev != NULL)
		k->prev->next = k->next;
	else
		c->keepalives = k->next;
	if (k->next != NULL)
		k->next->prev = k->prev;
	uv_close((uv_handle_t *)&k->timer, lockd__uv_keepalive_timer_closed);
}

void
lockd_uv_close(lockd_uv_client *c, lockd_uv_close_cb *cb, void *arg)
{
	if (c == NULL || c->closing)
		return;
	c->closing = true;
	c->close_cb = cb;
	c->close_arg = arg;
	while (c->keepalives != NULL)
		lockd_uv_keepalive_stop(c->keepalives);
	if (c->renewer != NULL) {
		lockd_uv_close(c->renewer, lockd__uv_renewer_closed, c);
		c->renewer = NULL;
	}
	/* Callbacks it calls see a closing client: a request they issue
	 * fails at once, and closing it again does nothing. */
	lockd__uv_fail(c, LOCKD_ERR_CLOSED, "the client was closed");
	uv_close((uv_handle_t *)&c->timer, lockd__uv_timer_closed);
}
