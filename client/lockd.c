/*
 * lockd.c - liblockd's context: connecting, buffering requests, reading
 * replies in order, and the blocking calls made of those two.
 *
 * Requests are formatted with proto_format_request() and replies parsed with
 * proto_parse_reply(), the code the daemon itself runs; this file adds only
 * what a client needs around them: sockets with deadlines, a queue of the
 * replies still due (to check that each reply answers its request), and the
 * mapping of replies onto results.  It touches nothing global: no signal
 * handler, no static state.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "client/lockd.h"
#include "proto/proto.h"

#define LOCKD__REPLY_LINE_MAX PROTO_LINE_MAX_DEFAULT
#define LOCKD__REQUEST_MAX 640   /* the longest request: RENEW, 255-byte name */
#define LOCKD__READ_CHUNK 4096
#define LOCKD__WRITE_SLICE 16384
/*
 * Requests sent whose replies have not arrived: at most this many, so that
 * the replies lockd holds for us stay far below its --max-output (it cuts
 * off a client that leaves more unread); 512 replies are ~170 kB at most.
 */
#define LOCKD__MAX_IN_FLIGHT 512

/* A request sent or buffered whose reply is still due. */
struct lockd__pending {
	lockd_command command;
	int64_t wait_ms;      /* ACQUIRE: LOCKD_WAIT_FOREVER or ms; else 0 */
	int64_t sent_ms;      /* lockd_now_ms() before the send that finished it */
	uint64_t end;         /* stream offset just past the request */
	size_t name_len;
	char name[LOCKD_NAME_MAX + 1];
	char handle[LOCKD_HANDLE_SIZE];   /* RENEW: carried into the reply */
	uint64_t fence;                   /* RENEW: the handle's */
};

struct lockd__state {
	char *host;
	char *unix_path;
	int port;
	int64_t connect_timeout_ms;
	int64_t command_timeout_ms;

	char *out;            /* requests not yet written */
	size_t out_len, out_cap, out_pos;
	uint64_t appended;    /* bytes appended since connecting */
	uint64_t written;     /* bytes written since connecting */

	char *in;             /* bytes read, not yet parsed */
	size_t in_len, in_cap, in_pos;

	struct lockd__pending *pending;   /* a queue: [first, first + count) */
	size_t first, count, cap;
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
	case LOCKD_ERR_IO: return "IO";
	case LOCKD_ERR_EOF: return "EOF";
	case LOCKD_ERR_PROTOCOL: return "PROTOCOL";
	case LOCKD_ERR_TIMEOUT: return "TIMEOUT";
	case LOCKD_ERR_OOM: return "OOM";
	case LOCKD_ERR_INVALID: return "INVALID";
	case LOCKD_ERR_BADREQ: return "BADREQ";
	case LOCKD_ERR_BADARG: return "BADARG";
	case LOCKD_ERR_TOOLONG: return "TOOLONG";
	case LOCKD_ERR_WAIT_TIMEOUT: return "WAIT_TIMEOUT";
	case LOCKD_ERR_CONFLICT: return "CONFLICT";
	case LOCKD_ERR_LIMIT: return "LIMIT";
	case LOCKD_ERR_UNAVAILABLE: return "UNAVAILABLE";
	case LOCKD_ERR_OVERFLOW: return "OVERFLOW";
	case LOCKD_ERR_SHUTDOWN: return "SHUTDOWN";
	default: return "?";
	}
}

int
lockd_error_is_fatal(int code)
{
	return code == LOCKD_ERR_IO || code == LOCKD_ERR_EOF ||
	    code == LOCKD_ERR_PROTOCOL || code == LOCKD_ERR_TIMEOUT;
}

int
lockd_parse_duration(const char *s, int64_t *ms)
{
	if (s == NULL || ms == NULL || !proto_parse_duration(s, strlen(s), ms))
		return LOCKD_ERR_INVALID;
	return LOCKD_OK;
}

/* The server's error codes, in proto's order, as our results. */
static int
lockd__server_error(enum proto_error_code code)
{
	switch (code) {
	case PROTO_ERR_BADREQ: return LOCKD_ERR_BADREQ;
	case PROTO_ERR_BADARG: return LOCKD_ERR_BADARG;
	case PROTO_ERR_TOOLONG: return LOCKD_ERR_TOOLONG;
	case PROTO_ERR_TIMEOUT: return LOCKD_ERR_WAIT_TIMEOUT;
	case PROTO_ERR_CONFLICT: return LOCKD_ERR_CONFLICT;
	case PROTO_ERR_LIMIT: return LOCKD_ERR_LIMIT;
	case PROTO_ERR_UNAVAILABLE: return LOCKD_ERR_UNAVAILABLE;
	case PROTO_ERR_OVERFLOW: return LOCKD_ERR_OVERFLOW;
	case PROTO_ERR_SHUTDOWN: return LOCKD_ERR_SHUTDOWN;
	default: return LOCKD_ERR_PROTOCOL;
	}
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

	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	s->out_len = s->out_pos = 0;
	s->in_len = s->in_pos = 0;
	s->first = s->count = s->sent = s->received = 0;
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
	return lockd_error_is_fatal(c->err);
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
	if (strlen(s->unix_path) >= sizeof(sun.sun_path))
		return lockd__fail(c, LOCKD_ERR_IO, "unix socket path too long");
	memcpy(sun.sun_path, s->unix_path, strlen(s->unix_path));
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return lockd__fail(c, LOCKD_ERR_IO, "socket: %s",
		    strerror(errno));
	rc = lockd__connect_fd(c, c->fd, (struct sockaddr *)&sun, sizeof(sun),
	    deadline, s->unix_path);
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
	snprintf(port, sizeof(port), "%d", s->port);
	snprintf(where, sizeof(where), "%s:%d", s->host, s->port);
	rc = getaddrinfo(s->host, port, &hints, &list);
	if (rc != 0)
		return lockd__fail(c, LOCKD_ERR_IO, "resolve %s: %s", s->host,
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

static int
lockd__open(lockd_context *c)
{
	struct lockd__state *s = c->state;
	int64_t deadline = lockd__deadline_after(s->connect_timeout_ms);
	int rc;

	c->err = 0;
	c->errstr[0] = '\0';
	rc = s->unix_path != NULL ? lockd__open_unix(c, deadline) :
	    lockd__open_tcp(c, deadline);
	return rc == 0 ? lockd__succeed(c, LOCKD_OK) : rc;
}

lockd_context *
lockd_connect(const lockd_options *options)
{
	static const lockd_options defaults;
	const lockd_options *o = options != NULL ? options : &defaults;
	lockd_context *c;
	struct lockd__state *s;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->fd = -1;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		goto fail;
	c->state = s;
	s->host = strdup(o->host != NULL ? o->host : LOCKD_DEFAULT_HOST);
	if (s->host == NULL)
		goto fail;
	if (o->unix_path != NULL &&
	    (s->unix_path = strdup(o->unix_path)) == NULL)
		goto fail;
	s->port = o->port > 0 ? o->port : LOCKD_DEFAULT_PORT;
	s->connect_timeout_ms = o->connect_timeout_ms > 0 ?
	    o->connect_timeout_ms : 0;
	s->command_timeout_ms = o->command_timeout_ms > 0 ?
	    o->command_timeout_ms : 0;
	if (o->port < 0 || o->port > 65535)
		lockd__fail(c, LOCKD_ERR_IO, "bad port %d", o->port);
	else
		lockd__open(c);
	return c;
fail:
	lockd_free(c);
	return NULL;
}

int
lockd_reconnect(lockd_context *c)
{
	lockd__reset_stream(c);
	return lockd__open(c);
}

void
lockd_free(lockd_context *c)
{
	struct lockd__state *s;

	if (c == NULL)
		return;
	if (c->fd >= 0)
		close(c->fd);
	if ((s = c->state) != NULL) {
		free(s->host);
		free(s->unix_path);
		free(s->out);
		free(s->in);
		free(s->pending);
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
lockd_pending(const lockd_context *c)
{
	return (int)c->state->count;
}

/*
 * Appending.  A request is checked and formatted completely before anything
 * is changed, so a refused append leaves the context as it was.
 */

static int
lockd__check_name(lockd_context *c, const char *name)
{
	if (name == NULL || !proto_valid_name(name, strlen(name)))
		return lockd__fail(c, LOCKD_ERR_INVALID,
		    "invalid lock name (1 to %d bytes, no blanks or control "
		    "bytes)", LOCKD_NAME_MAX);
	return LOCKD_OK;
}

static int
lockd__set_duration(lockd_context *c, const char *what, int64_t ms,
    bool *has, int64_t *out)
{
	if (ms < 0 || ms > PROTO_DURATION_MAX_MS)
		return lockd__fail(c, LOCKD_ERR_INVALID,
		    "%s must be 0 to %lld ms", what,
		    (long long)PROTO_DURATION_MAX_MS);
	*has = true;
	*out = ms;
	return LOCKD_OK;
}

/* Makes room for one more pending entry; false when out of memory. */
static bool
lockd__reserve_pending(struct lockd__state *s)
{
	struct lockd__pending *p;
	size_t cap;

	if (s->first + s->count < s->cap)
		return true;
	if (s->first > 0) {
		memmove(s->pending, s->pending + s->first,
		    s->count * sizeof(*s->pending));
		s->first = 0;
		return true;
	}
	cap = s->cap == 0 ? 8 : s->cap * 2;
	if ((p = realloc(s->pending, cap * sizeof(*p))) == NULL)
		return false;
	s->pending = p;
	s->cap = cap;
	return true;
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

/* Formats req and queues it with what its reply will need. */
static int
lockd__append(lockd_context *c, const struct proto_request *req,
    const char *handle)
{
	struct lockd__state *s = c->state;
	struct lockd__pending *p;
	char line[LOCKD__REQUEST_MAX];
	size_t n;

	n = proto_format_request(line, sizeof(line), req);
	if (n == 0)
		return lockd__fail(c, LOCKD_ERR_INVALID,
		    "request cannot be formatted");
	if (!lockd__reserve_pending(s) || !lockd__reserve_out(s, n))
		return lockd__fail(c, LOCKD_ERR_OOM, "out of memory");
	memcpy(s->out + s->out_len, line, n);
	s->out_len += n;
	s->appended += n;

	p = &s->pending[s->first + s->count++];
	memset(p, 0, sizeof(*p));
	/* req was filled by the caller's append (the analyzer cannot follow
	 * it through the function pointer). */
	p->command = (lockd_command)req->command; /* NOLINT(clang-analyzer-core.uninitialized.Assign) */
	p->wait_ms = req->has_wait ? req->wait_ms : LOCKD_WAIT_FOREVER;
	if (req->command != PROTO_CMD_ACQUIRE)
		p->wait_ms = 0;
	p->sent_ms = -1;
	p->end = s->appended;
	p->name_len = req->name_len;
	if (req->name_len > 0)
		memcpy(p->name, req->name, req->name_len);
	if (handle != NULL)
		snprintf(p->handle, sizeof(p->handle), "%s", handle);
	p->fence = req->handle.fence;
	return lockd__succeed(c, LOCKD_OK);
}

/* The checks every append starts with. */
static int
lockd__begin(lockd_context *c, struct proto_request *req,
    enum proto_command command, const char *name)
{
	if (lockd__dead(c))
		return c->err;
	memset(req, 0, sizeof(*req));
	req->command = command;
	if (name != NULL) {
		if (lockd__check_name(c, name) != LOCKD_OK)
			return c->err;
		req->name = name;
		req->name_len = strlen(name);
	}
	return LOCKD_OK;
}

/* The same for RENEW and RELEASE, which name a lease. */
static int
lockd__begin_lease(lockd_context *c, struct proto_request *req,
    enum proto_command command, const lockd_lease *lease)
{
	if (lease == NULL || strnlen(lease->name, sizeof(lease->name)) ==
	    sizeof(lease->name)) {
		if (lockd__dead(c))
			return c->err;
		return lockd__fail(c, LOCKD_ERR_INVALID, "no lease given");
	}
	if (lockd__begin(c, req, command, lease->name) != LOCKD_OK)
		return c->err;
	if (!proto_parse_handle(lease->handle, strnlen(lease->handle,
	    sizeof(lease->handle)), &req->handle))
		return lockd__fail(c, LOCKD_ERR_INVALID, "invalid handle");
	return LOCKD_OK;
}

static int
lockd__set_onclose(lockd_context *c, struct proto_request *req, int onclose)
{
	if (onclose != LOCKD_ONCLOSE_KEEP && onclose != LOCKD_ONCLOSE_RELEASE)
		return lockd__fail(c, LOCKD_ERR_INVALID, "bad onclose value");
	/* keep is the server's default: say nothing. */
	if (onclose == LOCKD_ONCLOSE_RELEASE) {
		req->has_onclose = true;
		req->onclose = PROTO_ONCLOSE_RELEASE;
	}
	return LOCKD_OK;
}

static int
lockd__set_lease(lockd_context *c, struct proto_request *req,
    int64_t lease_ms)
{
	/* 0 asks for the server's default, said by leaving the option out. */
	if (lease_ms == 0)
		return LOCKD_OK;
	return lockd__set_duration(c, "lease", lease_ms, &req->has_lease,
	    &req->lease_ms);
}

int
lockd_append_acquire(lockd_context *c, const char *name, int64_t lease_ms,
    int64_t wait_ms, int onclose)
{
	struct proto_request req;

	if (lockd__begin(c, &req, PROTO_CMD_ACQUIRE, name) != LOCKD_OK ||
	    lockd__set_lease(c, &req, lease_ms) != LOCKD_OK ||
	    lockd__set_onclose(c, &req, onclose) != LOCKD_OK)
		return c->err;
	if (wait_ms != LOCKD_WAIT_FOREVER && lockd__set_duration(c, "wait",
	    wait_ms, &req.has_wait, &req.wait_ms) != LOCKD_OK)
		return c->err;
	return lockd__append(c, &req, NULL);
}

int
lockd_append_try(lockd_context *c, const char *name, int64_t lease_ms,
    int onclose)
{
	struct proto_request req;

	if (lockd__begin(c, &req, PROTO_CMD_TRY, name) != LOCKD_OK ||
	    lockd__set_lease(c, &req, lease_ms) != LOCKD_OK ||
	    lockd__set_onclose(c, &req, onclose) != LOCKD_OK)
		return c->err;
	return lockd__append(c, &req, NULL);
}

int
lockd_append_renew(lockd_context *c, const lockd_lease *lease,
    int64_t lease_ms)
{
	struct proto_request req;

	if (lockd__begin_lease(c, &req, PROTO_CMD_RENEW, lease) != LOCKD_OK ||
	    lockd__set_lease(c, &req, lease_ms) != LOCKD_OK)
		return c->err;
	return lockd__append(c, &req, lease->handle);
}

int
lockd_append_release(lockd_context *c, const lockd_lease *lease)
{
	struct proto_request req;

	if (lockd__begin_lease(c, &req, PROTO_CMD_RELEASE, lease) != LOCKD_OK)
		return c->err;
	return lockd__append(c, &req, lease->handle);
}

int
lockd_append_status(lockd_context *c, const char *name)
{
	struct proto_request req;

	if (lockd__begin(c, &req, PROTO_CMD_STATUS, name) != LOCKD_OK)
		return c->err;
	return lockd__append(c, &req, NULL);
}

int
lockd_append_ping(lockd_context *c)
{
	struct proto_request req;

	if (lockd__begin(c, &req, PROTO_CMD_PING, NULL) != LOCKD_OK)
		return c->err;
	return lockd__append(c, &req, NULL);
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

/* Reads what the socket holds: 1 read some, 0 nothing now, <0 fatal. */
static int
lockd__read_some(lockd_context *c)
{
	struct lockd__state *s = c->state;
	ssize_t n;
	char *p;
	size_t cap;

	if (s->in_pos > 0) {
		memmove(s->in, s->in + s->in_pos, s->in_len - s->in_pos);
		s->in_len -= s->in_pos;
		s->in_pos = 0;
	}
	if (s->in_cap - s->in_len < LOCKD__READ_CHUNK) {
		cap = s->in_cap == 0 ? (size_t)2 * LOCKD__READ_CHUNK : s->in_cap * 2;
		if ((p = realloc(s->in, cap)) == NULL)
			return lockd__fail(c, LOCKD_ERR_OOM,
			    "out of memory for replies");
		s->in = p;
		s->in_cap = cap;
	}
	for (;;) {
		n = recv(c->fd, s->in + s->in_len, s->in_cap - s->in_len,
		    MSG_DONTWAIT);
		if (n > 0) {
			lockd__count_lines(s, s->in + s->in_len, (size_t)n);
			s->in_len += (size_t)n;
			return 1;
		}
		if (n == 0)
			return lockd__fail(c, LOCKD_ERR_EOF,
			    "server closed the connection");
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return lockd__fail(c, LOCKD_ERR_IO, "read: %s",
		    strerror(errno));
	}
}

/* Records when the requests the last write finished went out. */
static void
lockd__mark_sent(struct lockd__state *s, int64_t before_ms)
{
	while (s->sent < s->count &&
	    s->pending[s->first + s->sent].end <= s->written) {
		s->pending[s->first + s->sent].sent_ms = before_ms;
		s->sent++;
	}
}

/*
 * When the reply to p must have come (-1: never): replies come in request
 * order, so only p's own wait can hold it back; it is due by its send time
 * plus its wait, and the command timeout counts from then (or from now).
 */
static int64_t
lockd__reply_deadline(const struct lockd__state *s,
    const struct lockd__pending *p)
{
	int64_t start = lockd_now_ms();

	if (s->command_timeout_ms <= 0 || p->wait_ms == LOCKD_WAIT_FOREVER)
		return -1;
	if (p->sent_ms + p->wait_ms > start)
		start = p->sent_ms + p->wait_ms;
	return start + s->command_timeout_ms;
}

/* The stream offset up to which requests may go out now (the window). */
static uint64_t
lockd__send_limit(const struct lockd__state *s)
{
	size_t last = s->received + LOCKD__MAX_IN_FLIGHT;

	if (last >= s->count)
		return s->appended;
	return s->pending[s->first + last - 1].end;
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
		limit = lockd__send_limit(s);
		if (limit <= s->written) {
			revents = lockd__wait(c->fd, POLLIN,
			    lockd__reply_deadline(s,
			    &s->pending[s->first + s->received]));
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
		n = send(c->fd, s->out + s->out_pos, len,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
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
			return lockd__fail(c, LOCKD_ERR_IO, "write: %s",
			    strerror(errno));
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

/* Copies a proto name into a NUL-terminated field. */
static void
lockd__copy_name(char *dst, const char *src, size_t len)
{
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/*
 * Turns the parsed reply into the result for the request at the head of the
 * queue; a reply that is not one of the answers that request can get is a
 * protocol error (the stream is out of step).
 */
static int
lockd__interpret(lockd_context *c, const struct lockd__pending *p,
    const struct proto_reply *pr, lockd_reply *r)
{
	int code;

	if (pr->kind == PROTO_REPLY_ERROR) {
		code = lockd__server_error(pr->error);
		return lockd__fail(c, code, "%s: %.*s",
		    proto_error_name(pr->error),
		    (int)(pr->text_len > 100 ? 100 : pr->text_len), pr->text);
	}
	if (p->command != LOCKD_CMD_PING && (pr->name_len != p->name_len ||
	    memcmp(pr->name, p->name, p->name_len) != 0))
		return lockd__fail(c, LOCKD_ERR_PROTOCOL,
		    "reply for another lock name");

	switch (p->command) {
	case LOCKD_CMD_TRY:
		if (pr->kind == PROTO_REPLY_HELD)
			return lockd__succeed(c, LOCKD_HELD);
		/* FALLTHROUGH */
	case LOCKD_CMD_ACQUIRE:
		if (pr->kind != PROTO_REPLY_GRANTED)
			break;
		lockd__copy_name(r->lease.name, pr->name, pr->name_len);
		r->lease.fence = pr->handle.fence;
		proto_format_handle(r->lease.handle,
		    sizeof(r->lease.handle) - 1, pr->handle);
		r->lease.lease_ms = pr->lease_ms;
		r->lease.deadline_ms = p->sent_ms + pr->lease_ms;
		return lockd__succeed(c, LOCKD_OK);
	case LOCKD_CMD_RENEW:
		if (pr->kind != PROTO_REPLY_RENEWED)
			break;
		lockd__copy_name(r->lease.name, pr->name, pr->name_len);
		snprintf(r->lease.handle, sizeof(r->lease.handle), "%s",
		    p->handle);
		r->lease.fence = pr->fence;
		if (pr->fence != p->fence)
			return lockd__fail(c, LOCKD_ERR_PROTOCOL,
			    "renewed with another fence");
		r->lease.lease_ms = pr->lease_ms;
		r->lease.deadline_ms = p->sent_ms + pr->lease_ms;
		return lockd__succeed(c, LOCKD_OK);
	case LOCKD_CMD_RELEASE:
		if (pr->kind == PROTO_REPLY_RELEASED)
			return lockd__succeed(c, LOCKD_OK);
		if (pr->kind == PROTO_REPLY_NOTHELD)
			return lockd__succeed(c, LOCKD_NOTHELD);
		break;
	case LOCKD_CMD_STATUS:
		if (pr->kind != PROTO_REPLY_STATUS)
			break;
		r->status.held = pr->held ? 1 : 0;
		r->status.fence = pr->fence;
		r->status.ttl_ms = pr->ttl_ms;
		r->status.queue = pr->queue;
		return lockd__succeed(c, LOCKD_OK);
	case LOCKD_CMD_PING:
		if (pr->kind == PROTO_REPLY_PONG)
			return lockd__succeed(c, LOCKD_OK);
		break;
	}
	return lockd__fail(c, LOCKD_ERR_PROTOCOL,
	    "reply does not answer the request");
}

/*
 * Parses the next reply from the input, if a whole one is there, and pops
 * the request it answers.  Returns LOCKD_AGAIN when more input is needed.
 */
static int
lockd__take_reply(lockd_context *c, lockd_reply *r)
{
	struct lockd__state *s = c->state;
	struct lockd__pending *p;
	struct proto_reply pr;
	struct proto_error perr;
	enum proto_result res;
	size_t consumed = 0;
	int result;

	res = proto_parse_reply(s->in + s->in_pos, s->in_len - s->in_pos,
	    LOCKD__REPLY_LINE_MAX, &pr, &consumed, &perr);
	if (res == PROTO_PARTIAL)
		return LOCKD_AGAIN;
	if (res != PROTO_DONE)
		return lockd__fail(c, LOCKD_ERR_PROTOCOL, "malformed reply");
	p = &s->pending[s->first];
	if (s->sent == 0)
		return lockd__fail(c, LOCKD_ERR_PROTOCOL,
		    "reply before its request was sent");
	memset(r, 0, sizeof(*r));
	r->command = p->command;
	r->result = result = lockd__interpret(c, p, &pr, r);
	if (lockd_error_is_fatal(result))
		return result;
	s->in_pos += consumed;
	s->first++;
	s->count--;
	s->sent--;
	s->received--;
	if (s->count == 0)
		s->first = 0;
	return result;
}

static int
lockd__begin_reply(lockd_context *c)
{
	if (lockd__dead(c))
		return c->err;
	if (c->state->count == 0)
		return lockd__fail(c, LOCKD_ERR_INVALID, "no reply is due");
	return LOCKD_OK;
}

int
lockd_get_reply(lockd_context *c, lockd_reply *reply)
{
	struct lockd__state *s = c->state;
	int64_t deadline;
	int rc, revents;

	if (lockd__begin_reply(c) != LOCKD_OK)
		return c->err;
	if (lockd__flush_until(c, lockd__deadline_after(
	    s->command_timeout_ms)) != LOCKD_OK)
		return c->err;
	deadline = lockd__reply_deadline(s, &s->pending[s->first]);
	for (;;) {
		rc = lockd__take_reply(c, reply);
		if (rc != LOCKD_AGAIN)
			return rc;
		revents = lockd__wait(c->fd, POLLIN, deadline);
		if (revents == 0)
			return lockd__fail(c, LOCKD_ERR_TIMEOUT,
			    "no reply within the command timeout");
		if (revents < 0)
			return lockd__fail(c, LOCKD_ERR_IO, "poll: %s",
			    strerror(errno));
		if (lockd__read_some(c) < 0)
			return c->err;
	}
}

int
lockd_poll_reply(lockd_context *c, lockd_reply *reply)
{
	int rc;

	if (lockd__begin_reply(c) != LOCKD_OK)
		return c->err;
	rc = lockd__take_reply(c, reply);
	if (rc != LOCKD_AGAIN)
		return rc;
	if (lockd__read_some(c) < 0)
		return c->err;
	rc = lockd__take_reply(c, reply);
	return rc == LOCKD_AGAIN ? lockd__succeed(c, LOCKD_AGAIN) : rc;
}

/*
 * Blocking calls: append, then read that one reply.  They refuse to run
 * behind pipelined replies, which they would otherwise read instead of
 * their own.
 */

static int
lockd__check_idle(lockd_context *c)
{
	if (lockd__dead(c))
		return c->err;
	if (c->state->count > 0)
		return lockd__fail(c, LOCKD_ERR_INVALID,
		    "pipelined replies are still due");
	return LOCKD_OK;
}

int
lockd_acquire(lockd_context *c, const char *name, int64_t lease_ms,
    int64_t wait_ms, int onclose, lockd_lease *lease)
{
	lockd_reply r;
	int rc;

	if (lockd__check_idle(c) != LOCKD_OK ||
	    lockd_append_acquire(c, name, lease_ms, wait_ms, onclose) !=
	    LOCKD_OK)
		return c->err;
	rc = lockd_get_reply(c, &r);
	if (rc == LOCKD_OK && lease != NULL)
		*lease = r.lease;
	return rc;
}

int
lockd_try(lockd_context *c, const char *name, int64_t lease_ms, int onclose,
    lockd_lease *lease)
{
	lockd_reply r;
	int rc;

	if (lockd__check_idle(c) != LOCKD_OK ||
	    lockd_append_try(c, name, lease_ms, onclose) != LOCKD_OK)
		return c->err;
	rc = lockd_get_reply(c, &r);
	if (rc == LOCKD_OK && lease != NULL)
		*lease = r.lease;
	return rc;
}

int
lockd_renew(lockd_context *c, lockd_lease *lease, int64_t lease_ms)
{
	lockd_reply r;
	int rc;

	if (lockd__check_idle(c) != LOCKD_OK ||
	    lockd_append_renew(c, lease, lease_ms) != LOCKD_OK)
		return c->err;
	rc = lockd_get_reply(c, &r);
	if (rc == LOCKD_OK) {
		lease->lease_ms = r.lease.lease_ms;
		lease->deadline_ms = r.lease.deadline_ms;
	}
	return rc;
}

int
lockd_release(lockd_context *c, const lockd_lease *lease)
{
	lockd_reply r;

	if (lockd__check_idle(c) != LOCKD_OK ||
	    lockd_append_release(c, lease) != LOCKD_OK)
		return c->err;
	return lockd_get_reply(c, &r);
}

int
lockd_status(lockd_context *c, const char *name, lockd_lock_status *status)
{
	lockd_reply r;
	int rc;

	if (lockd__check_idle(c) != LOCKD_OK ||
	    lockd_append_status(c, name) != LOCKD_OK)
		return c->err;
	rc = lockd_get_reply(c, &r);
	if (rc == LOCKD_OK && status != NULL)
		*status = r.status;
	return rc;
}

int
lockd_ping(lockd_context *c)
{
	lockd_reply r;

	if (lockd__check_idle(c) != LOCKD_OK || lockd_append_ping(c) !=
	    LOCKD_OK)
		return c->err;
	return lockd_get_reply(c, &r);
}
