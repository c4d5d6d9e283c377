/*
 * workload.c - the crash tests' clients (see workload.h).  Plain sockets
 * and one poll loop; the replies are parsed with proto/, as liblockd does.
 * This file may talk to lockd over loopback TCP only, and never waits
 * without a deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proto/proto.h"
#include "tests/lib/rng.h"
#include "tests/crash/workload.h"
#include "tests/lib/harness.h"

#define POLL_SLICE_MS 20
#define STATUS_TIMEOUT_MS 3000
#define MAX_UNEXPECTED_SHOWN 10

void
wl_init(struct wl *w, const struct wl_options *opt, struct chk *chk,
    const char *const *names, uint64_t seed)
{
	int i;

	memset(w, 0, sizeof(*w));
	w->opt = *opt;
	if (w->opt.clients > WL_MAX_CLIENTS)
		w->opt.clients = WL_MAX_CLIENTS;
	if (w->opt.names > CHK_MAX_NAMES)
		w->opt.names = CHK_MAX_NAMES;
	w->chk = chk;
	w->names = names;
	rng_seed(&w->rng, seed);
	rng_seed(&w->rid_rng, seed ^ 0x0052494400524944ULL);
	for (i = w->opt.names - w->opt.multi_names; i < w->opt.names; i++)
		if (i >= 0)
			chk_name_limit(chk, i, (unsigned)atoi(WL_LIMIT_TEXT));
	for (i = 0; i < WL_MAX_CLIENTS; i++) {
		w->c[i].fd = -1;
		w->c[i].holding = -1;
		w->c[i].last_grant = -1;
		w->c[i].req_repeats = -1;
	}
}

/* A blocking connect to loopback (immediate when lockd listens), then
 * non-blocking I/O.  -1 when nobody listens. */
static int
dial(int port)
{
	struct sockaddr_in addr;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

int
wl_reconnect(struct wl *w, int port)
{
	int i, n = 0;

	w->port = port;
	for (i = 0; i < w->opt.clients; i++) {
		struct wl_client *c = &w->c[i];
		if (c->fd < 0 && !c->broken) {
			c->fd = dial(port);
			c->in_len = 0;
			c->next_at = 0;
		}
		if (c->fd >= 0)
			n++;
	}
	return n;
}

static uint64_t
journal_pos(const struct wl *w)
{
	struct stat st;

	if (w->opt.journal_fd < 0 || fstat(w->opt.journal_fd, &st) != 0)
		return 0;
	return (uint64_t)st.st_size;
}

static void
lose(struct wl_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->broken = true;
	c->in_len = 0;
}

/* Sends one request line; a failure leaves the client broken (and the
 * request pending: it may have reached lockd). */
static void __attribute__((format(printf, 3, 4)))
send_line(struct wl *w, struct wl_client *c, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	ssize_t n;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	w->stats.requests++;
	n = send(c->fd, line, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n != len)
		lose(c);
}

static int64_t
pick_lease(struct wl *w)
{
	return rng_range(&w->rng, w->opt.lease_min_ms, w->opt.lease_max_ms);
}

/* When a holder acts next: mostly well within its lease, sometimes after
 * it ran out (then RENEW and RELEASE meet a stale handle). */
static int64_t
hold_time(struct wl *w, int64_t lease)
{
	if (rng_below(&w->rng, 100) < 85)
		return rng_range(&w->rng, 0, lease / 4);
	return rng_range(&w->rng, lease / 2, lease * 3 / 2);
}

/* " limit=N" for a semaphore's name (wl_options.multi_names), " mode=shared"
 * for a read lock's (shared_names), else "". */
static const char *
kind_of(const struct wl *w, int name)
{
	int multi = w->opt.names - w->opt.multi_names;

	if (name >= multi)
		return " limit=" WL_LIMIT_TEXT;
	return name >= multi - w->opt.shared_names ? " mode=shared" : "";
}

/* What grant g's requests say of its kind: its name's, but nothing for a
 * writer (an exclusive holder) of a read lock's name. */
static const char *
kind_of_grant(const struct wl *w, const struct chk_grant *g)
{
	return g->multi ? kind_of(w, g->name) : "";
}

static void
issue(struct wl *w, struct wl_client *c, int64_t now)
{
	const struct chk_grant *g = c->holding >= 0 ?
	    &w->chk->grants[c->holding] : NULL;
	uint64_t r = rng_below(&w->rng, 100);
	int name = (int)rng_below(&w->rng, (uint64_t)w->opt.names);
	int64_t lease = pick_lease(w);
	const char *kind;
	char extra[96];

	c->req_repeats = -1;
	c->req_rid[0] = '\0';
	if (g != NULL && g->rid_len > 0 && rng_below(&w->rid_rng, 8) == 0) {
		/* Repeat the ACQUIRE that got the held grant, as a client
		 * that lost its reply does: while the lease is certainly
		 * held the answer is that grant, and nothing changes. */
		int64_t sent = harness_now_ms();

		c->req = WL_ACQUIRE;
		c->req_name = g->name;
		c->req_sent = sent;
		c->req_onclose = g->onclose;
		c->req_owner = g->owner_len > 0;
		c->req_delay = g->delay;
		snprintf(c->req_rid, sizeof(c->req_rid), "%.*s",
		    (int)g->rid_len, g->rid);
		c->req_repeats = c->holding;
		/* The same options, should it be a new request after all
		 * (the lease over by the time it runs). */
		snprintf(extra, sizeof(extra), "%s",
		    g->onclose ? " onclose=release" : "");
		if (g->owner_len > 0)
			snprintf(extra + strlen(extra), sizeof(extra) -
			    strlen(extra), " owner=%.*s", (int)g->owner_len,
			    g->owner);
		if (g->delay > 0)
			snprintf(extra + strlen(extra), sizeof(extra) -
			    strlen(extra), " delay=%lld", (long long)g->delay);
		c->req_exclusive = !g->multi;
		send_line(w, c, "ACQUIRE %s lease=%lld wait=0 rid=%s%s%s\n",
		    w->names[g->name], (long long)g->lease, c->req_rid, extra,
		    kind_of_grant(w, g));
		return;
	}
	if (g != NULL) {
		if (r < 40) {
			c->req = WL_RENEW;
			c->req_name = g->name;
			c->req_lease = lease;
			c->req_sent = harness_now_ms();
			c->req_ref = chk_begin(w->chk, c->holding, CHK_EV_RENEW,
			    c->req_sent, lease);
			send_line(w, c, "RENEW %s %s lease=%lld\n",
			    w->names[g->name], g->handle, (long long)lease);
		} else if (r < 75 || (r < 83 && g->onclose)) {
			c->req = WL_RELEASE;
			c->req_name = g->name;
			c->req_sent = harness_now_ms();
			c->req_ref = chk_begin(w->chk, c->holding,
			    CHK_EV_RELEASE, c->req_sent, 0);
			send_line(w, c, "RELEASE %s %s\n", w->names[g->name],
			    g->handle);
		} else if (r < 83) {
			/* Walk away: the keep lease runs out on its own. */
			c->holding = -1;
			c->next_at = now + rng_range(&w->rng, 0,
			    w->opt.think_max_ms);
		} else if (r < 90) {
			c->req = WL_STATUS;
			c->req_name = g->name;
			c->req_sent = harness_now_ms();
			send_line(w, c, "STATUS %s\n", w->names[g->name]);
		} else {
			/* Hang up: an onclose lease ends with the connection,
			 * a keep lease goes on and its handle stays good. */
			w->stats.closes++;
			close(c->fd);
			if (g->onclose) {
				chk_closed(w->chk, c->holding, now);
				c->holding = -1;
			}
			c->in_len = 0;
			if ((c->fd = dial(w->port)) < 0)
				c->broken = true;
		}
		return;
	}
	c->req_name = name;
	c->req_lease = lease;
	kind = kind_of(w, name);
	c->req_exclusive = kind[0] == '\0';
	if (strcmp(kind, " mode=shared") == 0 &&
	    rng_below(&w->rid_rng, 4) == 0) {
		/* A writer of the read lock: no mode, and it excludes every
		 * other holder (one request in four of the name). */
		c->req_exclusive = true;
		kind = "";
	}
	c->req_onclose = rng_below(&w->rng, 100) <
	    (uint64_t)w->opt.onclose_percent;
	/* owner= on half the grants, delay= on a quarter: both must
	 * survive kill -9 and power loss with the lease. */
	c->req_owner = rng_below(&w->rng, 2) == 0;
	c->req_delay = rng_below(&w->rng, 4) == 0 ?
	    rng_range(&w->rng, 1, w->opt.lease_max_ms) : 0;
	snprintf(extra, sizeof(extra), "%s",
	    c->req_onclose ? " onclose=release" : "");
	if (c->req_owner)
		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
		    " owner=w%d", (int)(c - w->c));
	if (c->req_delay > 0)
		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
		    " delay=%lld", (long long)c->req_delay);
	/* rid= on half: durable with the grant, its repeats judged. */
	if (rng_below(&w->rid_rng, 2) == 0) {
		snprintf(c->req_rid, sizeof(c->req_rid), "w%d.%u",
		    (int)(c - w->c), ++c->rids);
		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
		    " rid=%s", c->req_rid);
	}
	if (r < 45) {
		char wait[32] = "";
		if (rng_below(&w->rng, 10) != 0)
			snprintf(wait, sizeof(wait), " wait=%lld",
			    (long long)rng_range(&w->rng, 0,
			    w->opt.wait_max_ms));
		c->req = WL_ACQUIRE;
		c->req_sent = harness_now_ms();
		send_line(w, c, "ACQUIRE %s lease=%lld%s%s%s\n",
		    w->names[name], (long long)lease, wait, extra, kind);
	} else if (r < 80 || (r >= 90 && c->last_grant < 0)) {
		c->req = WL_TRY;
		c->req_sent = harness_now_ms();
		send_line(w, c, "TRY %s lease=%lld%s%s\n", w->names[name],
		    (long long)lease, extra, kind);
	} else if (r < 90) {
		c->req = WL_STATUS;
		c->req_sent = harness_now_ms();
		send_line(w, c, "STATUS %s\n", w->names[name]);
	} else {
		/* An old handle: its lease is over, or was walked away from. */
		g = &w->chk->grants[c->last_grant];
		c->req = WL_RELEASE;
		c->req_name = g->name;
		c->req_sent = harness_now_ms();
		c->req_ref = chk_begin(w->chk, c->last_grant, CHK_EV_RELEASE,
		    c->req_sent, 0);
		send_line(w, c, "RELEASE %s %s\n", w->names[g->name],
		    g->handle);
	}
}

static void
unexpected(struct wl *w, struct wl_client *c, const char *line)
{
	static const char *const kinds[] = { "none", "ACQUIRE", "TRY",
	    "RENEW", "RELEASE", "STATUS" };

	if (w->stats.unexpected++ < MAX_UNEXPECTED_SHOWN)
		fprintf(stderr, "workload: unexpected reply to %s: %s\n",
		    kinds[c->req], line);
}

static bool
name_is(const struct wl *w, const struct proto_reply *r, int name)
{
	return r->name_len == strlen(w->names[name]) &&
	    memcmp(r->name, w->names[name], r->name_len) == 0;
}

/* One reply line (with its CRLF) to the request outstanding on c. */
static void
handle_reply(struct wl *w, struct wl_client *c, const char *line,
    size_t len, int64_t now)
{
	struct proto_reply r;
	struct proto_error err;
	uint64_t jpos = journal_pos(w);
	size_t used;
	bool ok;

	w->stats.replies++;
	if (c->req_sent > w->alive)
		w->alive = c->req_sent;
	ok = proto_parse_reply(line, len, len + 1, &r, &used, &err) ==
	    PROTO_DONE;
	if (!ok || c->req == WL_NONE) {
		unexpected(w, c, line);
		c->req = WL_NONE;
		return;
	}
	switch (c->req) {
	case WL_ACQUIRE:
	case WL_TRY:
		if (c->req_repeats >= 0 && r.kind == PROTO_REPLY_ERROR &&
		    r.error == PROTO_ERR_UNAVAILABLE) {
			w->stats.unavailable++;
			c->next_at = now;
			break;
		}
		/* Certainly held from its sending to its reply? */
		if (c->req_repeats >= 0)
			c->req_repeat_sure = chk_rid_live(w->chk,
			    w->chk->grants[c->req_repeats].name,
			    w->chk->grants[c->req_repeats].fence,
			    now + CHK_SLACK_MS) >= 0;
		if (c->req_repeats >= 0 && (c->req_repeat_sure ||
		    (r.kind == PROTO_REPLY_GRANTED &&
		    r.fence == w->chk->grants[c->req_repeats].fence))) {
			/* The grant it repeats was certainly held, or is what
			 * it was told: this must be that grant again, and the
			 * client holds it as before.  (Not certainly held, the
			 * repeat may as well be a new request: below.) */
			char handle[64] = "";
			bool granted = r.kind == PROTO_REPLY_GRANTED &&
			    name_is(w, &r, c->req_name);

			if (granted)
				handle[proto_format_handle(handle,
				    sizeof(handle) - 1, r.handle)] = '\0';
			chk_rid_repeat(w->chk, c->req_repeats, granted,
			    r.fence, handle, line);
			w->stats.rid_repeats++;
			c->next_at = now + hold_time(w,
			    w->chk->grants[c->req_repeats].lease);
			break;
		}
		if (r.kind == PROTO_REPLY_GRANTED && name_is(w, &r, c->req_name)) {
			char handle[64];
			size_t n = proto_format_handle(handle,
			    sizeof(handle) - 1, r.handle);
			handle[n] = '\0';
			w->stats.granted++;
			c->holding = chk_granted(w->chk, c->req_name, r.fence,
			    handle, c->req_sent, now, r.lease_ms,
			    c->req_onclose, jpos);
			if (!c->req_exclusive)
				chk_grant_multi(w->chk, c->holding);
			else if (kind_of(w, c->req_name)[0] != '\0')
				w->stats.writers++;
			if (c->req_owner) {
				char owner[16];
				int owner_len = snprintf(owner, sizeof(owner),
				    "w%d", (int)(c - w->c));
				chk_grant_options(w->chk, c->holding, owner,
				    (size_t)owner_len, c->req_delay);
			} else {
				chk_grant_options(w->chk, c->holding, "", 0,
				    c->req_delay);
			}
			chk_grant_rid(w->chk, c->holding, c->req_rid,
			    strlen(c->req_rid));
			c->last_grant = c->holding;
			c->next_at = now + hold_time(w, r.lease_ms);
			break;
		}
		if (r.kind == PROTO_REPLY_HELD && c->req == WL_TRY)
			w->stats.held++;
		else if (r.kind == PROTO_REPLY_ERROR &&
		    r.error == PROTO_ERR_TIMEOUT && c->req == WL_ACQUIRE)
			w->stats.timeouts++;
		else if (r.kind == PROTO_REPLY_ERROR &&
		    r.error == PROTO_ERR_UNAVAILABLE)
			w->stats.unavailable++;
		else
			unexpected(w, c, line);
		c->next_at = now + rng_range(&w->rng, 0, w->opt.think_max_ms);
		break;
	case WL_RENEW:
		if (r.kind == PROTO_REPLY_RENEWED &&
		    r.fence == w->chk->grants[c->holding].fence) {
			w->stats.renewed++;
			chk_end(w->chk, c->req_ref, CHK_OK, now, jpos);
			c->next_at = now + hold_time(w, r.lease_ms);
			break;
		}
		if (r.kind == PROTO_REPLY_ERROR &&
		    r.error == PROTO_ERR_CONFLICT) {
			w->stats.conflicts++;
			chk_end(w->chk, c->req_ref, CHK_REFUSED_REPLY, now,
			    jpos);
			c->holding = -1;
		} else if (r.kind == PROTO_REPLY_ERROR &&
		    r.error == PROTO_ERR_UNAVAILABLE) {
			w->stats.unavailable++;
			chk_end(w->chk, c->req_ref, CHK_UNAVAILABLE, now, jpos);
		} else {
			unexpected(w, c, line);
			chk_end(w->chk, c->req_ref, CHK_UNKNOWN, now, jpos);
		}
		c->next_at = now;
		break;
	case WL_RELEASE:
		if (r.kind == PROTO_REPLY_RELEASED) {
			w->stats.released++;
			chk_end(w->chk, c->req_ref, CHK_OK, now, jpos);
		} else if (r.kind == PROTO_REPLY_NOTHELD) {
			w->stats.notheld++;
			chk_end(w->chk, c->req_ref, CHK_REFUSED_REPLY, now,
			    jpos);
		} else {
			unexpected(w, c, line);
			chk_end(w->chk, c->req_ref, CHK_UNKNOWN, now, jpos);
		}
		if (c->holding == c->req_ref.grant)
			c->holding = -1;
		c->next_at = now + rng_range(&w->rng, 0, w->opt.think_max_ms);
		break;
	case WL_STATUS:
		if (r.kind == PROTO_REPLY_STATUS && name_is(w, &r, c->req_name)) {
			w->stats.statuses++;
			chk_status(w->chk, c->req_name, c->req_sent, now, r.held,
			    r.fence, r.ttl_ms, false);
			if (r.held)
				chk_owner_seen(w->chk, c->req_name, r.fence,
				    r.owner, r.owner_len);
		} else {
			unexpected(w, c, line);
		}
		c->next_at = now + rng_range(&w->rng, 0, w->opt.think_max_ms);
		break;
	case WL_NONE:
		break;
	}
	c->req = WL_NONE;
}

/* Reads what c has; hands each complete line to handle_reply. */
static void
receive(struct wl *w, struct wl_client *c)
{
	ssize_t n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len,
	    MSG_DONTWAIT);
	int64_t now = harness_now_ms();
	char *lf;

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		lose(c);
		return;
	}
	if (n < 0)
		return;
	c->in_len += (size_t)n;
	while ((lf = memchr(c->in, '\n', c->in_len)) != NULL) {
		size_t len = (size_t)(lf - c->in) + 1;
		char line[sizeof(c->in) + 1];

		memcpy(line, c->in, len);
		line[len] = '\0';
		memmove(c->in, c->in + len, c->in_len - len);
		c->in_len -= len;
		handle_reply(w, c, line, len, now);
		if (c->fd < 0)
			return;
	}
	if (c->in_len == sizeof(c->in))
		lose(c);   /* no reply is that long */
}

void
wl_run(struct wl *w, int64_t until)
{
	struct pollfd pfd[WL_MAX_CLIENTS];
	int who[WL_MAX_CLIENTS];

	for (;;) {
		int64_t now = harness_now_ms(), wake = until;
		int i, n = 0;

		if (now >= until)
			return;
		for (i = 0; i < w->opt.clients; i++) {
			struct wl_client *c = &w->c[i];
			if (c->fd >= 0 && c->req == WL_NONE && now >= c->next_at)
				issue(w, c, now);
			if (c->fd < 0)
				continue;
			if (c->req == WL_NONE && c->next_at < wake)
				wake = c->next_at;
			pfd[n].fd = c->fd;
			pfd[n].events = POLLIN;
			pfd[n].revents = 0;
			who[n++] = i;
		}
		if (n == 0)
			return;   /* every connection ended: lockd is gone */
		if (wake > now + POLL_SLICE_MS)
			wake = now + POLL_SLICE_MS;
		if (poll(pfd, (nfds_t)n, wake > now ? (int)(wake - now) : 0) <= 0)
			continue;
		for (i = 0; i < n; i++)
			if (pfd[i].revents != 0)
				receive(w, &w->c[who[i]]);
	}
}

void
wl_crash(struct wl *w, int64_t died)
{
	int64_t now = harness_now_ms();
	int i;

	for (i = 0; i < w->opt.clients; i++) {
		struct wl_client *c = &w->c[i];

		if (c->req == WL_RENEW || c->req == WL_RELEASE) {
			chk_end(w->chk, c->req_ref, CHK_UNKNOWN, now, 0);
			if (c->req == WL_RELEASE && c->holding ==
			    c->req_ref.grant)
				c->holding = -1;
		}
		if (c->req != WL_NONE)
			w->stats.unknown++;
		c->req = WL_NONE;
		if (c->holding >= 0 && w->chk->grants[c->holding].onclose) {
			chk_closed(w->chk, c->holding, died);
			c->holding = -1;
		}
		if (c->fd >= 0)
			close(c->fd);
		c->fd = -1;
		c->broken = false;
		c->in_len = 0;
		c->next_at = 0;
	}
}

/*
 * Sends `line` on fd and reads one reply line into buf (len bytes held
 * there before and after): the reply's length with its LF, 0 when none
 * came by the deadline.
 */
static size_t
ask(int fd, const char *line, size_t n, char *buf, size_t cap, size_t *len,
    int64_t deadline)
{
	char *lf;

	if (send(fd, line, n, MSG_NOSIGNAL) != (ssize_t)n)
		return 0;
	while ((lf = memchr(buf, '\n', *len)) == NULL) {
		struct pollfd p = { fd, POLLIN, 0 };
		int64_t left = deadline - harness_now_ms();
		ssize_t got;

		if (left <= 0 || *len == cap)
			return 0;
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		got = recv(fd, buf + *len, cap - *len, MSG_DONTWAIT);
		if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
			return 0;
		if (got > 0)
			*len += (size_t)got;
	}
	return (size_t)(lf - buf) + 1;
}

/* Drops the first `used` bytes of buf. */
static void
consume(char *buf, size_t *len, size_t used)
{
	memmove(buf, buf + used, *len - used);
	*len -= used;
}

/*
 * After a restart: the rid of a told grant that STATUS shows, and that is
 * certainly held for a while yet, is repeated - the grant must come back
 * as it was (its rid survived), and nothing changes.  The margin keeps the
 * repeat from running after the lease, when it would be a new grant.
 */
#define RID_MARGIN_MS 20

static int
check_rid(struct wl *w, int fd, char *buf, size_t cap, size_t *len,
    int name, uint64_t fence)
{
	int64_t sent = harness_now_ms();
	int64_t k = chk_rid_live(w->chk, name, fence, sent + RID_MARGIN_MS);
	const struct chk_grant *g;
	struct proto_reply r;
	struct proto_error err;
	char line[400], handle[64] = "";
	size_t used, consumed;
	int n;

	if (k < 0)
		return 0;
	g = &w->chk->grants[k];
	n = snprintf(line, sizeof(line), "ACQUIRE %s lease=%lld wait=0 "
	    "rid=%.*s%s\n", w->names[name], (long long)g->lease,
	    (int)g->rid_len, g->rid, kind_of_grant(w, g));
	if ((used = ask(fd, line, (size_t)n, buf, cap, len,
	    sent + STATUS_TIMEOUT_MS)) == 0)
		return -1;
	if (proto_parse_reply(buf, used, cap, &r, &consumed, &err) !=
	    PROTO_DONE)
		return -1;
	if (r.kind == PROTO_REPLY_GRANTED)
		handle[proto_format_handle(handle, sizeof(handle) - 1,
		    r.handle)] = '\0';
	buf[used - 1] = '\0';
	if (chk_rid_live(w->chk, name, fence, harness_now_ms() +
	    CHK_SLACK_MS) >= 0 || (r.kind == PROTO_REPLY_GRANTED &&
	    r.fence == fence)) {
		/* Certainly held all along, or told as that grant. */
		chk_rid_repeat(w->chk, k, r.kind == PROTO_REPLY_GRANTED &&
		    name_is(w, &r, name), r.fence, handle, buf);
		w->stats.rid_repeats++;
	} else if (r.kind == PROTO_REPLY_GRANTED) {
		/* The lease ran out first: a new grant, to nobody who will
		 * use it; its keep lease runs out on its own. */
		char rid[64];
		size_t rid_len = g->rid_len;
		bool multi = g->multi;
		int64_t fresh;

		memcpy(rid, g->rid, rid_len);   /* chk_granted may move g */
		fresh = chk_granted(w->chk, name, r.fence, handle, sent,
		    harness_now_ms(), r.lease_ms, false, 0);
		if (multi)
			chk_grant_multi(w->chk, fresh);
		chk_grant_rid(w->chk, fresh, rid, rid_len);
	}
	consume(buf, len, used);
	return 0;
}

/* Holders of a name looked at one by one after a restart, at most: the
 * newest told grants, which are all a short lease leaves alive. */
#define HOLDER_LOOKBACK 48

/*
 * After a restart, every holder of a semaphore or shared lock that may
 * still hold - not only the newest, which STATUS shows - is asked for by
 * CHECK (it must be there with its time left), and the rid of each one
 * certainly held is repeated (it must be told that grant again).
 */
static int
check_holders(struct wl *w, int fd, char *buf, size_t cap, size_t *len,
    int name, uint64_t shown)
{
	const struct chk_list *l = &w->chk->lists[name];
	size_t idx[HOLDER_LOOKBACK], n = 0, k, i;

	for (k = l->n; k > 0 && n < HOLDER_LOOKBACK; k--)
		if (chk_maybe_held(w->chk, (int64_t)l->idx[k - 1],
		    harness_now_ms()))
			idx[n++] = l->idx[k - 1];
	/* chk_granted (a rid repeat that turns out new) may move the
	 * grants: the indexes are taken first. */
	for (i = 0; i < n; i++) {
		uint64_t fence = w->chk->grants[idx[i]].fence;
		int64_t sent = harness_now_ms();
		char line[320];
		int m = snprintf(line, sizeof(line), "CHECK %s %llu\n",
		    w->names[name], (unsigned long long)fence);
		size_t used = ask(fd, line, (size_t)m, buf, cap, len,
		    sent + STATUS_TIMEOUT_MS);
		struct proto_reply r;
		struct proto_error err;
		size_t consumed;

		if (used == 0 || proto_parse_reply(buf, used, cap, &r,
		    &consumed, &err) != PROTO_DONE ||
		    (r.kind != PROTO_REPLY_CURRENT &&
		    r.kind != PROTO_REPLY_STALE))
			return -1;
		chk_check(w->chk, name, fence, sent, harness_now_ms(),
		    r.kind == PROTO_REPLY_CURRENT, r.ttl_ms, true);
		consume(buf, len, used);
		if (fence != shown && check_rid(w, fd, buf, cap, len, name,
		    fence) != 0)
			return -1;
	}
	return 0;
}

int
wl_check_status(struct wl *w, bool after_restart)
{
	int fd = dial(w->port), name, rc = 0;
	char buf[1024];
	size_t len = 0;

	if (fd < 0)
		return -1;
	for (name = 0; name < w->opt.names && rc == 0; name++) {
		int64_t sent = harness_now_ms(), deadline = sent + STATUS_TIMEOUT_MS;
		char line[320];
		int n = snprintf(line, sizeof(line), "STATUS %s\n",
		    w->names[name]);
		size_t used = ask(fd, line, (size_t)n, buf, sizeof(buf), &len,
		    deadline);
		int64_t recv_at = harness_now_ms();
		struct proto_reply r;
		struct proto_error err;
		size_t consumed;

		if (used == 0) {
			rc = -1;
			break;
		}
		if (proto_parse_reply(buf, used, sizeof(buf), &r, &consumed,
		    &err) == PROTO_DONE && r.kind == PROTO_REPLY_STATUS) {
			chk_status(w->chk, name, sent, recv_at, r.held,
			    r.fence, r.ttl_ms, after_restart);
			if (r.held)
				chk_owner_seen(w->chk, name, r.fence,
				    r.owner, r.owner_len);
			consume(buf, &len, used);
			if (after_restart && r.held)
				rc = check_rid(w, fd, buf, sizeof(buf), &len,
				    name, r.fence);
			if (after_restart && rc == 0 &&
			    kind_of(w, name)[0] != '\0')
				rc = check_holders(w, fd, buf, sizeof(buf),
				    &len, name, r.held ? r.fence : 0);
		} else {
			rc = -1;
		}
	}
	close(fd);
	return rc;
}

void
wl_close(struct wl *w)
{
	int i;

	for (i = 0; i < WL_MAX_CLIENTS; i++) {
		if (w->c[i].fd >= 0)
			close(w->c[i].fd);
		w->c[i].fd = -1;
	}
}
