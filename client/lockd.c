/*
 * lockd.c - liblockd's context: connecting, buffering requests, reading
 * replies in order, and the blocking calls made of those two.
 *
 * Formatting requests, matching each reply to its request and the queue of
 * replies due are request.c's, shared with the libuv client (uv.c); this
 * file is the blocking transport around them: sockets with deadlines and
 * poll().  It touches nothing global: no signal handler, no static state.
 * With TLS, OpenSSL runs over the same non-blocking socket: its WANT_READ
 * and WANT_WRITE are waited for like EAGAIN, and whatever plaintext it
 * has decrypted is moved into `in` at once, so that a poll() on the
 * socket never waits for bytes OpenSSL already holds.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "client/endpoint.h"
#include "client/lockd.h"
#include "client/request.h"
#include "proto/proto.h"

#define LOCKD__READ_CHUNK 4096
#define LOCKD__WRITE_SLICE 16384
/* Fail-over's pause between attempts, once each endpoint had one. */
#define LOCKD__FAILOVER_BACKOFF_MS 50
#define LOCKD__FAILOVER_BACKOFF_MAX_MS 250
/* With fail-over on, a blocking call that hears nothing from its node for
 * this long checks on a connection of its own that the node still answers,
 * and gives it this long to (lockd.h, "Fail-over"). */
#define LOCKD__PROBE_IDLE_MS 3000
#define LOCKD__PROBE_TIMEOUT_MS 2000

struct lockd__state {
	struct lockd__endpoint *ats;  /* every endpoint configured */
	size_t n_ats;
	size_t next_at;       /* where the next connect starts */
	bool hinted;          /* next_at is a leader a NOTLEADER named */
	struct lockd__endpoint *at;   /* the one connected or last tried */
	int64_t failover_timeout_ms;  /* 0: no fail-over */
	bool unusable;        /* the options were bad: every call fails */
	SSL *ssl;             /* TLS on this connection; NULL: plain */
	char tls_why[LOCKD_ERRSTR_SIZE];  /* why TLS failed (errno EPROTO) */
	int64_t connect_timeout_ms;
	int64_t command_timeout_ms;

	char *out;            /* requests not yet written */
	size_t out_len, out_cap, out_pos;
	uint64_t appended;    /* bytes appended since connecting */
	uint64_t written;     /* bytes written since connecting */

	char *in;             /* bytes read, not yet parsed */
	size_t in_len, in_cap, in_pos;

	struct lockd__queue pending;   /* of struct lockd__pending */
	size_t sent;          /* of the count, how many are fully written */
	size_t received;      /* of those, how many have a reply line in `in` */
};

int64_t
lockd_now_ms(void)
{
	struct timespec ts;

#ifdef CLOCK_BOOTTIME
	if (clock_gettime(CLOCK_BOOTTIME, &ts) == 0)
		return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
#endif
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *
lockd_strerror(int code)
{
	switch (code) {
	case LOCKD_OK: return "OK";
	case LOCKD_HELD: return "HELD";
	case LOCKD_NOTHELD: return "NOTHELD";
	case LOCKD_AGAIN: return "AGAIN";
	case LOCKD_STALE: return "STALE";
	case LOCKD_ERR_IO: return "IO";
	case LOCKD_ERR_EOF: return "EOF";
	case LOCKD_ERR_PROTOCOL: return "PROTOCOL";
	case LOCKD_ERR_TIMEOUT: return "TIMEOUT";
	case LOCKD_ERR_OOM: return "OOM";
	case LOCKD_ERR_INVALID: return "INVALID";
	case LOCKD_ERR_CLOSED: return "CLOSED";
	case LOCKD_ERR_BADREQ: return "BADREQ";
	case LOCKD_ERR_BADARG: return "BADARG";
	case LOCKD_ERR_TOOLONG: return "TOOLONG";
	case LOCKD_ERR_WAIT_TIMEOUT: return "WAIT_TIMEOUT";
	case LOCKD_ERR_CONFLICT: return "CONFLICT";
	case LOCKD_ERR_LIMIT: return "LIMIT";
	case LOCKD_ERR_UNAVAILABLE: return "UNAVAILABLE";
	case LOCKD_ERR_OVERFLOW: return "OVERFLOW";
	case LOCKD_ERR_SHUTDOWN: return "SHUTDOWN";
	case LOCKD_ERR_DENIED: return "DENIED";
	case LOCKD_ERR_NOTLEADER: return "NOTLEADER";
	default: return "?";
	}
}

int
lockd_error_is_fatal(int code)
{
	return code == LOCKD_ERR_IO || code == LOCKD_ERR_EOF ||
	    code == LOCKD_ERR_PROTOCOL || code == LOCKD_ERR_TIMEOUT ||
	    code == LOCKD_ERR_CLOSED;
}

int
lockd_parse_duration(const char *s, int64_t *ms)
{
	if (s == NULL || ms == NULL || !proto_parse_duration(s, strlen(s), ms))
		return LOCKD_ERR_INVALID;
	return LOCKD_OK;
}

/*
 * Errors.  Every failure goes through lockd__fail(), which records it and,
 * for a fatal one, closes the socket and forgets what was due: after a
 * timeout or a garbled reply nothing later on the stream can be trusted.
 */

static void
lockd__reset_stream(lockd_context *c)
{
	struct lockd__state *s = c->state;

	if (s->ssl != NULL) {
		SSL_free(s->ssl);
		s->ssl = NULL;
	}
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	s->out_len = s->out_pos = 0;
	s->in_len = s->in_pos = 0;
	s->tls_why[0] = '\0';
	lockd__queue_clear(&s->pending);
	s->sent = s->received = 0;
	s->appended = s->written = 0;
}

__attribute__((format(printf, 3, 4)))
static int
lockd__fail(lockd_context *c, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->errstr, sizeof(c->errstr), fmt, ap);
	va_end(ap);
	c->err = code;
	if (lockd_error_is_fatal(code))
		lockd__reset_stream(c);
	return code;
}

static int
lockd__succeed(lockd_context *c, int result)
{
	c->err = 0;
	c->errstr[0] = '\0';
	return result;
}

/* A dead context answers every call with the error that killed it. */
static bool
lockd__dead(const lockd_context *c)
{
	return lockd_error_is_fatal(c->err) || c->state->unusable;
}

/* Milliseconds left until deadline (-1: none), for poll(); 0 when past. */
static int
lockd__poll_timeout(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - lockd_now_ms();
	if (left <= 0)
		return 0;
	return left > 60000 ? 60000 : (int)left;
}

static int64_t
lockd__deadline_after(int64_t timeout_ms)
{
	return timeout_ms > 0 ? lockd_now_ms() + timeout_ms : -1;
}

/*
 * Waits until fd is ready for events or deadline (-1: none) passes.
 * Returns the revents, 0 on timeout, -1 on a poll error (errno set).
 */
static int
lockd__wait(int fd, short events, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	int n;

	for (;;) {
		n = poll(&p, 1, lockd__poll_timeout(deadline));
		if (n > 0)
			return p.revents;
		if (n == 0) {
			if (deadline >= 0 && lockd_now_ms() >= deadline)
				return 0;
			continue;
		}
		if (errno != EINTR)
			return -1;
	}
}

/*
 * Connecting.  Sockets are non-blocking (every wait is a poll with a
 * deadline) and close-on-exec, so that a child a program starts cannot hold
 * a connection, and with it an onclose=release lease, open.
 */

static int
lockd__connect_fd(lockd_context *c, int fd, const struct sockaddr *addr,
    socklen_t len, int64_t deadline, const char *where)
{
	int revents, soerr = 0;
	socklen_t soerr_len = sizeof(soerr);

	if (connect(fd, addr, len) == 0)
		return 0;
	if (errno != EINPROGRESS && errno != EINTR)
		return lockd__fail(c, LOCKD_ERR_IO, "connect to %s: %s", where,
		    strerror(errno));
	revents = lockd__wait(fd, POLLOUT, deadline);
	if (revents == 0)
		return lockd__fail(c, LOCKD_ERR_TIMEOUT,
		    "connect to %s: timed out", where);
	if (revents < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &soerr_len) != 0)
		return lockd__fail(c, LOCKD_ERR_IO, "connect to %s: %s", where,
		    strerror(errno));
	if (soerr != 0)
		return lockd__fail(c, LOCKD_ERR_IO, "connect to %s: %s", where,
		    strerror(soerr));
	return 0;
}

static int
lockd__open_unix(lockd_context *c, int64_t deadline)
{
	struct lockd__state *s = c->state;
	struct sockaddr_un sun;
	int rc;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(s->at->unix_path) >= sizeof(sun.sun_path))
		return lockd__fail(c, LOCKD_ERR_IO, "unix socket path too long");
	memcpy(sun.sun_path, s->at->unix_path, strlen(s->at->unix_path));
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return lockd__fail(c, LOCKD_ERR_IO, "socket: %s",
		    strerror(errno));
	rc = lockd__connect_fd(c, c->fd, (struct sockaddr *)&sun, sizeof(sun),
	    deadline, s->at->unix_path);
	return rc;
}

static int
lockd__open_tcp(lockd_context *c, int64_t deadline)
{
	struct lockd__state *s = c->state;
	struct addrinfo hints, *list, *ai;
	char port[16], where[300];
	int rc, one = 1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof(port), "%d", s->at->port);
	snprintf(where, sizeof(where), "%s:%d", s->at->host, s->at->port);
	rc = getaddrinfo(s->at->host, port, &hints, &list);
	if (rc != 0)
		return lockd__fail(c, LOCKD_ERR_IO, "resolve %s: %s",
		    s->at->host,
		    rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
	rc = LOCKD_ERR_IO;
	for (ai = list; ai != NULL; ai = ai->ai_next) {
		c->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, ai->ai_protocol);
		if (c->fd < 0) {
			rc = lockd__fail(c, LOCKD_ERR_IO, "socket: %s",
			    strerror(errno));
			continue;
		}
		rc = lockd__connect_fd(c, c->fd, ai->ai_addr, ai->ai_addrlen,
		    deadline, where);
		if (rc == 0) {
			/* One short line per request: do not wait for more. */
			setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one,
			    sizeof(one));
			break;
		}
		if (rc == LOCKD_ERR_TIMEOUT)
			break;
	}
	freeaddrinfo(list);
	return rc;
}

/* The TLS handshake over the connected socket, by deadline. */
static int
lockd__tls_handshake(lockd_context *c, int64_t deadline)
{
	struct lockd__state *s = c->state;
	char why[LOCKD_ERRSTR_SIZE];
	int rc, revents;

	if ((s->ssl = SSL_new(s->at->tls_ctx)) == NULL ||
	    SSL_set_fd(s->ssl, c->fd) != 1 ||
	    !lockd__endpoint_tls_name(s->at, s->ssl)) {
		ERR_clear_error();
		return lockd__fail(c, LOCKD_ERR_OOM, "cannot set up TLS");
	}
	for (;;) {
		ERR_clear_error();
		if ((rc = SSL_connect(s->ssl)) == 1)
			return 0;
		switch (SSL_get_error(s->ssl, rc)) {
		case SSL_ERROR_WANT_READ:
			revents = lockd__wait(c->fd, POLLIN, deadline);
			break;
		case SSL_ERROR_WANT_WRITE:
			revents = lockd__wait(c->fd, POLLOUT, deadline);
			break;
		default:
			lockd__tls_why(s->ssl, ERR_peek_last_error(), why,
			    sizeof(why));
			return lockd__fail(c, LOCKD_ERR_IO, "TLS with %s:%d: %s",
			    s->at->host, s->at->port, why);
		}
		if (revents == 0)
			return lockd__fail(c, LOCKD_ERR_TIMEOUT,
			    "TLS with %s:%d: timed out", s->at->host,
			    s->at->port);
		if (revents < 0)
			return lockd__fail(c, LOCKD_ERR_IO, "poll: %s",
			    strerror(errno));
	}
}

static ssize_t lockd__send(lockd_context *c, const void *p, size_t len);
static ssize_t lockd__recv(lockd_context *c, void *p, size_t len);
static int lockd__io_fail(lockd_context *c, const char *what);

/*
 * AUTH with the token, before any request: the reply is read here, so
 * the pipeline starts empty.  A refusal keeps the connection (nobody's)
 * and returns the server's error.
 */
static int
lockd__authenticate(lockd_context *c, int64_t deadline)
{
	char line[LOCKD__TOKEN_MAX + 8], reply[PROTO_REPLY_MAX + 2];
	size_t len = 0, done = 0, used;
	ssize_t n;
	int rc, revents;

	char why[LOCKD_ERRSTR_SIZE];

	if ((rc = lockd__endpoint_auth_line(c->state->at, line, why)) <= 0) {
		if (rc < 0)
			return lockd__fail(c, rc, "%s", why);
		return 0;
	}
	while (done < (size_t)rc) {
		n = lockd__send(c, line + done, (size_t)rc - done);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			OPENSSL_cleanse(line, sizeof(line));
			return lockd__io_fail(c, "write");
		}
		if (lockd__wait(c->fd, POLLOUT | POLLIN, deadline) <= 0)
			break;
	}
	OPENSSL_cleanse(line, sizeof(line));
	if (done < (size_t)rc)
		return lockd__fail(c, LOCKD_ERR_TIMEOUT, "AUTH: timed out");
	for (;;) {
		rc = lockd__auth_reply(reply, len, &used, why);
		if (rc != LOCKD_AGAIN)
			return rc == LOCKD_OK ? 0 : lockd__fail(c, rc, "%s",
			    why);
		if (len == sizeof(reply))
			return lockd__fail(c, LOCKD_ERR_PROTOCOL,
			    "garbled reply to AUTH");
		n = lockd__recv(c, reply + len, sizeof(reply) - len);
		if (n > 0) {
			len += (size_t)n;
			continue;
		}
		if (n == 0)
			return lockd__fail(c, LOCKD_ERR_EOF,
			    "server closed the connection after AUTH");
		if (errno != EAGAIN && errno != EINTR)
			return lockd__io_fail(c, "read");
		revents = lockd__wait(c->fd, POLLIN, deadline);
		if (revents == 0)
			return lockd__fail(c, LOCKD_ERR_TIMEOUT,
			    "AUTH: no reply in time");
		if (revents < 0)
			return lockd__fail(c, LOCKD_ERR_IO, "poll: %s",
			    strerror(errno));
	}
}

/* Connects to s->at, each endpoint by its own connect timeout. */
static int
lockd__open_one(lockd_context *c)
{
	struct lockd__state *s = c->state;
	int64_t deadline = lockd__deadline_after(s->connect_timeout_ms);
	int rc;

	c->err = 0;
	c->errstr[0] = '\0';
	rc = s->at->unix_path != NULL ? lockd__open_unix(c, deadline) :
	    lockd__open_tcp(c, deadline);
	if (rc == 0 && s->at->tls)
		rc = lockd__tls_handshake(c, deadline);
	if (rc == 0)
		rc = lockd__authenticate(c, deadline);
	return rc == 0 ? lockd__succeed(c, LOCKD_OK) : rc;
}

/*
 * Connects to the first endpoint that accepts, from next_at on around the
 * list.  A refused AUTH ends the search there: the token is the same
 * everywhere.
 */
static int
lockd__open(lockd_context *c)
{
	struct lockd__state *s = c->state;
	char last[LOCKD_ERRSTR_SIZE];
	size_t i, at;
	int rc = LOCKD_ERR_IO;

	for (i = 0; i < s->n_ats; i++) {
		at = (s->next_at + i) % s->n_ats;
		s->at = &s->ats[at];
		if (i > 0)
			lockd__reset_stream(c);
		rc = lockd__open_one(c);
		if (rc == LOCKD_OK || !lockd_error_is_fatal(rc)) {
			s->next_at = at;
			return rc;
		}
	}
	if (s->n_ats > 1) {
		snprintf(last, sizeof(last), "%s", c->errstr);
		return lockd__fail(c, rc, "none of %zu endpoints answered; "
		    "last: %.90s", s->n_ats, last);
	}
	return rc;
}

lockd_context *
lockd_connect(const lockd_options *options)
{
	static const lockd_options defaults;
	const lockd_options *o = options != NULL ? options : &defaults;
	lockd_context *c;
	struct lockd__state *s;
	int rc;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->fd = -1;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		goto fail;
	c->state = s;
	lockd__queue_init(&s->pending, sizeof(struct lockd__pending));
	rc = lockd__endpoints_init(&s->ats, &s->n_ats, o, c->errstr);
	if (s->ats == NULL || rc == LOCKD_ERR_OOM)
		goto fail;
	s->at = &s->ats[0];
	s->failover_timeout_ms = s->n_ats > 1 ? LOCKD_FAILOVER_DEFAULT_MS : 0;
	s->connect_timeout_ms = o->connect_timeout_ms > 0 ?
	    o->connect_timeout_ms : 0;
	s->command_timeout_ms = o->command_timeout_ms > 0 ?
	    o->command_timeout_ms : 0;
	if (rc == LOCKD_ERR_INVALID) {
		/* Every call says what was wrong. */
		c->err = rc;
		s->unusable = true;
	} else {
		lockd__open(c);
	}
	return c;
fail:
	lockd_free(c);
	return NULL;
}

/*
 * A new connection for a context that had one: to the leader a NOTLEADER
 * named, else to the endpoint after the last one (it broke, stalled or
 * does not lead; a node that merely restarted is named by the others).
 */
static int
lockd__reopen(lockd_context *c)
{
	struct lockd__state *s = c->state;

	if (!s->hinted && s->n_ats > 1)
		s->next_at = ((size_t)(s->at - s->ats) + 1) % s->n_ats;
	s->hinted = false;
	lockd__reset_stream(c);
	return lockd__open(c);
}

int
lockd_reconnect(lockd_context *c)
{
	if (c->state->unusable)
		return c->err;
	return lockd__reopen(c);
}

void
lockd_free(lockd_context *c)
{
	struct lockd__state *s;

	if (c == NULL)
		return;
	if ((s = c->state) != NULL && s->ssl != NULL)
		SSL_free(s->ssl);
	if (c->fd >= 0)
		close(c->fd);
	if (s != NULL) {
		lockd__endpoints_free(s->ats, s->n_ats);
		free(s->out);
		free(s->in);
		lockd__queue_free(&s->pending);
		free(s);
	}
	free(c);
}

int
lockd_set_command_timeout(lockd_context *c, int64_t timeout_ms)
{
	if (timeout_ms < 0)
		return lockd__fail(c, LOCKD_ERR_INVALID,
		    "negative command timeout");
	c->state->command_timeout_ms = timeout_ms;
	return LOCKD_OK;
}

int
lockd_set_connect_timeout(lockd_context *c, int64_t timeout_ms)
{
	if (timeout_ms < 0)
		return lockd__fail(c, LOCKD_ERR_INVALID,
		    "negative connect timeout");
	c->state->connect_timeout_ms = timeout_ms;
	return LOCKD_OK;
}

int
lockd_set_failover_timeout(lockd_context *c, int64_t timeout_ms)
{
	if (timeout_ms < 0)
		return lockd__fail(c, LOCKD_ERR_INVALID,
		    "negative fail-over timeout");
	c->state->failover_timeout_ms = timeout_ms;
	return LOCKD_OK;
}

int
lockd_pending(const lockd_context *c)
{
	return (int)c->state->pending.count;
}

/*
 * Appending.  request.c checks and formats a request completely before
 * anything here is changed, so a refused append leaves the context as it
 * was.
 */

/* Records a result: an error through lockd__fail's rules, with the
 * sentence the shared code wrote into c->errstr. */
static int
lockd__record(lockd_context *c, int rc)
{
	if (rc >= 0)
		return lockd__succeed(c, rc);
	c->err = rc;
	if (lockd_error_is_fatal(rc))
		lockd__reset_stream(c);
	return rc;
}

static bool
lockd__reserve_out(struct lockd__state *s, size_t n)
{
	char *p;
	size_t cap;

	if (s->out_pos > 0 && s->out_pos == s->out_len)
		s->out_len = s->out_pos = 0;
	if (s->out_cap - s->out_len >= n)
		return true;
	cap = s->out_cap == 0 ? 1024 : s->out_cap;
	while (cap - s->out_len < n)
		cap *= 2;
	if ((p = realloc(s->out, cap)) == NULL)
		return false;
	s->out = p;
	s->out_cap = cap;
	return true;
}

/* Buffers a request request.c formatted (rc its result) and queues it. */
static int
lockd__append(lockd_context *c, const struct lockd__request *r, int rc)
{
	struct lockd__state *s = c->state;
	struct lockd__pending *p;

	if (rc != LOCKD_OK)
		return lockd__record(c, rc);
	if (!lockd__reserve_out(s, r->len) ||
	    (p = lockd__queue_push(&s->pending)) == NULL)
		return lockd__fail(c, LOCKD_ERR_OOM, "out of memory");
	memcpy(s->out + s->out_len, r->line, r->len);
	s->out_len += r->len;
	s->appended += r->len;
	*p = r->pending;
	p->end = s->appended;
	return lockd__succeed(c, LOCKD_OK);
}

int
lockd_append_acquire(lockd_context *c, const char *name, int64_t lease_ms,
    int64_t wait_ms, int onclose)
{
	struct lockd__request r;

	if (lockd__dead(c))
		return c->err;
	return lockd__append(c, &r, lockd__request_acquire(&r, name, lease_ms,
	    wait_ms, onclose, c->errstr));
}

int
lockd_append_try(lockd_context *c, const char *name, int64_t lease_ms,
    int onclose)
{
	struct lockd__request r;

	if (lockd__dead(c))
		return c->err;
	return lockd__append(c, &r, lockd__request_try(&r, name, lease_ms,
	    onclose, c->errstr));
}

int
lockd_append_renew(lockd_context *c, const lockd_lease *lease,
    int64_t lease_ms)
{
	struct lockd__request r;

	if (lockd__dead(c))
		return c->err;
	return lockd__append(c, &r, lockd__request_renew(&r, lease, lease_ms,
	    c->errstr));
}

int
lockd_append_release(lockd_context *c, const lockd_lease *lease)
{
	struct lockd__request r;

	if (lockd__dead(c))
		return c->err;
	return lockd__append(c, &r, lockd__request_release(&r, lease,
	    c->errstr));
}

int
lockd_append_status(lockd_context *c, const char *name)
{
	struct lockd__request r;

	if (lockd__dead(c))
		return c->err;
	return lockd__append(c, &r, lockd__request_status(&r, name,
	    c->errstr));
}

/* A pipelined ACQUIRE or TRY of any kind; no rid of the library's own,
 * since a pipeline is never sent again. */
static int
lockd__append_kind(lockd_context *c, bool try_only, const char *name,
    const lockd_acquire_options *options, const lockd_kind *kind,
    const char *rid)
{
	struct lockd__request r;

	if (lockd__dead(c))
		return c->err;
	return lockd__append(c, &r, lockd__request_acquire_kind(&r, try_only,
	    name, options, kind, rid, c->errstr));
}

int
lockd_append_acquire_kind(lockd_context *c, const char *name,
    const lockd_acquire_options *options, const lockd_kind *kind,
    const char *rid)
{
	return lockd__append_kind(c, false, name, options, kind, rid);
}

int
lockd_append_try_kind(lockd_context *c, const char *name,
    const lockd_acquire_options *options, const lockd_kind *kind,
    const char *rid)
{
	return lockd__append_kind(c, true, name, options, kind, rid);
}

int
lockd_append_ping(lockd_context *c)
{
	struct lockd__request r;

	if (lockd__dead(c))
		return c->err;
	return lockd__append(c, &r, lockd__request_ping(&r, c->errstr));
}

int
lockd_lease_init(lockd_lease *lease, const char *name, const char *handle)
{
	struct proto_handle h;

	if (lease == NULL || name == NULL || handle == NULL ||
	    !proto_valid_name(name, strlen(name)) ||
	    !proto_parse_handle(handle, strlen(handle), &h))
		return LOCKD_ERR_INVALID;
	memset(lease, 0, sizeof(*lease));
	memcpy(lease->name, name, strlen(name));
	lease->fence = h.fence;
	proto_format_handle(lease->handle, sizeof(lease->handle) - 1, h);
	return LOCKD_OK;
}

/*
 * Reading and writing.  Input is read whenever the socket offers it, also
 * while writing, so that a long pipeline never leaves both ends blocked on
 * full buffers.
 */

/* Counts the reply lines that came in with bytes just read. */
static void
lockd__count_lines(struct lockd__state *s, const char *p, size_t n)
{
	const char *end = p + n, *lf;

	while ((lf = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		s->received++;
		p = lf + 1;
	}
}

/*
 * The transport: send() and recv() on the socket, or SSL_write() and
 * SSL_read() over it.  n > 0 bytes moved, 0 the end of the stream, -1
 * with errno (EAGAIN: nothing now, EPROTO: TLS failed, why in tls_why).
 */
static ssize_t
lockd__tls_result(lockd_context *c, int n)
{
	switch (SSL_get_error(c->state->ssl, n)) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_SYSCALL:
		ERR_clear_error();
		if (errno == 0)
			return 0;
		return -1;
	default:
		lockd__tls_why(c->state->ssl, ERR_peek_last_error(),
		    c->state->tls_why, sizeof(c->state->tls_why));
		errno = EPROTO;
		return -1;
	}
}

/*
 * A send or receive failed with errno: "<what>: <errno's reason>", or for
 * TLS the reason OpenSSL gave (the server's alert refusing this client).
 */
static int
lockd__io_fail(lockd_context *c, const char *what)
{
	struct lockd__state *s = c->state;

	if (errno == EPROTO && s->ssl != NULL)
		return lockd__fail(c, LOCKD_ERR_IO, "TLS with %s:%d: %s",
		    s->at->host, s->at->port, s->tls_why[0] != '\0' ?
		    s->tls_why : "TLS error");
	return lockd__fail(c, LOCKD_ERR_IO, "%s: %s", what, strerror(errno));
}

static ssize_t
lockd__send(lockd_context *c, const void *p, size_t len)
{
	int n;

	if (c->state->ssl == NULL)
		return send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	ERR_clear_error();
	errno = 0;
	n = SSL_write(c->state->ssl, p, len > INT_MAX ? INT_MAX : (int)len);
	return n > 0 ? n : lockd__tls_result(c, n);
}

static ssize_t
lockd__recv(lockd_context *c, void *p, size_t len)
{
	int n;

	if (c->state->ssl == NULL)
		return recv(c->fd, p, len, MSG_DONTWAIT);
	ERR_clear_error();
	errno = 0;
	n = SSL_read(c->state->ssl, p, len > INT_MAX ? INT_MAX : (int)len);
	return n > 0 ? n : lockd__tls_result(c, n);
}

/* Makes room for LOCKD__READ_CHUNK more bytes in `in`; false: no memory. */
static bool
lockd__reserve_in(struct lockd__state *s)
{
	size_t cap;
	char *p;

	if (s->in_cap - s->in_len >= LOCKD__READ_CHUNK)
		return true;
	cap = s->in_cap == 0 ? (size_t)2 * LOCKD__READ_CHUNK : s->in_cap * 2;
	if ((p = realloc(s->in, cap)) == NULL)
		return false;
	s->in = p;
	s->in_cap = cap;
	return true;
}

/* Reads what the socket holds: 1 read some, 0 nothing now, <0 fatal. */
static int
lockd__read_some(lockd_context *c)
{
	struct lockd__state *s = c->state;
	bool got = false;
	ssize_t n;

	if (s->in_pos > 0) {
		memmove(s->in, s->in + s->in_pos, s->in_len - s->in_pos);
		s->in_len -= s->in_pos;
		s->in_pos = 0;
	}
	if (!lockd__reserve_in(s))
		return lockd__fail(c, LOCKD_ERR_OOM, "out of memory for replies");
	for (;;) {
		n = lockd__recv(c, s->in + s->in_len, s->in_cap - s->in_len);
		if (n > 0) {
			lockd__count_lines(s, s->in + s->in_len, (size_t)n);
			s->in_len += (size_t)n;
			got = true;
			/* What OpenSSL holds decrypted comes along now:
			 * poll() cannot see it. */
			if (s->ssl != NULL && SSL_pending(s->ssl) > 0) {
				if (!lockd__reserve_in(s))
					return lockd__fail(c, LOCKD_ERR_OOM,
					    "out of memory for replies");
				continue;
			}
			return 1;
		}
		if (n == 0)
			return lockd__fail(c, LOCKD_ERR_EOF,
			    "server closed the connection");
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return got ? 1 : 0;
		return lockd__io_fail(c, "read");
	}
}

/* Records when the requests the last write finished went out. */
static void
lockd__mark_sent(struct lockd__state *s, int64_t before_ms)
{
	struct lockd__pending *p;

	while (s->sent < s->pending.count &&
	    (p = lockd__queue_at(&s->pending, s->sent))->end <= s->written) {
		p->sent_ms = before_ms;
		s->sent++;
	}
}

static int64_t
lockd__head_deadline(const struct lockd__state *s, size_t i)
{
	return lockd__reply_deadline(lockd__queue_at(&s->pending, i),
	    s->command_timeout_ms, lockd_now_ms());
}

/*
 * Writes everything buffered by deadline (-1: none), in slices, reading the
 * replies that come back meanwhile and keeping at most LOCKD__MAX_IN_FLIGHT
 * requests unanswered.  Waiting for the window to open is waiting for a
 * reply, and is timed as lockd_get_reply() times it.
 */
static int
lockd__flush_until(lockd_context *c, int64_t deadline)
{
	struct lockd__state *s = c->state;
	int64_t before;
	uint64_t limit;
	size_t len;
	ssize_t n;
	int revents, rc;

	while (s->out_pos < s->out_len) {
		limit = lockd__send_limit(&s->pending, s->received,
		    s->appended);
		if (limit <= s->written) {
			revents = lockd__wait(c->fd, POLLIN,
			    lockd__head_deadline(s, s->received));
			if (revents == 0)
				return lockd__fail(c, LOCKD_ERR_TIMEOUT,
				    "no reply within the command timeout");
			if (revents < 0)
				return lockd__fail(c, LOCKD_ERR_IO,
				    "poll: %s", strerror(errno));
			if (lockd__read_some(c) < 0)
				return c->err;
			continue;
		}
		len = s->out_len - s->out_pos;
		if (len > LOCKD__WRITE_SLICE)
			len = LOCKD__WRITE_SLICE;
		if (len > limit - s->written)
			len = (size_t)(limit - s->written);
		/* Read the clock first: the server may act on the bytes
		 * before send() returns, and a lease runs from then. */
		before = lockd_now_ms();
		n = lockd__send(c, s->out + s->out_pos, len);
		if (n > 0) {
			s->out_pos += (size_t)n;
			s->written += (uint64_t)n;
			lockd__mark_sent(s, before);
			while ((rc = lockd__read_some(c)) > 0)
				;
			if (rc < 0)
				return c->err;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return lockd__io_fail(c, "write");
		revents = lockd__wait(c->fd, POLLOUT | POLLIN, deadline);
		if (revents == 0)
			return lockd__fail(c, LOCKD_ERR_TIMEOUT,
			    "timed out sending requests");
		if (revents < 0)
			return lockd__fail(c, LOCKD_ERR_IO, "poll: %s",
			    strerror(errno));
		if ((revents & POLLIN) != 0 && lockd__read_some(c) < 0)
			return c->err;
	}
	s->out_len = s->out_pos = 0;
	return LOCKD_OK;
}

int
lockd_flush(lockd_context *c)
{
	if (lockd__dead(c))
		return c->err;
	if (lockd__flush_until(c, lockd__deadline_after(
	    c->state->command_timeout_ms)) != LOCKD_OK)
		return c->err;
	return lockd__succeed(c, LOCKD_OK);
}

/* Where the next connect starts after a NOTLEADER: the leader it named,
 * when that is one of ours, else the endpoint after this one. */
static void
lockd__follow_hint(lockd_context *c)
{
	struct lockd__state *s = c->state;

	s->next_at = lockd__endpoints_next(s->ats, s->n_ats,
	    (size_t)(s->at - s->ats), c->errstr, &s->hinted);
}

/*
 * Parses the next reply from the input, if a whole one is there, and pops
 * the request it answers.  Returns LOCKD_AGAIN when more input is needed.
 */
static int
lockd__take_reply(lockd_context *c, lockd_reply *r, struct lockd__info *info)
{
	struct lockd__state *s = c->state;
	size_t consumed = 0;
	int result;

	result = lockd__reply_take_info(s->in + s->in_pos,
	    s->in_len - s->in_pos, lockd__queue_at(&s->pending, 0), r, info,
	    &consumed, c->errstr);
	if (result == LOCKD_AGAIN)
		return result;
	if (s->sent == 0)
		return lockd__fail(c, LOCKD_ERR_PROTOCOL,
		    "reply before its request was sent");
	if (lockd_error_is_fatal(result))
		return lockd__record(c, result);
	s->in_pos += consumed;
	s->received--;
	/* A LIST line before its END: the request is still due. */
	if (result == LOCKD__MORE)
		return result;
	lockd__queue_pop(&s->pending);
	s->sent--;
	if (result == LOCKD_ERR_NOTLEADER)
		lockd__follow_hint(c);
	return lockd__record(c, result);
}

static int lockd__get_reply_info(lockd_context *c, lockd_reply *reply,
    struct lockd__info *info, bool probe);

/*
 * Whether the node this context is connected to still answers: a fresh
 * connection to it (TLS and AUTH as configured) and a PING, by
 * LOCKD__PROBE_TIMEOUT_MS.  Any reply, even an error, says it is alive; no
 * reply says its process is stopped or wedged (its kernel still accepts
 * connections and keeps the old one open, so only a request can tell).
 */
static bool
lockd__probe(lockd_context *c)
{
	struct lockd__state *s = c->state, ps;
	lockd_context pc;
	struct lockd__request r;
	lockd_reply reply;
	int rc;

	memset(&ps, 0, sizeof(ps));
	memset(&pc, 0, sizeof(pc));
	pc.fd = -1;
	pc.state = &ps;
	ps.ats = ps.at = s->at;   /* borrowed: never freed here */
	ps.n_ats = 1;
	ps.connect_timeout_ms = ps.command_timeout_ms =
	    LOCKD__PROBE_TIMEOUT_MS;
	lockd__queue_init(&ps.pending, sizeof(struct lockd__pending));
	rc = lockd__open_one(&pc);
	if (rc == LOCKD_OK)
		rc = lockd__request_ping(&r, pc.errstr);
	if (rc == LOCKD_OK)
		rc = lockd__append(&pc, &r, LOCKD_OK);
	if (rc == LOCKD_OK)
		rc = lockd__get_reply_info(&pc, &reply, NULL, false);
	lockd__reset_stream(&pc);
	free(ps.out);
	free(ps.in);
	lockd__queue_free(&ps.pending);
	return !lockd_error_is_fatal(rc);
}

static int
lockd__begin_reply(lockd_context *c)
{
	if (lockd__dead(c))
		return c->err;
	if (c->state->pending.count == 0)
		return lockd__fail(c, LOCKD_ERR_INVALID, "no reply is due");
	return LOCKD_OK;
}

/*
 * lockd_get_reply, also filling *info (NULL: not wanted); a LIST line
 * before its END comes back as LOCKD__MORE.  probe: after every
 * LOCKD__PROBE_IDLE_MS without a byte from the node, check that it still
 * answers (lockd__probe); when it does not, the call fails as if the
 * connection broke, for fail-over to move on.
 */
static int
lockd__get_reply_info(lockd_context *c, lockd_reply *reply,
    struct lockd__info *info, bool probe)
{
	struct lockd__state *s = c->state;
	int64_t deadline, wake, heard;
	int rc, revents;

	if (lockd__begin_reply(c) != LOCKD_OK)
		return c->err;
	if (lockd__flush_until(c, lockd__deadline_after(
	    s->command_timeout_ms)) != LOCKD_OK)
		return c->err;
	deadline = lockd__head_deadline(s, 0);
	heard = lockd_now_ms();
	for (;;) {
		rc = lockd__take_reply(c, reply, info);
		if (rc != LOCKD_AGAIN)
			return rc;
		wake = deadline;
		if (probe && (wake < 0 || heard + LOCKD__PROBE_IDLE_MS < wake))
			wake = heard + LOCKD__PROBE_IDLE_MS;
		revents = lockd__wait(c->fd, POLLIN, wake);
		if (revents == 0 && wake != deadline) {
			if (lockd__probe(c)) {
				heard = lockd_now_ms();
				continue;
			}
			if (s->at->unix_path != NULL)
				return lockd__fail(c, LOCKD_ERR_TIMEOUT,
				    "%s stopped answering (no reply to a "
				    "probe within %d ms)", s->at->unix_path,
				    LOCKD__PROBE_TIMEOUT_MS);
			return lockd__fail(c, LOCKD_ERR_TIMEOUT, "%s:%d stopped "
			    "answering (no reply to a probe within %d ms)",
			    s->at->host, s->at->port, LOCKD__PROBE_TIMEOUT_MS);
		}
		if (revents == 0)
			return lockd__fail(c, LOCKD_ERR_TIMEOUT,
			    "no reply within the command timeout");
		if (revents < 0)
			return lockd__fail(c, LOCKD_ERR_IO, "poll: %s",
			    strerror(errno));
		if (lockd__read_some(c) < 0)
			return c->err;
		heard = lockd_now_ms();
	}
}

int
lockd_get_reply(lockd_context *c, lockd_reply *reply)
{
	return lockd__get_reply_info(c, reply, NULL, false);
}

/* lockd_poll_reply, also filling *info (NULL: not wanted). */
static int
lockd__poll_reply_info(lockd_context *c, lockd_reply *reply,
    struct lockd__info *info)
{
	int rc;

	if (lockd__begin_reply(c) != LOCKD_OK)
		return c->err;
	rc = lockd__take_reply(c, reply, info);
	if (rc != LOCKD_AGAIN)
		return rc;
	if (lockd__read_some(c) < 0)
		return c->err;
	rc = lockd__take_reply(c, reply, info);
	return rc == LOCKD_AGAIN ? lockd__succeed(c, LOCKD_AGAIN) : rc;
}

int
lockd_poll_reply(lockd_context *c, lockd_reply *reply)
{
	return lockd__poll_reply_info(c, reply, NULL);
}

/*
 * lockd_get_reply_holders and lockd_poll_reply_holders: holders' size
 * checked before a reply is read, then every field it covers written, with
 * a successful STATUS's holders or with zeroes (limit 0: not a STATUS's).
 */
static int
lockd__reply_holders(lockd_context *c, lockd_reply *reply,
    lockd_lock_holders *holders, bool poll)
{
	struct lockd__info got;
	int rc;

	if (holders != NULL && lockd__holders_check(holders, c->errstr) !=
	    LOCKD_OK)
		return lockd__record(c, LOCKD_ERR_INVALID);
	memset(&got, 0, sizeof(got));
	rc = poll ? lockd__poll_reply_info(c, reply, &got) :
	    lockd__get_reply_info(c, reply, &got, false);
	if (holders == NULL)
		return rc;
	if (rc != LOCKD_OK || reply->command != LOCKD_CMD_STATUS)
		memset(&got.holders, 0, sizeof(got.holders));
	lockd__holders_copy(holders, &got.holders);
	return rc;
}

int
lockd_get_reply_holders(lockd_context *c, lockd_reply *reply,
    lockd_lock_holders *holders)
{
	return lockd__reply_holders(c, reply, holders, false);
}

int
lockd_poll_reply_holders(lockd_context *c, lockd_reply *reply,
    lockd_lock_holders *holders)
{
	return lockd__reply_holders(c, reply, holders, true);
}

/*
 * Blocking calls: append, then read that one reply.  They refuse to run
 * behind pipelined replies, which they would otherwise read instead of
 * their own.
 */

/* Whether this context reconnects and repeats requests (see lockd.h). */
static bool
lockd__fails_over(const lockd_context *c)
{
	return c->state->failover_timeout_ms > 0 && !c->state->unusable;
}

static int
lockd__check_idle(lockd_context *c)
{
	if (lockd__dead(c))
		return lockd__fails_over(c) ? LOCKD_OK : c->err;
	if (c->state->pending.count > 0)
		return lockd__fail(c, LOCKD_ERR_INVALID,
		    "pipelined replies are still due");
	return LOCKD_OK;
}

/*
 * Whether r may go out again after its connection broke with its fate
 * unknown: everything but an ACQUIRE or TRY without a rid, which could
 * queue behind its own grant or be granted twice.
 */
static bool
lockd__repeatable(const struct lockd__request *r)
{
	if (r->pending.command == LOCKD_CMD_ACQUIRE ||
	    r->pending.command == LOCKD_CMD_TRY)
		return lockd__request_has_rid(r);
	return true;
}

/* Sleeps ms (bounded by the caller), through signals. */
static void
lockd__sleep_ms(int64_t ms)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ms / 1000),
		.tv_nsec = (long)(ms % 1000) * 1000000L,
	};

	while (ms > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/*
 * Appends r (rc: how building it went) and reads its one reply; with
 * fail-over on, follows NOTLEADER and reconnects as lockd.h says, within
 * the fail-over time and LOCKD_FAILOVER_HOPS_MAX attempts.
 */
static int
lockd__call(lockd_context *c, struct lockd__request *r, int rc,
    lockd_reply *reply, struct lockd__info *info)
{
	struct lockd__state *s = c->state;
	int64_t start = lockd_now_ms(), began = start,
	    backoff = LOCKD__FAILOVER_BACKOFF_MS, left;
	char last[LOCKD_ERRSTR_SIZE];
	int attempt;

	if (rc != LOCKD_OK)
		return lockd__record(c, rc);
	for (attempt = 0; ; attempt++) {
		if (attempt > 0 || lockd__dead(c)) {
			if (!lockd__fails_over(c))
				return c->err;
			/* An attempt that ran longer than the fail-over time
			 * was a healthy wait (an ACQUIRE, a WATCH): the
			 * fail-over time counts from its end.  Not one that
			 * timed out: a node that hangs is no healthy wait, and
			 * a search would never end among such nodes. */
			if (rc != LOCKD_ERR_TIMEOUT &&
			    lockd_now_ms() - began > s->failover_timeout_ms) {
				start = lockd_now_ms();
				attempt = 1;
				backoff = LOCKD__FAILOVER_BACKOFF_MS;
			}
			left = start + s->failover_timeout_ms - lockd_now_ms();
			if (attempt >= LOCKD_FAILOVER_HOPS_MAX || left <= 0) {
				snprintf(last, sizeof(last), "%s", c->errstr);
				rc = c->err;
				lockd__fail(c, rc, "no leader answered in %d "
				    "attempts over %lld ms; last: %.60s",
				    attempt, (long long)(lockd_now_ms() -
				    start), last);
				return rc;
			}
			/* Each endpoint once at once; then with a pause. */
			if (attempt >= (int)s->n_ats) {
				lockd__sleep_ms(backoff < left ? backoff :
				    left);
				if (backoff < LOCKD__FAILOVER_BACKOFF_MAX_MS)
					backoff *= 2;
				if (backoff > LOCKD__FAILOVER_BACKOFF_MAX_MS)
					backoff = LOCKD__FAILOVER_BACKOFF_MAX_MS;
			}
			rc = lockd__reopen(c);
			if (lockd_error_is_fatal(rc))
				continue;
			if (rc != LOCKD_OK)
				return rc;
		}
		if (lockd__append(c, r, LOCKD_OK) != LOCKD_OK)
			return c->err;
		began = lockd_now_ms();
		rc = lockd__get_reply_info(c, reply, info,
		    lockd__fails_over(c));
		if (rc == LOCKD_ERR_NOTLEADER && lockd__fails_over(c))
			continue;
		if (lockd_error_is_fatal(rc) && rc != LOCKD_ERR_PROTOCOL &&
		    lockd__fails_over(c) && lockd__repeatable(r))
			continue;
		return rc;
	}
}

static int lockd__acquire_ex(lockd_context *c, bool try_only,
    const char *name, const lockd_acquire_options *options,
    const lockd_kind *kind, const char *rid, lockd_lease *lease);

int
lockd_acquire(lockd_context *c, const char *name, int64_t lease_ms,
    int64_t wait_ms, int onclose, lockd_lease *lease)
{
	lockd_acquire_options o = { lease_ms, wait_ms, onclose, NULL, 0 };

	return lockd__acquire_ex(c, false, name, &o, NULL, NULL, lease);
}

int
lockd_try(lockd_context *c, const char *name, int64_t lease_ms, int onclose,
    lockd_lease *lease)
{
	lockd_acquire_options o = { lease_ms, 0, onclose, NULL, 0 };

	return lockd__acquire_ex(c, true, name, &o, NULL, NULL, lease);
}

int
lockd_renew(lockd_context *c, lockd_lease *lease, int64_t lease_ms)
{
	struct lockd__request r;
	lockd_reply reply;
	int rc;

	if (lockd__check_idle(c) != LOCKD_OK)
		return c->err;
	rc = lockd__call(c, &r, lockd__request_renew(&r, lease, lease_ms,
	    c->errstr), &reply, NULL);
	if (rc == LOCKD_OK) {
		lease->lease_ms = reply.lease.lease_ms;
		lease->deadline_ms = reply.lease.deadline_ms;
	}
	return rc;
}

int
lockd_release(lockd_context *c, const lockd_lease *lease)
{
	struct lockd__request r;
	lockd_reply reply;

	if (lockd__check_idle(c) != LOCKD_OK)
		return c->err;
	return lockd__call(c, &r, lockd__request_release(&r, lease,
	    c->errstr), &reply, NULL);
}

int
lockd_status(lockd_context *c, const char *name, lockd_lock_status *status)
{
	struct lockd__request r;
	lockd_reply reply;
	int rc;

	if (lockd__check_idle(c) != LOCKD_OK)
		return c->err;
	rc = lockd__call(c, &r, lockd__request_status(&r, name, c->errstr),
	    &reply, NULL);
	if (rc == LOCKD_OK && status != NULL)
		*status = reply.status;
	return rc;
}

int
lockd_ping(lockd_context *c)
{
	struct lockd__request r;
	lockd_reply reply;

	if (lockd__check_idle(c) != LOCKD_OK)
		return c->err;
	return lockd__call(c, &r, lockd__request_ping(&r, c->errstr), &reply,
	    NULL);
}

int
lockd_stats(lockd_context *c, char *out, size_t size)
{
	struct lockd__request r;
	struct lockd__info got;
	lockd_reply reply;
	int rc;

	if (out == NULL || size == 0) {
		snprintf(c->errstr, sizeof(c->errstr), "no room for STATS");
		return lockd__record(c, LOCKD_ERR_INVALID);
	}
	if (lockd__check_idle(c) != LOCKD_OK)
		return c->err;
	rc = lockd__call(c, &r, lockd__request_stats(&r, c->errstr), &reply,
	    &got);
	if (rc == LOCKD_OK)
		snprintf(out, size, "%s", got.stats);
	return rc;
}

/* ---- protocol v2 ------------------------------------------------------ */

/* request.h: shared with the libuv client. */
bool
lockd__rid_new(char *rid)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char bytes[16];
	size_t i;

	if (getrandom(bytes, sizeof(bytes), 0) != (ssize_t)sizeof(bytes))
		return false;
	for (i = 0; i < sizeof(bytes); i++) {
		rid[2 * i] = hex[bytes[i] >> 4];
		rid[2 * i + 1] = hex[bytes[i] & 15];
	}
	rid[2 * sizeof(bytes)] = '\0';
	return true;
}

/*
 * ACQUIRE or TRY.  With fail-over on, a call without a rid gets one of
 * its own, so that a repeat after a broken connection finds the grant the
 * first attempt may have had instead of queueing behind it.
 */
static int
lockd__acquire_ex(lockd_context *c, bool try_only, const char *name,
    const lockd_acquire_options *options, const lockd_kind *kind,
    const char *rid, lockd_lease *lease)
{
	char own[LOCKD__RID_MAX + 1];
	struct lockd__request r;
	lockd_reply reply;
	int rc;

	if (lockd__check_idle(c) != LOCKD_OK)
		return c->err;
	if (rid == NULL && lockd__fails_over(c) && lockd__rid_new(own))
		rid = own;
	rc = lockd__call(c, &r, lockd__request_acquire_kind(&r, try_only,
	    name, options, kind, rid, c->errstr), &reply, NULL);
	if (rc == LOCKD_OK && lease != NULL)
		*lease = reply.lease;
	return rc;
}

int
lockd_acquire_ex(lockd_context *c, const char *name,
    const lockd_acquire_options *options, lockd_lease *lease)
{
	return lockd__acquire_ex(c, false, name, options, NULL, NULL, lease);
}

int
lockd_try_ex(lockd_context *c, const char *name,
    const lockd_acquire_options *options, lockd_lease *lease)
{
	return lockd__acquire_ex(c, true, name, options, NULL, NULL, lease);
}

int
lockd_acquire_rid(lockd_context *c, const char *name,
    const lockd_acquire_options *options, const char *rid, lockd_lease *lease)
{
	if (rid == NULL)
		return lockd__fail(c, LOCKD_ERR_INVALID, "no rid given");
	return lockd__acquire_ex(c, false, name, options, NULL, rid, lease);
}

int
lockd_try_rid(lockd_context *c, const char *name,
    const lockd_acquire_options *options, const char *rid, lockd_lease *lease)
{
	if (rid == NULL)
		return lockd__fail(c, LOCKD_ERR_INVALID, "no rid given");
	return lockd__acquire_ex(c, true, name, options, NULL, rid, lease);
}

int
lockd_acquire_kind(lockd_context *c, const char *name,
    const lockd_acquire_options *options, const lockd_kind *kind,
    const char *rid, lockd_lease *lease)
{
	return lockd__acquire_ex(c, false, name, options, kind, rid, lease);
}

int
lockd_try_kind(lockd_context *c, const char *name,
    const lockd_acquire_options *options, const lockd_kind *kind,
    const char *rid, lockd_lease *lease)
{
	return lockd__acquire_ex(c, true, name, options, kind, rid, lease);
}

/*
 * Sends r (rc: how formatting it went) and gives what its STATUS-like
 * answer says to *info and *holders (either may be NULL), holders' size
 * checked before anything is sent.  CHECK's STALE is an answer too.
 */
static int
lockd__info_call(lockd_context *c, struct lockd__request *r, int rc,
    lockd_lock_info *info, lockd_lock_holders *holders)
{
	lockd_reply reply;
	struct lockd__info got;

	if (holders != NULL && lockd__holders_check(holders, c->errstr) !=
	    LOCKD_OK)
		return lockd__record(c, LOCKD_ERR_INVALID);
	rc = lockd__call(c, r, rc, &reply, &got);
	if (rc != LOCKD_OK && rc != LOCKD_STALE)
		return rc;
	if (info != NULL)
		*info = got.lock;
	if (holders != NULL)
		lockd__holders_copy(holders, &got.holders);
	return rc;
}

int
lockd_status_info(lockd_context *c, const char *name, lockd_lock_info *info)
{
	return lockd_status_holders(c, name, info, NULL);
}

int
lockd_status_holders(lockd_context *c, const char *name,
    lockd_lock_info *info, lockd_lock_holders *holders)
{
	struct lockd__request r;

	if (lockd__check_idle(c) != LOCKD_OK)
		return c->err;
	return lockd__info_call(c, &r, lockd__request_status(&r, name,
	    c->errstr), info, holders);
}

int
lockd_force(lockd_context *c, const char *name, uint64_t fence)
{
	struct lockd__request r;
	lockd_reply reply;

	if (lockd__check_idle(c) != LOCKD_OK)
		return c->err;
	return lockd__call(c, &r, lockd__request_force(&r, name, fence,
	    c->errstr), &reply, NULL);
}

int
lockd_check(lockd_context *c, const char *name, uint64_t fence,
    lockd_lock_info *info)
{
	struct lockd__request r;

	if (lockd__check_idle(c) != LOCKD_OK)
		return c->err;
	return lockd__info_call(c, &r, lockd__request_check(&r, name, fence,
	    c->errstr), info, NULL);
}

int
lockd_watch(lockd_context *c, const char *name, int64_t fence,
    int64_t wait_ms, lockd_lock_info *info)
{
	return lockd_watch_holders(c, name, fence, wait_ms, info, NULL);
}

int
lockd_watch_holders(lockd_context *c, const char *name, int64_t fence,
    int64_t wait_ms, lockd_lock_info *info, lockd_lock_holders *holders)
{
	struct lockd__request r;

	if (lockd__check_idle(c) != LOCKD_OK)
		return c->err;
	return lockd__info_call(c, &r, lockd__request_watch(&r, name, fence,
	    wait_ms, c->errstr), info, holders);
}

/* LIST, calling fn or holders_fn (whichever is not NULL) per lock. */
static int
lockd__list(lockd_context *c, const char *prefix, const char *after,
    int limit, lockd_list_fn *fn, lockd_list_holders_fn *holders_fn,
    void *arg, char *next)
{
	struct lockd__request r;
	lockd_reply reply;
	struct lockd__info info;
	bool stopped = false;
	int rc, stop;

	/* The request is formatted before next is touched: a caller may
	 * pass the last call's next as both. */
	if (lockd__check_idle(c) != LOCKD_OK)
		return c->err;
	rc = lockd__request_list(&r, prefix, after, limit, c->errstr);
	if (next != NULL)
		next[0] = '\0';
	rc = lockd__call(c, &r, rc, &reply, &info);
	/* Each LOCK line; the END line ends the reply (at most 1000 lines,
	 * the server's bound on one LIST). */
	while (rc == LOCKD__MORE) {
		if (!stopped) {
			stop = 0;
			if (fn != NULL)
				stop = fn(arg, &info.lock);
			else if (holders_fn != NULL)
				stop = holders_fn(arg, &info.lock,
				    &info.holders);
			stopped = stop != 0;
		}
		rc = lockd__get_reply_info(c, &reply, &info, false);
	}
	if (rc == LOCKD_OK && next != NULL)
		snprintf(next, LOCKD_NAME_MAX + 1, "%s", info.lock.name);
	return rc;
}

int
lockd_list(lockd_context *c, const char *prefix, const char *after,
    int limit, lockd_list_fn *fn, void *arg, char *next)
{
	return lockd__list(c, prefix, after, limit, fn, NULL, arg, next);
}

int
lockd_list_holders(lockd_context *c, const char *prefix, const char *after,
    int limit, lockd_list_holders_fn *fn, void *arg, char *next)
{
	return lockd__list(c, prefix, after, limit, NULL, fn, arg, next);
}
