/*
 * service.c - request handling and recovery, over an abstract clock and
 * store: each request line parsed, checked (authentication, cluster role,
 * quotas) and executed against the lock table, the core's answers turned
 * into reply lines, and the store loaded into the table at open.  No
 * sockets, no libuv, no threads: the server (server.c) and the simulator
 * (tests/sim) both drive this file.
 *
 * Replies leave in request order, each when the batch it rests on is
 * durable: service_reply.c keeps that order, and group commit
 * (service_commit.c) writes the batches.  This file asks both; neither
 * calls back into it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/list.h"
#include "core/takeover.h"
#include "daemon/format.h"
#include "daemon/log.h"
#include "daemon/recovery.h"
#include "daemon/service.h"
#include "daemon/service_int.h"


/* ---- the core's replies and events ----------------------------------- */

/* How a limit the core hit is counted (its log line names the metric too)
 * and answered; CORE_LIMIT_NONE stands for any other. */
static const struct limit_form {
	enum metrics_limit metric;
	const char *text;
} limit_forms[] = {
	[CORE_LIMIT_NONE] = { METRICS_LIMIT_CONNECTION_WAITERS,
	    "limit reached" },
	[CORE_LIMIT_HELD] = { METRICS_LIMIT_HELD, "too many held locks" },
	[CORE_LIMIT_WAITERS] = { METRICS_LIMIT_WAITERS, "too many waiters" },
	[CORE_LIMIT_SESSION_WAITERS] = { METRICS_LIMIT_CONNECTION_WAITERS,
	    "too many waiters on this connection" },
	[CORE_LIMIT_GROUP_WAITERS] = { METRICS_LIMIT_PRINCIPAL_WAITERS,
	    "too many waiters for this principal" },
};

static const struct limit_form *
limit_form(enum core_limit_kind kind)
{
	if ((size_t)kind >= sizeof(limit_forms) / sizeof(limit_forms[0]))
		kind = CORE_LIMIT_NONE;
	return &limit_forms[kind];
}

static struct service_conn *
conn_of(const struct core_reply *r)
{
	return container_of(r->session, struct service_conn, session);
}

/*
 * The batches a reply about r's lock waits for: the batch in flight when
 * it writes the lock, and the batch of the lock's promise - the one now
 * forming for a GRANTED or RENEWED (promises), else an open promise made
 * earlier (service_int.h).
 */
static void
reply_gates(struct service *svc, const struct core_reply *r, bool promises,
    uint64_t *batch, uint64_t *depends)
{
	*depends = service__inflight_depends(svc, r->name, r->name_len);
	*batch = 0;
	if (promises)
		*batch = service__promise(svc, r->user);
	else if (r->user != NULL && service__promise_open(svc, *r->user))
		*batch = *r->user;
}

static void
reply(struct service *svc, const struct core_reply *r, bool promises,
    const char *line, size_t n)
{
	struct service_told told = { (uint8_t)r->kind, PROTO_ERR_NONE };
	uint64_t batch, depends;

	reply_gates(svc, r, promises, &batch, &depends);
	service__deliver(svc, conn_of(r), r->tag, batch, depends, told, line,
	    n);
}

static void
reply_error(struct service *svc, const struct core_reply *r,
    enum proto_error_code code, const char *text)
{
	uint64_t batch, depends;

	reply_gates(svc, r, false, &batch, &depends);
	service__error_line(svc, conn_of(r), r->tag, batch, depends,
	    (uint8_t)r->kind, code, text);
}

/*
 * Appends protocol v2's optional STATUS fields (owner=, delay=) to a reply
 * line of n bytes ending in CRLF; returns the new length.  The line keeps
 * its CRLF; a field that would not fit is left out (never the case below
 * PROTO_REPLY_MAX: 64 + 20 bytes more at most).
 */
static size_t
append_status_fields(char *line, size_t n, size_t cap,
    const struct core_lock_status *st)
{
	char extra[CORE_OWNER_MAX + 96];
	int k = 0;

	if (n < 2)
		return n;
	if (st->held && st->label_len > 0)
		k += snprintf(extra + k, sizeof(extra) - (size_t)k,
		    " owner=%.*s", (int)st->label_len, st->label);
	if (st->limit > 1 || (st->held && st->shared))
		k += snprintf(extra + k, sizeof(extra) - (size_t)k,
		    " holders=%lu", (unsigned long)st->holders);
	if (st->limit > 1)
		k += snprintf(extra + k, sizeof(extra) - (size_t)k,
		    " limit=%u", (unsigned)st->limit);
	if (st->held && st->shared)
		k += snprintf(extra + k, sizeof(extra) - (size_t)k,
		    " mode=shared");
	if (st->delay_ms > 0)
		k += snprintf(extra + k, sizeof(extra) - (size_t)k,
		    " delay=%lld", (long long)st->delay_ms);
	if (k <= 0 || n + (size_t)k > cap)
		return n;
	memcpy(line + n - 2, extra, (size_t)k);
	line[n - 2 + (size_t)k] = '\r';
	line[n - 1 + (size_t)k] = '\n';
	return n + (size_t)k;
}

/*
 * A STATUS line with all its fields under another keyword (LOCK for LIST,
 * CHANGED for WATCH, STATUS itself); returns its length, 0 when it does
 * not fit.
 */
static size_t
format_status_line(char *line, size_t cap, const char *keyword,
    const char *name, size_t name_len, const struct core_lock_status *st)
{
	size_t n = proto_format_status(line, cap, name, name_len, st->held,
	    st->fence, st->ttl_ms, st->queue);
	size_t k = strlen(keyword), i;

	if (n < 6 || n - 6 + k > cap)
		return 0;
	memmove(line + k, line + 6, n - 6);
	for (i = 0; i < k; i++)   /* the keyword, without its NUL */
		line[i] = keyword[i];
	n = n - 6 + k;
	return append_status_fields(line, n, cap, st);
}

/* WATCH's cause= words, by enum core_end. */
static const char *const watch_causes[] = {
	"none", "granted", "released", "expired", "closed", "forced"
};

/*
 * The core's sink: every answer and event of the lock table comes here,
 * and each kind is observed (metrics, the log) and then answered in its
 * one case.
 */
static void
on_core_reply(void *ctx, const struct core_reply *r)
{
	struct service *svc = ctx;
	char line[PROTO_REPLY_MAX], shown[LOG_VALUE_MAX + 1];
	const struct limit_form *limit;
	size_t n;

	switch (r->kind) {
	case CORE_EVENT_RECLAIMED:
		quota_ungrant(&svc->quota, r->fence);
		metrics_observe(&svc->metrics.hold, (double)r->held_ms / 1000);
		if (log_enabled(LOG_INFO))
			log_limited(&svc->reclaim_log, LOG_INFO, "reclaim",
			    "name=%s fence=%llu "
			    "held_ms=%lld", log_value(shown, r->name,
			    r->name_len), (unsigned long long)r->fence,
			    (long long)r->held_ms);
		return;
	case CORE_EVENT_RELEASED_ONCLOSE:
		quota_ungrant(&svc->quota, r->fence);
		metrics_observe(&svc->metrics.hold, (double)r->held_ms / 1000);
		if (log_enabled(LOG_DEBUG))
			log_event(LOG_DEBUG, "release_onclose",
			    "name=%s fence=%llu", log_value(shown, r->name,
			    r->name_len), (unsigned long long)r->fence);
		return;
	case CORE_REPLY_GRANTED: {
		struct proto_handle h = { r->fence, r->secret };
		metrics_observe(&svc->metrics.acquire_wait,
		    (double)r->waited_ms / 1000);
		/* A rid repeat is the grant made before: counted once, and
		 * as durable as that one (it waits for its batch, if that
		 * is still in flight, not for a new one). */
		if (!r->repeat && quota_grant(&svc->quota, conn_of(r)->quota,
		    r->fence) != 0)
			log_event(LOG_ERROR, "nomem", "msg=\"a grant is not "
			    "counted against its principal\"");
		n = proto_format_granted(line, sizeof(line), r->name,
		    r->name_len, h, r->lease_ms);
		reply(svc, r, !r->repeat, line, n);
		return;
	}
	case CORE_REPLY_RENEWED:
		n = proto_format_renewed(line, sizeof(line), r->name,
		    r->name_len, r->fence, r->lease_ms);
		reply(svc, r, true, line, n);
		return;
	case CORE_REPLY_RELEASED:
		quota_ungrant(&svc->quota, r->fence);
		metrics_observe(&svc->metrics.hold, (double)r->held_ms / 1000);
		n = proto_format_released(line, sizeof(line), r->name,
		    r->name_len);
		reply(svc, r, false, line, n);
		return;
	case CORE_REPLY_NOTHELD:
		n = proto_format_notheld(line, sizeof(line), r->name,
		    r->name_len);
		reply(svc, r, false, line, n);
		return;
	case CORE_REPLY_HELD:
		n = proto_format_held(line, sizeof(line), r->name, r->name_len);
		if (r->status != NULL && r->status->delay_ms > 0) {
			struct core_lock_status only = *r->status;

			only.label_len = 0;   /* HELD shows delay= alone */
			only.holders = 0;
			only.limit = 1;
			only.shared = false;
			n = append_status_fields(line, n, sizeof(line), &only);
		}
		reply(svc, r, false, line, n);
		return;
	case CORE_REPLY_FORCED:
		/* Durable before the reply, like a grant. */
		quota_ungrant(&svc->quota, r->fence);
		log_event(LOG_WARN, "force", "name=%s fence=%llu",
		    log_value(shown, r->name, r->name_len),
		    (unsigned long long)r->fence);
		n = proto_format_released(line, sizeof(line), r->name,
		    r->name_len);
		reply(svc, r, true, line, n);
		return;
	case CORE_REPLY_CHANGED: {
		const struct core_lock_status *st = r->status;
		int k;

		n = format_status_line(line, sizeof(line), "CHANGED", r->name,
		    r->name_len, st);
		k = snprintf(line + n - 2, sizeof(line) - n + 2,
		    " cause=%s\r\n", (unsigned)st->cause < 6 ?
		    watch_causes[st->cause] : "none");
		if (k > 0 && n - 2 + (size_t)k < sizeof(line))
			n = n - 2 + (size_t)k;
		reply(svc, r, false, line, n);
		return;
	}
	case CORE_REPLY_TIMEOUT:
		if (r->watch) {
			reply_error(svc, r, PROTO_ERR_TIMEOUT,
			    "no change within wait");
			return;
		}
		reply_error(svc, r, PROTO_ERR_TIMEOUT, conn_of(r)->input_ended ?
		    "input ended before the lock was granted; the waiter "
		    "left the queue" : "lock not acquired within wait");
		return;
	case CORE_REPLY_CONFLICT:
		reply_error(svc, r, PROTO_ERR_CONFLICT,
		    "handle is not the current holder's");
		return;
	case CORE_REPLY_OVERFLOW:
		log_event(LOG_ERROR, "overflow", "name=%s",
		    log_value(shown, r->name, r->name_len));
		reply_error(svc, r, PROTO_ERR_OVERFLOW,
		    "fence counter exhausted");
		return;
	case CORE_REPLY_LIMIT:
		limit = limit_form(r->limit);
		svc->metrics.limit_hits[limit->metric]++;
		log_limited(&svc->limit_log, LOG_WARN, "limit",
		    "kind=%s conn=%llu",
		    metrics_limit_names[limit->metric],
		    (unsigned long long)conn_of(r)->session.id);
		reply_error(svc, r, PROTO_ERR_LIMIT, limit->text);
		return;
	case CORE_REPLY_NOMEM:
		log_event(LOG_ERROR, "nomem", "conn=%llu",
		    (unsigned long long)conn_of(r)->session.id);
		reply_error(svc, r, PROTO_ERR_UNAVAILABLE, "out of memory");
		return;
	case CORE_REPLY_BADARG:
		reply_error(svc, r, PROTO_ERR_BADARG,
		    r->misfit == CORE_MISFIT_LIMIT ? "limit differs from the "
		    "lock's, set until it is idle again, or from this rid's "
		    "request" : r->misfit == CORE_MISFIT_MODE ? "mode differs "
		    "from this rid's request, or is shared with a limit" :
		    "bad argument");
		return;
	case CORE_REPLY_SHUTDOWN:
		reply_error(svc, r, PROTO_ERR_SHUTDOWN, "server is stopping");
		return;
	case CORE_REPLY_SUPERSEDED:
		reply_error(svc, r, PROTO_ERR_CONFLICT, "an ACQUIRE with the "
		    "same rid took this request's place in the queue");
		return;
	default:
		return;
	}
}

/* ---- commands --------------------------------------------------------- */

static size_t
output_room(const struct service *svc, const struct service_conn *conn)
{
	size_t used = conn->out.len + conn->slots_bytes;

	return used < svc->config.max_output ? svc->config.max_output - used :
	    0;
}

/* Room for PONG and BYE; for STATS' fields (service_stats has 18) and its
 * line (about 40 bytes a field). */
#define SHORT_REPLY_MAX 16
#define STATS_FIELDS_MAX 32
#define STATS_LINE_MAX 1024

static void
cmd_acquire(struct service *svc, struct service_conn *conn,
    const struct proto_request *req, uint64_t seq, core_time now)
{
	struct core_acquire_args args = {
		.lease_ms = req->has_lease ? req->lease_ms : 0,
		.wait_ms = req->has_wait ? req->wait_ms : CORE_WAIT_FOREVER,
		.onclose_release = req->onclose == PROTO_ONCLOSE_RELEASE,
		.delay_ms = req->has_delay ? req->delay_ms : 0,
		.label = req->owner,
		.label_len = req->owner_len,
		.rid = req->rid,
		.rid_len = req->rid_len,
		.limit = req->has_limit ? req->limit : 0,
		.shared = req->has_mode && req->mode == PROTO_MODE_SHARED,
	};

	core_acquire(&svc->table, &conn->session, req->name, req->name_len,
	    &args, seq, now);
}

static void
cmd_try(struct service *svc, struct service_conn *conn,
    const struct proto_request *req, uint64_t seq, core_time now)
{
	struct core_acquire_args args = {
		.lease_ms = req->has_lease ? req->lease_ms : 0,
		.onclose_release = req->onclose == PROTO_ONCLOSE_RELEASE,
		.delay_ms = req->has_delay ? req->delay_ms : 0,
		.label = req->owner,
		.label_len = req->owner_len,
		.rid = req->rid,
		.rid_len = req->rid_len,
		.limit = req->has_limit ? req->limit : 0,
		.shared = req->has_mode && req->mode == PROTO_MODE_SHARED,
	};

	core_try(&svc->table, &conn->session, req->name, req->name_len,
	    &args, seq, now);
}

static struct core_handle
handle_of(const struct proto_request *req)
{
	struct core_handle h = { req->handle.fence, req->handle.secret };
	return h;
}

static void
cmd_renew(struct service *svc, struct service_conn *conn,
    const struct proto_request *req, uint64_t seq, core_time now)
{
	core_renew(&svc->table, &conn->session, req->name, req->name_len,
	    handle_of(req), req->has_lease ? req->lease_ms : 0, seq, now);
}

static void
cmd_release(struct service *svc, struct service_conn *conn,
    const struct proto_request *req, uint64_t seq, core_time now)
{
	core_release(&svc->table, &conn->session, req->name, req->name_len,
	    handle_of(req), seq, now);
}

static void
cmd_status(struct service *svc, struct service_conn *conn,
    const struct proto_request *req, uint64_t seq, core_time now)
{
	struct core_lock_status st;
	char line[PROTO_REPLY_MAX];
	size_t n;

	core_status(&svc->table, req->name, req->name_len, now, &st);
	n = proto_format_status(line, sizeof(line), req->name, req->name_len,
	    st.held, st.fence, st.ttl_ms, st.queue);
	n = append_status_fields(line, n, sizeof(line), &st);
	service__answer(svc, conn, seq, 0, service__inflight_depends(svc,
	    req->name, req->name_len), line, n);
}

/* FORCE <name> <fence>: RELEASED once durable, or NOTHELD. */
static void
cmd_force(struct service *svc, struct service_conn *conn,
    const struct proto_request *req, uint64_t seq, core_time now)
{
	core_force(&svc->table, &conn->session, req->name, req->name_len,
	    req->fence, seq, now);
}

/* CHECK <name> <fence>: CURRENT when a live holder has it, else STALE. */
static void
cmd_check(struct service *svc, struct service_conn *conn,
    const struct proto_request *req, uint64_t seq, core_time now)
{
	struct core_lock_status st;
	char line[PROTO_REPLY_MAX];
	int n;

	int64_t ttl = 0;

	/* Any live holder's fence is current, not only the newest's. */
	if (core_check(&svc->table, req->name, req->name_len, req->fence,
	    now, &ttl))
		n = snprintf(line, sizeof(line), "CURRENT %.*s fence=%llu "
		    "ttl=%lld\r\n", (int)req->name_len, req->name,
		    (unsigned long long)req->fence, (long long)ttl);
	else {
		core_status(&svc->table, req->name, req->name_len, now, &st);
		n = snprintf(line, sizeof(line), "STALE %.*s fence=%llu\r\n",
		    (int)req->name_len, req->name,
		    (unsigned long long)(st.held ? st.fence : 0));
	}
	service__answer(svc, conn, seq, 0, service__inflight_depends(svc,
	    req->name, req->name_len), line, (size_t)n);
}

/* WATCH <name> [fence=] [wait=]: a long poll the core answers once. */
static void
cmd_watch(struct service *svc, struct service_conn *conn,
    const struct proto_request *req, uint64_t seq, core_time now)
{
	core_watch(&svc->table, &conn->session, req->name, req->name_len,
	    req->has_fence, req->fence,
	    req->has_wait ? req->wait_ms : CORE_WAIT_FOREVER, seq, now);
}

/*
 * LIST [prefix=] [after=] [limit=]: the locks that exist, in bytewise name
 * order through the table's ordered index (no scan of other names), one
 * LOCK line each, then END count= [next=].  The reply is built whole and
 * delivered as one, so no other reply comes between its lines.  It is
 * bounded twice: by limit (at most 1000 lines of at most PROTO_REPLY_MAX
 * bytes) and by the room left under the connection's output cap - a LIST
 * that would overflow it ends early with next=, and the client pages on.
 * With --auth it walks only the ranges of names the principal may read
 * (auth_ranges), one after the other in name order, so names it may not
 * read cost nothing, however many there are under the prefix.
 */
static void
cmd_list(struct service *svc, struct service_conn *conn,
    const struct proto_request *req, uint64_t seq, core_time now)
{
	struct auth_range whole = { req->prefix_len > 0 ? req->prefix : "",
	    req->prefix_len }, *ranges = &whole;
	long nranges = 1, i;
	uint32_t limit = req->has_limit ? req->limit :
	    PROTO_LIST_LIMIT_DEFAULT, count = 0;
	size_t room = output_room(svc, conn), n;
	const struct core_entry *e, *last = NULL;
	struct service_buf text = { 0 };
	struct core_lock_status st;
	char line[PROTO_REPLY_MAX];
	uint64_t depends = 0, d;
	bool more = false;
	int k;

	if (svc->auth != NULL && (nranges = auth_ranges(svc->auth,
	    conn->principal, AUTH_PERM_READ, whole.prefix, whole.len,
	    &ranges)) < 0) {
		ranges = NULL;
		goto nomem;
	}
	/* Leases that ended are reclaimed first, as every command does for
	 * its own name, so no expired holder is listed. */
	core_tick(&svc->table, now);
	for (i = 0; i < nranges && !more; i++) {
		const struct auth_range *r = &ranges[i];

		for (e = core_list_first(&svc->table, r->prefix, r->len,
		    req->after, req->after_len); e != NULL;
		    e = core_list_next(&svc->table, e, r->prefix, r->len)) {
			svc->stats.list_walked++;
			if (!core_list_status(&svc->table, e, now, &st))
				continue;   /* gone */
			if (count == limit || (count > 0 && text.len +
			    (size_t)2 * PROTO_REPLY_MAX > room)) {
				more = true;
				break;
			}
			n = format_status_line(line, sizeof(line), "LOCK",
			    e->name, e->name_len, &st);
			if (n == 0 || !service__buf_append(&text, line, n))
				goto nomem;
			d = service__inflight_depends(svc, e->name,
			    e->name_len);
			if (d > depends)
				depends = d;
			last = e;
			count++;
		}
	}
	/* more: a lock was listed before the one left out, so last is set. */
	if (more && last != NULL)
		k = snprintf(line, sizeof(line), "END count=%u next=%.*s\r\n",
		    (unsigned)count, (int)last->name_len, last->name);
	else
		k = snprintf(line, sizeof(line), "END count=%u\r\n",
		    (unsigned)count);
	if (k <= 0 || !service__buf_append(&text, line, (size_t)k))
		goto nomem;
	service__answer(svc, conn, seq, 0, depends, text.data, text.len);
	service__buf_free(&text);
	if (ranges != &whole)
		free(ranges);
	return;
nomem:
	service__buf_free(&text);
	if (ranges != &whole)
		free(ranges);
	service__answer_error(svc, conn, seq, 0, 0, PROTO_ERR_UNAVAILABLE,
	    "out of memory");
}

static void
cmd_ping(struct service *svc, struct service_conn *conn,
    const struct proto_request *req, uint64_t seq, core_time now)
{
	char line[SHORT_REPLY_MAX];

	(void)req;
	(void)now;
	service__answer(svc, conn, seq, 0, 0, line,
	    proto_format_pong(line, sizeof(line)));
}

static void
cmd_quit(struct service *svc, struct service_conn *conn,
    const struct proto_request *req, uint64_t seq, core_time now)
{
	char line[SHORT_REPLY_MAX];

	(void)req;
	(void)now;
	conn->quit = true;
	service__answer(svc, conn, seq, 0, 0, line,
	    proto_format_bye(line, sizeof(line)));
}

static void
cmd_help(struct service *svc, struct service_conn *conn,
    const struct proto_request *req, uint64_t seq, core_time now)
{
	char line[PROTO_REPLY_MAX];

	(void)req;
	(void)now;
	service__answer(svc, conn, seq, 0, 0, line,
	    proto_format_help(line, sizeof(line)));
}

static void
cmd_stats(struct service *svc, struct service_conn *conn,
    const struct proto_request *req, uint64_t seq, core_time now)
{
	struct proto_stat stats[STATS_FIELDS_MAX];
	char line[STATS_LINE_MAX];
	size_t n;

	(void)req;
	(void)now;
	n = service_stats(svc, stats, STATS_FIELDS_MAX);
	n = proto_format_stats(line, sizeof(line), stats, n);
	/*
	 * Cluster mode: the node's role, the leader it knows (its own
	 * address when it leads), and how its last word from etcd went -
	 * what an operator asks of each node (lockctl nodes).
	 */
	if (svc->cluster.enabled && n > 2 && n + 64 +
	    strlen(svc->cluster.leader) < sizeof(line))
		n = (size_t)snprintf(line + n - 2, sizeof(line) - (n - 2),
		    " role=%s%s%s etcd=%s\r\n", svc->cluster.leading ?
		    "leader" : "follower", svc->cluster.leader[0] != '\0' ?
		    " leader=" : "", svc->cluster.leader,
		    !svc->cluster.etcd_unreachable ? "ok" :
		    svc->cluster.etcd_refused ? "refused" : "unreachable") +
		    n - 2;
	service__answer(svc, conn, seq, 0, 0, line, n);
}

/*
 * Makes principal (may be "") conn's, moving its connection and its
 * waiters to the principal's counts.  0, or -1 when the principal has
 * no room for another connection (or memory ran out): nothing changes.
 */
static int
principal_switch(struct service *svc, struct service_conn *conn,
    const char *principal)
{
	struct quota_entry *from = conn->quota, *to = NULL;
	uint32_t max = svc->quota.limits.connections;

	if (principal[0] != '\0') {
		if ((to = quota_get(&svc->quota, principal)) == NULL)
			return -1;
		if (to != from && max != 0 && to->connections >= max) {
			svc->metrics.limit_hits[
			    METRICS_LIMIT_PRINCIPAL_CONNECTIONS]++;
			log_limited(&svc->limit_log, LOG_WARN, "limit",
			    "kind=%s conn=%llu max=%u", metrics_limit_names[
			    METRICS_LIMIT_PRINCIPAL_CONNECTIONS],
			    (unsigned long long)conn->session.id, max);
			quota_put(&svc->quota, to);
			return -1;
		}
	}
	if (from != NULL) {
		from->connections--;
		from->waiters -= conn->session.waiter_count;
	}
	if (to != NULL) {
		to->connections++;
		to->waiters += conn->session.waiter_count;
	}
	conn->quota = to;
	conn->session.group_waiters = to != NULL ? &to->waiters : NULL;
	conn->session.group_max_waiters = svc->quota.limits.waiters;
	if (from != to)
		quota_put(&svc->quota, from);
	snprintf(conn->principal, sizeof(conn->principal), "%s", principal);
	return 0;
}

static void
cmd_auth(struct service *svc, struct service_conn *conn,
    const struct proto_request *req, uint64_t seq, core_time now)
{
	char line[PROTO_REPLY_MAX];
	const char *principal;

	(void)now;
	principal = auth_token_principal(svc->auth, req->name, req->name_len);
	if (principal == NULL) {
		svc->stats.auth_failures++;
		log_limited(&svc->auth_log, LOG_WARN, "auth_failed",
		    "conn=%llu failures=%u", (unsigned long long)
		    conn->session.id, conn->auth_failures + 1);
		if (++conn->auth_failures >= AUTH_MAX_FAILURES) {
			/* Answered, then closed: guessing costs a connect. */
			conn->quit = true;
			service__answer_error(svc, conn, seq, 0, 0,
			    PROTO_ERR_DENIED, "too many failed AUTH, closing");
		} else {
			service__answer_error(svc, conn, seq, 0, 0,
			    PROTO_ERR_DENIED, "bad token");
		}
		return;
	}
	if (principal_switch(svc, conn, principal) != 0) {
		service__answer_error(svc, conn, seq, 0, 0, PROTO_ERR_LIMIT,
		    "too many connections for this principal");
		return;
	}
	service__answer(svc, conn, seq, 0, 0, line, proto_format_authed(line,
	    sizeof(line), conn->principal, strlen(conn->principal)));
}

typedef void (*command_handler)(struct service *, struct service_conn *,
    const struct proto_request *, uint64_t, core_time);

/* The command table: proto_parse_request has checked the name, the arity
 * and the options; each handler executes its command. */
static const command_handler commands[PROTO_CMD_COUNT] = {
	[PROTO_CMD_ACQUIRE] = cmd_acquire,
	[PROTO_CMD_TRY] = cmd_try,
	[PROTO_CMD_RENEW] = cmd_renew,
	[PROTO_CMD_RELEASE] = cmd_release,
	[PROTO_CMD_STATUS] = cmd_status,
	[PROTO_CMD_PING] = cmd_ping,
	[PROTO_CMD_QUIT] = cmd_quit,
	[PROTO_CMD_HELP] = cmd_help,
	[PROTO_CMD_STATS] = cmd_stats,
	[PROTO_CMD_FORCE] = cmd_force,
	[PROTO_CMD_CHECK] = cmd_check,
	[PROTO_CMD_WATCH] = cmd_watch,
	[PROTO_CMD_LIST] = cmd_list,
	[PROTO_CMD_AUTH] = cmd_auth,
};

/*
 * Cluster mode: whether a node that does not lead answers this command
 * itself (every lock command, present and to come, goes to the leader).
 */
static bool
answered_by_any_node(enum proto_command command)
{
	return command == PROTO_CMD_PING || command == PROTO_CMD_HELP ||
	    command == PROTO_CMD_QUIT || command == PROTO_CMD_STATS ||
	    command == PROTO_CMD_AUTH;
}

/*
 * What each command needs with --auth (AUTH_PERM_*), on its name when it
 * has one, else on some prefix; 0: anybody, authenticated or not.
 */
static const unsigned command_perms[PROTO_CMD_COUNT] = {
	[PROTO_CMD_ACQUIRE] = AUTH_PERM_LOCK,
	[PROTO_CMD_TRY] = AUTH_PERM_LOCK,
	[PROTO_CMD_RENEW] = AUTH_PERM_LOCK,
	[PROTO_CMD_RELEASE] = AUTH_PERM_LOCK,
	[PROTO_CMD_STATUS] = AUTH_PERM_READ,
	[PROTO_CMD_STATS] = AUTH_PERM_ADMIN,
	[PROTO_CMD_FORCE] = AUTH_PERM_ADMIN,
	[PROTO_CMD_CHECK] = AUTH_PERM_READ,
	[PROTO_CMD_WATCH] = AUTH_PERM_READ,
	[PROTO_CMD_LIST] = AUTH_PERM_READ,
};

bool
service_may(const struct service *svc, const struct service_conn *conn,
    unsigned perm, const char *name, size_t len)
{
	if (svc->auth == NULL)
		return true;
	return auth_may(svc->auth, conn->principal, perm, name, len);
}

/*
 * The one permission check, before a command touches anything: NULL when
 * req may run, else why it is refused (and how).
 */
static const char *
refusal(const struct service *svc, const struct service_conn *conn,
    const struct proto_request *req, enum proto_error_code *code)
{
	unsigned perm = command_perms[req->command];

	*code = PROTO_ERR_DENIED;
	if (req->command == PROTO_CMD_AUTH && svc->auth == NULL) {
		*code = PROTO_ERR_BADREQ;
		return "authentication is off";
	}
	if (svc->auth == NULL || perm == 0)
		return NULL;
	if (conn->principal[0] == '\0')
		return "not authenticated";
	if (req->name_len == 0 ? !auth_may_any(svc->auth, conn->principal,
	    perm) : !service_may(svc, conn, perm, req->name, req->name_len))
		return "no permission";
	return NULL;
}

/*
 * --max-held-per-principal: an ACQUIRE or TRY from a principal that holds
 * as many locks as it may is refused before the table sees it (a waiter
 * queued earlier may still be granted past the limit).
 */
static bool
over_held_quota(struct service *svc, const struct service_conn *conn,
    const struct proto_request *req)
{
	uint32_t max = svc->quota.limits.held;

	if ((req->command != PROTO_CMD_ACQUIRE &&
	    req->command != PROTO_CMD_TRY) || conn->quota == NULL ||
	    max == 0 || conn->quota->held < max)
		return false;
	svc->metrics.limit_hits[METRICS_LIMIT_PRINCIPAL_HELD]++;
	log_limited(&svc->limit_log, LOG_WARN, "limit",
	    "kind=%s conn=%llu max=%u",
	    metrics_limit_names[METRICS_LIMIT_PRINCIPAL_HELD],
	    (unsigned long long)conn->session.id, max);
	return true;
}

/* ---- cluster mode ----------------------------------------------------- */

void
service_cluster_enable(struct service *svc)
{
	svc->cluster.enabled = true;
}

void
service_cluster_lead(struct service *svc, const char *self)
{
	svc->cluster.leading = true;
	snprintf(svc->cluster.leader, sizeof(svc->cluster.leader), "%s",
	    self);
}

void
service_cluster_serve_until(struct service *svc, core_time until)
{
	svc->cluster.serving_until = until;
}

void
service_cluster_follow(struct service *svc, const char *leader)
{
	svc->cluster.leading = false;
	snprintf(svc->cluster.leader, sizeof(svc->cluster.leader), "%s",
	    leader != NULL ? leader : "");
}

void
service_cluster_etcd(struct service *svc, bool unreachable, bool refused)
{
	svc->cluster.etcd_unreachable = unreachable;
	svc->cluster.etcd_refused = unreachable && refused;
}

const struct service_cluster *
service_cluster(const struct service *svc)
{
	return &svc->cluster;
}

/* Runs one request and makes sure it holds its place in the reply order. */
static void
execute(struct service *svc, struct service_conn *conn,
    const struct proto_request *req, core_time now)
{
	uint64_t seq = ++conn->next_seq;
	enum proto_error_code code;
	const char *why;

	svc->stats.requests++;
	if ((why = refusal(svc, conn, req, &code)) != NULL) {
		if (code == PROTO_ERR_DENIED)
			svc->stats.denied++;
		service__answer_error(svc, conn, seq, 0, 0, code, why);
		return;
	}
	/* A leader whose lease could have run out serves nothing, even
	 * before its timer has told it (a paused process reads first). */
	if (svc->cluster.enabled && !answered_by_any_node(req->command) &&
	    (!svc->cluster.leading || now >= svc->cluster.serving_until)) {
		char text[PROTO_REPLY_MAX];
		if (svc->cluster.etcd_unreachable)
			service__answer_error(svc, conn, seq, 0, 0,
			    PROTO_ERR_UNAVAILABLE, svc->cluster.etcd_refused ?
			    "etcd refused this node's credentials (its log "
			    "says why)" : "etcd cannot be reached");
		else if (!svc->cluster.leading &&
		    svc->cluster.leader[0] != '\0') {
			snprintf(text, sizeof(text), "leader=%.200s this node "
			    "does not serve locks", svc->cluster.leader);
			service__answer_error(svc, conn, seq, 0, 0,
			    PROTO_ERR_NOTLEADER, text);
		} else
			service__answer_error(svc, conn, seq, 0, 0,
			    PROTO_ERR_NOTLEADER, "no leader is known");
		return;
	}
	if (over_held_quota(svc, conn, req)) {
		service__answer_error(svc, conn, seq, 0, 0, PROTO_ERR_LIMIT,
		    "too many held locks for this principal");
		return;
	}
	commands[req->command](svc, conn, req, seq, now);
	if (conn->answered_seq != seq)   /* a waiting ACQUIRE or WATCH */
		service__slot_reserve(svc, conn, seq);
}

static void
reject(struct service *svc, struct service_conn *conn,
    const struct proto_error *err)
{
	uint64_t seq = ++conn->next_seq;

	service__answer_error(svc, conn, seq, 0, 0, err->code, err->message);
}

/* Parses and executes what p[0..len) holds; returns the bytes used. */
static size_t
parse_all(struct service *svc, struct service_conn *conn, const char *p,
    size_t len, core_time now)
{
	struct proto_request req;
	struct proto_error err;
	size_t pos = 0, used;

	while (pos < len && !conn->quit && !conn->overflow) {
		if (conn->discarding) {
			if (proto_discard_line(p + pos, len - pos, &used))
				conn->discarding = false;
			pos += used;
			continue;
		}
		switch (proto_parse_request(p + pos, len - pos,
		    svc->config.max_line, &req, &used, &err)) {
		case PROTO_PARTIAL:
			return pos;
		case PROTO_EMPTY:
			break;
		case PROTO_DONE:
			execute(svc, conn, &req, now);
			break;
		case PROTO_TOOLONG:
			if (used == 0 || p[pos + used - 1] != '\n')
				conn->discarding = true;
			/* FALLTHROUGH */
		case PROTO_BAD:
			reject(svc, conn, &err);
			break;
		}
		pos += used;
	}
	return conn->quit || conn->overflow ? len : pos;
}

/*
 * A partial line is kept in conn->in, and what parse_all leaves there is
 * always one proto_parse_request called PROTO_PARTIAL: no LF in it.  So a
 * read that adds to it is searched for an LF from in_scanned on, and while
 * there is none and the line is within max_line, proto_parse_request would
 * only say PROTO_PARTIAL again (its contract): it is not called.  A line
 * that arrives a byte at a time is then searched once and parsed once,
 * not rescanned from its start at every read (quadratic in --max-line).
 */
void
service_conn_feed(struct service *svc, struct service_conn *conn,
    const char *data, size_t len)
{
	core_time now = svc->clock.mono(svc->clock.ctx);
	size_t used;

	if (conn->quit || conn->overflow)
		return;
	if (conn->in.len == 0) {
		/* Straight from the caller's buffer; keep a partial line. */
		used = parse_all(svc, conn, data, len, now);
		if (used < len && !service__buf_append(&conn->in, data + used,
		    len - used))
			conn->overflow = true;
		conn->in_scanned = conn->in.len;
		return;
	}
	if (!service__buf_append(&conn->in, data, len)) {
		conn->overflow = true;
		service__mark_ready(svc, conn);
		return;
	}
	if (memchr(conn->in.data + conn->in_scanned, '\n',
	    conn->in.len - conn->in_scanned) == NULL &&
	    conn->in.len <= svc->config.max_line) {
		conn->in_scanned = conn->in.len;
		return;
	}
	used = parse_all(svc, conn, conn->in.data, conn->in.len, now);
	memmove(conn->in.data, conn->in.data + used, conn->in.len - used);
	conn->in.len -= used;
	conn->in_scanned = conn->in.len;
	if (conn->in.len == 0)
		/* Idle connections keep no buffer. */
		service__buf_free(&conn->in);
}

/* ---- connections ------------------------------------------------------ */

void
service_conn_end_input(struct service *svc, struct service_conn *conn)
{
	if (conn->input_ended)
		return;
	conn->input_ended = true;
	conn->quit = true;
	core_cancel_waiters(&svc->table, &conn->session, CORE_REPLY_TIMEOUT);
}

void
service_conn_open(struct service *svc, struct service_conn *conn)
{
	memset(conn, 0, sizeof(*conn));
	core_session_init(&conn->session, ++svc->stats.connections_total);
	link_init(&conn->ready_link);
	link_init(&conn->waiting_link);
	link_append(&svc->conns, &conn->all_link);
	svc->stats.connections++;
}

int
service_conn_set_principal(struct service *svc, struct service_conn *conn,
    const char *principal)
{
	size_t len = principal == NULL ? 0 : strlen(principal);

	if (len == 0 || !auth_valid_principal(principal, len))
		principal = "";
	return principal_switch(svc, conn, principal);
}

void
service_conn_refuse(struct service *svc, struct service_conn *conn,
    enum proto_error_code code, const char *text)
{
	uint64_t seq = ++conn->next_seq;

	service__answer_error(svc, conn, seq, 0, 0, code, text);
	conn->quit = true;
}

void
service_conn_close(struct service *svc, struct service_conn *conn)
{
	core_disconnect(&svc->table, &conn->session,
	    svc->clock.mono(svc->clock.ctx));
	principal_switch(svc, conn, "");   /* cannot fail */
	service__slots_free(conn);
	link_remove(&conn->all_link);
	link_remove(&conn->ready_link);
	link_remove(&conn->waiting_link);
	service__buf_free(&conn->in);
	service__buf_free(&conn->out);
	svc->stats.connections--;
}

struct service_conn *
service_first_conn(struct service *svc)
{
	if (link_empty(&svc->conns))
		return NULL;
	return container_of(svc->conns.next, struct service_conn, all_link);
}

void
service_for_each_conn(struct service *svc,
    void (*fn)(struct service_conn *conn, void *ctx), void *ctx)
{
	struct core_link *l, *next;

	for (l = svc->conns.next; l != &svc->conns; l = next) {
		next = l->next;
		fn(container_of(l, struct service_conn, all_link), ctx);
	}
}

void
service_count_refused_connection(struct service *svc, bool at_limit)
{
	if (at_limit)
		svc->metrics.limit_hits[METRICS_LIMIT_CONNECTIONS]++;
	svc->stats.protocol_errors[PROTO_ERR_LIMIT]++;
}

bool
service_ready(const struct service *svc)
{
	return svc->serving;
}

uint64_t
service_held_count(const struct service *svc)
{
	return svc->table.stats.held;
}

/* ---- time ------------------------------------------------------------- */

core_time
service_tick(struct service *svc)
{
	return core_tick(&svc->table, svc->clock.mono(svc->clock.ctx));
}

/* ---- life ------------------------------------------------------------- */

void
service_config_defaults(struct service_config *config)
{
	memset(config, 0, sizeof(*config));
	core_config_defaults(&config->core);
	config->max_line = PROTO_LINE_MAX_DEFAULT;
	config->max_output = SERVICE_MAX_OUTPUT_DEFAULT;
}

/* Records handed to the table at once (core_table_restore_batch). */
#define LOAD_BATCH 64

struct load {
	struct service *svc;
	struct service_recovery *rec;
	struct store_batch *rewrite;   /* other boots' records, rebased */
	core_time now;
	int64_t wall;
	/* Decoded, not yet restored; the names are copies, as the store's
	 * own may not outlive its walk. */
	struct core_restore batch[LOAD_BATCH];
	char names[LOAD_BATCH][CORE_NAME_MAX];
	size_t n;
};

static int
load_flush(struct load *l)
{
	const struct core_restore *it;
	char shown[LOG_VALUE_MAX + 1];
	size_t done;

	if (l->n == 0)
		return 0;
	if (core_table_restore_batch(&l->svc->table, l->batch, l->n, l->now,
	    &done) != CORE_OK) {
		it = &l->batch[done];
		snprintf(l->svc->error, sizeof(l->svc->error),
		    "cannot restore lock %s", log_value(shown, it->name,
		    it->name_len));
		return -1;
	}
	l->n = 0;
	return 0;
}

/* The take-over rule and the recovery's figures, for each record. */
static void
load_account(struct load *l, struct core_record *rec)
{
	if (l->svc->config.takeover_lease_ms > 0) {
		if (rec->fence != 0 && rec->onclose_release)
			l->rec->made_ordinary++;
		if (rec->delay_until != 0)
			l->rec->delays_restarted++;
		core_takeover_record(rec, l->now,
		    l->svc->config.takeover_lease_ms,
		    l->svc->config.core.max_lock_delay_ms);
	}
	/* A free name in lock-delay has a record but no lease. */
	if (rec->fence != 0)
		l->rec->leases++;
	if (rec->fence != 0 && rec->onclose_release)
		l->rec->onclose++;
	else if (rec->fence != 0 && rec->expiry <= l->now)
		l->rec->expired++;
}

/*
 * A name whose records another boot wrote was restored by the wall clock
 * (daemon/format.h); its records are put in the batch again, under this
 * boot but with their wall-clock readings kept (format_record_rebase), and
 * committed before lockd serves.  Else, the store still naming the old
 * boot, a restart later in this boot would read them by the wall clock
 * again, and a wall-clock step between would move every such lease end.
 * Not in cluster mode: there every load gives each lease the take-over
 * rule, whatever boot wrote it, and a record read back after a failed
 * commit of another node's boot gets what the load gave it
 * (service_commit.c, fall_read).
 */
static int
load_rewrite(struct load *l, const struct recovery_name *name)
{
	unsigned char val[FORMAT_RECORD_SIZE];
	char key[FORMAT_KEY_MAX];
	size_t i, key_len, n;

	if (!name->other_boot || l->svc->config.takeover_lease_ms > 0)
		return 0;
	for (i = 0; i < name->n; i++) {
		key_len = format_key(name->name, name->name_len,
		    name->holders > 0 ? name->recs[i].fence : 0, key);
		n = format_record_rebase(&name->recs[i], l->svc->clock.boot_id,
		    name->walls[i], val);
		if (store_batch_add(l->rewrite, STORE_PUT, key, key_len, val,
		    n) != 0) {
			snprintf(l->svc->error, sizeof(l->svc->error),
			    "out of memory");
			return -1;
		}
	}
	return 0;
}

/*
 * One name of the store, with all its records (daemon/recovery.h).  A
 * plain one - one record, under the name - joins the batch.  A semaphore
 * or a shared lock - its holders' records, one under each holder key - is
 * restored whole at once, after the batch before it (the order of names
 * is kept).
 */
static int
load_name(void *ctx, struct recovery_name *name)
{
	struct load *l = ctx;
	struct core_restore *it = &l->batch[l->n];
	char shown[LOG_VALUE_MAX + 1];
	size_t i;

	if (load_rewrite(l, name) != 0)
		return -1;
	if (name->holders > 0) {
		if (load_flush(l) != 0)
			return -1;
		for (i = 0; i < name->n; i++)
			load_account(l, &name->recs[i]);
		if (core_table_restore_holders(&l->svc->table, name->name,
		    name->name_len, name->recs, name->n, l->now) != CORE_OK) {
			snprintf(l->svc->error, sizeof(l->svc->error),
			    "cannot restore lock %s (%zu holders)",
			    log_value(shown, name->name, name->name_len),
			    name->n);
			return -1;
		}
		return 0;
	}
	load_account(l, &name->recs[0]);
	it->rec = name->recs[0];
	it->more = NULL;
	it->nmore = 0;
	memcpy(l->names[l->n], name->name, name->name_len);
	it->name = l->names[l->n];
	it->name_len = name->name_len;
	if (++l->n == LOAD_BATCH)
		return load_flush(l);
	return 0;
}

static void
service_sink_init(struct service *svc, struct core_sink *sink)
{
	sink->reply = on_core_reply;
	sink->ctx = svc;
}

int
service_open(struct service *svc, const struct service_config *config,
    struct store *store, const struct service_clock *clock,
    struct service_recovery *recovered)
{
	struct service_recovery scratch;
	struct store_batch rewrite;
	struct core_sink sink;
	struct recovery gather;
	struct load l;
	uint64_t hwm = 0;
	struct service_cluster cluster = svc->cluster;

	memset(svc, 0, sizeof(*svc));
	svc->cluster = cluster;
	if (recovered == NULL)
		recovered = &scratch;
	memset(recovered, 0, sizeof(*recovered));
	svc->config = *config;
	svc->store = store;
	svc->clock = *clock;
	quota_init(&svc->quota, &config->principal);
	metrics_init(&svc->metrics);
	svc->metrics.start_time = (double)clock->wall(clock->ctx) / 1000;
	link_init(&svc->conns);
	link_init(&svc->ready);
	link_init(&svc->waiting);
	service__commit_open(svc);
	store_batch_init(&rewrite);
	service_sink_init(svc, &sink);
	if (core_table_init(&svc->table, &config->core, &core_rules_std,
	    sink) != CORE_OK) {
		snprintf(svc->error, sizeof(svc->error), "out of memory");
		service__commit_close(svc);
		return -1;
	}
	l.svc = svc;
	l.rec = recovered;
	l.rewrite = &rewrite;
	l.now = clock->mono(clock->ctx);
	l.wall = clock->wall(clock->ctx);
	l.n = 0;
	svc->loaded_at = l.now;
	memset(&gather, 0, sizeof(gather));
	recovery_init(&gather);
	gather.boot_id = svc->clock.boot_id;
	gather.max_lease_ms = config->core.max_lease_ms;
	gather.now = l.now;
	gather.wall_now = l.wall;
	gather.name_fn = load_name;
	gather.ctx = &l;
	if (store->ops->load(store, recovery_key, &gather, &hwm) != 0 ||
	    recovery_finish(&gather) != 0 || load_flush(&l) != 0) {
		if (svc->error[0] == '\0')
			snprintf(svc->error, sizeof(svc->error), "%s",
			    gather.error[0] != '\0' ? gather.error :
			    store->error);
		recovery_free(&gather);
		goto fail;
	}
	recovery_free(&gather);
	/* The records of another boot, rewritten for this one (load_rewrite),
	 * go in first: the releases and expiries below come after them. */
	if (rewrite.count > 0 && store->ops->commit(store, &rewrite) != 0) {
		snprintf(svc->error, sizeof(svc->error), "cannot rewrite "
		    "the restored leases for this boot: %.200s",
		    store->error);
		goto fail;
	}
	store_batch_free(&rewrite);
	core_table_restore_hwm(&svc->table, hwm);
	if (store->ops->stats != NULL)
		store->ops->stats(store, &svc->store_stats);
	service__commit_stored_hwm(svc, hwm);
	recovered->hwm = svc->table.hwm;
	/* Leases that ended while lockd was down end now, and that (like the
	 * onclose leases released during the load) is made durable. */
	core_tick(&svc->table, l.now);
	if (service_commit(svc) != 0) {
		snprintf(svc->error, sizeof(svc->error),
		    "cannot commit recovery: %.200s", store->error);
		goto fail;
	}
	svc->serving = true;
	return 0;
fail:
	core_table_destroy(&svc->table);
	store_batch_free(&rewrite);
	service__commit_close(svc);
	return -1;
}

void
service_shutdown(struct service *svc)
{
	struct core_link *l;

	svc->serving = false;
	for (l = svc->conns.next; l != &svc->conns; l = l->next) {
		struct service_conn *conn = container_of(l,
		    struct service_conn, all_link);
		core_cancel_waiters(&svc->table, &conn->session,
		    CORE_REPLY_SHUTDOWN);
	}
}

void
service_close(struct service *svc)
{
	while (!link_empty(&svc->conns))
		service_conn_close(svc, container_of(svc->conns.next,
		    struct service_conn, all_link));
	core_table_destroy(&svc->table);
	service__commit_close(svc);
	quota_free(&svc->quota);
}

void
service_counters(const struct service *svc, struct service_counters *out)
{
	const struct core_stats *c = &svc->table.stats;
	const struct service_untold *u = &svc->stats.untold;
	int i;

	out->granted = c->granted - u->granted;
	out->timeouts = c->timeouts - u->timeouts;
	out->released = c->released - u->released;
	out->reclaimed = c->reclaimed;
	out->unavailable = c->unavailable - u->unavailable;
	out->renewed = c->renewed - u->renewed;
	out->conflicts = c->conflicts - u->conflicts;
	out->released_onclose = c->released_onclose;
	out->forced = c->forced - u->forced;
	out->delayed = c->delayed;
	out->watches = c->watches;
	out->limit_hits = 0;
	for (i = 0; i < METRICS_LIMIT_COUNT; i++)
		out->limit_hits += svc->metrics.limit_hits[i];
}

size_t
service_stats(struct service *svc, struct proto_stat *stats, size_t cap)
{
	const struct core_stats *c = &svc->table.stats;
	struct service_counters n;

	service_counters(svc, &n);
	struct proto_stat all[] = {
		{ "connections", svc->stats.connections },
		{ "locks", c->locks },
		{ "held", c->held },
		{ "waiters", c->waiters },
		{ "granted", n.granted },
		{ "timeouts", n.timeouts },
		{ "released", n.released },
		{ "reclaimed", n.reclaimed },
		{ "unavailable", n.unavailable },
		{ "renewed", n.renewed },
		{ "conflicts", n.conflicts },
		{ "released_onclose", n.released_onclose },
		{ "limit_hits", n.limit_hits },
		{ "requests", svc->stats.requests },
		{ "commits", svc->stats.commits },
		{ "commit_failures", svc->stats.commit_failures },
		{ "commit_records", svc->stats.commit_records },
		{ "fence_hwm", svc->table.hwm },
		{ "forced", n.forced },
		{ "delayed", n.delayed },
		{ "watches", n.watches },
	};
	size_t count = sizeof(all) / sizeof(all[0]);

	if (count > cap)
		count = cap;
	memcpy(stats, all, count * sizeof(*stats));
	return count;
}
