/*
 * server.c - the libuv side of lockd: listeners, connections, the one
 * deadline timer, signals.  The only file that touches sockets.  It moves
 * bytes between the sockets and the service (service.c) and decides when a
 * loop pass ends: then the pass's changes go to the store in one
 * transaction, written on libuv's thread pool while the loop goes on
 * reading and deciding, and the replies that waited for it are written when
 * it is durable.  One batch is in flight at a time; the next one forms
 * meanwhile and starts the moment the last one ends.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <uv.h>

#include "core/list.h"
#include "daemon/log.h"
#include "daemon/notify.h"
#include "daemon/server.h"

/* Bytes one read takes from a socket, into the one buffer all share. */
#define READ_BUFFER 65536
/*
 * Bytes one connection may have read in one loop pass.  libuv reads a
 * readable socket up to 32 times in a row, and a flood (or a deep
 * pipeline) would have all of it parsed before the pass ends and anyone's
 * replies are written; past the budget the connection stops reading until
 * the next pass (on_check), so that one pass serves every connection.
 */
#define READ_BUDGET READ_BUFFER
/* Connections the kernel queues for accept(): bursts of clients that
 * connect at once (a fleet restarting) should not see ECONNREFUSED. */
#define SERVER_LISTEN_BACKLOG 1024
#define COMMIT_RETRY_MS 100   /* after a failed commit */
#define SHUTDOWN_GRACE_MS 2000

struct conn {
	union {
		uv_handle_t handle;
		uv_stream_t stream;
		uv_tcp_t tcp;
		uv_pipe_t pipe;
	} h;                      /* first: libuv hands back this pointer */
	struct server *srv;
	struct service_conn sc;
	uv_write_t write_req;
	char *writing;            /* the buffer in flight, owned by us */
	uint64_t pass;            /* the loop pass pass_bytes counts in */
	size_t pass_bytes;        /* read in that pass */
	struct core_link paused_link;  /* in srv->paused: over its budget */
	bool closing;
	bool is_tls;              /* a TCP connection with --tls-cert */
	struct tls_pipe tls;
	struct core_link handshake_link;  /* in srv->handshaking until ready */
	uint64_t handshake_deadline;      /* uv_now() ms */
};

static void flush_conn(struct conn *c);
static void on_written(uv_write_t *req, int status);
static void tls_read(struct conn *c, const char *data, size_t len);
static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);
static void end_of_pass(struct server *srv);
static void maybe_finish(struct server *srv);

static char read_buffer[READ_BUFFER];

/* ---- connections ------------------------------------------------------ */

static void
on_conn_closed(uv_handle_t *h)
{
	struct conn *c = (struct conn *)h;

	free(c->writing);
	if (c->is_tls)
		tls_pipe_free(&c->tls);
	free(c);
}

static void
conn_close(struct conn *c)
{
	struct server *srv = c->srv;

	if (c->closing)
		return;
	c->closing = true;
	link_remove(&c->paused_link);
	link_remove(&c->handshake_link);
	/* The service lets go at once: waiters leave their queues and
	 * onclose leases are released now, not when libuv gets round to it. */
	service_conn_close(&srv->svc, &c->sc);
	srv->connections--;
	uv_close(&c->h.handle, on_conn_closed);
	maybe_finish(srv);
}

static void
on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	(void)h;
	(void)hint;
	/* One buffer serves every connection: a read is consumed before the
	 * next one starts; a partial line is copied out by the service. */
	*buf = uv_buf_init(read_buffer, sizeof(read_buffer));
}

/* Counts n bytes read by c in this pass; over READ_BUDGET, c reads no
 * more until the next pass. */
static void
read_budget_spend(struct conn *c, size_t n)
{
	struct server *srv = c->srv;

	if (c->pass != srv->pass) {
		c->pass = srv->pass;
		c->pass_bytes = 0;
	}
	c->pass_bytes += n;
	if (c->pass_bytes >= READ_BUDGET && link_empty(&c->paused_link)) {
		uv_read_stop(&c->h.stream);
		link_append(&srv->paused, &c->paused_link);
	}
}

/* A new pass: every connection paused in the last one reads again. */
static void
read_budget_renew(struct server *srv)
{
	struct conn *c;

	srv->pass++;
	while (!link_empty(&srv->paused)) {
		c = container_of(srv->paused.next, struct conn, paused_link);
		link_remove(&c->paused_link);
		if (uv_read_start(&c->h.stream, on_alloc, on_read) != 0)
			conn_close(c);
	}
}

/* ---- TLS -------------------------------------------------------------- */

/* Plaintext taken from a pipe at a time (the loop is one thread). */
static char tls_plain[16384];

/* A handshake finished: the connection leaves the timed list, and a
 * client certificate (--tls-client-ca) names its principal. */
static void
tls_ready(struct conn *c)
{
	char cn[TLS_CN_MAX + 1];

	link_remove(&c->handshake_link);
	c->srv->svc.stats.tls_handshakes++;
	if (c->srv->cfg->tls_client_ca[0] == '\0')
		return;
	if (!tls_peer_cn(&c->tls, cn) || !auth_valid_principal(cn,
	    strlen(cn))) {
		log_limited(&c->srv->tls_log, LOG_WARN, "tls_bad_cn",
		    "conn=%llu msg=\"the client certificate's CN cannot be "
		    "a principal\"", (unsigned long long)c->sc.session.id);
	} else if (strncmp(cn, "uid:", 4) == 0) {
		/* "uid:<n>" is what the kernel vouches for on the Unix
		 * socket; a certificate cannot claim it. */
		log_limited(&c->srv->tls_log, LOG_WARN, "tls_bad_cn",
		    "conn=%llu msg=\"a client certificate's CN may not "
		    "start with uid:\"", (unsigned long long)c->sc.session.id);
		service_conn_refuse(&c->srv->svc, &c->sc, PROTO_ERR_DENIED,
		    "a certificate's CN may not be a uid principal");
	} else if (service_conn_set_principal(&c->srv->svc, &c->sc,
	    cn) != 0) {
		service_conn_refuse(&c->srv->svc, &c->sc, PROTO_ERR_LIMIT,
		    "too many connections for this principal");
	}
}

/* Ciphertext arrived: advance the handshake or the records, then send
 * what OpenSSL has to say (handshake messages, an alert). */
static void
tls_read(struct conn *c, const char *data, size_t len)
{
	bool was_ready = c->tls.ready, had_failed = c->tls.failed;
	char why[256];
	int n;

	if (tls_pipe_put(&c->tls, data, len) == 0 && !was_ready &&
	    tls_pipe_handshake(&c->tls) == 1)
		tls_ready(c);   /* the principal first, then its requests */
	while ((n = tls_pipe_read(&c->tls, tls_plain, sizeof(tls_plain))) >
	    0) {
		if (!c->closing && !c->sc.quit && !c->sc.overflow)
			service_conn_feed(&c->srv->svc, &c->sc, tls_plain,
			    (size_t)n);
	}
	/* Told once: bytes that arrive while the alert is still being
	 * written find the pipe failed already. */
	if (c->tls.failed && !had_failed) {
		tls_pipe_why(&c->tls, why, sizeof(why));
		if (was_ready) {
			log_limited(&c->srv->tls_log, LOG_INFO, "tls_error",
			    "conn=%llu error=\"%s\"",
			    (unsigned long long)c->sc.session.id, why);
		} else {
			c->srv->svc.stats.tls_failures++;
			log_limited(&c->srv->tls_log, LOG_INFO,
			    "tls_handshake_failed", "conn=%llu error=\"%s\"",
			    (unsigned long long)c->sc.session.id, why);
		}
	}
	if (!c->closing)
		flush_conn(c);
}

/* Closes every connection whose handshake is overdue, then waits for the
 * next one's deadline. */
static void
on_handshake_timer(uv_timer_t *t)
{
	struct server *srv = t->data;
	uint64_t now = uv_now(srv->loop);
	struct conn *c;

	while (!link_empty(&srv->handshaking)) {
		c = container_of(srv->handshaking.next, struct conn,
		    handshake_link);
		if (c->handshake_deadline > now) {
			uv_timer_start(t, on_handshake_timer,
			    c->handshake_deadline - now, 0);
			return;
		}
		srv->svc.stats.tls_timeouts++;
		srv->svc.stats.tls_failures++;
		log_limited(&srv->tls_log, LOG_INFO, "tls_handshake_timeout",
		    "conn=%llu timeout_ms=%lld",
		    (unsigned long long)c->sc.session.id,
		    (long long)srv->cfg->tls_handshake_timeout_ms);
		conn_close(c);
	}
}

static int
tls_accept(struct conn *c)
{
	struct server *srv = c->srv;

	if (tls_pipe_init(&c->tls, srv->tls, TLS_PIPE_SERVER) != 0)
		return -1;
	c->is_tls = true;
	c->handshake_deadline = uv_now(srv->loop) +
	    (uint64_t)srv->cfg->tls_handshake_timeout_ms;
	if (link_empty(&srv->handshaking))
		uv_timer_start(&srv->handshake_timer, on_handshake_timer,
		    (uint64_t)srv->cfg->tls_handshake_timeout_ms, 0);
	link_append(&srv->handshaking, &c->handshake_link);
	return 0;
}

/* Writes the ciphertext OpenSSL has for c; the same single write in
 * flight as for plain connections. */
static void
tls_flush(struct conn *c)
{
	struct service_buf *out = &c->sc.out;
	size_t pending, n;
	uv_buf_t buf;
	int w;

	if (c->tls.ready && out->len > 0) {
		if (tls_pipe_write(&c->tls, out->data, out->len) != 0) {
			conn_close(c);
			return;
		}
		service_conn_written(&c->sc, out->len);
	}
	if ((c->tls.failed || ((c->sc.quit || c->srv->stopping) &&
	    c->sc.slots_head == NULL)) && c->tls.ready)
		tls_pipe_shutdown(&c->tls);
	if ((pending = tls_pipe_pending(&c->tls)) > 0) {
		if ((c->writing = malloc(pending)) == NULL) {
			conn_close(c);
			return;
		}
		n = tls_pipe_take(&c->tls, c->writing, pending);
		buf = uv_buf_init(c->writing, (unsigned int)n);
		w = uv_try_write(&c->h.stream, &buf, 1);
		if (w == (int)n) {
			free(c->writing);
			c->writing = NULL;
		} else if (w >= 0 || w == UV_EAGAIN) {
			if (w > 0)
				buf = uv_buf_init(c->writing + w,
				    (unsigned int)(n - (size_t)w));
			c->write_req.data = c;
			if (uv_write(&c->write_req, &c->h.stream, &buf, 1,
			    on_written) != 0)
				conn_close(c);
			return;
		} else {
			conn_close(c);
			return;
		}
	}
	if (c->tls.failed ||
	    ((c->sc.quit || c->srv->stopping) && c->sc.slots_head == NULL))
		conn_close(c);
}

static void
on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = (struct conn *)stream;

	if (nread == UV_EOF) {
		/* The client sent all it will (printf ... | nc -N): it gets
		 * every reply already decided, then the connection closes.
		 * What is not decided is cancelled, since the end of input
		 * is all lockd can know of a client gone: a waiting ACQUIRE
		 * leaves its queue, answered ERR TIMEOUT. */
		service_conn_end_input(&c->srv->svc, &c->sc);
		flush_conn(c);
		return;
	}
	if (nread < 0) {
		conn_close(c);
		return;
	}
	read_budget_spend(c, (size_t)nread);
	if (c->is_tls) {
		tls_read(c, buf->base, (size_t)nread);
		return;
	}
	/* After QUIT or an overflow the input is dropped, but read on:
	 * only a read sees the client close, and its waiters must leave
	 * their queues then. */
	if (nread == 0 || c->sc.quit || c->sc.overflow)
		return;
	service_conn_feed(&c->srv->svc, &c->sc, buf->base, (size_t)nread);
}

static void
on_written(uv_write_t *req, int status)
{
	struct conn *c = req->data;

	free(c->writing);
	c->writing = NULL;
	if (c->closing)
		return;
	if (status < 0) {
		conn_close(c);
		return;
	}
	flush_conn(c);
}

/* Writes what the service has for c: at once if the socket takes it,
 * else from a buffer we keep until libuv is done with it. */
static void
flush_conn(struct conn *c)
{
	struct service_buf *out = &c->sc.out;
	uv_buf_t buf;
	int n;

	if (c->closing)
		return;
	if (c->sc.overflow) {
		conn_close(c);
		return;
	}
	if (c->writing != NULL)
		return;
	if (c->is_tls) {
		tls_flush(c);
		return;
	}
	if (out->len > 0) {
		buf = uv_buf_init(out->data, (unsigned int)out->len);
		n = uv_try_write(&c->h.stream, &buf, 1);
		if (n > 0)
			service_conn_written(&c->sc, (size_t)n);
		else if (n != UV_EAGAIN && n != UV_ENOSYS) {
			conn_close(c);
			return;
		}
	}
	if (out->len > 0) {
		/* Take the buffer over; the service starts a new one. */
		c->writing = out->data;
		buf = uv_buf_init(out->data, (unsigned int)out->len);
		memset(out, 0, sizeof(*out));
		c->write_req.data = c;
		if (uv_write(&c->write_req, &c->h.stream, &buf, 1,
		    on_written) != 0) {
			conn_close(c);
			return;
		}
		return;
	}
	if ((c->sc.quit || c->srv->stopping) && c->sc.slots_head == NULL)
		conn_close(c);
}

static void
refuse(uv_stream_t *stream, const char *line)
{
	uv_buf_t buf = uv_buf_init((char *)line, (unsigned int)strlen(line));

	uv_try_write(stream, &buf, 1);
}

/* A Unix socket's peer is who the kernel says it is: "uid:<n>". */
static void
set_peer_principal(struct conn *c)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	char principal[32];
	uv_os_fd_t fd;

	if (uv_fileno(&c->h.handle, &fd) != 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return;
	snprintf(principal, sizeof(principal), "uid:%u", (unsigned)cred.uid);
	if (service_conn_set_principal(&c->srv->svc, &c->sc, principal) != 0)
		service_conn_refuse(&c->srv->svc, &c->sc, PROTO_ERR_LIMIT,
		    "too many connections for this principal");
}

static void
on_connection(uv_stream_t *listener, int status)
{
	struct server *srv = listener->data;
	struct conn *c;
	int rc;

	if (status < 0) {
		log_event(LOG_WARN, "accept_error", "error=\"%s\"",
		    uv_strerror(status));
		return;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return;
	c->srv = srv;
	link_init(&c->paused_link);
	if (listener->type == UV_TCP)
		rc = uv_tcp_init(srv->loop, &c->h.tcp);
	else
		rc = uv_pipe_init(srv->loop, &c->h.pipe, 0);
	if (rc != 0) {
		free(c);
		return;
	}
	if (uv_accept(listener, &c->h.stream) != 0) {
		uv_close(&c->h.handle, on_conn_closed);
		return;
	}
	if (srv->stopping || srv->connections >= srv->cfg->max_connections) {
		if (!srv->stopping) {
			log_limited(&srv->svc.limit_log, LOG_WARN, "limit",
			    "kind=connections max=%u",
			    srv->cfg->max_connections);
		}
		service_count_refused_connection(&srv->svc, !srv->stopping);
		/* A TLS client cannot read plain text: it is closed
		 * without a word (it sees the end of its handshake). */
		if (listener->type != UV_TCP || srv->tls == NULL)
			refuse(&c->h.stream, srv->stopping ?
			    "ERR SHUTDOWN server is stopping\r\n" :
			    "ERR LIMIT too many connections\r\n");
		uv_close(&c->h.handle, on_conn_closed);
		return;
	}
	if (listener->type == UV_TCP)
		uv_tcp_nodelay(&c->h.tcp, 1);
	link_init(&c->handshake_link);
	if (listener->type == UV_TCP && srv->tls != NULL &&
	    tls_accept(c) != 0) {
		uv_close(&c->h.handle, on_conn_closed);
		return;
	}
	service_conn_open(&srv->svc, &c->sc);
	if (listener->type == UV_NAMED_PIPE)
		set_peer_principal(c);
	srv->connections++;
	uv_read_start(&c->h.stream, on_alloc, on_read);
}

/* ---- the end of a loop pass ------------------------------------------- */

static core_time
mono_now(struct server *srv)
{
	return srv->svc.clock.mono(srv->svc.clock.ctx);
}

static void on_timer(uv_timer_t *t);

/* On a thread of the pool: the store's write, and nothing else. */
static void
commit_work(uv_work_t *req)
{
	struct server *srv = req->data;

	service_commit_write(&srv->svc);
}

static void
commit_failed(struct server *srv)
{
	srv->retry_at = mono_now(srv) + COMMIT_RETRY_MS;
}

/* Back on the loop: the batch is durable (or failed); its replies go out
 * and the next batch may start. */
static void
commit_done(uv_work_t *req, int status)
{
	struct server *srv = req->data;

	(void)status;   /* never cancelled */
	srv->committing = false;
	if (service_commit_end(&srv->svc) != 0)
		commit_failed(srv);
	end_of_pass(srv);
	maybe_finish(srv);
}

/* Back on the loop from an asynchronous store (etcd): as commit_done. */
static void
commit_written(void *ctx)
{
	struct server *srv = ctx;

	srv->committing = false;
	if ((srv->store_lost == NULL || !srv->store_lost(srv->finishing_ctx))
	    && service_commit_end(&srv->svc) != 0)
		commit_failed(srv);
	end_of_pass(srv);
	maybe_finish(srv);
}

/*
 * Starts a commit when one is due and none is in flight.  A failed one is
 * retried after COMMIT_RETRY_MS, not at every pass.
 */
static void
commit_if_due(struct server *srv)
{
	bool due;
	int rc;

	if (srv->committing || mono_now(srv) < srv->retry_at)
		return;
	due = srv->stopping ? service_commit_owed(&srv->svc) :
	    service_commit_due(&srv->svc);
	if (!due)
		return;
	rc = service_commit_begin(&srv->svc);
	if (rc < 0) {
		commit_failed(srv);
	} else if (rc == 1 && service_commit_is_async(&srv->svc)) {
		srv->committing = true;
		if (service_commit_write_start(&srv->svc, commit_written,
		    srv) != 0) {
			srv->committing = false;
			if (service_commit_end(&srv->svc) != 0)
				commit_failed(srv);
		}
	} else if (rc == 1) {
		srv->committing = true;
		srv->commit_req.data = srv;
		if (uv_queue_work(srv->loop, &srv->commit_req, commit_work,
		    commit_done) != 0) {
			/* Cannot happen with a valid loop; write in place. */
			srv->committing = false;
			service_commit_write(&srv->svc);
			if (service_commit_end(&srv->svc) != 0)
				commit_failed(srv);
		}
	}
}

/* Starts the pass's commit, writes the replies, re-arms the timer. */
static void
end_of_pass(struct server *srv)
{
	struct service_conn *sc;
	core_time deadline, now;
	unsigned written = 0;

	commit_if_due(srv);
	while ((sc = service_next_ready(&srv->svc)) != NULL) {
		if (srv->hooks.before_write != NULL)
			srv->hooks.before_write(srv->hooks.ctx, written++);
		flush_conn(container_of(sc, struct conn, sc));
	}
	if (srv->finished)
		return;

	deadline = service_next_deadline(&srv->svc);
	now = mono_now(srv);
	if (!srv->committing && service_commit_owed(&srv->svc) &&
	    srv->retry_at > now &&
	    deadline > srv->retry_at)
		deadline = srv->retry_at;
	if (deadline == CORE_NEVER) {
		uv_timer_stop(&srv->timer);
		return;
	}
	uv_update_time(srv->loop);
	uv_timer_start(&srv->timer, on_timer,
	    deadline > now ? (uint64_t)(deadline - now) : 0, 0);
}

static void
on_timer(uv_timer_t *t)
{
	struct server *srv = t->data;

	service_tick(&srv->svc);
	/* libuv polls before it runs check handles again: finish now. */
	end_of_pass(srv);
}

static void
on_check(uv_check_t *check)
{
	struct server *srv = check->data;

	end_of_pass(srv);
	read_budget_renew(srv);
}

/* ---- stopping --------------------------------------------------------- */

/* Closes every lock connection, through the service's own list of them:
 * the loop holds other handles too (listeners, /metrics connections). */
static void
close_all(struct server *srv)
{
	struct service_conn *sc;

	while ((sc = service_first_conn(&srv->svc)) != NULL)
		conn_close(container_of(sc, struct conn, sc));
}

static void
flush_one(struct service_conn *sc, void *ctx)
{
	(void)ctx;
	flush_conn(container_of(sc, struct conn, sc));
}

/* Once stopping and every connection is gone, the loop's own handles go
 * too and uv_run returns. */
static void
maybe_finish(struct server *srv)
{
	if (!srv->stopping || srv->connections > 0 || srv->finished ||
	    srv->committing)
		return;   /* (a commit in flight calls again when it ends) */
	srv->finished = true;
	service_commit(&srv->svc);
	if (srv->finishing != NULL)
		srv->finishing(srv->finishing_ctx);
	uv_close((uv_handle_t *)&srv->timer, NULL);
	uv_close((uv_handle_t *)&srv->check, NULL);
	uv_close((uv_handle_t *)&srv->grace, NULL);
	uv_close((uv_handle_t *)&srv->handshake_timer, NULL);
	/* Closing the handlers gives SIGTERM and SIGINT their default action
	 * back: one more during the last steps (a second `kill`) would kill
	 * lockd with status 143.  They are blocked while the handlers close
	 * and ignored after; the next server_init installs handlers again. */
	{
		sigset_t stop, old;

		sigemptyset(&stop);
		sigaddset(&stop, SIGTERM);
		sigaddset(&stop, SIGINT);
		sigprocmask(SIG_BLOCK, &stop, &old);
		uv_close((uv_handle_t *)&srv->sigterm, NULL);
		uv_close((uv_handle_t *)&srv->sigint, NULL);
		uv_close((uv_handle_t *)&srv->sighup, NULL);
		signal(SIGTERM, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		sigprocmask(SIG_SETMASK, &old, NULL);
	}
}

static void
on_grace_over(uv_timer_t *t)
{
	/* Clients that do not take their last replies are cut off. */
	close_all(t->data);
}

static void
on_signal(uv_signal_t *sig, int signum)
{
	struct server *srv = sig->data;

	if (srv->stopping)
		return;
	srv->stopping = true;
	log_event(LOG_INFO, "stopping", "signal=%s connections=%u",
	    signum == SIGTERM ? "TERM" : "INT", srv->connections);
	for (int i = 0; i < srv->nlisteners; i++)
		uv_close(&srv->listeners[i].h.handle, NULL);
	http_stop(&srv->http);
	notify_send("STOPPING=1\nSTATUS=stopping");
	/* The handlers stay (a second signal is ignored, not fatal) but no
	 * longer keep the loop alive. */
	uv_unref((uv_handle_t *)&srv->sigterm);
	uv_unref((uv_handle_t *)&srv->sigint);
	uv_unref((uv_handle_t *)&srv->sighup);
	/* Waiters are told ERR SHUTDOWN; pending commits finish; then every
	 * connection closes as soon as its replies are written. */
	uv_timer_start(&srv->grace, on_grace_over, SHUTDOWN_GRACE_MS, 0);
	service_shutdown(&srv->svc);
	end_of_pass(srv);
	/* Idle connections close now; busy ones once their replies are out. */
	service_for_each_conn(&srv->svc, flush_one, NULL);
	maybe_finish(srv);
}

/* ---- reloading -------------------------------------------------------- */

int
server_reload_auth(struct server *srv)
{
	struct auth_rules fresh;
	char err[512];

	if (srv->cfg->auth_file[0] == '\0')
		return 0;
	if (auth_rules_load(&fresh, srv->cfg->auth_file, err,
	    sizeof(err)) != 0) {
		log_event(LOG_ERROR, "auth_reload_error", "error=\"%s\" "
		    "msg=\"kept the old rules\"", err);
		return -1;
	}
	auth_rules_free(&srv->auth);
	srv->auth = fresh;
	log_event(LOG_INFO, "auth_reloaded", "file=%s rules=%zu principals=%ld",
	    srv->cfg->auth_file, srv->auth.count,
	    auth_rules_principals(&srv->auth));
	return 0;
}

int
server_reload_tls(struct server *srv, char *err, size_t err_len)
{
	const struct config *cfg = srv->cfg;
	SSL_CTX *fresh;

	if (cfg->tls_cert[0] == '\0')
		return 0;
	fresh = tls_context_new(cfg->tls_cert, cfg->tls_key,
	    cfg->tls_client_ca, err, err_len);
	if (fresh == NULL)
		return -1;
	/* Open connections hold their own reference to the old one. */
	if (srv->tls != NULL)
		SSL_CTX_free(srv->tls);
	srv->tls = fresh;
	return 0;
}

static void
on_sighup(uv_signal_t *sig, int signum)
{
	struct server *srv = sig->data;
	char err[512];

	(void)signum;
	if (srv->stopping)
		return;
	server_reload_auth(srv);
	if (server_reload_tls(srv, err, sizeof(err)) != 0)
		log_event(LOG_ERROR, "tls_reload_error", "error=\"%s\" "
		    "msg=\"kept the old certificate and key\"", err);
	else if (srv->tls != NULL)
		log_event(LOG_INFO, "tls_reloaded", "cert=%s key=%s "
		    "client_ca=%s", srv->cfg->tls_cert, srv->cfg->tls_key,
		    srv->cfg->tls_client_ca[0] != '\0' ?
		    srv->cfg->tls_client_ca : "none");
}

/* ---- listeners -------------------------------------------------------- */

static struct server_listener *
listener_new(struct server *srv)
{
	if (srv->nlisteners == SERVER_MAX_LISTENERS)
		return NULL;
	return &srv->listeners[srv->nlisteners++];
}

/* Logs where a TCP listener is bound, in the form the spec promises. */
static void
log_bound(struct server *srv, uv_tcp_t *tcp)
{
	struct sockaddr_storage addr;
	char host[128], shown[160];
	int len = sizeof(addr);

	uv_tcp_getsockname(tcp, (struct sockaddr *)&addr, &len);
	if (addr.ss_family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&addr;
		uv_ip6_name(a, host, sizeof(host));
		snprintf(shown, sizeof(shown), "[%s]:%d", host,
		    ntohs(a->sin6_port));
		srv->port = ntohs(a->sin6_port);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&addr;
		uv_ip4_name(a, host, sizeof(host));
		snprintf(shown, sizeof(shown), "%s:%d", host,
		    ntohs(a->sin_port));
		srv->port = ntohs(a->sin_port);
	}
	log_event(LOG_INFO, "listen", "addr=%s msg=\"listening on %s\"",
	    shown, shown);
}

/* With --auth, tokens on a plain TCP listener beyond loopback can be
 * read by anyone on the path. */
static void
warn_plain(struct server *srv, const struct sockaddr *addr)
{
	bool loopback;

	if (srv->cfg->auth_file[0] == '\0' || srv->tls != NULL)
		return;
	if (addr->sa_family == AF_INET6)
		loopback = memcmp(&((const struct sockaddr_in6 *)addr)->
		    sin6_addr, &in6addr_loopback, sizeof(in6addr_loopback)) == 0;
	else
		loopback = (ntohl(((const struct sockaddr_in *)addr)->
		    sin_addr.s_addr) >> 24) == 127;
	if (!loopback)
		log_event(LOG_WARN, "auth_plain", "listen=%s msg=\"--auth on "
		    "a TCP listener that is neither TLS nor loopback: tokens "
		    "travel in clear\"", srv->cfg->listen);
}

static int
listen_tcp(struct server *srv, const char *hostport)
{
	struct sockaddr_storage addr;
	struct server_listener *l;
	char err[300];
	socklen_t len;
	int rc;

	if (config_resolve(hostport, &addr, &len, err, sizeof(err)) != 0)
		return UV_EINVAL;
	if ((l = listener_new(srv)) == NULL)
		return UV_EMFILE;
	if ((rc = uv_tcp_init(srv->loop, &l->h.tcp)) != 0) {
		srv->nlisteners--;
		return rc;
	}
	l->h.handle.data = srv;
	if ((rc = uv_tcp_bind(&l->h.tcp, (struct sockaddr *)&addr, 0)) != 0 ||
	    (rc = uv_listen(&l->h.stream, SERVER_LISTEN_BACKLOG,
	    on_connection)) != 0)
		return rc;
	log_bound(srv, &l->h.tcp);
	warn_plain(srv, (struct sockaddr *)&addr);
	return 0;
}

/*
 * Makes room for a Unix socket at path: a socket nobody listens on (left
 * by an earlier run that was killed) is removed; a live one (another
 * lockd, or systemd's own socket unit) or anything that is not a socket is
 * left alone and the bind fails.
 */
static int
unix_path_free(const char *path)
{
	struct sockaddr_un addr;
	struct stat st;
	int fd, rc;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : uv_translate_sys_error(errno);
	if (!S_ISSOCK(st.st_mode))
		return UV_EEXIST;
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return uv_translate_sys_error(errno);
	rc = connect(fd, (struct sockaddr *)&addr, sizeof(addr));
	close(fd);
	if (rc == 0)
		return UV_EADDRINUSE;
	unlink(path);
	return 0;
}

static int
listen_unix(struct server *srv, const char *path)
{
	struct server_listener *l;
	int rc;

	if ((rc = unix_path_free(path)) != 0)
		return rc;
	if ((l = listener_new(srv)) == NULL)
		return UV_EMFILE;
	if ((rc = uv_pipe_init(srv->loop, &l->h.pipe, 0)) != 0) {
		srv->nlisteners--;
		return rc;
	}
	l->h.handle.data = srv;
	if ((rc = uv_pipe_bind(&l->h.pipe, path)) != 0)
		return rc;
	srv->unix_bound = true;
	/* Before listen(): until then a connect is refused, so nobody gets
	 * in under the umask's mode. */
	if (chmod(path, (mode_t)srv->cfg->unix_mode) != 0)
		return uv_translate_sys_error(errno);
	if ((rc = uv_listen(&l->h.stream, SERVER_LISTEN_BACKLOG,
	    on_connection)) != 0)
		return rc;
	log_event(LOG_INFO, "listen", "unix=%s mode=%04o "
	    "msg=\"listening on %s\"", path, srv->cfg->unix_mode, path);
	return 0;
}

/* Socket activation: serve the listening sockets systemd passed. */
static int
listen_passed(struct server *srv, int count)
{
	struct server_listener *l;
	struct sockaddr_storage addr;
	socklen_t len;
	int i, rc, fd;

	for (i = 0; i < count; i++) {
		fd = 3 + i;
		memset(&addr, 0, sizeof(addr));
		len = sizeof(addr);
		if (getsockname(fd, (struct sockaddr *)&addr, &len) != 0)
			return UV_EBADF;
		if ((l = listener_new(srv)) == NULL)
			return UV_EMFILE;
		if (addr.ss_family == AF_UNIX) {
			if ((rc = uv_pipe_init(srv->loop, &l->h.pipe, 0)) != 0 ||
			    (rc = uv_pipe_open(&l->h.pipe, fd)) != 0)
				return rc;
		} else {
			if ((rc = uv_tcp_init(srv->loop, &l->h.tcp)) != 0 ||
			    (rc = uv_tcp_open(&l->h.tcp, fd)) != 0)
				return rc;
		}
		l->h.handle.data = srv;
		if ((rc = uv_listen(&l->h.stream, SERVER_LISTEN_BACKLOG,
		    on_connection)) != 0)
			return rc;
		if (addr.ss_family == AF_UNIX)
			log_event(LOG_INFO, "listen", "fd=%d unix=%s "
			    "msg=\"listening on passed socket\"", fd,
			    ((struct sockaddr_un *)&addr)->sun_path);
		else
			log_bound(srv, &l->h.tcp);
	}
	return 0;
}

/* True when one of the count passed sockets is bound to want. */
static bool
passed_has(int count, const struct sockaddr_storage *want)
{
	struct sockaddr_storage got;
	socklen_t len;
	int i;

	for (i = 0; i < count; i++) {
		len = sizeof(got);
		memset(&got, 0, sizeof(got));
		if (getsockname(3 + i, (struct sockaddr *)&got, &len) != 0 ||
		    got.ss_family != want->ss_family)
			continue;
		if (got.ss_family == AF_UNIX &&
		    strcmp(((struct sockaddr_un *)&got)->sun_path,
		    ((const struct sockaddr_un *)want)->sun_path) == 0)
			return true;
		if (got.ss_family == AF_INET) {
			struct sockaddr_in *g = (struct sockaddr_in *)&got;
			const struct sockaddr_in *w =
			    (const struct sockaddr_in *)want;
			if (g->sin_port == w->sin_port &&
			    g->sin_addr.s_addr == w->sin_addr.s_addr)
				return true;
		}
		if (got.ss_family == AF_INET6) {
			struct sockaddr_in6 *g = (struct sockaddr_in6 *)&got;
			const struct sockaddr_in6 *w =
			    (const struct sockaddr_in6 *)want;
			if (g->sin6_port == w->sin6_port &&
			    memcmp(&g->sin6_addr, &w->sin6_addr,
			    sizeof(w->sin6_addr)) == 0)
				return true;
		}
	}
	return false;
}

/*
 * With sockets passed, the socket unit owns the addresses
 * (docs/operations.md): a listen or unix that was set (by a flag or the
 * config file) and is not one of them is not served, and the log says so.
 */
static void
warn_ignored(const struct config *cfg, int passed)
{
	struct sockaddr_storage addr;
	char err[300];
	socklen_t len;

	if (cfg->listen_set && cfg->listen[0] != '\0' &&
	    (config_resolve(cfg->listen, &addr, &len, err, sizeof(err)) != 0 ||
	    !passed_has(passed, &addr)))
		log_event(LOG_WARN, "listen_ignored", "addr=%s passed_fds=%d "
		    "msg=\"listen is not served: systemd passed other "
		    "sockets\"", cfg->listen, passed);
	if (cfg->unix_path[0] != '\0') {
		memset(&addr, 0, sizeof(addr));
		addr.ss_family = AF_UNIX;
		snprintf(((struct sockaddr_un *)&addr)->sun_path,
		    sizeof(((struct sockaddr_un *)&addr)->sun_path), "%s",
		    cfg->unix_path);
		if (!passed_has(passed, &addr))
			log_event(LOG_WARN, "listen_ignored", "unix=%s "
			    "passed_fds=%d msg=\"unix is not served: systemd "
			    "passed other sockets\"", cfg->unix_path, passed);
	}
}

int
server_init(struct server *srv, uv_loop_t *loop, const struct config *cfg)
{
	int rc, passed;

	srv->loop = loop;
	srv->cfg = cfg;
	loop->data = srv;
	signal(SIGPIPE, SIG_IGN);
	uv_timer_init(loop, &srv->timer);
	srv->timer.data = srv;
	/* Ready before any stop: the last connection to close, even within
	 * the signal handler's own pass, closes it (maybe_finish). */
	uv_timer_init(loop, &srv->grace);
	srv->grace.data = srv;
	link_init(&srv->paused);
	uv_check_init(loop, &srv->check);
	srv->check.data = srv;
	uv_check_start(&srv->check, on_check);
	uv_signal_init(loop, &srv->sigterm);
	uv_signal_init(loop, &srv->sigint);
	srv->sigterm.data = srv->sigint.data = srv;
	uv_signal_start(&srv->sigterm, on_signal, SIGTERM);
	uv_signal_start(&srv->sigint, on_signal, SIGINT);
	link_init(&srv->handshaking);
	uv_timer_init(loop, &srv->handshake_timer);
	srv->handshake_timer.data = srv;
	uv_signal_init(loop, &srv->sighup);
	srv->sighup.data = srv;
	uv_signal_start(&srv->sighup, on_sighup, SIGHUP);

	if ((passed = notify_listen_fds()) > 0) {
		warn_ignored(cfg, passed);
		if ((rc = listen_passed(srv, passed)) != 0) {
			log_event(LOG_ERROR, "listen_error",
			    "passed_fds=%d error=\"%s\"", passed,
			    uv_strerror(rc));
			return rc;
		}
	} else if (cfg->listen[0] != '\0' &&
	    (rc = listen_tcp(srv, cfg->listen)) != 0) {
		log_event(LOG_ERROR, "listen_error", "addr=%s error=\"%s\"",
		    cfg->listen, uv_strerror(rc));
		return rc;
	}
	if (passed == 0 && cfg->unix_path[0] != '\0' &&
	    (rc = listen_unix(srv, cfg->unix_path)) != 0) {
		log_event(LOG_ERROR, "listen_error", "unix=%s error=\"%s\"",
		    cfg->unix_path, uv_strerror(rc));
		return rc;
	}
	if (cfg->metrics_listen[0] != '\0') {
		if ((rc = http_listen(&srv->http, loop, cfg->metrics_listen,
		    &srv->svc, &srv->tls)) != 0) {
			log_event(LOG_ERROR, "listen_error",
			    "metrics=%s error=\"%s\"", cfg->metrics_listen,
			    uv_strerror(rc));
			return rc;
		}
	}
	/* The deadlines recovered from the store. */
	end_of_pass(srv);
	return 0;
}

int
server_run(struct server *srv)
{
	int rc = uv_run(srv->loop, UV_RUN_DEFAULT);

	/* Only a socket lockd made itself: one systemd passed is its. */
	if (srv->unix_bound)
		unlink(srv->cfg->unix_path);
	return rc;
}

void
server_close_connections(struct server *srv)
{
	close_all(srv);
}

void
server_kick(struct server *srv)
{
	end_of_pass(srv);
}
