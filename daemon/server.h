/*
 * server.h - the libuv event loop around the service: listeners,
 * connections, the deadline timer, group commit at the end of each pass,
 * signals.
 */
#ifndef LOCKD_SERVER_H
#define LOCKD_SERVER_H

#include <stdbool.h>
#include <uv.h>

#include "daemon/config.h"
#include "daemon/http.h"
#include "daemon/log.h"
#include "daemon/service.h"
#include "daemon/tls.h"

#define SERVER_MAX_LISTENERS 8

/*
 * A fault-injection seam for the tests (daemon.h): when set, before_write is
 * called at the end of a loop pass just before the replies of each
 * connection are written, with the number of connections already written in
 * this pass.  A test that ends the process when index is 1 dies after
 * writing part of a pass's replies.  lockd itself leaves it NULL.
 */
struct server_hooks {
	void (*before_write)(void *ctx, unsigned index);
	void *ctx;
};

struct server {
	uv_loop_t *loop;
	const struct config *cfg;
	struct service svc;         /* opened by the caller before server_init */
	struct server_listener {
		union {
			uv_handle_t handle;
			uv_stream_t stream;
			uv_tcp_t tcp;
			uv_pipe_t pipe;
		} h;
	} listeners[SERVER_MAX_LISTENERS];
	int nlisteners;
	int port;                   /* the TCP port bound */
	bool unix_bound;            /* cfg->unix_path is a socket we made */
	uv_timer_t timer;           /* the one timer: the next core deadline */
	uv_timer_t grace;           /* bounds a clean stop */
	uv_check_t check;           /* the end of each loop pass */
	uint64_t pass;              /* loop passes so far (the read budget) */
	struct core_link paused;    /* connections over their read budget */
	uv_signal_t sigterm, sigint;
	uv_signal_t sighup;         /* reloads --auth (and TLS files) */
	struct auth_rules auth;     /* --auth's rules; svc.auth points here */
	SSL_CTX *tls;               /* --tls-cert: TCP connections speak TLS */
	struct core_link handshaking;  /* TLS connections, oldest first */
	uv_timer_t handshake_timer; /* the oldest one's deadline */
	struct log_limit tls_log;   /* handshake failures and timeouts */
	struct http_server http;    /* --metrics-listen */
	struct server_hooks hooks;  /* test seams; zero in lockd */
	uv_work_t commit_req;       /* the batch being written */
	bool committing;            /* commit_req is on the thread pool */
	int64_t retry_at;           /* after a failed commit: not before */
	uint32_t connections;
	bool stopping;
	bool finished;               /* the loop's handles are closing */
	/* Called once when the loop's handles close at a stop: leadership
	 * closes its own then (cluster mode). */
	void (*finishing)(void *ctx);
	/* Called as an asynchronous commit ends, before the service hears
	 * of it: true when the store's outcome is lost and leadership has
	 * emptied the service instead (cluster mode). */
	bool (*store_lost)(void *ctx);
	void *finishing_ctx;        /* both hooks' */
};

/* Starts listening; returns 0 or a libuv error (already logged). */
int server_init(struct server *srv, uv_loop_t *loop, const struct config *cfg);

/*
 * Re-reads the --auth file: a file that cannot be read or a line that does
 * not parse keeps the old rules, and the log says why.  Returns 0 or -1.
 */
int server_reload_auth(struct server *srv);

/*
 * Loads (or on SIGHUP re-reads) --tls-cert, --tls-key and --tls-client-ca:
 * new connections get the new context, open ones keep theirs; on an error
 * the old one stays.  Returns 0 or -1 with err set.
 */
int server_reload_tls(struct server *srv, char *err, size_t err_len);

/* Runs until a signal has stopped everything. */
int server_run(struct server *srv);

/* Cluster mode (leader.c): closes every lock connection now, and ends a
 * pass (commit, replies, the deadline timer) after the service changed. */
void server_close_connections(struct server *srv);
void server_kick(struct server *srv);

#endif
